//! What the agent loop adds to its surface's telemetry: the bytes of tools
//! and system prompt each model request carried and how many it sent, and
//! the client tools it left to the app. The surface counts the rest
//! (catalog, searches, cells, the calls it ran); the run's end event
//! carries the sum. Also the wire form of a model call's usage, which each
//! `assistant.message` and the end event carry.

use talon_protocol::gateway::Usage as EventUsage;
use talon_protocol::{CalledTool, ModelTool, ToolSource, ToolTelemetry};
use talon_provider::{ToolCallRequest, Usage};

/// What one run sent the model, counted as it goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Sent {
    /// Tool schemas in each request.
    pub visible_tools: u64,
    /// Bytes of the tool definitions in each request, as the provider
    /// sent them (its reply says; 0 before the first reply).
    pub tool_bytes: u64,
    /// Bytes of the system prompt in each request.
    pub prompt_bytes: u64,
    /// Requests sent.
    pub model_calls: u64,
}

impl Sent {
    /// What a request with `tools` and `system` carries (once per run:
    /// both are fixed for its turns); the tools' bytes come with the
    /// provider's replies ([`Sent::replied`]), which counted them as they
    /// built the body.
    pub fn measure(tools: &[ModelTool], system: &str) -> Self {
        Self {
            visible_tools: tools.len() as u64,
            tool_bytes: 0,
            prompt_bytes: system.len() as u64,
            model_calls: 0,
        }
    }

    /// Takes what a reply says its request carried.
    pub fn replied(&mut self, tool_bytes: u64) {
        self.tool_bytes = tool_bytes;
    }

    /// `surface`'s telemetry with what was sent, and the client calls left
    /// for the app (`pending`) as called tools of source `client` (by
    /// their catalog id, `client_id`, else their name): nested
    /// when a model call the run `held` made it (its id is `<held>/<n>`).
    pub fn complete(
        self,
        mut surface: ToolTelemetry,
        pending: &[ToolCallRequest],
        held: &[String],
        client_id: impl Fn(&str) -> Option<String>,
    ) -> ToolTelemetry {
        surface.visible_tools = self.visible_tools;
        surface.tool_bytes = self.tool_bytes;
        surface.prompt_bytes = self.prompt_bytes;
        surface.model_calls = self.model_calls;
        surface.bytes_sent = (self.tool_bytes + self.prompt_bytes).saturating_mul(self.model_calls);
        for call in pending {
            surface.push_called(CalledTool {
                id: client_id(&call.name).unwrap_or_else(|| call.name.clone()),
                source: Some(ToolSource::Client),
                status: "pending".to_owned(),
                nested: held.iter().any(|parent| {
                    call.id
                        .strip_prefix(parent.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
                }),
            });
        }
        surface
    }
}

/// `usage` (and its price) as events carry it.
pub(crate) fn event_usage(usage: &Usage, cost_usd: Option<f64>) -> EventUsage {
    EventUsage {
        input_tokens: Some(usage.input_tokens),
        output_tokens: Some(usage.output_tokens),
        total_tokens: Some(usage.input_tokens + usage.output_tokens),
        cache_read_tokens: Some(usage.cache_read_tokens).filter(|n| *n > 0),
        cache_write_tokens: Some(usage.cache_write_tokens).filter(|n| *n > 0),
        cost_usd,
    }
}
