//! What the guest sees of a run's catalog: compact `ALL_TOOLS` entries
//! (no MCP entries, no schemas), the `tools.<safe_name>` convenience
//! names, the `MCP.<server>` tables, and the virtual `API` files. Built
//! once per run from the policy-filtered catalog; the declaration files
//! are rendered on first read.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use serde_json::{Value, json};
use talon_protocol::ToolSource;
use talon_tools::{Catalog, CatalogEntry, McpServers};

use crate::dts::{self, DtsTool};

/// Characters of a description kept in a compact entry.
pub const COMPACT_DESCRIPTION: usize = 300;

/// Property names `tools.<name>` never takes: the helpers and what every
/// object inherits.
const RESERVED_TOOL_KEYS: &[&str] = &[
    "search",
    "describe",
    "call",
    "constructor",
    "__proto__",
    "prototype",
    "toString",
    "valueOf",
    "hasOwnProperty",
    "then",
];
/// Property names an `MCP.<server>` object keeps for itself.
const RESERVED_MCP_KEYS: &[&str] = &["$api", "resources", "prompts", "__proto__", "then"];

/// One MCP tool in the guest's tables.
#[derive(Debug, Clone)]
pub struct McpTool {
    /// The MCP tool name.
    pub name: String,
    /// Its catalog id.
    pub id: String,
    /// Property names on `MCP.<server>`: the camelCase form first, then
    /// the exact name when it differs.
    pub keys: Vec<String>,
}

/// One visible MCP server.
#[derive(Debug, Clone)]
pub struct McpServerView {
    /// The server's configured name.
    pub name: String,
    /// Keys on `MCP`: the camelCase form, then the exact name.
    pub aliases: Vec<String>,
    /// Its tools, by name.
    pub tools: Vec<McpTool>,
    /// It serves `resources/read`.
    pub resources: bool,
    /// It serves `prompts/get`.
    pub prompts: bool,
}

/// The guest's view of one run's catalog.
#[derive(Debug)]
pub struct CatalogView {
    entries: Vec<Value>,
    convenience: BTreeMap<String, String>,
    servers: Vec<McpServerView>,
    mcp_schemas: HashMap<String, (String, Value)>,
    rendered: std::sync::Mutex<HashMap<String, String>>,
    tools_text: OnceLock<String>,
    convenience_text: OnceLock<String>,
    mcp_text: OnceLock<String>,
}

fn short(text: &str) -> String {
    let text = text.trim();
    if text.chars().count() <= COMPACT_DESCRIPTION {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(COMPACT_DESCRIPTION - 1).collect();
    out.push('…');
    out
}

/// The compact entry of a tool, as `ALL_TOOLS` and `tools.search` show it.
pub fn compact(entry: &CatalogEntry) -> Value {
    let mut value = json!({
        "id": entry.id,
        "name": entry.tool.name,
        "description": short(&entry.tool.description),
        "source": entry.tool.source,
        "sourceName": entry.tool.owner,
    });
    if let Some(label) = &entry.tool.label {
        value["label"] = json!(short(label));
    }
    value
}

/// The convenience name of a tool: its name with every character that
/// cannot be in an identifier replaced by `_`.
pub fn safe_name(name: &str) -> Option<String> {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '$' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    (crate::namespaces::is_identifier(&out) && !RESERVED_TOOL_KEYS.contains(&out.as_str()))
        .then_some(out)
}

impl CatalogView {
    /// The view of `catalog`, with MCP features from `mcp`.
    pub fn new(catalog: &Catalog, mcp: Option<&dyn McpServers>) -> Self {
        let mut entries = Vec::new();
        let mut names: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut by_server: BTreeMap<String, Vec<&CatalogEntry>> = BTreeMap::new();
        let mut mcp_schemas = HashMap::new();
        for entry in catalog.entries() {
            if entry.tool.source == ToolSource::Mcp {
                by_server
                    .entry(entry.tool.owner.clone())
                    .or_default()
                    .push(entry);
                mcp_schemas.insert(
                    entry.id.clone(),
                    (
                        entry.tool.description.clone(),
                        entry.tool.parameters.clone(),
                    ),
                );
                continue;
            }
            entries.push(compact(entry));
            if let Some(name) = safe_name(&entry.tool.name) {
                names.entry(name).or_default().push(entry.id.clone());
            }
        }
        // Two tools with one convenience name: neither gets it.
        let convenience = names
            .into_iter()
            .filter_map(|(name, ids)| match ids.as_slice() {
                [only] => Some((name, only.clone())),
                _ => None,
            })
            .collect();
        let mut server_aliases: BTreeMap<String, usize> = BTreeMap::new();
        for server in by_server.keys() {
            if let Some(alias) = dts::guest_name(server) {
                *server_aliases.entry(alias).or_default() += 1;
            }
        }
        let servers = by_server
            .into_iter()
            .map(|(server, tools)| {
                let mut aliases = Vec::new();
                if let Some(alias) = dts::guest_name(&server)
                    && server_aliases.get(&alias) == Some(&1)
                {
                    aliases.push(alias);
                }
                if !aliases.contains(&server) && server != "__proto__" {
                    aliases.push(server.clone());
                }
                let features = mcp.and_then(|m| m.features(&server)).unwrap_or_default();
                McpServerView {
                    tools: mcp_tools(&tools),
                    name: server,
                    aliases,
                    resources: features.resources,
                    prompts: features.prompts,
                }
            })
            .collect();
        Self {
            entries,
            convenience,
            servers,
            mcp_schemas,
            rendered: Default::default(),
            tools_text: OnceLock::new(),
            convenience_text: OnceLock::new(),
            mcp_text: OnceLock::new(),
        }
    }

    /// The `tools.<name>` shortcuts: safe name → catalog id.
    pub fn convenience(&self) -> &BTreeMap<String, String> {
        &self.convenience
    }

    /// The `MCP` tables, for the guest.
    pub fn mcp_data(&self) -> Value {
        Value::Array(
            self.servers
                .iter()
                .map(|s| {
                    let tools: Vec<Value> = s
                        .tools
                        .iter()
                        .map(|t| json!({"name": t.name, "keys": t.keys}))
                        .collect();
                    json!({"name": s.name, "aliases": s.aliases, "tools": tools,
                           "resources": s.resources, "prompts": s.prompts})
                })
                .collect(),
        )
    }

    /// `ALL_TOOLS` as JSON text, serialized once per run.
    pub fn tools_text(&self) -> &str {
        self.tools_text
            .get_or_init(|| Value::from(self.entries.clone()).to_string())
    }

    /// The shortcuts as JSON text, serialized once per run.
    pub fn convenience_text(&self) -> &str {
        self.convenience_text
            .get_or_init(|| json!(self.convenience).to_string())
    }

    /// [`Self::mcp_data`] as JSON text, serialized once per run.
    pub fn mcp_text(&self) -> &str {
        self.mcp_text.get_or_init(|| self.mcp_data().to_string())
    }

    /// Compact entries of non-MCP tools.
    pub fn entries(&self) -> &[Value] {
        &self.entries
    }

    /// Visible MCP servers.
    pub fn servers(&self) -> &[McpServerView] {
        &self.servers
    }

    /// A visible server by its configured name.
    pub fn server(&self, name: &str) -> Option<&McpServerView> {
        self.servers.iter().find(|s| s.name == name)
    }

    fn dts_tools<'a>(&'a self, server: &'a McpServerView) -> Vec<DtsTool<'a>> {
        server
            .tools
            .iter()
            .filter_map(|t| {
                self.mcp_schemas
                    .get(&t.id)
                    .map(|(description, schema)| DtsTool {
                        name: &t.name,
                        description,
                        input_schema: schema,
                    })
            })
            .collect()
    }

    /// `API.list(prefix?)`: `[{path, bytes}]` of the files under `prefix`
    /// (a directory such as `mcp`, or a path prefix).
    pub fn api_list(&self, prefix: Option<&str>) -> Result<Value, ApiPathError> {
        let prefix = match prefix {
            None => String::new(),
            Some(p) => {
                let p = p.trim_matches('/');
                check_segments(p)?;
                p.to_owned()
            }
        };
        // Metadata only: listing renders nothing.
        let mut entries = vec![json!({"path": "mcp/index.d.ts", "servers": self.servers.len()})];
        for server in &self.servers {
            entries.push(
                json!({"path": format!("mcp/{}.d.ts", server.name), "server": server.name,
                                "tools": server.tools.len()}),
            );
        }
        entries.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
        Ok(Value::Array(
            entries
                .into_iter()
                .filter(|e| {
                    let path = e["path"].as_str().unwrap_or_default();
                    prefix.is_empty() || path.starts_with(&format!("{prefix}/")) || path == prefix
                })
                .collect(),
        ))
    }

    /// One virtual file, rendered on first read and kept for the run.
    fn file(&self, path: &str) -> Option<String> {
        if let Ok(rendered) = self.rendered.lock()
            && let Some(text) = rendered.get(path)
        {
            return Some(text.clone());
        }
        let text = if path == "mcp/index.d.ts" {
            let counts: Vec<(&str, usize)> = self
                .servers
                .iter()
                .map(|s| (s.name.as_str(), s.tools.len()))
                .collect();
            dts::index_dts(&counts)
        } else {
            let server = self
                .servers
                .iter()
                .find(|s| format!("mcp/{}.d.ts", s.name) == path)?;
            dts::server_dts(&server.name, &self.dts_tools(server))
        };
        if let Ok(mut rendered) = self.rendered.lock() {
            rendered.insert(path.to_owned(), text.clone());
        }
        Some(text)
    }

    /// `API.read(path)`: a file's text.
    pub fn api_read(&self, path: &str) -> Result<Value, ApiPathError> {
        let trimmed = path.trim_start_matches('/');
        check_segments(trimmed)?;
        self.file(trimmed).map(Value::String).ok_or_else(|| {
            ApiPathError(format!(
                "no API file {:?}; API.list() shows the files",
                path.chars().take(200).collect::<String>()
            ))
        })
    }

    /// `MCP.<server>.$api(toolName?, {schema?})`: the server's header, or
    /// one tool's in the `form` asked for.
    pub fn mcp_api(
        &self,
        server: &str,
        tool: Option<&str>,
        form: McpApiForm,
    ) -> Result<Value, ApiPathError> {
        let view = self
            .server(server)
            .ok_or_else(|| ApiPathError(format!("no MCP server {server:?} in this run")))?;
        let Some(tool) = tool else {
            return self.api_read(&format!("mcp/{}.d.ts", view.name));
        };
        let found = view
            .tools
            .iter()
            .find(|t| t.name == tool || t.keys.iter().any(|k| k == tool))
            .ok_or_else(|| ApiPathError(format!("MCP server {server:?} has no tool {tool:?}")))?;
        let (description, input_schema) = self
            .mcp_schemas
            .get(&found.id)
            .ok_or_else(|| ApiPathError(format!("MCP server {server:?} has no tool {tool:?}")))?;
        if form == McpApiForm::Schema {
            return Ok(
                json!({"name": found.name, "description": description, "inputSchema": input_schema}),
            );
        }
        let header = dts::server_dts(
            &view.name,
            &[DtsTool {
                name: &found.name,
                description,
                input_schema,
            }],
        );
        Ok(Value::String(header))
    }
}

/// What `MCP.<server>.$api(toolName)` answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum McpApiForm {
    /// The tool's TypeScript declaration, as text.
    #[default]
    Declaration,
    /// `{name, description, inputSchema}` (`{schema: true}`).
    Schema,
}

/// A virtual `API` file or `$api` entry that does not exist (the guest sees
/// it as a `not_found` error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ApiPathError(pub String);

/// Paths are `/`-separated names; empty, `.` and `..` segments are refused.
fn check_segments(path: &str) -> Result<(), ApiPathError> {
    if path.is_empty() {
        return Ok(());
    }
    for segment in path.split('/') {
        if segment.is_empty() || segment == "." || segment == ".." || segment.contains('\\') {
            return Err(ApiPathError(format!(
                "invalid API path {:?}: empty, \".\" and \"..\" segments are not allowed",
                path.chars().take(200).collect::<String>()
            )));
        }
    }
    Ok(())
}

fn mcp_tools(tools: &[&CatalogEntry]) -> Vec<McpTool> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for t in tools {
        if let Some(name) = dts::guest_name(&t.tool.name) {
            *counts.entry(name).or_default() += 1;
        }
    }
    let exact: std::collections::HashSet<&str> =
        tools.iter().map(|t| t.tool.name.as_str()).collect();
    tools
        .iter()
        .map(|t| {
            let mut keys = Vec::new();
            if let Some(camel) = dts::guest_name(&t.tool.name)
                && counts.get(&camel) == Some(&1)
                && !RESERVED_MCP_KEYS.contains(&camel.as_str())
                // Another tool's exact name wins over this one's camelCase.
                && (camel == t.tool.name || !exact.contains(camel.as_str()))
            {
                keys.push(camel);
            }
            if !keys.contains(&t.tool.name) && !RESERVED_MCP_KEYS.contains(&t.tool.name.as_str()) {
                keys.push(t.tool.name.clone());
            }
            McpTool {
                name: t.tool.name.clone(),
                id: t.id.clone(),
                keys,
            }
        })
        .collect()
}
