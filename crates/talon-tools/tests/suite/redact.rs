//! Redaction across the pieces of a stream: what a piece's end keeps back,
//! and a secret that only the joined pieces hold.

use serde_json::json;
use talon_tools::redact::Redactor;

const SECRET: &str = "s3cr3t-deploy-value";

#[test]
fn a_pieces_end_is_kept_back_only_while_it_could_begin_a_secret() {
    let r = Redactor::new(&[SECRET.to_owned()]);
    let ends: Vec<usize> = [
        "the token is s3cr",
        "the token is s",
        "the token is ",
        // Whole (the redaction's to cut out), but its last `e` could
        // begin the reversed form.
        "the token is s3cr3t-deploy-value",
        // Reversed, the form a program prints with `rev`.
        "eulav-",
        "",
        "ünïcödé s3",
    ]
    .iter()
    .map(|text| r.open_end(text))
    .collect();
    assert_eq!(ends, [4, 1, 0, 1, 6, 0, 2]);
    assert_eq!(Redactor::default().open_end("s3cr"), 0);
}

#[test]
fn a_secret_split_across_a_streams_events_is_found_at_its_place() {
    let r = Redactor::new(&[SECRET.to_owned()]);
    let chunk = |text: &str| json!({"id": "x", "choices": [{"delta": {"content": text}}]});
    let split = json!({"events": [chunk("token: s3cr3t-"), chunk("deploy-value.")]});
    // Each piece alone holds no secret: redacting changes nothing.
    assert_eq!(r.value(&split), split);
    assert!(r.spanned(&split));
    let apart = json!({"events": [chunk("s3cr3t-"), {"id": "deploy-value"}]});
    assert!(!r.spanned(&apart));
    assert!(!Redactor::default().spanned(&split));
}
