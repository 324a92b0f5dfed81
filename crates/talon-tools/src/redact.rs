//! The one redaction of secret values from what a run produces (tool
//! results, errors, events, artifacts): each secret as it is, as JSON
//! escapes it, and, for secrets of [`ENCODED_MIN`] bytes or more, in the
//! encodings a program most often prints a value in: reversed, hex (both
//! cases), percent-encoded, and base64 (standard and URL-safe, at each of
//! the three alignments it can start at inside a longer encoded text).
//!
//! Redaction is a last line, not the boundary: which secrets a run may
//! hold at all is an admin's choice (`gateway.environments.secrets`).
//! A program that wants to leak a value can always transform it in a way
//! no list of encodings foresees.

use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::Value;

/// What stands in for a secret.
pub const REDACTED: &str = "[redacted]";

/// Secrets shorter than this are redacted only as they are (and
/// JSON-escaped): their encoded forms are too short to be told apart from
/// ordinary text.
pub const ENCODED_MIN: usize = 8;

/// A set of secrets, ready to redact from any text in one pass.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    matcher: Option<AhoCorasick>,
    secrets: Vec<String>,
    /// Every form the matcher finds.
    forms: Vec<String>,
}

impl Redactor {
    /// A redactor of `secrets` (empty ones are ignored).
    pub fn new(secrets: &[String]) -> Self {
        let mut forms: Vec<String> = Vec::new();
        for secret in secrets.iter().filter(|s| !s.is_empty()) {
            forms.extend(forms_of(secret));
        }
        forms.sort();
        forms.dedup();
        let matcher = if forms.is_empty() {
            None
        } else {
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&forms)
                .ok()
        };
        Self {
            matcher,
            secrets: secrets.iter().filter(|s| !s.is_empty()).cloned().collect(),
            forms,
        }
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// The secrets it redacts.
    pub fn secrets(&self) -> &[String] {
        &self.secrets
    }

    /// `text` with every form of every secret replaced by [`REDACTED`].
    pub fn text(&self, text: &str) -> String {
        match &self.matcher {
            None => text.to_owned(),
            Some(matcher) => {
                let mut out = String::with_capacity(text.len());
                matcher.replace_all_with(text, &mut out, |_, _, dst| {
                    dst.push_str(REDACTED);
                    true
                });
                out
            }
        }
    }

    /// `value` with every secret redacted from it (a value whose redaction
    /// is not JSON any more becomes the marker itself).
    pub fn value(&self, value: &Value) -> Value {
        let Some(matcher) = &self.matcher else {
            return value.clone();
        };
        let text = value.to_string();
        if !matcher.is_match(&text) {
            return value.clone();
        }
        serde_json::from_str(&self.text(&text)).unwrap_or_else(|_| Value::String(REDACTED.into()))
    }
}

impl Redactor {
    /// Whether the strings of `value` at the same place, joined in order
    /// (array positions ignored: a stream's events, each with its piece of
    /// text at the same key), still hold a secret: one split across pieces
    /// that redacting each cannot find. Check after [`Redactor::value`].
    pub fn spanned(&self, value: &Value) -> bool {
        let Some(matcher) = &self.matcher else {
            return false;
        };
        let mut joined = std::collections::BTreeMap::new();
        strings(value, &mut String::new(), &mut joined);
        joined.values().any(|text: &String| matcher.is_match(text))
    }
}

impl Redactor {
    /// How many bytes at the end of `text` could begin a secret that the
    /// next piece of a stream completes: the longest end of `text` that is
    /// a proper start of one of its forms (on a character boundary). A
    /// streamed text keeps these back until the next piece, or its end.
    pub fn open_end(&self, text: &str) -> usize {
        let bytes = text.as_bytes();
        self.forms
            .iter()
            .filter_map(|form| {
                let form = form.as_bytes();
                (1..form.len().min(bytes.len() + 1))
                    .rev()
                    .find(|&k| bytes.ends_with(&form[..k]))
            })
            .filter(|&k| text.is_char_boundary(text.len() - k))
            .max()
            .unwrap_or(0)
    }
}

/// Appends every string of `value` to the text of its place (`path`, keys
/// only) in `out`.
fn strings(value: &Value, path: &mut String, out: &mut std::collections::BTreeMap<String, String>) {
    match value {
        Value::String(s) => out.entry(path.clone()).or_default().push_str(s),
        Value::Array(items) => items.iter().for_each(|v| strings(v, path, out)),
        Value::Object(map) => {
            for (key, v) in map {
                let len = path.len();
                path.push('/');
                path.push_str(key);
                strings(v, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// `text` with every secret replaced (see [`Redactor`]).
pub fn redact_text(text: &str, secrets: &[String]) -> String {
    Redactor::new(secrets).text(text)
}

/// `value` with every secret redacted (see [`Redactor`]).
pub fn redact_value(value: &Value, secrets: &[String]) -> Value {
    if secrets.is_empty() {
        return value.clone();
    }
    Redactor::new(secrets).value(value)
}

/// The forms of one secret that are redacted.
fn forms_of(secret: &str) -> Vec<String> {
    let mut forms = vec![secret.to_owned()];
    let escaped = serde_json::to_string(secret).unwrap_or_default();
    let escaped = escaped.trim_matches('"');
    if escaped != secret {
        forms.push(escaped.to_owned());
    }
    let bytes = secret.as_bytes();
    if bytes.len() < ENCODED_MIN {
        return forms;
    }
    forms.push(secret.chars().rev().collect());
    let hex = hex::encode(bytes);
    forms.push(hex.to_ascii_uppercase());
    forms.push(hex);
    let percent: String = bytes
        .iter()
        .map(|&b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    if percent != secret {
        forms.push(percent);
    }
    for alphabet in [STANDARD, URL_SAFE] {
        for offset in 0..3 {
            forms.push(base64_core(bytes, offset, alphabet));
        }
    }
    forms
}

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The base64 characters that depend on `bytes` alone when they start
/// `offset` bytes into an encoded text: whatever comes before or after,
/// an encoding of a text holding the secret at that alignment contains
/// them.
fn base64_core(bytes: &[u8], offset: usize, alphabet: &[u8; 64]) -> String {
    let mut padded = vec![0u8; offset];
    padded.extend_from_slice(bytes);
    let encoded = base64(&padded, alphabet);
    let bits_before = 8 * offset;
    let bits_end = 8 * (offset + bytes.len());
    let first = bits_before.div_ceil(6);
    let last = bits_end / 6;
    encoded
        .get(first..last.min(encoded.len()))
        .unwrap_or_default()
        .to_owned()
}

/// Plain base64 without padding.
fn base64(bytes: &[u8], alphabet: &[u8; 64]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.len();
        let word = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..=n {
            out.push(alphabet[((word >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_redacted_plain_and_escaped() {
        let secrets = vec!["sk-abc\"def12".to_owned(), "plain-secret-1".to_owned()];
        let text = json!({"a": "key sk-abc\"def12 here", "b": "plain-secret-1"}).to_string();
        assert_eq!(
            redact_text(&text, &secrets),
            r#"{"a":"key [redacted] here","b":"[redacted]"}"#
        );
        let value = json!({"stdout": "token=plain-secret-1\n", "n": 1});
        assert_eq!(
            redact_value(&value, &secrets),
            json!({"stdout": "token=[redacted]\n", "n": 1})
        );
        assert_eq!(redact_value(&value, &[]), value);
    }

    #[test]
    fn the_usual_encodings_are_redacted_too() {
        let secret = "hunter2-DEPLOY-token".to_owned();
        let redactor = Redactor::new(std::slice::from_ref(&secret));
        // What `base64`, `rev`, `xxd -p` and URL encoding print, with
        // text around them at every base64 alignment.
        let standard = |text: &str| base64(text.as_bytes(), STANDARD);
        for prefix in ["", "a", "ab", "abc"] {
            let encoded = standard(&format!("{prefix}{secret}tail"));
            let redacted = redactor.text(&encoded);
            assert!(
                redacted.contains(REDACTED),
                "{prefix:?}: {encoded} -> {redacted}"
            );
        }
        for leaked in [
            secret.chars().rev().collect::<String>(),
            "68756e746572322d4445504c4f592d746f6b656e".to_owned(),
            "68756E746572322D4445504C4F592D746F6B656E".to_owned(),
        ] {
            assert_eq!(
                redactor.text(&format!("x {leaked} y")),
                "x [redacted] y",
                "{leaked}"
            );
        }
        // Base64's last character also holds the bits of what follows (or
        // the padding): it stays, and tells nothing.
        assert_eq!(
            redactor.text(&base64(secret.as_bytes(), URL_SAFE)),
            "[redacted]4"
        );
        assert_eq!(
            Redactor::new(&["a b/c?d&e=f".to_owned()]).text("q=a%20b%2Fc%3Fd%26e%3Df"),
            "q=[redacted]"
        );
        // Short secrets: only as they are.
        let short = Redactor::new(&["abc".to_owned()]);
        assert_eq!(short.text("abc cba YWJj"), "[redacted] cba YWJj");
        assert!(Redactor::new(&[String::new()]).is_empty());
    }

    #[test]
    fn base64_matches_the_standard_encoding() {
        assert_eq!(base64(b"hello world", STANDARD), "aGVsbG8gd29ybGQ");
        assert_eq!(base64(b"\xfb\xff", URL_SAFE), "-_8");
    }
}
