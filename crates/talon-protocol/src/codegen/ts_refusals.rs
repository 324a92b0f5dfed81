//! `refusals.ts` and `caps.ts`: one TypeScript function per row of
//! [`crate::gateway::REFUSALS`], returning the `ApiError` the gateway
//! answers, and one constant per cap of [`crate::gateway::caps::CAPS`],
//! so that the TypeScript fake words and counts nothing itself.

use std::fmt::Write as _;

use crate::gateway::refusals::{ArgKind, Piece, REFUSALS, Refusal, pieces};

use super::typescript::{HEADER, doc_comment};

/// `not_found` → `notFound`.
fn camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The template as a TypeScript template literal's body.
fn literal(refusal: &Refusal) -> String {
    let mut out = String::new();
    for piece in pieces(refusal.template) {
        match piece {
            Piece::Text(text) => escape_into(&mut out, text),
            Piece::Arg(name) => {
                let kind = refusal.args.iter().find(|a| a.name == name).map(|a| a.kind);
                let arg = camel(name);
                let _ = match kind {
                    Some(ArgKind::Quoted) => write!(out, "${{JSON.stringify({arg})}}"),
                    Some(ArgKind::Count) => write!(out, "${{String({arg})}}"),
                    _ => write!(out, "${{{arg}}}"),
                };
            }
        }
    }
    out
}

fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '`' => out.push_str("\\`"),
            '\\' => out.push_str("\\\\"),
            '$' => out.push_str("\\$"),
            _ => out.push(c),
        }
    }
}

/// The source of `refusals.ts`.
pub(super) fn refusals() -> String {
    let mut out = String::from(HEADER);
    out.push_str(
        "//\n// Every refusal the protocol's servers share, worded once (the Rust side:\n\
         // `talon_protocol::gateway::refusals`). Each returns the `ApiError` the gateway\n\
         // answers; `extra` adds details a server knows (the approval that won, ...).\n\n\
         import { RETRYABLE_CODES, type ApiError, type ErrorCode, type ErrorDetails } from \"./types.js\";\n\n\
         function refusal(code: ErrorCode, message: string, details: ErrorDetails): ApiError {\n\
         \x20 const error: ApiError = { code, message, retryable: RETRYABLE_CODES.includes(code) };\n\
         \x20 if (Object.keys(details).length > 0) error.details = details;\n\
         \x20 return error;\n\
         }\n",
    );
    for refusal in REFUSALS {
        out.push('\n');
        doc_comment(&mut out, Some(refusal.doc), "");
        let mut params: Vec<String> = refusal
            .args
            .iter()
            .map(|a| {
                let ty = if a.kind == ArgKind::Count {
                    "number"
                } else {
                    "string"
                };
                format!("{}: {ty}", camel(a.name))
            })
            .collect();
        params.push("extra: ErrorDetails = {}".to_owned());
        let mut details: Vec<String> = Vec::new();
        for arg in refusal.args {
            if let Some(key) = arg.detail {
                let name = camel(arg.name);
                if name == key {
                    details.push(name);
                } else {
                    details.push(format!("{key}: {name}"));
                }
            }
        }
        for (key, word) in refusal.fixed {
            details.push(format!("{key}: {}", serde_json::Value::from(*word)));
        }
        details.push("...extra".to_owned());
        let _ = writeln!(
            out,
            "export function {}({}): ApiError {{\n  return refusal(\"{}\", `{}`, {{ {} }});\n}}",
            camel(refusal.name),
            params.join(", "),
            refusal.code.as_str(),
            literal(refusal),
            details.join(", "),
        );
    }
    out
}

/// The source of `caps.ts`: every cap of [`crate::gateway::caps::CAPS`].
pub(super) fn caps() -> String {
    let mut out = String::from(HEADER);
    out.push_str(
        "//\n// The caps every server of the protocol holds a request to, and the gateway's\n\
         // defaults the fakes copy (the Rust side: `talon_protocol::gateway::caps`).\n",
    );
    for cap in crate::gateway::caps::CAPS {
        out.push('\n');
        doc_comment(&mut out, Some(cap.doc), "");
        let _ = writeln!(out, "export const {} = {};", cap.name, cap.value);
    }
    out
}

/// A value's wire name (`"run.completed"`).
fn wire<T: serde::Serialize>(value: T) -> String {
    serde_json::to_string(&value).unwrap_or_default()
}

/// The source of `rules.ts`: how a run's events fold into its status and
/// its status into its `RunResult`, from [`crate::EventType::ended_status`]
/// and [`crate::gateway::RunResultStatus::of`].
pub(super) fn rules() -> String {
    use crate::EventType;
    use crate::gateway::{RunResultStatus, RunStatus};
    let mut out = String::from(HEADER);
    out.push_str(
        "//\n// How a run's events fold into its status, and its status into its result:\n\
         // the protocol's `EventType::ended_status` and `RunResultStatus::of`.\n\n\
         import type { EventType, NotifyPolicy, RunResultStatus, RunStatus, Scope, ScopePreset, TaskKind, TaskStatus } from \"./types.js\";\n\n\
         /** Each event type that ends a run, and the run's status after it. */\n\
         export const RUN_ENDS: Readonly<Partial<Record<EventType, RunStatus>>> = {\n",
    );
    for kind in EventType::ALL {
        if let Some(status) = kind.ended_status() {
            let _ = writeln!(out, "  {}: {},", wire(kind), wire(status));
        }
    }
    out.push_str("};\n\n/** The event types that end a run. */\nexport const TERMINAL_TYPES: readonly EventType[] = [");
    let ends: Vec<String> = EventType::ALL
        .iter()
        .filter(|k| k.is_terminal())
        .map(wire)
        .collect();
    out.push_str(&ends.join(", "));
    out.push_str("];\n\n/** The statuses a run ends in. */\nexport const TERMINAL_STATUSES: readonly RunStatus[] = [");
    let ended: Vec<String> = RunStatus::ALL
        .iter()
        .filter(|s| s.is_terminal())
        .map(wire)
        .collect();
    out.push_str(&ended.join(", "));
    out.push_str(
        "];\n\n/** A run's status as its `RunResult` says it: `accepted` until it ends. */\n\
         export const RESULT_STATUS: Readonly<Record<RunStatus, RunResultStatus>> = {\n",
    );
    for status in RunStatus::ALL {
        let _ = writeln!(
            out,
            "  {}: {},",
            wire(status),
            wire(RunResultStatus::of(*status))
        );
    }
    let _ = writeln!(
        out,
        "  {}: {},\n}};",
        wire(RunStatus::Unknown),
        wire(RunResultStatus::of(RunStatus::Unknown))
    );
    use crate::gateway::{NotifyPolicy, TaskKind, TaskStatus};
    let list = |values: Vec<String>| values.join(", ");
    let _ = write!(
        out,
        "\n/** Every status a run has (not a newer server's). */\n\
         export const RUN_STATUSES: readonly RunStatus[] = [{}];\n\n\
         /** Every status a task has (not a newer server's). */\n\
         export const TASK_STATUSES: readonly TaskStatus[] = [{}];\n\n\
         /** The statuses a task ends in. */\n\
         export const TASK_TERMINAL_STATUSES: readonly TaskStatus[] = [{}];\n\n\
         /** Every kind of task (not a newer server's). */\n\
         export const TASK_KINDS: readonly TaskKind[] = [{}];\n\n\
         /** Every notification policy (not a newer server's). */\n\
         export const NOTIFY_POLICIES: readonly NotifyPolicy[] = [{}];\n",
        list(RunStatus::ALL.iter().map(wire).collect()),
        list(TaskStatus::ALL.iter().map(wire).collect()),
        list(
            TaskStatus::ALL
                .iter()
                .filter(|s| s.is_terminal())
                .map(wire)
                .collect()
        ),
        list(TaskKind::ALL.iter().map(wire).collect()),
        list(NotifyPolicy::ALL.iter().map(wire).collect()),
    );
    out.push_str(
        "\n/** The scopes each preset grants (`tokens.create`'s `preset`). */\n\
         export const SCOPE_PRESETS: Readonly<Record<ScopePreset, readonly Scope[]>> = {\n",
    );
    for preset in crate::gateway::ScopePreset::ALL {
        let _ = writeln!(
            out,
            "  {}: [{}],",
            preset.as_str(),
            list(preset.scopes().iter().map(wire).collect())
        );
    }
    out.push_str("};\n");
    out
}
