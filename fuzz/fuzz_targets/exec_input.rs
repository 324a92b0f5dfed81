//! Arbitrary `exec` arguments and cell text through the checks that run
//! before any guest code: the source size cap, the code/command alias, the
//! shell and module scanners, the TypeScript nesting estimate and the
//! threaded strip behind it (`javascript()` runs the estimate, then SWC on
//! its own large-stack thread). Every outcome is a value or an
//! `InputError`; nothing recurses on the host stack without a bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use talon_codemode::typescript::{MAX_NESTING, check_nesting, nesting_estimate};
use talon_codemode::{ExecInput, Language, module_access, shell_command};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = module_access(text);
    let _ = shell_command(text);
    let estimate = nesting_estimate(text, MAX_NESTING);
    assert_eq!(estimate > MAX_NESTING, check_nesting(text).is_err());
    let languages = [Language::JavaScript, Language::TypeScript];
    if let Ok(args) = serde_json::from_str::<serde_json::Value>(text) {
        if let Ok(input) = ExecInput::parse(&args, &languages) {
            let _ = input.javascript();
        }
    }
    for language in ["javascript", "typescript"] {
        let args = serde_json::json!({"code": text, "language": language});
        // A small cap: over it, refused before any scan.
        if let Err(e) = ExecInput::parse_with_limit(&args, &languages, 4096) {
            if text.len() > 4096 {
                assert_eq!(e.code.as_str(), "invalid_input");
            }
        }
        if let Ok(input) = ExecInput::parse(&args, &languages) {
            let _ = input.javascript();
        }
    }
});
