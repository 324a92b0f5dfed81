//! The suspended-cell store under `talon exec`, across processes: racing
//! `--wait`s, records put back after their resume, and files planted in the
//! state directory.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

use serde_json::{Value, json};
use talon_testing::redact::Redactor;

use super::{finish, spawn_talon};

fn talon(home: &Path, args: &[&str]) -> Child {
    spawn_talon(home, args, &[])
}

fn result(out: &Output) -> Value {
    let mut value: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    value.as_object_mut().unwrap().remove("telemetry");
    value
}

fn cells_dir(home: &Path) -> PathBuf {
    home.join("state").join("code-mode").join("cells")
}

/// Suspends a cell that yields once and returns `value` when resumed.
fn suspend(home: &Path, value: &str) -> String {
    let code = format!("await yield_control(); return '{value}';");
    let out = finish(talon(home, &["exec", "--code", &code]));
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    result(&out)["runId"].as_str().unwrap().to_owned()
}

#[test]
fn of_concurrent_waits_exactly_one_resumes_and_the_rest_are_invalid_input() {
    let home = tempfile::tempdir().unwrap();
    for round in 0..3 {
        let run_id = suspend(home.path(), &format!("won {round}"));
        let racers: Vec<_> = (0..6)
            .map(|_| talon(home.path(), &["exec", "--wait", &run_id]))
            .collect();
        let outcomes: Vec<(Option<i32>, Value)> = racers
            .into_iter()
            .map(finish)
            .map(|out| {
                let value = result(&out);
                (out.status.code(), value)
            })
            .collect();
        let winners: Vec<_> = outcomes
            .iter()
            .filter(|(code, _)| *code == Some(0))
            .collect();
        assert_eq!(
            winners,
            vec![&(
                Some(0),
                json!({"status": "completed", "value": format!("won {round}")})
            )],
            "{outcomes:?}"
        );
        for (code, value) in outcomes.iter().filter(|(code, _)| *code != Some(0)) {
            assert_eq!(
                (*code, &value["code"]),
                (Some(1), &json!("invalid_input")),
                "{value}"
            );
        }
    }
}

#[test]
fn a_record_put_back_after_its_resume_fails_and_runs_nothing() {
    let home = tempfile::tempdir().unwrap();
    let run_id = suspend(home.path(), "once");
    let record = cells_dir(home.path()).join(format!("{run_id}.cell"));
    let saved = std::fs::read(&record).unwrap();
    let out = finish(talon(home.path(), &["exec", "--wait", &run_id]));
    assert_eq!(
        result(&out),
        json!({"status": "completed", "value": "once"})
    );
    std::fs::write(&record, &saved).unwrap();
    let out = finish(talon(home.path(), &["exec", "--wait", &run_id]));
    assert_eq!(out.status.code(), Some(1));
    let mut r = Redactor::new();
    pretty_assertions::assert_eq!(
        r.value(&result(&out)),
        json!({
            "code": "snapshot_restore_failed",
            "error": "suspended cell \"<cm_1>\" cannot be restored: its record failed authentication (damaged, forged, moved, or already resumed)",
            "status": "failed"
        })
    );
    // Moved to another run id, or edited: refused the same way.
    let other = suspend(home.path(), "other");
    let other_record = cells_dir(home.path()).join(format!("{other}.cell"));
    let moved = cells_dir(home.path()).join("cm_000000000000000000000000.cell");
    std::fs::copy(&other_record, &moved).unwrap();
    let out = finish(talon(
        home.path(),
        &["exec", "--wait", "cm_000000000000000000000000"],
    ));
    pretty_assertions::assert_eq!(
        r.value(&result(&out)),
        json!({
            "code": "snapshot_restore_failed",
            "error": "suspended cell \"<cm_2>\" cannot be restored: its record failed authentication (damaged, forged, moved, or already resumed)",
            "status": "failed"
        })
    );
    let mut bytes = std::fs::read(&other_record).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&other_record, &bytes).unwrap();
    let out = finish(talon(home.path(), &["exec", "--wait", &other]));
    pretty_assertions::assert_eq!(
        r.value(&result(&out)),
        json!({
            "code": "snapshot_restore_failed",
            "error": "suspended cell \"<cm_3>\" cannot be restored: its record failed authentication (damaged, forged, moved, or already resumed)",
            "status": "failed"
        })
    );
}

#[test]
fn files_planted_in_the_store_never_hang_a_later_exec() {
    let home = tempfile::tempdir().unwrap();
    let run_id = suspend(home.path(), "still resumable");
    let dir = cells_dir(home.path());
    assert!(
        Command::new("mkfifo")
            .arg(dir.join("cm_fifo.cell"))
            .status()
            .unwrap()
            .success()
    );
    std::os::unix::fs::symlink("/dev/zero", dir.join("cm_zero.cell")).unwrap();
    std::fs::File::create(dir.join("cm_junk.cell"))
        .unwrap()
        .set_len(200 << 20)
        .unwrap();
    std::fs::write(dir.join("cm_dead.cell.tmp999999999"), "half a record").unwrap();
    let out = finish(talon(home.path(), &["exec", "--code", "return 1 + 1"]));
    assert_eq!(result(&out), json!({"status": "completed", "value": 2}));
    let out = finish(talon(home.path(), &["exec", "--wait", &run_id]));
    assert_eq!(
        result(&out),
        json!({"status": "completed", "value": "still resumable"})
    );
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.ends_with(".mark"))
        .collect();
    assert_eq!(left, Vec::<String>::new(), "planted entries are cleaned up");
}
