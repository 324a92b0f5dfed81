//! Snapshots: a suspended cell survives a move to a fresh instance; bad
//! snapshots are rejected with a clear error, never a trap or a panic.

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use talon_protocol::CodeModeErrorCode;
use talon_sandbox::{CellStatus, HostFunctions, Limits, SandboxError, VmOptions};

use super::{TEST_KEY, assert_fresh_vm_works, run, sandbox, vm_with};

fn functions() -> HostFunctions {
    HostFunctions::new()
        .asynchronous("later")
        .sync("double", |args| {
            Ok(json!(
                args.first().and_then(|v| v.as_f64()).unwrap_or(0.0) * 2.0
            ))
        })
}

fn suspended() -> Vec<u8> {
    let mut vm = vm_with(Limits::default(), functions());
    let body = "const local = {seen: [1, 2, 3]}; const got = await later('x'); \
                return {local, got, doubled: double(got.n), random: Math.random()}";
    let CellStatus::Waiting(calls) = vm.run_cell(body).unwrap() else {
        panic!("expected waiting")
    };
    assert_eq!(calls.len(), 1);
    vm.snapshot().unwrap()
}

/// A completed cell's value without its `random` (Math.random() differs
/// from run to run), which must be a number.
fn without_random(mut value: Value) -> Value {
    let random = value.as_object_mut().and_then(|v| v.remove("random"));
    assert!(random.as_ref().is_some_and(Value::is_number), "{random:?}");
    value
}

fn restore(bytes: &[u8]) -> Result<talon_sandbox::Vm, SandboxError> {
    sandbox().restore_vm(bytes, VmOptions::default(), functions())
}

#[test]
fn a_suspended_cell_resumes_in_a_fresh_instance() {
    let bytes = suspended();
    let mut vm = restore(&bytes).unwrap();
    assert!(vm.has_cell());
    vm.settle(1, Ok(json!({"n": 21}))).unwrap();
    let CellStatus::Completed(value) = vm.resume().unwrap() else {
        panic!("expected completion")
    };
    // The local state and the settled result kept; the sync host function
    // was re-attached by name (doubled).
    pretty_assertions::assert_eq!(
        without_random(value),
        json!({"local": {"seen": [1, 2, 3]}, "got": {"n": 21}, "doubled": 42})
    );
    // A restored VM keeps working after the cell.
    assert_eq!(run(&mut vm, "return 'after'"), json!("after"));
    // Snapshots of a finished VM restore too.
    let again = vm.snapshot().unwrap();
    let mut vm = restore(&again).unwrap();
    assert!(!vm.has_cell());
    assert_eq!(run(&mut vm, "return 5"), json!(5));
}

#[test]
fn restored_copies_do_not_share_random_sequences() {
    let bytes = suspended();
    let mut a = restore(&bytes).unwrap();
    let mut b = restore(&bytes).unwrap();
    let sample = "Array.from({length: 8}, () => Math.random())";
    let (ra, rb) = (a.eval(sample).unwrap(), b.eval(sample).unwrap());
    assert_ne!(ra, rb);
}

#[test]
fn restore_without_the_host_function_fails_in_the_guest_only() {
    let bytes = suspended();
    let mut vm = sandbox()
        .restore_vm(&bytes, VmOptions::default(), HostFunctions::new())
        .unwrap();
    vm.settle(1, Ok(json!({"n": 1}))).unwrap();
    let error = vm.resume().unwrap_err();
    assert_eq!(
        error.to_string(),
        "Error: host function 'double' is not available"
    );
}

#[test]
fn a_stored_snapshot_is_small() {
    let bytes = suspended();
    assert!(
        bytes.len() < 100 * 1024,
        "snapshot is {} bytes",
        bytes.len()
    );
}

#[test]
fn snapshots_over_the_limit_are_refused() {
    let limits = Limits {
        max_snapshot_bytes: 1024,
        ..Limits::default()
    };
    let mut vm = vm_with(limits, functions());
    let error = vm.snapshot().unwrap_err();
    assert!(
        matches!(error, SandboxError::SnapshotTooLarge { limit: 1024, .. }),
        "{error:?}"
    );
    assert_eq!(error.code(), Some(CodeModeErrorCode::SnapshotLimitExceeded));
    let bytes = suspended();
    let options = VmOptions {
        limits,
        ..VmOptions::default()
    };
    let error = sandbox()
        .restore_vm(&bytes, options, functions())
        .unwrap_err();
    assert!(
        matches!(error, SandboxError::SnapshotTooLarge { .. }),
        "{error:?}"
    );
}

fn rejected(bytes: &[u8]) -> String {
    match restore(bytes) {
        Err(SandboxError::SnapshotInvalid(message)) => message,
        Err(other) => panic!("unexpected error {other:?}"),
        Ok(_) => panic!("bad snapshot accepted"),
    }
}

#[test]
fn bad_snapshots_are_rejected() {
    let good = suspended();
    assert_eq!(
        rejected(&good[..10]),
        "truncated: 10 bytes is shorter than the header"
    );
    assert!(rejected(&good[..good.len() - 1]).starts_with("truncated or padded"));
    assert_eq!(rejected(&[0u8; 200]), "not a Talon snapshot (bad magic)");
    let mut version = good.clone();
    version[4] = 9;
    assert_eq!(rejected(&version), "version 9, this build reads version 1");
    let mut corrupt = good.clone();
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0x55;
    assert_eq!(
        rejected(&corrupt),
        "authentication failed (corrupted, forged, or made with another key)"
    );
    // A forger without the key cannot reseal a modified snapshot.
    let mut forged = good.clone();
    forged[100] ^= 1;
    let digest: [u8; 32] = {
        use sha2::Digest as _;
        let mut h = Sha256::new();
        h.update(&forged[..48]);
        h.update(&forged[80..]);
        h.finalize().into()
    };
    forged[48..80].copy_from_slice(&digest);
    assert_eq!(
        rejected(&forged),
        "authentication failed (corrupted, forged, or made with another key)"
    );
    let mut other_image = good.clone();
    other_image[8] ^= 1;
    reseal(&mut other_image);
    assert_eq!(
        rejected(&other_image),
        "made from another module or base image"
    );
    let error = restore(&[]).unwrap_err();
    assert_eq!(error.code(), Some(CodeModeErrorCode::SnapshotRestoreFailed));
    assert_fresh_vm_works();
}

/// Recomputes the HMAC, as a forger holding the key would (the tests
/// check that even such snapshots fail cleanly).
fn reseal(bytes: &mut [u8]) {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&TEST_KEY).unwrap();
    mac.update(&bytes[..48]);
    mac.update(&bytes[80..]);
    let digest: [u8; 32] = mac.finalize().into_bytes().into();
    bytes[48..80].copy_from_slice(&digest);
}

fn forge(good: &[u8], body: &[u8]) -> Vec<u8> {
    let compressed = lz4_flex::block::compress(body);
    let mut out = good[..80].to_vec();
    out[40..44].copy_from_slice(&(compressed.len() as u32).to_le_bytes());
    out[44..48].copy_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&compressed);
    reseal(&mut out);
    out
}

#[test]
fn forged_snapshots_with_valid_checksums_fail_cleanly() {
    let good = suspended();
    let raw_len = u32::from_le_bytes(good[44..48].try_into().unwrap()) as usize;
    let body = lz4_flex::block::decompress(&good[80..], raw_len).unwrap();

    // Structural lies are caught by the decoder.
    let mut huge_memory = body.clone();
    huge_memory[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(rejected(&forge(&good, &huge_memory)).starts_with("memory size"));
    let mut bad_pointer = body.clone();
    bad_pointer[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(
        rejected(&forge(&good, &bad_pointer)),
        "runtime pointer out of range"
    );
    assert_eq!(
        rejected(&forge(&good, &body[..body.len() - 7])),
        "body truncated"
    );
    let mut trailing = body.clone();
    trailing.push(0);
    assert_eq!(
        rejected(&forge(&good, &trailing)),
        "trailing bytes after the pages"
    );

    let mut exhausted_ids = body.clone();
    exhausted_ids[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_eq!(
        rejected(&forge(&good, &exhausted_ids)),
        "call id counter out of range"
    );
    let injected = with_pending(&body, br#"[{"id":1,"name":"rmrf_everything","args":[]}]"#);
    assert_eq!(
        rejected(&forge(&good, &injected)),
        "pending call to 'rmrf_everything', which is not a registered async host function"
    );

    // Lies the decoder cannot see (pointers into the wrong place, scrambled
    // heap pages) become errors when the VM runs, never a panic.
    let mut scrambled = body.clone();
    scrambled[8..12].copy_from_slice(&64u32.to_le_bytes());
    scrambled[12..16].copy_from_slice(&128u32.to_le_bytes());
    let tail = scrambled.len() - 4096 * 3;
    for (i, b) in scrambled[tail..].iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(151);
    }
    match restore(&forge(&good, &scrambled)) {
        Err(e) => assert!(e.code().is_some(), "{e:?}"),
        Ok(mut vm) => {
            let _ = vm.settle(1, Ok(json!(1)));
            let _ = vm.resume();
            let _ = vm.run_cell("return 1");
        }
    }
    assert_fresh_vm_works();
}

/// Replaces the pending-call JSON of a snapshot body (see the layout in
/// `snapshot.rs`: 8 words, the id counter, the resolvers, then pending).
fn with_pending(body: &[u8], json: &[u8]) -> Vec<u8> {
    let word = |at: usize| u32::from_le_bytes(body[at..at + 4].try_into().unwrap()) as usize;
    let at = 40 + 4 + 16 * word(40);
    let old = word(at);
    let mut out = body[..at].to_vec();
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(json);
    out.extend_from_slice(&body[at + 4 + old..]);
    out
}

#[test]
fn a_snapshot_survives_a_restart() {
    // A second sandbox in the same process stands in for a new process: the
    // base image is deterministic, so its id (and the baked module) match.
    let bytes = suspended();
    let config = talon_sandbox::SandboxConfig {
        snapshot_key: Some(TEST_KEY),
        ..Default::default()
    };
    let restarted = talon_sandbox::Sandbox::new(config).unwrap();
    let mut vm = restarted
        .restore_vm(&bytes, VmOptions::default(), functions())
        .unwrap();
    vm.settle(1, Ok(json!({"n": 2}))).unwrap();
    let CellStatus::Completed(value) = vm.resume().unwrap() else {
        panic!("expected completion")
    };
    pretty_assertions::assert_eq!(
        without_random(value),
        json!({"local": {"seen": [1, 2, 3]}, "got": {"n": 2}, "doubled": 4})
    );
    // Another key cannot open it.
    let other = talon_sandbox::SandboxConfig {
        snapshot_key: Some([9; 32]),
        ..Default::default()
    };
    let other = talon_sandbox::Sandbox::new(other).unwrap();
    assert!(matches!(
        other.restore_vm(&bytes, VmOptions::default(), functions()),
        Err(SandboxError::SnapshotInvalid(_))
    ));
}
