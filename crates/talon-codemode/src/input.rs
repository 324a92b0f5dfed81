//! `exec` input: `code` (or its alias `command`), `language`, and the checks
//! made before any guest code runs: the source size cap (first, before
//! anything reads the source), module loading (found in code, not in
//! strings, comments or regular expressions) and shell commands sent by
//! mistake. Every check is a linear, iterative pass over the source's
//! bytes: nothing here recurses on the input's nesting or copies it
//! character by character.

use serde_json::Value;
use talon_protocol::CodeModeErrorCode;

use crate::config::{CodeModeConfig, DEFAULT_MAX_SOURCE_BYTES, Language};
use crate::scan::{Kind, Scanner};

/// A checked `exec` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecInput {
    /// The cell: the body of an async function.
    pub code: String,
    /// Its language.
    pub language: Language,
}

/// Why an `exec` request was refused before running.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct InputError {
    /// `invalid_input`, `unsupported_language` or `module_access_denied`.
    pub code: CodeModeErrorCode,
    /// What was wrong and what `exec` expects.
    pub message: String,
}

fn invalid(message: impl Into<String>) -> InputError {
    InputError {
        code: CodeModeErrorCode::InvalidInput,
        message: message.into(),
    }
}

const EXPECTS: &str = "exec expects `code`: the body of an async JavaScript (or TypeScript) function that uses the \
                       guest API (tools, MCP, API, text, json) and `return`s a value";

/// At most this much of a rejected value is quoted back in a message.
const QUOTE_CHARS: usize = 120;

/// `value` for an error message, cut to [`QUOTE_CHARS`] characters.
fn quote(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{:?}", cut(s)),
        Value::Array(a) => format!("an array of {} items", a.len()),
        Value::Object(o) => format!("an object with {} keys", o.len()),
        other => other.to_string(),
    }
}

/// `text` cut to [`QUOTE_CHARS`] characters.
fn cut(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(QUOTE_CHARS) {
        Some((end, _)) => format!("{}...", &text[..end]).into(),
        None => text.into(),
    }
}

/// Fails when `code` is over `max_bytes` (`invalid_input`, naming the
/// limit). The first check of a cell, before any scan, strip or eval.
pub fn check_source_size(code: &str, max_bytes: usize) -> Result<(), InputError> {
    if code.len() > max_bytes {
        return Err(invalid(format!(
            "the cell is {} bytes, over the limit of {max_bytes} bytes (tools.codeMode.maxSourceBytes); \
             send a smaller program: keep data out of the source and fetch or compute it in the cell",
            code.len()
        )));
    }
    Ok(())
}

impl ExecInput {
    /// Reads and checks `exec` arguments against the enabled languages,
    /// with the default source cap ([`DEFAULT_MAX_SOURCE_BYTES`]).
    pub fn parse(args: &Value, languages: &[Language]) -> Result<Self, InputError> {
        Self::parse_with_limit(args, languages, DEFAULT_MAX_SOURCE_BYTES)
    }

    /// Reads and checks `exec` arguments against a run's settings: its
    /// languages and `maxSourceBytes`.
    pub fn parse_for(args: &Value, config: &CodeModeConfig) -> Result<Self, InputError> {
        Self::parse_with_limit(args, &config.languages, config.max_source_bytes)
    }

    /// Reads and checks `exec` arguments: sources over `max_source_bytes`
    /// are refused before anything else reads them.
    pub fn parse_with_limit(
        args: &Value,
        languages: &[Language],
        max_source_bytes: usize,
    ) -> Result<Self, InputError> {
        let Some(object) = args.as_object() else {
            return Err(invalid(format!("{EXPECTS}; got {}", quote(args))));
        };
        let text = |key: &str| -> Result<Option<&str>, InputError> {
            match object.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.as_str())),
                Some(other) => Err(invalid(format!(
                    "`{key}` must be a string, got {}",
                    quote(other)
                ))),
            }
        };
        for key in ["code", "command"] {
            if let Some(Value::String(source)) = object.get(key) {
                check_source_size(source, max_source_bytes)?;
            }
        }
        let code = match (text("code")?, text("command")?) {
            (Some(code), Some(command)) if code != command => {
                return Err(invalid(
                    "`command` is an alias of `code`; when both are given they must be equal",
                ));
            }
            (Some(code), _) | (None, Some(code)) => code,
            (None, None) => return Err(invalid(EXPECTS)),
        };
        if code.trim().is_empty() {
            return Err(invalid(format!("`code` is empty; {EXPECTS}")));
        }
        let language = match text("language")? {
            None | Some("javascript") | Some("js") => Language::JavaScript,
            Some("typescript") | Some("ts") => Language::TypeScript,
            Some(other) => {
                return Err(InputError {
                    code: CodeModeErrorCode::UnsupportedLanguage,
                    message: format!(
                        "unsupported language {:?}; exec runs \"javascript\" or \"typescript\"",
                        cut(other)
                    ),
                });
            }
        };
        if !languages.contains(&language) {
            return Err(InputError {
                code: CodeModeErrorCode::UnsupportedLanguage,
                message: format!(
                    "language {:?} is not enabled for this agent",
                    language.as_str()
                ),
            });
        }
        if let Some(command) = shell_command(code) {
            return Err(invalid(format!(
                "`{}` looks like a shell command. {EXPECTS}. To run a shell command, call the shell tool from \
                 the program: await tools.call(\"openclaw:core:exec\", {{ command: \"...\" }}) (when it is available).",
                cut(command)
            )));
        }
        if let Some(access) = module_access(code) {
            return Err(InputError {
                code: CodeModeErrorCode::ModuleAccessDenied,
                message: format!(
                    "module loading is not available in exec ({} on line {}); use the guest API instead",
                    access.pattern, access.line
                ),
            });
        }
        Ok(Self {
            code: code.to_owned(),
            language,
        })
    }
}

impl ExecInput {
    /// The cell as JavaScript: JavaScript as given (the TypeScript
    /// transformer is never touched), TypeScript with its types stripped
    /// in place (`typescript_transform_failed` when that cannot be done).
    pub fn javascript(&self) -> Result<std::borrow::Cow<'_, str>, InputError> {
        match self.language {
            Language::JavaScript => Ok(std::borrow::Cow::Borrowed(&self.code)),
            Language::TypeScript => crate::typescript::strip_types(&self.code)
                .map(std::borrow::Cow::Owned)
                .map_err(|e| InputError {
                    code: CodeModeErrorCode::TypescriptTransformFailed,
                    message: e.to_string(),
                }),
        }
    }
}

/// Commands that start shell input sent to `exec` by mistake.
const SHELL_COMMANDS: &[&str] = &[
    "apt", "apt-get", "awk", "bash", "cargo", "cat", "cd", "chmod", "chown", "cp", "curl", "df",
    "docker", "du", "echo", "env", "export", "find", "git", "grep", "head", "kill", "kubectl",
    "less", "ls", "make", "mkdir", "mv", "node", "npm", "npx", "pip", "pip3", "ps", "pwd",
    "python", "python3", "rm", "sed", "sh", "ssh", "sudo", "tail", "tar", "touch", "wget", "which",
];

/// The first line of `code` when it reads as a shell command: a known
/// command word, alone or followed by whitespace and something that does
/// not continue a JavaScript expression (`ls -la`, `cat file | grep x`).
pub fn shell_command(code: &str) -> Option<&str> {
    let line = code.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line_body = line.strip_prefix("$ ").unwrap_or(line);
    let word_end = line_body
        .find(char::is_whitespace)
        .unwrap_or(line_body.len());
    let (word, rest) = line_body.split_at(word_end);
    if !SHELL_COMMANDS.contains(&word) {
        return None;
    }
    let rest = rest.trim_start();
    let continues_js = rest.starts_with([
        '=', '(', '.', '[', '+', '*', '%', '<', '?', ',', ';', ')', '`',
    ]);
    let js_keywords = code.contains("return")
        || code.contains("await")
        || code.contains("const ")
        || code.contains("=>");
    (!continues_js && !js_keywords).then_some(line)
}

/// A module-loading construct found in code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleAccess {
    /// What was found: `import()`, `import declaration`, `import.meta`,
    /// `require`, `createRequire`, `module.require`.
    pub pattern: &'static str,
    /// 1-based line.
    pub line: usize,
}

/// Finds module loading in code, skipping strings, template text,
/// comments and regular-expression literals. One pass over the bytes with
/// a four-token window: no recursion, no copy of the source.
pub fn module_access(code: &str) -> Option<ModuleAccess> {
    let mut tokens = Scanner::new(code).peekable();
    let (mut before, mut prev): (Option<Kind<'_>>, Option<Kind<'_>>) = (None, None);
    while let Some(token) = tokens.next() {
        let next = tokens.peek().map(|t| t.kind);
        if let Kind::Ident(name) = token.kind
            && let Some(pattern) = module_pattern(name, before, prev, next)
        {
            return Some(ModuleAccess {
                pattern,
                line: token.line,
            });
        }
        before = prev;
        prev = Some(token.kind);
    }
    None
}

/// The module-loading construct `name` starts, given its neighbours.
fn module_pattern(
    name: &str,
    before: Option<Kind<'_>>,
    prev: Option<Kind<'_>>,
    next: Option<Kind<'_>>,
) -> Option<&'static str> {
    let after_dot = matches!(prev, Some(Kind::Punct("." | "?.")));
    let call = matches!(next, Some(Kind::Punct("(" | "?.")));
    match (name, next) {
        ("import", Some(Kind::Punct("("))) if !after_dot => Some("import()"),
        ("import", Some(Kind::Punct("."))) if !after_dot => Some("import.meta"),
        (
            "import",
            Some(
                Kind::Ident(_)
                | Kind::Str
                | Kind::Template
                | Kind::TemplateOpen
                | Kind::Punct("{" | "*"),
            ),
        ) if !after_dot => Some("import declaration"),
        ("require", Some(Kind::Punct("." | "(" | "?."))) if !after_dot => Some("require"),
        ("require", _) if after_dot && call => {
            matches!(before, Some(Kind::Ident("module"))).then_some("module.require")
        }
        ("createRequire", _) if call => Some("createRequire"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const ALL: &[Language] = &[Language::JavaScript, Language::TypeScript];

    fn parse(args: Value) -> Result<ExecInput, InputError> {
        ExecInput::parse(&args, ALL)
    }

    #[test]
    fn code_command_alias_and_language() {
        assert_eq!(
            parse(json!({"code": "return 1"})).unwrap().language,
            Language::JavaScript
        );
        assert_eq!(
            parse(json!({"command": "return 1"})).unwrap().code,
            "return 1"
        );
        assert!(parse(json!({"code": "return 1", "command": "return 1"})).is_ok());
        assert_eq!(
            parse(json!({"code": "return 1", "command": "return 2"}))
                .unwrap_err()
                .code,
            CodeModeErrorCode::InvalidInput
        );
        assert_eq!(
            parse(json!({"code": "let x: number = 1", "language": "typescript"}))
                .unwrap()
                .language,
            Language::TypeScript
        );
        assert_eq!(
            parse(json!({"code": "1", "language": "python"}))
                .unwrap_err()
                .code,
            CodeModeErrorCode::UnsupportedLanguage
        );
        let js_only = ExecInput::parse(
            &json!({"code": "1", "language": "typescript"}),
            &[Language::JavaScript],
        );
        assert_eq!(
            js_only.unwrap_err().code,
            CodeModeErrorCode::UnsupportedLanguage
        );
        for bad in [
            json!({}),
            json!({"code": "  "}),
            json!({"code": 5}),
            json!("return 1"),
            json!(null),
        ] {
            assert_eq!(
                parse(bad.clone()).unwrap_err().code,
                CodeModeErrorCode::InvalidInput,
                "{bad}"
            );
        }
    }

    #[test]
    fn javascript_passes_through_and_typescript_is_stripped() {
        let js = parse(json!({"code": "const x = 1; return x"})).unwrap();
        assert!(
            matches!(js.javascript().unwrap(), std::borrow::Cow::Borrowed(_)),
            "JavaScript is not transformed"
        );
        let ts = parse(json!({"code": "const x: number = 1; return x", "language": "typescript"}))
            .unwrap();
        assert_eq!(ts.javascript().unwrap(), "const x         = 1; return x");
        let bad = parse(json!({"code": "enum E { A }", "language": "typescript"})).unwrap();
        assert_eq!(
            bad.javascript().unwrap_err().code,
            CodeModeErrorCode::TypescriptTransformFailed
        );
    }

    #[test]
    fn shell_input_is_refused_with_guidance() {
        for shell in [
            "ls -la",
            "cat file | grep foo",
            "$ git status",
            "pwd",
            "rm -rf build",
            "npm install",
            "cd /tmp && ls",
        ] {
            let e = parse(json!({"code": shell})).unwrap_err();
            assert_eq!(e.code, CodeModeErrorCode::InvalidInput, "{shell}");
            assert!(
                e.message.contains("looks like a shell command")
                    && e.message.contains("exec expects"),
                "{}",
                e.message
            );
        }
        for js in [
            "cat = 1; return cat",
            "echo(1)",
            "ls.length",
            "return ls - la",
            "const find = 1\nreturn find",
        ] {
            assert!(parse(json!({"code": js})).is_ok(), "{js}");
        }
    }

    #[test]
    fn module_loading_is_found_in_code_only() {
        let denied = [
            ("const fs = require('fs')", "require"),
            ("return await import('os')", "import()"),
            ("import fs from 'fs'", "import declaration"),
            ("import { x } from \"y\"", "import declaration"),
            ("import * as m from 'm'", "import declaration"),
            ("import 'side-effect'", "import declaration"),
            ("return import.meta.url", "import.meta"),
            ("require.resolve('x')", "require"),
            ("const r = createRequire(url)", "createRequire"),
            ("module.require('x')", "module.require"),
            ("const t = `${require('fs')}`", "require"),
            ("const t = `a ${ `b ${import('x')}` } c`", "import()"),
        ];
        for (code, pattern) in denied {
            let e = parse(json!({"code": code})).unwrap_err();
            assert_eq!(e.code, CodeModeErrorCode::ModuleAccessDenied, "{code}");
            assert!(e.message.contains(pattern), "{code}: {}", e.message);
        }
        let allowed = [
            "return 'import x from y'",
            "// require('fs')\nreturn 1",
            "/* import('os') */ return 2",
            "return `require('x') is text`",
            "return /import\\(x\\)/.test(s)",
            "const required = 1; return required",
            "return obj.require('x')",
            "return tools.call('openclaw:core:import', {})",
            "const a = 4 / 2; const b = a / 2 /* import() */; return b",
            "const importance = 3; return importance",
        ];
        for code in allowed {
            assert!(
                parse(json!({"code": code})).is_ok(),
                "{code}: {:?}",
                parse(json!({"code": code}))
            );
        }
        assert_eq!(
            module_access("const a = 1;\n\nrequire('x')"),
            Some(ModuleAccess {
                pattern: "require",
                line: 3
            })
        );
    }
}
