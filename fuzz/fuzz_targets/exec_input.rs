//! Arbitrary `exec` arguments and cell text through the checks that run
//! before any guest code: the code/command alias, the shell and module
//! lexers, and TypeScript stripping. Every outcome is a value or an
//! `InputError`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use talon_codemode::{ExecInput, Language, module_access, shell_command};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = module_access(text);
    let _ = shell_command(text);
    let languages = [Language::JavaScript, Language::TypeScript];
    if let Ok(args) = serde_json::from_str::<serde_json::Value>(text) {
        if let Ok(input) = ExecInput::parse(&args, &languages) {
            let _ = input.javascript();
        }
    }
    for language in ["javascript", "typescript"] {
        let args = serde_json::json!({"code": text, "language": language});
        if let Ok(input) = ExecInput::parse(&args, &languages) {
            let _ = input.javascript();
        }
    }
});
