//! The tool catalog of one run: core, plugin, MCP and client tools,
//! filtered by policy, with stable ids and a search index (built on the
//! first search: most runs' surfaces never search).
//!
//! A tool's source and owner come from how it was registered (the builder
//! method), never from the tool's own claims, so a plugin cannot pass its
//! tools off as core tools. Ids are `<source>:<owner>:<tool-name>`; entries
//! are kept sorted by id, so equivalent tool sets give identical catalogs.

use std::sync::OnceLock;

use rustc_hash::FxHashMap as HashMap;
use talon_protocol::gateway::bounded::{AgentId, RunId, SessionId};

use talon_protocol::{CatalogMode, SearchHit, ToolDefinition, ToolSource};
use talon_search::{Document, SearchIndex, Semantic};

use crate::error::{Result, ToolsError};
use crate::policy::{PolicySubject, ToolPolicy};

/// Names of the tools the model-facing surfaces provide themselves (Code
/// Mode's and Tool Search's). They are never cataloged; only the core shell
/// tool may be named `exec` (reachable as `openclaw:core:exec`).
pub const CONTROL_TOOLS: &[&str] = &[
    "exec",
    "wait",
    "tool_search_code",
    "tool_search",
    "tool_describe",
    "tool_call",
];

/// The run a catalog belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunScope {
    /// Agent id.
    pub agent_id: AgentId,
    /// Session id (empty for a run without a session).
    pub session_id: SessionId,
    /// Run id.
    pub run_id: RunId,
}

/// One cataloged tool.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogEntry {
    /// `<source>:<owner>:<tool-name>`.
    pub id: String,
    /// The tool, with source and owner as registered.
    pub tool: ToolDefinition,
}

impl CatalogEntry {
    /// What the search index reads of this entry.
    pub fn document(&self) -> Document<'_> {
        Document {
            id: &self.id,
            name: &self.tool.name,
            label: self.tool.label.as_deref(),
            description: &self.tool.description,
            parameters: &self.tool.parameters,
        }
    }
}

/// Collects a run's tools by origin; [`CatalogBuilder::build`] checks and
/// filters them.
#[derive(Debug)]
pub struct CatalogBuilder {
    scope: RunScope,
    tools: Vec<ToolDefinition>,
    errors: Vec<ToolsError>,
    semantic: Semantic,
    direct: Option<ToolPolicy>,
}

impl CatalogBuilder {
    /// A builder for one run.
    pub fn new(scope: RunScope) -> Self {
        Self {
            scope,
            tools: Vec::new(),
            errors: Vec::new(),
            semantic: Semantic::Off,
            direct: None,
        }
    }

    /// The tools `list` names (names, ids, globs or `group:<name>`, as
    /// `tools.allow` takes them: `tools.directOnly`) become direct-only:
    /// the model sees them by name beside Code Mode's or Tool Search's
    /// own tools, and the hidden catalog does not hold them. Tools that
    /// declare `catalogMode: "direct-only"` are so anyway.
    pub fn direct_only(mut self, list: &[String]) -> Self {
        if !list.is_empty() {
            self.direct = Some(ToolPolicy::from_lists(Some(list), &[]));
        }
        self
    }

    /// Whether search ranks semantically too (fused with BM25F; see
    /// talon-search). The default is lexical only; Talon's runs use
    /// [`Semantic::Shared`].
    pub fn semantic(mut self, semantic: Semantic) -> Self {
        self.semantic = semantic;
        self
    }

    fn add(
        mut self,
        source: ToolSource,
        owner: &str,
        tools: impl IntoIterator<Item = ToolDefinition>,
    ) -> Self {
        for mut tool in tools {
            tool.source = source;
            tool.owner = owner.to_owned();
            self.tools.push(tool);
        }
        self
    }

    /// Tools under the source and owner they declare: for catalog files the
    /// operator wrote, and for tests. Client tools join this run.
    pub fn declared(mut self, tools: impl IntoIterator<Item = ToolDefinition>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Core tools (owner `core`).
    pub fn core(self, tools: impl IntoIterator<Item = ToolDefinition>) -> Self {
        self.add(ToolSource::Openclaw, "core", tools)
    }

    /// The runtime's own tools (owner `runtime`: `ask_user`), which a
    /// host executes itself.
    pub fn runtime(self, tools: impl IntoIterator<Item = ToolDefinition>) -> Self {
        self.add(ToolSource::Openclaw, "runtime", tools)
    }

    /// Tools a host adds to a run (source `openclaw`, owner `owner`, e.g.
    /// an environment's `openclaw:environment:pull_request`).
    pub fn host(self, owner: &str, tools: impl IntoIterator<Item = ToolDefinition>) -> Self {
        self.add(ToolSource::Openclaw, owner, tools)
    }

    /// A plugin's tools (owner: the plugin id).
    pub fn plugin(self, plugin_id: &str, tools: impl IntoIterator<Item = ToolDefinition>) -> Self {
        self.add(ToolSource::Plugin, plugin_id, tools)
    }

    /// An MCP server's tools (owner: the server name).
    pub fn mcp(self, server: &str, tools: impl IntoIterator<Item = ToolDefinition>) -> Self {
        self.add(ToolSource::Mcp, server, tools)
    }

    /// A client app's tools for a run; tools of another run are refused.
    pub fn client(
        mut self,
        app: &str,
        run: &RunScope,
        tools: impl IntoIterator<Item = ToolDefinition>,
    ) -> Self {
        if run != &self.scope {
            for tool in tools {
                self.errors.push(ToolsError::ForeignClientTool {
                    name: tool.name,
                    run: run.run_id.clone().into_string(),
                });
            }
            return self;
        }
        self.add(ToolSource::Client, app, tools)
    }

    /// Checks names and ids, applies `policy`, separates direct-only tools
    /// and indexes the rest. One bad tool never fails the run: tools that
    /// are invalid, take a control tool's name, repeat an id or belong to
    /// another run are left out and reported in [`Catalog::rejected`].
    pub fn build(self, policy: &ToolPolicy) -> Result<Catalog> {
        let mut rejected = self.errors;
        let mut entries: Vec<CatalogEntry> = Vec::with_capacity(self.tools.len());
        let mut direct_only = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for tool in self.tools {
            let id = match tool_id(&tool) {
                Ok(id) => id,
                Err(e) => {
                    rejected.push(e);
                    continue;
                }
            };
            let subject = PolicySubject {
                name: &tool.name,
                id: &id,
                source: tool.source,
            };
            if !policy.allows(subject) {
                continue;
            }
            let direct = tool.catalog_mode == CatalogMode::DirectOnly
                || self.direct.as_ref().is_some_and(|d| d.allows(subject));
            let reserved = CONTROL_TOOLS.contains(&tool.name.as_str())
                && !(tool.name == "exec" && tool.source == ToolSource::Openclaw);
            if reserved {
                rejected.push(ToolsError::ReservedName {
                    name: tool.name,
                    id,
                });
                continue;
            }
            if !seen.insert(id.clone()) {
                rejected.push(ToolsError::DuplicateId(id));
                continue;
            }
            if direct {
                direct_only.push(CatalogEntry { id, tool });
            } else {
                entries.push(CatalogEntry { id, tool });
            }
        }
        for error in &rejected {
            tracing::warn!(%error, "tool left out of the catalog");
        }
        for list in [&mut entries, &mut direct_only] {
            list.sort_by(|a, b| a.id.cmp(&b.id));
        }
        let by_id = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.id.clone(), i))
            .collect();
        Ok(Catalog {
            scope: self.scope,
            entries,
            direct_only,
            by_id,
            index: OnceLock::new(),
            semantic: self.semantic,
            rejected,
        })
    }
}

/// Longest tool name (and owner) accepted.
pub const MAX_NAME_BYTES: usize = 128;

/// `<source>:<owner>:<tool-name>`, after checking owner and name. Names
/// are 1 to 128 of `A-Z a-z 0-9 _ - .` (what providers accept, and never a
/// `:`, so no name can pass for an id); owners have no `:`, spaces or
/// control characters.
pub fn tool_id(tool: &ToolDefinition) -> Result<String> {
    let bad = |what: &str| {
        let name: String = tool.name.chars().take(64).collect();
        let owner: String = tool.owner.chars().take(64).collect();
        ToolsError::InvalidTool(format!("{name:?} from {owner:?}: {what}"))
    };
    let name_ok = !tool.name.is_empty()
        && tool.name.len() <= MAX_NAME_BYTES
        && tool
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !name_ok {
        return Err(bad("names are 1 to 128 of A-Z a-z 0-9 _ - ."));
    }
    let owner_ok = !tool.owner.is_empty()
        && tool.owner.len() <= MAX_NAME_BYTES
        && !tool.owner.contains(':')
        && !tool
            .owner
            .chars()
            .any(|c| c.is_whitespace() || c.is_control());
    if !owner_ok {
        return Err(bad(
            "the owner must be 1 to 128 characters without ':', spaces or control characters",
        ));
    }
    if tool.source == ToolSource::Unknown {
        return Err(bad("unknown source"));
    }
    Ok(format!(
        "{}:{}:{}",
        tool.source.as_str(),
        tool.owner,
        tool.name
    ))
}

/// The effective, policy-filtered tool catalog of one run.
#[derive(Debug, Clone)]
pub struct Catalog {
    scope: RunScope,
    entries: Vec<CatalogEntry>,
    direct_only: Vec<CatalogEntry>,
    by_id: HashMap<String, usize>,
    /// Built on the first search (or [`Catalog::warm_search`]): a run
    /// whose surface never searches never pays for it.
    index: OnceLock<SearchIndex>,
    semantic: Semantic,
    rejected: Vec<ToolsError>,
}

impl Catalog {
    /// The run this catalog belongs to.
    pub fn scope(&self) -> &RunScope {
        &self.scope
    }

    /// Tools left out at build time, and why.
    pub fn rejected(&self) -> &[ToolsError] {
        &self.rejected
    }

    /// Cataloged entries, sorted by id.
    pub fn entries(&self) -> &[CatalogEntry] {
        &self.entries
    }

    /// Direct-only tools: never cataloged, always visible to the model.
    pub fn direct_only(&self) -> &[CatalogEntry] {
        &self.direct_only
    }

    /// Number of cataloged entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Readies search now: builds the index (else the first query does)
    /// and, with [`Semantic::Shared`], loads the embedding table and
    /// embeds the catalog (else the first query does);
    /// `true` when search ranks semantically. A long-lived caller runs it
    /// in the background while other work goes on.
    pub fn warm_search(&self) -> bool {
        self.index().is_semantic()
    }

    /// The search index, built on first use.
    fn index(&self) -> &SearchIndex {
        self.index.get_or_init(|| {
            let docs: Vec<Document<'_>> = self.entries.iter().map(CatalogEntry::document).collect();
            SearchIndex::build_with(&docs, self.semantic.clone())
        })
    }

    /// `true` when nothing is cataloged.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The cataloged entry with exactly this id (direct-only tools are not
    /// reachable through the catalog's bridges).
    pub fn get_cataloged(&self, id: &str) -> Option<&CatalogEntry> {
        self.by_id.get(id).map(|&i| &self.entries[i])
    }

    /// The entry with exactly this id (cataloged or direct-only). A tool
    /// that policy removed is indistinguishable from one that never existed.
    pub fn get(&self, id: &str) -> Option<&CatalogEntry> {
        self.by_id
            .get(id)
            .map(|&i| &self.entries[i])
            .or_else(|| self.direct_only.iter().find(|e| e.id == id))
    }

    /// Ranked hits for `query`, at most `limit`.
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        self.index()
            .search(query, limit)
            .into_iter()
            .map(|hit| {
                let entry = &self.entries[hit.doc];
                // Four decimals: the ranking's resolution, and stable output.
                let score = (f64::from(hit.score) * 1e4).round() / 1e4;
                SearchHit {
                    id: entry.id.clone(),
                    name: entry.tool.name.clone(),
                    score,
                }
            })
            .collect()
    }

    /// The full entry for an id, schema included.
    pub fn describe(&self, id: &str) -> Option<&CatalogEntry> {
        self.get(id)
    }

    /// Catalog size by source.
    pub fn size_by_source(&self) -> Vec<(ToolSource, usize)> {
        let mut counts: Vec<(ToolSource, usize)> = Vec::new();
        for entry in &self.entries {
            match counts.iter_mut().find(|(s, _)| *s == entry.tool.source) {
                Some((_, n)) => *n += 1,
                None => counts.push((entry.tool.source, 1)),
            }
        }
        counts.sort();
        counts
    }
}
