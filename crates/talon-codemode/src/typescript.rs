//! TypeScript cells become JavaScript by type stripping (SWC's fast
//! stripper in strip-only mode): type syntax is blanked in place, so every
//! line and column of the output matches the input and guest stack traces
//! point at the TypeScript the model wrote. No type checking, no module
//! resolution. Syntax that cannot be erased (enums, namespaces, parameter
//! properties) is refused, as Node's type stripping refuses it.
//!
//! The transformer is only touched by TypeScript cells: JavaScript cells
//! never call into this module ([`transforms_run`] counts the calls).
//!
//! SWC's parser, its strip visitor and the tree's drop recurse once per
//! level of nesting on the calling thread's stack, and Rust cannot catch a
//! stack overflow: it aborts the process. So a cell is first refused when
//! its lexical nesting estimate (an upper bound on the syntax tree's
//! depth, see [`crate::scan`]) exceeds [`MAX_NESTING`], and the strip runs
//! on its own thread with a [`STRIP_STACK_BYTES`] stack, measured to hold
//! four times the deepest accepted cell of every shape in debug and
//! release builds (`cargo bench -p talon-codemode --bench strip_stack`).
//!
//! SWC's syntax tree costs the host up to ~40 bytes per byte of realistic
//! TypeScript (measured: `--bench source_memory`), outside any sandbox
//! limit. At most [`MAX_CONCURRENT_STRIPS`] strips run at once in a process,
//! so that cost is bounded by that many cells at `maxSourceBytes`, however
//! many runs send TypeScript at the same moment.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

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

/// The deepest nesting estimate a TypeScript cell may have.
pub const MAX_NESTING: usize = 1_000;

/// The stack of the strip thread. Only the pages a strip touches are
/// committed; the rest is reserved address space.
pub const STRIP_STACK_BYTES: usize = 128 << 20;

/// Strips the types of a TypeScript cell, keeping positions: refused when
/// it nests deeper than [`MAX_NESTING`], run on a thread with a
/// [`STRIP_STACK_BYTES`] stack.
pub fn strip_types(code: &str) -> Result<String, TypeScriptError> {
    TRANSFORMS.fetch_add(1, Ordering::Relaxed);
    check_nesting(code)?;
    strip_with_stack(code, STRIP_STACK_BYTES)
}

/// Refuses a cell whose nesting estimate exceeds [`MAX_NESTING`].
pub fn check_nesting(code: &str) -> Result<(), TypeScriptError> {
    crate::scan::nesting_estimate(code, MAX_NESTING)
        .map(drop)
        .map_err(|too_deep| {
            TypeScriptError(format!(
                "the cell nests too deeply to transform (nesting estimate over {MAX_NESTING} at line {}: \
                 brackets, operator chains, member and call chains and nested statements all count); \
                 split deep expressions into named steps",
                too_deep.line
            ))
        })
}

/// The nesting estimate of `code` (at most `limit + 1` when over it).
#[doc(hidden)]
pub fn nesting_estimate(code: &str, limit: usize) -> usize {
    crate::scan::nesting_estimate(code, limit).unwrap_or_else(|e| e.estimate)
}

/// The most strips that run at once in one process (more wait their turn).
pub const MAX_CONCURRENT_STRIPS: usize = 2;

/// A counting gate over [`MAX_CONCURRENT_STRIPS`].
struct Gate {
    running: Mutex<usize>,
    freed: Condvar,
}

static GATE: Gate = Gate {
    running: Mutex::new(0),
    freed: Condvar::new(),
};

/// A strip's place through the gate, given back on drop.
struct Admitted;

impl Gate {
    fn admit(&'static self) -> Admitted {
        // A poisoned lock only means a strip thread panicked while counting;
        // the count itself is still right.
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        while *running >= MAX_CONCURRENT_STRIPS {
            running = self.freed.wait(running).unwrap_or_else(|p| p.into_inner());
        }
        *running += 1;
        Admitted
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut running = GATE.running.lock().unwrap_or_else(|p| p.into_inner());
        *running = running.saturating_sub(1);
        GATE.freed.notify_one();
    }
}

/// Strips `code` on a new thread with a `stack_bytes` stack, without the
/// nesting check (for measurement; a too-small stack aborts the process).
#[doc(hidden)]
pub fn strip_with_stack(code: &str, stack_bytes: usize) -> Result<String, TypeScriptError> {
    let _admitted = GATE.admit();
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("talon-ts-strip".into())
            .stack_size(stack_bytes)
            .spawn_scoped(scope, || strip_here(code))
            .map_err(|e| TypeScriptError(format!("could not start the transformer: {e}")))?;
        worker
            .join()
            .unwrap_or_else(|_| Err(TypeScriptError("the transformer failed".into())))
    })
}

/// Strips on the calling thread.
fn strip_here(code: &str) -> Result<String, TypeScriptError> {
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
