//! The model-facing tool surface of a run: effective tools plus config in,
//! model-visible tool definitions (and any directory prompt) out.
//!
//! - direct (Tool Search off): every cataloged tool and every direct-only
//!   tool, by name;
//! - `code`: `tool_search_code` and the direct-only tools;
//! - `tools`: `tool_search`, `tool_describe`, `tool_call` and the
//!   direct-only tools;
//! - `directory`: the three structured tools, the direct-only tools, the
//!   client tools, and a bounded prompt directory of the hidden tools'
//!   names; a hidden tool called by its exact name runs from the catalog.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::json;
use talon_protocol::{ModelTool, ToolSource};
use talon_tools::{Catalog, CatalogEntry};

use crate::config::{Mode, ToolSearchConfig};

/// Characters the directory prompt may take.
pub const DIRECTORY_CHARS: usize = 6_000;
/// Characters of a description shown in the directory or a search hit.
pub const SHORT_DESCRIPTION: usize = 120;

/// The control tools Tool Search adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// `tool_search_code`.
    SearchCode,
    /// `tool_search`.
    Search,
    /// `tool_describe`.
    Describe,
    /// `tool_call`.
    Call,
}

/// What a model-visible name runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A catalog (or direct-only) tool, by id.
    Tool(String),
    /// A Tool Search control tool.
    Control(Control),
}

/// A run's surface.
#[derive(Debug, Clone, PartialEq)]
pub struct Surface {
    /// `None` for direct exposure.
    pub mode: Option<Mode>,
    /// The tool definitions sent to the model (shared: every turn of the
    /// run sends this one list).
    pub tools: Arc<Vec<ModelTool>>,
    /// Text for the system prompt (the directory), if any.
    pub prompt: Option<String>,
    /// Model-visible (and, in directory mode, hidden but callable) names.
    pub dispatch: BTreeMap<String, Target>,
    /// Tools left off the surface because their name was taken.
    pub rejected: Vec<SurfaceError>,
}

/// Why a tool was left off a surface.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SurfaceError {
    /// Two tools the model would see share a name.
    #[error("tool name collision: {name:?} is both {first} and {second}")]
    NameCollision {
        /// The name.
        name: String,
        /// One tool's id.
        first: String,
        /// The other's.
        second: String,
    },
}

impl Surface {
    /// Serialized size of the tool definitions and prompt sent to the model.
    pub fn bytes(&self) -> usize {
        serde_json::to_vec(self.tools.as_slice()).map_or(0, |v| v.len())
            + self.prompt.as_ref().map_or(0, String::len)
    }

    /// Names of the model-visible tools, in order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }
}

/// Builds the surface of a run.
pub fn build_surface(
    catalog: &Catalog,
    config: Option<&ToolSearchConfig>,
) -> Result<Surface, SurfaceError> {
    let mut surface = Surface {
        mode: config.map(|c| c.mode),
        tools: Arc::default(),
        prompt: None,
        dispatch: BTreeMap::new(),
        rejected: Vec::new(),
    };
    let Some(config) = config else {
        for entry in catalog.entries().iter().chain(catalog.direct_only()) {
            expose(&mut surface, entry);
        }
        return Ok(surface);
    };
    match config.mode {
        Mode::Code => control(&mut surface, Control::SearchCode, config),
        Mode::Tools | Mode::Directory => {
            for c in [Control::Search, Control::Describe, Control::Call] {
                control(&mut surface, c, config);
            }
        }
    }
    for entry in catalog.direct_only() {
        expose(&mut surface, entry);
    }
    if config.mode == Mode::Directory {
        directory(&mut surface, catalog)?;
    }
    Ok(surface)
}

/// Shows a tool by name. The model cannot tell two tools of one name
/// apart: the first keeps the name, a later one is left out and reported.
fn expose(surface: &mut Surface, entry: &CatalogEntry) {
    if let Some(existing) = surface.dispatch.get(&entry.tool.name) {
        let first = match existing {
            Target::Tool(id) => id.clone(),
            Target::Control(_) => entry.tool.name.clone(),
        };
        surface.rejected.push(SurfaceError::NameCollision {
            name: entry.tool.name.clone(),
            first,
            second: entry.id.clone(),
        });
        return;
    }
    surface
        .dispatch
        .insert(entry.tool.name.clone(), Target::Tool(entry.id.clone()));
    Arc::make_mut(&mut surface.tools).push(ModelTool {
        name: entry.tool.name.clone(),
        description: entry.tool.description.clone(),
        parameters: entry.tool.parameters.clone(),
    });
}

fn directory(surface: &mut Surface, catalog: &Catalog) -> Result<(), SurfaceError> {
    // Client tools stay directly visible; their names may not shadow a
    // hidden tool, since exact hidden names dispatch to the catalog.
    let hidden: Vec<&CatalogEntry> = catalog
        .entries()
        .iter()
        .filter(|e| e.tool.source != ToolSource::Client)
        .collect();
    for client in catalog
        .entries()
        .iter()
        .filter(|e| e.tool.source == ToolSource::Client)
    {
        if let Some(other) = hidden.iter().find(|h| h.tool.name == client.tool.name) {
            surface.rejected.push(SurfaceError::NameCollision {
                name: client.tool.name.clone(),
                first: other.id.clone(),
                second: client.id.clone(),
            });
            continue;
        }
        expose(surface, client);
    }
    let mut seen = BTreeSet::new();
    let ambiguous: BTreeSet<&str> = hidden
        .iter()
        .map(|e| e.tool.name.as_str())
        .filter(|n| !seen.insert(*n))
        .collect();
    let mut text = String::from(
        "Tools available through tool_search / tool_describe / tool_call (or by calling the exact name):\n",
    );
    let trailer_room = 64;
    let mut used = text.chars().count();
    let mut listed = 0;
    for entry in &hidden {
        let ambiguous_name = ambiguous.contains(entry.tool.name.as_str());
        if !ambiguous_name && !surface.dispatch.contains_key(&entry.tool.name) {
            surface
                .dispatch
                .insert(entry.tool.name.clone(), Target::Tool(entry.id.clone()));
        }
        // Two tools with one name are listed by id: neither answers to the name.
        let label = if ambiguous_name {
            &entry.id
        } else {
            &entry.tool.name
        };
        let line = format!("- {label}: {}\n", short(&entry.tool.description));
        let length = line.chars().count();
        if used + length + trailer_room > DIRECTORY_CHARS {
            continue;
        }
        text.push_str(&line);
        used += length;
        listed += 1;
    }
    if listed < hidden.len() {
        text.push_str(&format!(
            "… and {} more; use tool_search to find them.\n",
            hidden.len() - listed
        ));
    }
    surface.prompt = Some(text);
    Ok(())
}

/// The first sentence or [`SHORT_DESCRIPTION`] characters of a
/// description, on one line: whitespace and control characters collapse to
/// single spaces, so a description cannot add lines to a prompt.
pub fn short(description: &str) -> String {
    let flat: String = description
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let first = flat.split_terminator(". ").next().unwrap_or(&flat).trim();
    if first.chars().count() <= SHORT_DESCRIPTION {
        first.to_owned()
    } else {
        let cut: String = first.chars().take(SHORT_DESCRIPTION - 1).collect();
        format!("{cut}…")
    }
}

fn control(surface: &mut Surface, which: Control, config: &ToolSearchConfig) {
    let (name, description, parameters) = match which {
        Control::SearchCode => (
            "tool_search_code",
            format!(
                "Search and call this run's tool catalog from a short JavaScript body. Inside it: \
                 `await openclaw.tools.search(query, {{limit}})` returns compact hits [{{id, name, source, description}}] \
                 (default {}, at most {}); `await openclaw.tools.describe(id)` returns one tool with its parameter schema; \
                 `await openclaw.tools.call(id, args)` runs it. `console.log/warn/error` are captured. `return` a value. \
                 No modules, files or network. Times out after {} ms.",
                config.search_default_limit,
                config.max_search_limit,
                config.code_timeout.as_millis()
            ),
            json!({"type": "object", "properties": {"code": {"type": "string", "description": "The body of an async JavaScript function."}}, "required": ["code"]}),
        ),
        Control::Search => (
            "tool_search",
            format!(
                "Search this run's tool catalog. Returns compact hits [{{id, name, source, description}}]; \
                 default {} hits, at most {}.",
                config.search_default_limit, config.max_search_limit
            ),
            json!({"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}}, "required": ["query"]}),
        ),
        Control::Describe => (
            "tool_describe",
            "Describe one catalog tool by id: its full description and parameter schema."
                .to_owned(),
            json!({"type": "object", "properties": {"id": {"type": "string", "description": "A catalog id from tool_search."}}, "required": ["id"]}),
        ),
        Control::Call => (
            "tool_call",
            "Call one catalog tool by id with arguments matching its schema (see tool_describe)."
                .to_owned(),
            json!({"type": "object", "properties": {"id": {"type": "string"}, "args": {"type": "object"}}, "required": ["id", "args"]}),
        ),
    };
    surface
        .dispatch
        .insert(name.to_owned(), Target::Control(which));
    Arc::make_mut(&mut surface.tools).push(ModelTool {
        name: name.to_owned(),
        description,
        parameters,
    });
}
