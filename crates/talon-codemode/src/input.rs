//! `exec` input: `code` (or its alias `command`), `language`, and the checks
//! made before any guest code runs: module loading (found in code, not in
//! strings, comments or regular expressions) and shell commands sent by
//! mistake.

use serde_json::Value;
use talon_protocol::CodeModeErrorCode;

use crate::config::Language;

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

impl ExecInput {
    /// Reads and checks `exec` arguments against the enabled languages.
    pub fn parse(args: &Value, languages: &[Language]) -> Result<Self, InputError> {
        let Some(object) = args.as_object() else {
            return Err(invalid(format!("{EXPECTS}; got {args}")));
        };
        let text = |key: &str| -> Result<Option<&str>, InputError> {
            match object.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.as_str())),
                Some(other) => Err(invalid(format!("`{key}` must be a string, got {other}"))),
            }
        };
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
                        "unsupported language {other:?}; exec runs \"javascript\" or \"typescript\""
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
                "`{command}` looks like a shell command. {EXPECTS}. To run a shell command, call the shell tool from \
                 the program: await tools.call(\"openclaw:core:exec\", {{ command: \"...\" }}) (when it is available)."
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
/// comments and regular-expression literals.
pub fn module_access(code: &str) -> Option<ModuleAccess> {
    let tokens = lex(code);
    for (i, token) in tokens.iter().enumerate() {
        let Token::Ident(name, line) = token else {
            continue;
        };
        let prev = i.checked_sub(1).and_then(|j| tokens.get(j));
        let next = tokens.get(i + 1);
        let after_dot = matches!(prev, Some(Token::Punct('.', _)));
        let found = match (name.as_str(), next) {
            ("import", Some(Token::Punct('(', _))) if !after_dot => Some("import()"),
            ("import", Some(Token::Punct('.', _))) if !after_dot => Some("import.meta"),
            ("import", Some(Token::Ident(..) | Token::Str(_) | Token::Punct('{' | '*', _)))
                if !after_dot =>
            {
                Some("import declaration")
            }
            ("require", Some(Token::Punct('(' | '.', _))) if !after_dot => Some("require"),
            ("require", Some(Token::Punct('(', _))) if after_dot => {
                let owner = i.checked_sub(2).and_then(|j| tokens.get(j));
                matches!(owner, Some(Token::Ident(o, _)) if o == "module")
                    .then_some("module.require")
            }
            ("createRequire", Some(Token::Punct('(', _))) => Some("createRequire"),
            _ => None,
        };
        if let Some(pattern) = found {
            return Some(ModuleAccess {
                pattern,
                line: *line,
            });
        }
    }
    None
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String, usize),
    Punct(char, usize),
    /// A string literal or a whole template (its text is not code).
    Str(usize),
    Number,
}

/// Keywords after which `/` starts a regular expression.
const REGEX_AFTER: &[&str] = &[
    "return",
    "typeof",
    "case",
    "do",
    "else",
    "in",
    "of",
    "new",
    "delete",
    "void",
    "throw",
    "instanceof",
    "yield",
    "await",
];

/// A small JavaScript lexer: enough to tell code from strings, template
/// text, comments and regular-expression literals. Template `${...}`
/// substitutions are lexed as code.
fn lex(code: &str) -> Vec<Token> {
    let chars: Vec<char> = code.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    let mut line = 1;
    // Open `${` substitutions: the brace depth inside each.
    let mut templates: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                i += 2;
                while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
                i += 2;
            }
            '/' if regex_allowed(tokens.last()) => {
                i += 1;
                let mut class = false;
                while i < chars.len() && chars[i] != '\n' {
                    match chars[i] {
                        '\\' => i += 1,
                        '[' => class = true,
                        ']' => class = false,
                        '/' if !class => break,
                        _ => {}
                    }
                    i += 1;
                }
                i += 1;
                while i < chars.len() && chars[i].is_alphabetic() {
                    i += 1;
                }
                tokens.push(Token::Str(line));
            }
            '\'' | '"' => {
                let quote = c;
                i += 1;
                while i < chars.len() && chars[i] != quote && chars[i] != '\n' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                tokens.push(Token::Str(line));
            }
            '`' => {
                i = template_text(&chars, i + 1, &mut line, &mut templates, &mut depth);
                tokens.push(Token::Str(line));
            }
            '}' if templates.last() == Some(&depth) => {
                // End of a `${...}` substitution: back into template text.
                templates.pop();
                i = template_text(&chars, i + 1, &mut line, &mut templates, &mut depth);
                tokens.push(Token::Str(line));
            }
            c if c.is_alphabetic() || c == '_' || c == '$' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$')
                {
                    i += 1;
                }
                tokens.push(Token::Ident(chars[start..i].iter().collect(), line));
            }
            c if c.is_ascii_digit() => {
                while i < chars.len()
                    && (chars[i].is_alphanumeric() || chars[i] == '.' || chars[i] == '_')
                {
                    i += 1;
                }
                tokens.push(Token::Number);
            }
            _ => {
                match c {
                    '{' => depth += 1,
                    '}' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                tokens.push(Token::Punct(c, line));
                i += 1;
            }
        }
    }
    tokens
}

/// Skips template text from `i` up to the closing backtick (returns the
/// index after it) or up to a `${` (records the substitution and returns
/// the index after it, so its code is lexed).
fn template_text(
    chars: &[char],
    mut i: usize,
    line: &mut usize,
    templates: &mut Vec<usize>,
    depth: &mut usize,
) -> usize {
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '`' => return i + 1,
            '$' if chars.get(i + 1) == Some(&'{') => {
                *depth += 1;
                templates.push(*depth);
                return i + 2;
            }
            '\n' => {
                *line += 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    i
}

fn regex_allowed(previous: Option<&Token>) -> bool {
    match previous {
        None => true,
        Some(Token::Ident(word, _)) => REGEX_AFTER.contains(&word.as_str()),
        Some(Token::Number | Token::Str(_)) => false,
        Some(Token::Punct(c, _)) => !matches!(c, ')' | ']' | '}'),
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
