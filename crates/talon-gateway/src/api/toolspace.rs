//! `tools.list`: the ToolSpace of an agent (or of a session's agent), as
//! an app sees it. The catalog is the one a run of the agent would get
//! (core tools, the MCP servers' tools, `ask_user`, after `tools.allow` and
//! `tools.deny`); each tool is normalised to a [`ToolSummary`]: where it
//! comes from, its arguments summarised, what the approval policy does
//! with it, the surfaces through which the model reaches it under the
//! agent's `tools.codeMode` and `tools.toolSearch`, and what it may do.
//! Nothing of a plugin's or server's internals (commands, URLs, keys)
//! leaves.

use serde_json::Value;
use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::params::{ToolsListParams, ToolsListResult};
use talon_protocol::gateway::{
    ApiError, ApprovalPolicy, ArgumentSummary, ErrorCode, ToolOrigin, ToolReach, ToolSummary,
};
use talon_protocol::{CatalogMode, ToolEffect, ToolSource};
use talon_runtime::{Host, SurfacePlan, ToolSpaceSpec};
use talon_tools::CatalogEntry;

use super::{Api, DEFAULT_AGENT, not_found};
use crate::error::api_error;
use talon_tools::Approvals;

/// Longest argument description kept.
const MAX_DESCRIPTION_CHARS: usize = 200;

/// The ToolSpace of `agent`, by catalog id.
pub(crate) async fn list(host: &Host, agent: &str) -> Result<Vec<ToolSummary>, ApiError> {
    let policy = host.approvals();
    let spec = ToolSpaceSpec {
        agent: AgentId::new(agent.to_owned()),
        offers_questions: true,
    };
    let (catalog, plan) = host
        .tool_space(&spec)
        .await
        .map_err(|e| ApiError::new(ErrorCode::InvalidRequest, e.to_string()))?;
    let mut tools: Vec<ToolSummary> = catalog
        .entries()
        .iter()
        .map(|entry| summary(entry, &policy, &plan))
        .collect();
    tools.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(tools)
}

impl Api {
    /// `tools.list`: the agent named, or the session's, or `main`.
    pub(super) async fn tool_space(
        &self,
        caller: &crate::auth::identity::Caller,
        p: ToolsListParams,
    ) -> Result<ToolsListResult, ApiError> {
        let session_agent = match &p.session_key {
            Some(key) => Some(
                self.store
                    .session_by_key(caller.subject(), key.as_str())
                    .await
                    .map_err(api_error)?
                    .filter(|s| caller.may_use_agent(s.agent_id.as_str()))
                    .ok_or_else(|| not_found("session", key.as_str()))?
                    .agent_id,
            ),
            None => None,
        };
        if let (Some(asked), Some(own)) = (&p.agent_id, &session_agent)
            && asked != own
        {
            return Err(talon_protocol::gateway::refuse::session_of_other_agent(
                p.session_key.as_ref().map_or("", |k| k.as_str()),
                own.as_str(),
                asked.as_str(),
            ));
        }
        let agent = p
            .agent_id
            .map(AgentId::into_string)
            .or(session_agent.map(AgentId::into_string))
            .unwrap_or_else(|| DEFAULT_AGENT.into());
        if self.agent_for(caller, &agent).await?.is_none() {
            return Err(not_found("agent", &agent));
        }
        let (tools, next_cursor) = talon_protocol::gateway::page::page_after(
            list(self.engine.host(), &agent).await?,
            p.cursor.as_ref().map(|c| c.as_str()),
            p.limit,
            |t| t.id.as_str(),
        )?;
        Ok(ToolsListResult { tools, next_cursor })
    }
}

fn summary(entry: &CatalogEntry, policy: &Approvals, plan: &SurfacePlan) -> ToolSummary {
    let tool = &entry.tool;
    let approval = ApprovalPolicy::from(policy.action(entry));
    let direct_only = tool.catalog_mode == CatalogMode::DirectOnly;
    let reach = if direct_only {
        vec![ToolReach::Direct]
    } else if plan.code_mode.is_some() {
        vec![ToolReach::CodeMode]
    } else if plan.tool_search.is_some() {
        vec![ToolReach::ToolSearch]
    } else {
        vec![ToolReach::Direct]
    };
    ToolSummary {
        id: entry.id.clone(),
        name: tool.name.clone(),
        source: origin(entry),
        owner: tool.owner.clone(),
        description: tool.description.clone(),
        arguments: arguments(&tool.parameters),
        parameters: tool.parameters.clone(),
        approval,
        requires_approval: approval == ApprovalPolicy::Ask,
        hidden: !reach.contains(&ToolReach::Direct),
        reach,
        read_only: tool.effect == ToolEffect::ReadOnly,
        writable: tool.effect == ToolEffect::Writes,
        host_capable: tool.effect == ToolEffect::Host,
        effect: tool.effect,
    }
}

fn origin(entry: &CatalogEntry) -> ToolOrigin {
    match entry.tool.source {
        ToolSource::Openclaw if entry.tool.owner == talon_runtime::questions::OWNER => {
            ToolOrigin::Runtime
        }
        ToolSource::Openclaw => ToolOrigin::Core,
        ToolSource::Mcp => ToolOrigin::Mcp,
        ToolSource::Plugin => ToolOrigin::Plugin,
        ToolSource::Client => ToolOrigin::App,
        _ => ToolOrigin::Unknown,
    }
}

/// The top-level properties of an arguments schema, in its order.
fn arguments(schema: &Value) -> Vec<ArgumentSummary> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| ArgumentSummary {
            name: name.clone(),
            r#type: match property.get("type") {
                Some(Value::String(t)) => Some(t.clone()),
                Some(Value::Array(ts)) => Some(
                    ts.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join("|"),
                ),
                _ => None,
            },
            required: required.contains(&name.as_str()),
            description: property
                .get("description")
                .and_then(Value::as_str)
                .map(|d| d.chars().take(MAX_DESCRIPTION_CHARS).collect()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_summarised_from_the_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Where"},
                "limit": {"type": ["number", "null"]},
                "mode": {"enum": ["a", "b"]}
            },
            "required": ["path"]
        });
        let got = arguments(&schema);
        let names: Vec<(&str, Option<&str>, bool)> = got
            .iter()
            .map(|a| (a.name.as_str(), a.r#type.as_deref(), a.required))
            .collect();
        assert_eq!(
            names,
            [
                ("limit", Some("number|null"), false),
                ("mode", None, false),
                ("path", Some("string"), true)
            ]
        );
        assert_eq!(got[2].description.as_deref(), Some("Where"));
        assert_eq!(arguments(&json!({"type": "object"})), []);
    }
}
