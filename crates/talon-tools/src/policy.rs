//! Allow/deny policy over tool names and ids: exact names, globs (`*`,
//! `?`) and named groups (`group:<name>`).

use std::collections::BTreeMap;

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
    Glob(String),
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
            Self::Glob(text.to_owned())
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
                let glob = glob.to_ascii_lowercase();
                if glob.contains(':') {
                    glob_match(&glob, &id)
                } else {
                    glob_match(&glob, &name)
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

/// `*` matches any run of characters, `?` exactly one.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject<'a>(name: &'a str, id: &'a str, source: ToolSource) -> PolicySubject<'a> {
        PolicySubject { name, id, source }
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
