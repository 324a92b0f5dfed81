//! TypeScript cells become JavaScript by type stripping (SWC's fast
//! stripper in strip-only mode): type syntax is blanked in place, so every
//! line and column of the output matches the input and guest stack traces
//! point at the TypeScript the model wrote. No type checking, no module
//! resolution. Syntax that cannot be erased (enums, namespaces, parameter
//! properties) is refused, as Node's type stripping refuses it.
//!
//! The transformer is only touched by TypeScript cells: JavaScript cells
//! never call into this module ([`transforms_run`] counts the calls).

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use swc_common::errors::Handler;
use swc_common::sync::Lrc;
use swc_common::{GLOBALS, Globals, SourceMap};

static TRANSFORMS: AtomicUsize = AtomicUsize::new(0);

/// How many TypeScript transforms this process ran.
pub fn transforms_run() -> usize {
    TRANSFORMS.load(Ordering::Relaxed)
}

/// A TypeScript cell that could not be turned into JavaScript
/// (`typescript_transform_failed`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("typescript_transform_failed: {0}")]
pub struct TypeScriptError(pub String);

/// Collects the handler's diagnostics.
#[derive(Clone, Default)]
struct Diagnostics(Arc<Mutex<Vec<u8>>>);

impl Write for Diagnostics {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut out) = self.0.lock() {
            out.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Strips the types of a TypeScript cell, keeping positions.
pub fn strip_types(code: &str) -> Result<String, TypeScriptError> {
    TRANSFORMS.fetch_add(1, Ordering::Relaxed);
    let options: swc_ts_fast_strip::Options =
        serde_json::from_value(serde_json::json!({"mode": "strip-only", "filename": "cell.ts"}))
            .map_err(|e| TypeScriptError(format!("options: {e}")))?;
    let diagnostics = Diagnostics::default();
    let cm: Lrc<SourceMap> = Lrc::default();
    let handler = Handler::with_emitter_writer(Box::new(diagnostics.clone()), Some(cm.clone()));
    // The cell is wrapped in an async function later; strip it as a script
    // body inside one so `await` and `return` parse.
    let wrapped = format!("async function __cell() {{{code}\n}}");
    let result = GLOBALS.set(&Globals::new(), || {
        swc_ts_fast_strip::operate(&cm, &handler, wrapped, options)
    });
    match result {
        Ok(output) => {
            let body = output
                .code
                .strip_prefix("async function __cell() {")
                .and_then(|rest| rest.strip_suffix("\n}"))
                .ok_or_else(|| TypeScriptError("the stripped cell lost its shape".into()))?;
            Ok(body.to_owned())
        }
        Err(error) => {
            let text = diagnostics
                .0
                .lock()
                .map(|d| String::from_utf8_lossy(&d).into_owned())
                .unwrap_or_default();
            let detail = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
                .to_owned();
            let message = if detail.is_empty() {
                error.message.clone()
            } else {
                format!("{}: {detail}", error.message)
            };
            Err(TypeScriptError(message))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_blanked_in_place() {
        let ts = "const n: number = 1;\ninterface P { x: number }\nfunction f(a: string, b?: P): string {\n  return a;\n}\nreturn f(`${n}`) as string;";
        let js = strip_types(ts).unwrap();
        assert_eq!(js.lines().count(), ts.lines().count());
        assert_eq!(js.len(), ts.len(), "positions are kept");
        assert!(
            !js.contains(": number") && !js.contains("interface"),
            "{js}"
        );
        assert!(js.contains("return f(`${n}`)"));
    }

    #[test]
    fn unerasable_or_broken_syntax_is_refused() {
        for bad in [
            "enum Color { Red }\nreturn Color.Red",
            "namespace N { export const x = 1 }",
            "let x: = 1",
        ] {
            let error = strip_types(bad).unwrap_err();
            assert!(
                error
                    .to_string()
                    .starts_with("typescript_transform_failed: "),
                "{bad}: {error}"
            );
        }
    }
}
