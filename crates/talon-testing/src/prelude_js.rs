//! Reading a guest prelude's JavaScript as text, for the contract tests
//! that check it against the Rust side (host-function names and kinds,
//! registered API names, string arguments). The readers match the forms
//! the preludes are written in; a prelude rewritten another way makes them
//! find nothing, so the contract tests fail loudly rather than pass.

use std::collections::{BTreeMap, BTreeSet};

/// The source without its full-line comments (which name the host
/// functions in prose).
pub fn code(src: &str) -> String {
    src.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `c` can be part of a JavaScript identifier (ASCII forms).
pub fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// The identifier at the start of `s`.
pub fn ident(s: &str) -> &str {
    &s[..s.find(|c| !is_ident_char(c)).unwrap_or(s.len())]
}

/// A host function read into a constant: `const VAR = [WRAP(]g.NAME[)];`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    /// The constant.
    pub var: String,
    /// The host function's global name (`__...`).
    pub name: String,
    /// The wrapper it is passed through, if any (`sync`, `async`).
    pub wrap: Option<String>,
}

/// Every host function the code reads into a constant from `g.__NAME`.
pub fn captures(code: &str) -> Vec<Capture> {
    code.lines()
        .filter_map(|line| {
            let (var, rhs) = line.trim().strip_prefix("const ")?.split_once(" = ")?;
            let rhs = rhs.strip_suffix(';')?;
            let (wrap, inner) = match rhs.split_once('(') {
                Some((wrap, rest)) => (Some(wrap.to_owned()), rest.strip_suffix(')')?),
                None => (None, rhs),
            };
            let name = inner.strip_prefix("g.")?;
            (name.starts_with("__") && ident(name) == name).then(|| Capture {
                var: var.to_owned(),
                name: name.to_owned(),
                wrap,
            })
        })
        .collect()
}

/// Every `delete g.NAME` and the names of a `for (const name of [...])`
/// loop that runs `delete g[name]`.
pub fn deleted(code: &str) -> Vec<String> {
    let mut names: Vec<String> = code
        .split("delete g.")
        .skip(1)
        .map(|rest| ident(rest).to_owned())
        .collect();
    if let Some(at) = code.find("delete g[name]") {
        let head = &code[..at];
        if let Some(start) = head.rfind("for (const name of [") {
            let list = &head[start..];
            let list = &list[..list.find(']').unwrap_or(list.len())];
            names.extend(list.split('"').skip(1).step_by(2).map(str::to_owned));
        }
    }
    names
}

/// The text after each `pat` not preceded by an identifier character or
/// `.` (so `register(` does not match `xregister(` or `o.register(`).
pub fn calls<'a>(code: &'a str, pat: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    code.match_indices(pat)
        .filter(|(at, _)| {
            !code[..*at]
                .chars()
                .next_back()
                .is_some_and(|c| is_ident_char(c) || c == '.')
        })
        .map(move |(at, _)| &code[at + pat.len()..])
}

/// The string literal right after each `pat` (which ends with `"`).
pub fn literals(code: &str, pat: &str) -> BTreeSet<String> {
    calls(code, pat)
        .filter_map(|rest| rest.find('"').map(|end| rest[..end].to_owned()))
        .collect()
}

/// The first argument of each call of `fname`, as written.
pub fn first_args(code: &str, fname: &str) -> Vec<String> {
    calls(code, &format!("{fname}("))
        .map(|rest| {
            rest[..rest.find([',', ')']).unwrap_or(rest.len())]
                .trim()
                .to_owned()
        })
        .collect()
}

/// A JavaScript string literal's body, unescaped (the escapes the
/// preludes use: `\uXXXX`, `\n`, and a backslash before any other
/// character).
pub fn unescape(literal: &str) -> String {
    let mut out = String::new();
    let mut chars = literal.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                if let Some(c) = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    out.push(c);
                }
            }
            Some('n') => out.push('\n'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// The host functions a prelude's header comment documents, with the kind
/// it states (`//   __name(args)   sync: ...` gives `sync`).
pub fn documented(src: &str) -> BTreeMap<String, String> {
    src.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("//   __")?;
            let after = &rest[rest.find(')')? + 1..];
            let kind = after.trim_start().split(':').next()?;
            Some((format!("__{}", ident(rest)), kind.to_owned()))
        })
        .collect()
}

/// The items as a set of owned strings.
pub fn set<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> BTreeSet<String> {
    items.into_iter().map(|s| s.as_ref().to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_prelude_forms() {
        let src = "// header\n//   __a(x)   sync: data\n//   __b()   async: call\n\
                   const a = sync(g.__a);\nconst b = g.__b;\ndelete g.__b;\n\
                   for (const name of [\"__a\"]) {\n  delete g[name];\n}\n\
                   register(\"api\", f);\nxregister(\"no\");\nprint(3, x);\n";
        let code = code(src);
        assert_eq!(
            captures(&code),
            vec![
                Capture {
                    var: "a".into(),
                    name: "__a".into(),
                    wrap: Some("sync".into())
                },
                Capture {
                    var: "b".into(),
                    name: "__b".into(),
                    wrap: None
                },
            ]
        );
        assert_eq!(deleted(&code), ["__b", "__a"]);
        assert_eq!(literals(&code, "register(\""), set(["api"]));
        assert_eq!(first_args(&code, "print"), ["3"]);
        assert_eq!(
            documented(src),
            BTreeMap::from([
                ("__a".into(), "sync".into()),
                ("__b".into(), "async".into())
            ])
        );
        assert_eq!(unescape("\\u001f\\n\\\""), "\u{1f}\n\"");
    }
}
