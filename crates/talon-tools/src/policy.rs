//! Allow/deny policy over tool names and ids: exact names, globs (`*`,
//! `?`) and named groups (`group:<name>`).
//!
//! A policy glob ([`NameGlob`]) is about names, not paths: `*` matches any
//! run of characters (`:` included, so `mcp:github:*` is every tool of
//! that server), `?` exactly one, and every other character is itself
//! (`[`, `{` and `\` too), compared without ASCII case. It is compiled
//! once, with `globset` (no separator, so `*` crosses everything), from
//! the pattern with its other characters escaped. `?` is one byte there:
//! the same as one character for names (`[A-Za-z0-9_.-]`) and ids made of
//! them. File paths use `globset`'s path semantics instead
//! (`talon-core-tools`' `list`/`grep`, where `*` stays in a directory).

use std::collections::BTreeMap;

use globset::{GlobBuilder, GlobMatcher};
use talon_protocol::ToolSource;

/// A tool as policy sees it.
#[derive(Debug, Clone, Copy)]
pub struct PolicySubject<'a> {
    /// The tool's name.
    pub name: &'a str,
    /// Its catalog id.
    pub id: &'a str,
    /// Its source.
    pub source: ToolSource,
}

/// One pattern of a policy list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    /// Matches a name or an id exactly.
    Exact(String),
    /// `*` matches any run, `?` one character; against names and ids.
    Glob(NameGlob),
    /// `group:<name>`: the tools a group lists, or a whole source
    /// (`group:plugins`, `group:mcp`, `group:client`, `group:openclaw`).
    Group(String),
}

impl Pattern {
    /// Reads a pattern as written in config.
    pub fn parse(text: &str) -> Self {
        if let Some(group) = text.strip_prefix("group:") {
            Self::Group(group.to_owned())
        } else if text.contains(['*', '?']) {
            Self::Glob(NameGlob::new(text))
        } else {
            Self::Exact(text.to_owned())
        }
    }
}

/// Allow and deny lists. Deny wins; an allow list, when present, must match.
#[derive(Debug, Clone, Default)]
pub struct ToolPolicy {
    /// `None`: everything not denied is allowed. `Some(empty)`: nothing is.
    pub allow: Option<Vec<Pattern>>,
    /// Denied tools.
    pub deny: Vec<Pattern>,
    /// A second allow list a tool must also match: OpenClaw's
    /// `tools.sandbox.tools.allow` (with its `alsoAllow`), for sandboxed
    /// runs. `None`: no second list.
    pub sandbox_allow: Option<Vec<Pattern>>,
    /// Named groups: group name to tool names.
    pub groups: BTreeMap<String, Vec<String>>,
}

impl ToolPolicy {
    /// A policy with the built-in groups.
    pub fn new() -> Self {
        let groups = [
            (
                "fs",
                &[
                    "read",
                    "write",
                    "edit",
                    "apply_patch",
                    "list",
                    "glob",
                    "grep",
                ][..],
            ),
            ("runtime", &["exec", "process"]),
            ("web", &["web_search", "web_fetch"]),
            ("memory", &["memory_search", "memory_get"]),
            (
                "sessions",
                &[
                    "sessions_list",
                    "sessions_history",
                    "sessions_send",
                    "sessions_spawn",
                ],
            ),
        ]
        .into_iter()
        .map(|(g, names)| {
            (
                g.to_owned(),
                names.iter().map(|n| (*n).to_owned()).collect(),
            )
        })
        .collect();
        Self {
            allow: None,
            deny: Vec::new(),
            sandbox_allow: None,
            groups,
        }
    }

    /// Builds a policy from config lists (`tools.allow`, `tools.deny`).
    pub fn from_lists(allow: Option<&[String]>, deny: &[String]) -> Self {
        Self {
            allow: allow.map(|list| list.iter().map(|p| Pattern::parse(p)).collect()),
            deny: deny.iter().map(|p| Pattern::parse(p)).collect(),
            ..Self::new()
        }
    }

    /// The same policy with OpenClaw's sandbox tool policy over it: its
    /// `deny` added, its `allow` (extended by `alsoAllow`) required too.
    pub fn with_sandbox_lists(
        mut self,
        allow: Option<&[String]>,
        deny: &[String],
        also: &[String],
    ) -> Self {
        self.deny.extend(deny.iter().map(|p| Pattern::parse(p)));
        self.sandbox_allow =
            allow.map(|list| list.iter().chain(also).map(|p| Pattern::parse(p)).collect());
        self
    }

    /// Whether `tool` may be cataloged and called.
    pub fn allows(&self, tool: PolicySubject<'_>) -> bool {
        if self.deny.iter().any(|p| self.matches(p, tool)) {
            return false;
        }
        let listed = |list: &Option<Vec<Pattern>>| match list {
            None => true,
            Some(list) => list.iter().any(|p| self.matches(p, tool)),
        };
        listed(&self.allow) && listed(&self.sandbox_allow)
    }

    /// A pattern with `:` is about ids, one without is about names (tool
    /// names cannot contain `:`, so a name never passes for an id); both
    /// compare case-insensitively. Named groups list core tools.
    pub fn matches(&self, pattern: &Pattern, tool: PolicySubject<'_>) -> bool {
        let name = tool.name.to_ascii_lowercase();
        let id = tool.id.to_ascii_lowercase();
        match pattern {
            Pattern::Exact(text) => {
                let text = text.to_ascii_lowercase();
                if text.contains(':') {
                    text == id
                } else {
                    text == name
                }
            }
            Pattern::Glob(glob) => {
                if glob.as_str().contains(':') {
                    glob.is_match(&id)
                } else {
                    glob.is_match(&name)
                }
            }
            Pattern::Group(group) => match group.as_str() {
                "openclaw" | "core" => tool.source == ToolSource::Openclaw,
                "plugins" => tool.source == ToolSource::Plugin,
                "mcp" => tool.source == ToolSource::Mcp,
                "client" => tool.source == ToolSource::Client,
                other => {
                    tool.source == ToolSource::Openclaw
                        && self.groups.get(other).is_some_and(|names| {
                            names.iter().any(|n| n.eq_ignore_ascii_case(&name))
                        })
                }
            },
        }
    }
}

/// A policy glob over a name or an id, compiled once (see the module
/// doc): `*` any run, `?` one character, the rest literal, without ASCII
/// case.
#[derive(Debug, Clone)]
pub struct NameGlob {
    /// The pattern as written.
    text: String,
    /// `None` only when `globset` refused the escaped pattern, which
    /// takes a pattern of megabytes (its automaton's size limit): it is
    /// then matched by [`wildcard`] (the same meaning, slower), so a deny
    /// list never fails open.
    matcher: Option<GlobMatcher>,
    /// The pattern, lowercased, runs of `*` as one (what [`wildcard`]
    /// reads when there is no matcher).
    folded: String,
}

impl NameGlob {
    /// Compiles `text` (runs of `*` are one `*`).
    pub fn new(text: &str) -> Self {
        let mut glob = String::with_capacity(text.len() + 8);
        let mut folded = String::with_capacity(text.len());
        let mut after_star = false;
        for c in text.to_ascii_lowercase().chars() {
            if c == '*' && after_star {
                continue;
            }
            folded.push(c);
            match c {
                '*' | '?' => glob.push(c),
                '[' | ']' | '{' | '}' => {
                    glob.push('[');
                    glob.push(c);
                    glob.push(']');
                }
                c => glob.push(c),
            }
            after_star = c == '*';
        }
        let built = GlobBuilder::new(&glob)
            .literal_separator(false)
            .backslash_escape(false)
            .build();
        let matcher = match built {
            Ok(glob) => Some(glob.compile_matcher()),
            Err(error) => {
                tracing::warn!(%error, bytes = text.len(), "a tool policy glob is too large for globset; it is matched the slow way");
                None
            }
        };
        Self {
            text: text.to_owned(),
            matcher,
            folded,
        }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `text` (already ASCII-lowercased) matches.
    pub fn is_match(&self, text: &str) -> bool {
        match &self.matcher {
            Some(m) => m.is_match(text),
            None => wildcard(&self.folded, text),
        }
    }
}

/// `*` any run, `?` one character, anything else itself: the classic
/// two-pointer match (backtracking only to the last `*`), for a pattern
/// `globset` refused.
fn wildcard(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while j < t.len() {
        match p.get(i) {
            Some('*') => {
                star = Some((i, j));
                i += 1;
            }
            Some(&c) if c == '?' || c == t[j] => {
                i += 1;
                j += 1;
            }
            _ => match star {
                Some((si, sj)) => {
                    i = si + 1;
                    j = sj + 1;
                    star = Some((si, sj + 1));
                }
                None => return false,
            },
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

impl PartialEq for NameGlob {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for NameGlob {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_wildcard_means_what_the_glob_means() {
        let names = [
            "mcp:github:create_issue",
            "exec",
            "read",
            "a*b",
            "",
            "mcp:x:y?",
        ];
        let patterns = [
            "*",
            "mcp:*",
            "mcp:*:*issue",
            "e?ec",
            "*e*",
            "a[*]b",
            "?",
            "",
            "mcp:x:y?",
            "*:*:*?",
        ];
        for pattern in patterns {
            let glob = NameGlob::new(pattern);
            for name in names {
                assert_eq!(
                    wildcard(&glob.folded, name),
                    glob.is_match(name),
                    "{pattern:?} against {name:?}"
                );
            }
        }
        // A deny pattern too large to compile still matches what it says.
        let huge = NameGlob {
            matcher: None,
            ..NameGlob::new("*")
        };
        assert!(huge.is_match("exec"));
    }

    fn subject<'a>(name: &'a str, id: &'a str, source: ToolSource) -> PolicySubject<'a> {
        PolicySubject { name, id, source }
    }

    fn glob_match(pattern: &str, text: &str) -> bool {
        NameGlob::new(pattern).is_match(text)
    }

    #[test]
    fn globs() {
        assert!(glob_match("mcp:github:*", "mcp:github:create_issue"));
        assert!(glob_match("*_issue", "create_issue"));
        assert!(glob_match("read?", "reads"));
        assert!(!glob_match("read?", "read"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("a*b", "acbd"));
        assert!(glob_match("a*b*c", "axxbyyc"));
        assert!(glob_match("a**b", "a:x/y.b"), "`*` crosses `:` and `/`");
        assert!(glob_match("MCP:*", "mcp:x:y"), "patterns are lowercased");
        assert!(glob_match("?:*", "a:b"));
    }

    #[test]
    fn other_glob_characters_are_literal() {
        for text in ["x[ab]", "x{a,b}", "x\\a", "x]", "x!", "[!a]"] {
            assert!(glob_match(text, text), "{text}");
            assert!(
                glob_match(&format!("{text}*"), &format!("{text}yz")),
                "{text}"
            );
        }
        assert!(!glob_match("x[ab]", "xa"));
        assert!(!glob_match("x{a,b}", "xa"));
        assert!(!glob_match("x\\*", "x*"));
    }

    #[test]
    fn a_pathological_glob_is_compiled_once_and_bounded() {
        // Far longer than any name or id (ids are `<source>:<owner>:<name>`,
        // names at most 128 characters), against an id-sized text.
        let pattern = format!("{}b", "*a".repeat(5_000));
        let glob = NameGlob::new(&pattern);
        let text = "a".repeat(512);
        let started = std::time::Instant::now();
        assert!(!glob.is_match(&text));
        assert!(!glob.is_match(&format!("{text}b")), "5,000 `a`s are needed");
        let short = NameGlob::new(&format!("{}b", "*a".repeat(200)));
        assert!(short.is_match(&format!("{text}b")));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(
            Pattern::parse(&pattern),
            Pattern::Glob(NameGlob::new(&pattern))
        );
    }

    #[test]
    fn deny_wins_and_allow_lists_restrict() {
        let exec = subject("exec", "openclaw:core:exec", ToolSource::Openclaw);
        let issue = subject("create_issue", "mcp:github:create_issue", ToolSource::Mcp);
        let read = subject("read", "openclaw:core:read", ToolSource::Openclaw);
        let policy = ToolPolicy::from_lists(None, &["group:runtime".into()]);
        assert!(!policy.allows(exec));
        assert!(policy.allows(issue));
        // Groups list core tools only; id patterns never match names.
        let mcp_exec = subject("exec", "mcp:evil:exec", ToolSource::Mcp);
        assert!(policy.allows(mcp_exec));
        let allow_read = ToolPolicy::from_lists(Some(&["openclaw:core:read".into()]), &[]);
        assert!(!allow_read.allows(subject(
            "openclaw:core:read",
            "plugin:evil:x",
            ToolSource::Plugin
        )));
        assert!(
            !ToolPolicy::from_lists(None, &["EXEC".into()]).allows(exec),
            "names compare case-insensitively"
        );
        let policy = ToolPolicy::from_lists(
            Some(&["group:fs".into(), "mcp:github:*".into()]),
            &["create_*".into()],
        );
        assert!(policy.allows(read));
        assert!(!policy.allows(issue), "deny wins over allow");
        assert!(!policy.allows(exec), "not in the allow list");
        let nothing = ToolPolicy::from_lists(Some(&[]), &[]);
        assert!(!nothing.allows(read));
        let mcp_only = ToolPolicy::from_lists(Some(&["group:mcp".into()]), &[]);
        assert!(mcp_only.allows(issue) && !mcp_only.allows(read));
    }
}
