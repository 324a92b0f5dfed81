//! The tools a CLI run gets from the config: the catalog (filtered by
//! `tools.allow`/`tools.deny`), the executor behind it, and the MCP
//! servers' resources and prompts.

use std::sync::Arc;

use serde_json::Value;
use talon_config::Config;
use talon_tools::{
    BoxFuture, Catalog, CatalogBuilder, CatalogEntry, McpServers, RunContext, RunScope, ToolCall,
    ToolExecutor, ToolPolicy,
};

/// A run's tools.
pub struct RunTools {
    /// The run's catalog.
    pub catalog: Arc<Catalog>,
    /// Executes its entries.
    pub executor: Arc<dyn ToolExecutor>,
    /// Resources and prompts of its MCP servers.
    pub mcp: Option<Arc<dyn McpServers>>,
}

/// `tools.allow` / `tools.deny` (with the agent's own lists when it has
/// them).
pub fn policy(config: &Config, agent: &str) -> Result<ToolPolicy, String> {
    let list = |key: &str| -> Result<Option<Vec<String>>, String> {
        let (global, own) = config.tools_section(key, agent);
        match own.or(global) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str().map(str::to_owned).ok_or_else(|| {
                        format!("tools.{key}: expected a list of tool names or patterns")
                    })
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(format!(
                "tools.{key}: expected a list of tool names or patterns"
            )),
        }
    };
    let allow = list("allow")?;
    let deny = list("deny")?.unwrap_or_default();
    Ok(ToolPolicy::from_lists(allow.as_deref(), &deny))
}

impl RunTools {
    /// Builds the run's tools from the config.
    pub async fn from_config(
        config: &Config,
        agent: &str,
        scope: &RunScope,
    ) -> Result<Self, String> {
        let policy = policy(config, agent)?;
        let catalog = CatalogBuilder::new(scope.clone())
            .build(&policy)
            .map_err(|e| e.to_string())?;
        Ok(Self {
            catalog: Arc::new(catalog),
            executor: Arc::new(NoTools),
            mcp: None,
        })
    }

    /// Stops what the tools started.
    pub async fn shutdown(self) {}
}

/// The executor of a catalog with no executable tools.
struct NoTools;

impl ToolExecutor for NoTools {
    fn execute<'a>(
        &'a self,
        _: &'a RunContext,
        entry: &'a CatalogEntry,
        _: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, String>> {
        let message = format!("{} has no executor in this process", entry.id);
        Box::pin(async move { Err(message) })
    }
}
