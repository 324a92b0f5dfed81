//! The agent loop's trace spans (target `talon::trace`, exported over
//! OTLP when the process runs an exporter, never logged): one per model
//! call and one per tool call the model makes, named and attributed as
//! OpenTelemetry's GenAI conventions say.

use talon_protocol::gateway::ApiError;
use talon_provider::ChatResponse;

/// A model call's span (`chat <model>`, a client span); its usage and
/// finish reason are recorded by [`model_done`].
pub(crate) fn model(model: &str, turn: u32) -> tracing::Span {
    tracing::info_span!(
        target: "talon::trace",
        "model",
        otel.name = %format_args!("chat {model}"),
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        otel.status_message = tracing::field::Empty,
        gen_ai.operation.name = "chat",
        gen_ai.request.model = %model,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        gen_ai.response.finish_reasons = tracing::field::Empty,
        talon.turn = turn,
    )
}

/// Records how a model call ended on its span.
pub(crate) fn model_done(span: &tracing::Span, reply: &Result<ChatResponse, ApiError>) {
    match reply {
        Ok(reply) => {
            span.record("gen_ai.usage.input_tokens", reply.usage.input_tokens);
            span.record("gen_ai.usage.output_tokens", reply.usage.output_tokens);
            span.record(
                "gen_ai.response.finish_reasons",
                reply.finish_reason.as_str(),
            );
        }
        Err(error) => {
            span.record("otel.status_code", "error");
            span.record("otel.status_message", error.message.as_str());
        }
    }
}

/// A tool call's span (`execute_tool <name>`); the calls a Code Mode cell
/// makes inside it are its children (talon-tools' runner opens theirs).
pub(crate) fn tool(name: &str, call_id: &str) -> tracing::Span {
    tracing::info_span!(
        target: "talon::trace",
        "tool",
        otel.name = %format_args!("execute_tool {name}"),
        otel.status_code = tracing::field::Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %name,
        gen_ai.tool.call.id = %call_id,
    )
}
