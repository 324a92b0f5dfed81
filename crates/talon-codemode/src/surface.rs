//! The model-facing surface of a Code Mode run: exactly `exec` and `wait`,
//! plus the catalog's direct-only tools. Everything else is in the hidden
//! catalog. The `exec` description teaches the guest API in a few lines
//! and carries a namespace's description and prompt only when that
//! namespace is visible; its size does not grow with the catalog.

use serde_json::json;
use talon_protocol::ModelTool;
use talon_tools::Catalog;

use crate::config::{CodeModeConfig, Language};
use crate::namespaces::RunNamespaces;

/// The guest API, as `exec` describes it.
const EXEC_GUIDE: &str = "Run a JavaScript program (the body of an async function) in an isolated sandbox. \
Tools are not listed here: reach them from code and return what the user needs.\n\
- ALL_TOOLS: compact entries {id, name, description, source, sourceName} of the hidden catalog (MCP tools excluded).\n\
- await tools.search(query, {limit?}) -> entries; await tools.describe(id) -> entry with JSON Schema `parameters`; \
await tools.call(id, input) -> result. tools.<name>(input) is a shortcut when a name is unambiguous.\n\
- MCP tools: await MCP.<server>.<toolName>({...input}) (camelCase names). Signatures: await API.list(\"mcp\"), \
await API.read(\"mcp/<server>.d.ts\"); inline: await MCP.<server>.$api(toolName?, {schema?}). \
MCP.<server>.resources.read({uri}) and .prompts.get({name, arguments}) where the server has them.\n\
- text(value) and json(value) append output; the returned value is the result. console.log works too.\n\
- Use loops, Promise.all for parallel calls, try/catch for failed calls. No import/require, files, network or env.\n\
- If the result is {status: \"waiting\", runId}, call wait({runId}) to resume; await yield_control(reason?) suspends on purpose.";

/// A Code Mode surface.
#[derive(Debug, Clone, PartialEq)]
pub struct CodeModeSurface {
    /// The tools sent to the model: `exec`, `wait`, then direct-only tools
    /// (shared: every turn of the run sends this one list).
    pub tools: std::sync::Arc<Vec<ModelTool>>,
}

impl CodeModeSurface {
    /// Model-visible names, in order.
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.name.clone()).collect()
    }

    /// Serialized size of the tool definitions.
    pub fn bytes(&self) -> usize {
        serde_json::to_vec(self.tools.as_slice()).map_or(0, |v| v.len())
    }
}

/// The `exec` description for a run.
pub fn exec_description(config: &CodeModeConfig, namespaces: &RunNamespaces) -> String {
    let mut text = EXEC_GUIDE.to_owned();
    if !config.languages.contains(&Language::TypeScript) {
        text.push_str("\n- Only JavaScript is enabled.");
    } else {
        text.push_str(
            "\n- language: \"typescript\" is accepted (types are stripped, not checked).",
        );
    }
    if !namespaces.visible.is_empty() {
        text.push_str("\nNamespaces (also under namespaces.<name>):");
        for ns in &namespaces.visible {
            let r = &ns.registration;
            text.push_str(&format!("\n- {}: {}", r.global_name, r.description.trim()));
            if let Some(prompt) = r.prompt.as_deref().filter(|p| !p.trim().is_empty()) {
                text.push(' ');
                text.push_str(prompt.trim());
            }
        }
    }
    text
}

/// Builds the surface: `exec`, `wait`, and the direct-only tools.
pub fn build_surface(
    catalog: &Catalog,
    config: &CodeModeConfig,
    namespaces: &RunNamespaces,
) -> CodeModeSurface {
    let languages: Vec<&str> = config.languages.iter().map(|l| l.as_str()).collect();
    let mut tools = vec![
        ModelTool {
            name: "exec".into(),
            description: exec_description(config, namespaces),
            parameters: json!({
                "type": "object",
                "properties": {
                    "code": {"type": "string", "description": "The program: an async function body; `return` gives the result."},
                    "language": {"type": "string", "enum": languages, "default": "javascript"}
                },
                "required": ["code"],
                "additionalProperties": false
            }),
        },
        ModelTool {
            name: "wait".into(),
            description: "Resume a Code Mode program that returned {status: \"waiting\", runId}. Blocks until its \
                          pending tool calls finish or the time limit passes; returns the same result shape as exec."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {"runId": {"type": "string", "description": "The runId from the waiting result."}},
                "required": ["runId"],
                "additionalProperties": false
            }),
        },
    ];
    for entry in catalog.direct_only() {
        if tools.iter().any(|t| t.name == entry.tool.name) {
            tracing::warn!(id = %entry.id, "direct-only tool shadowed by a Code Mode control tool; left out");
            continue;
        }
        tools.push(ModelTool {
            name: entry.tool.name.clone(),
            description: entry.tool.description.clone(),
            parameters: entry.tool.parameters.clone(),
        });
    }
    CodeModeSurface {
        tools: std::sync::Arc::new(tools),
    }
}
