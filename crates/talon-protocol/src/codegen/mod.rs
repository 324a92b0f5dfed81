//! The SDK's low-level client, generated from the method table: one typed
//! async function per [`Method`], its doc from the table, its retry rule
//! from the method's effect. [`rust_client`] renders the source that
//! `talon-sdk` commits as `src/generated.rs`; a test there fails when the
//! two drift. Nothing in that file is written by hand.
//!
//! The rule a method gets:
//! - a read ([`Effect::Read`]) is retried on a retryable error;
//! - a write whose params carry `idempotencyKey` gets a fresh key when the
//!   caller gave none, and is then retried with that same key (the gateway
//!   returns the first call's result, so a retry never acts twice);
//! - any other write is sent once.
//!
//! [`typescript`] renders the TypeScript SDK's generated layer from the
//! same table and the gateway schema.

mod ts_client;
mod ts_refusals;
pub mod typescript;

use std::fmt::Write as _;

use crate::gateway::{Effect, Method, Stability};

/// Whether `method`'s params type has an `idempotencyKey` property.
fn takes_idempotency_key(method: Method) -> bool {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let schema = method.params_schema(&mut generator);
    let name = schema
        .get("$ref")
        .and_then(serde_json::Value::as_str)
        .and_then(|r| r.rsplit('/').next())
        .map(str::to_owned);
    let defs = generator.take_definitions(true);
    name.and_then(|name| defs.get(&name).cloned())
        .and_then(|def| def.get("properties").cloned())
        .is_some_and(|props| props.get("idempotencyKey").is_some())
}

/// The Rust function name of a method: `runs.create` → `runs_create`.
pub fn function_name(method: Method) -> String {
    method.name().replace('.', "_")
}

/// The source of `talon-sdk/src/generated.rs`.
pub fn rust_client() -> String {
    let mut out = String::new();
    out.push_str(
        "//! Generated from the protocol's method table by\n\
         //! `talon_protocol::codegen::rust_client`: do not edit. Regenerate with\n\
         //! `UPDATE_GENERATED=1 cargo nextest run -p talon-sdk generated`.\n\
         //!\n\
         //! One typed function per gateway method. Reads are retried on a\n\
         //! retryable error; writes that take an `idempotencyKey` get one when\n\
         //! the caller gave none and are retried with it; other writes are\n\
         //! sent once.\n\n",
    );
    out.push_str(
        "use talon_protocol::gateway::Method;\n\
         use talon_protocol::gateway::approvals::*;\n\
         use talon_protocol::gateway::catalog::*;\n\
         use talon_protocol::gateway::params::*;\n\
         use talon_protocol::gateway::resources::*;\n\
         use talon_protocol::gateway::run_list::*;\n\
         use talon_protocol::gateway::schedules::*;\n\
         use talon_protocol::gateway::tasks::*;\n\
         use talon_protocol::gateway::tokens::*;\n\
         use talon_protocol::gateway::usage::*;\n\n\
         use crate::client::{Client, Retry};\n\
         use crate::error::Result;\n\n\
         impl Client {\n",
    );
    for (i, &method) in Method::ALL.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        render_method(&mut out, method);
    }
    out.push_str("}\n");
    out
}

fn render_method(out: &mut String, method: Method) {
    let spec = method.spec();
    for line in spec.doc.trim().lines() {
        let _ = writeln!(out, "    /// {}", line.trim());
    }
    let effect = match spec.effect {
        Effect::Read => "reads",
        Effect::Write => "writes",
    };
    let stability = match spec.stability {
        Stability::Stable => "stable",
        Stability::Experimental => "experimental",
        Stability::Unsupported => "not served yet: answers `unsupported`",
    };
    let errors: Vec<String> = spec
        .all_errors()
        .iter()
        .map(|c| format!("`{}`", c.as_str()))
        .collect();
    let _ = writeln!(out, "    ///");
    let _ = writeln!(
        out,
        "    /// `{}`: needs `{}`; {effect}; {stability}.",
        spec.name,
        spec.scope.as_str()
    );
    let _ = writeln!(out, "    /// Errors: {}.", errors.join(", "));
    let func = function_name(method);
    let variant = format!("{method:?}");
    let keyed = spec.effect == Effect::Write && takes_idempotency_key(method);
    let retry = match spec.effect {
        Effect::Read => "Retry::Safe",
        Effect::Write if keyed => "Retry::Safe",
        Effect::Write => "Retry::Never",
    };
    let (signature, value) = if spec.params == "Empty" {
        (String::new(), "Empty {}".to_owned())
    } else if keyed {
        (
            format!(", mut params: {}", spec.params),
            "params".to_owned(),
        )
    } else {
        (format!(", params: {}", spec.params), "params".to_owned())
    };
    let _ = writeln!(
        out,
        "    pub async fn {func}(&self{signature}) -> Result<{}> {{",
        spec.result
    );
    if keyed {
        out.push_str(
            "        if params.idempotency_key.is_none() {\n\
             \x20           params.idempotency_key = Some(crate::client::idempotency_key());\n\
             \x20       }\n",
        );
    }
    let _ = writeln!(
        out,
        "        self.call(Method::{variant}, &{value}, {retry}).await"
    );
    out.push_str("    }\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_with_a_key_are_retried_and_get_one() {
        assert!(takes_idempotency_key(Method::RunsCreate));
        assert!(takes_idempotency_key(Method::ApprovalsRespond));
        assert!(!takes_idempotency_key(Method::RunsWait));
        assert!(!takes_idempotency_key(Method::EventsUnsubscribe));
        let source = rust_client();
        assert!(source.contains(
            "pub async fn runs_create(&self, mut params: RunsCreateParams) -> Result<RunAccepted> {"
        ));
        assert!(
            source.contains("pub async fn models_status(&self) -> Result<ModelsStatusResult> {")
        );
        assert!(
            source.contains("self.call(Method::EventsUnsubscribe, &params, Retry::Safe).await")
        );
        assert_eq!(source.matches("pub async fn ").count(), Method::ALL.len());
    }
}
