//! The cross-reference pass: what a schema cannot say (ids present and
//! unique, model references that resolve, variables that are set).

use serde_json::Value;

use crate::Config;
use crate::check::{Code, Path, Severity, suggestion};

/// A finding of the cross-reference pass: severity, code, where, message.
pub(crate) type Report<'a> = dyn FnMut(Severity, Code, &Path, String) + 'a;

/// Checks what the schema cannot: ids present and unique, models naming
/// providers that exist (and models those providers list), keys and
/// provider headers read from variables that are set.
pub(crate) fn cross_reference(config: &Config, report: &mut Report<'_>) {
    let root = Path::default();
    let providers = config.get("models.providers").and_then(Value::as_object);
    if let Some(providers) = providers {
        for (id, provider) in providers {
            let at = root.key("models").key("providers").key(id);
            let headers = provider.get("headers").and_then(Value::as_object);
            let secrets = provider
                .get("apiKey")
                .map(|value| (at.key("apiKey"), value))
                .into_iter()
                .chain(
                    headers
                        .into_iter()
                        .flatten()
                        .map(|(name, value)| (at.key("headers").key(name), value)),
                );
            for (at, value) in secrets {
                if let Some(name) = env_name(value)
                    && std::env::var_os(name).is_none_or(|v| v.is_empty())
                {
                    let message = format!(
                        "environment variable {name} is not set: runs on provider {id:?} will fail"
                    );
                    report(Severity::Warning, Code::UnknownReference, &at, message);
                }
            }
        }
    }
    let agents = root.key("agents");
    if let Some(model) = config.get("agents.defaults.model") {
        model_reference(
            model,
            &agents.key("defaults").key("model"),
            providers,
            report,
        );
    }
    let Some(list) = config.get("agents.list").and_then(Value::as_array) else {
        return;
    };
    let mut seen: Vec<&str> = Vec::new();
    for (i, agent) in list.iter().enumerate() {
        let at = agents.key("list").index(i);
        if !agent.is_object() {
            continue;
        }
        match agent.get("id").and_then(Value::as_str) {
            None => {
                let message = "an agent needs an id".to_owned();
                report(Severity::Error, Code::BadValue, &at, message);
            }
            Some(id) if seen.contains(&id) => {
                let at = at.key("id");
                let message = format!("agent id {id:?} is used twice");
                report(Severity::Error, Code::Duplicate, &at, message);
            }
            Some(id) => seen.push(id),
        }
        if let Some(model) = agent.get("model").filter(|m| !m.is_null()) {
            model_reference(model, &at.key("model"), providers, report);
        }
    }
}

/// The variable an `apiKey` or a header reads: `"${NAME}"` or
/// `{env: "NAME"}`.
fn env_name(value: &Value) -> Option<&str> {
    match value {
        Value::String(s) => s.strip_prefix("${")?.strip_suffix('}'),
        Value::Object(map) => map.get("env")?.as_str(),
        _ => None,
    }
}

fn model_reference(
    model: &Value,
    at: &Path,
    providers: Option<&serde_json::Map<String, Value>>,
    report: &mut Report<'_>,
) {
    let (reference, at) = match model {
        Value::String(s) => (s.as_str(), at.clone()),
        Value::Object(map) => match map.get("primary").and_then(Value::as_str) {
            Some(s) => (s, at.key("primary")),
            None => return,
        },
        _ => return,
    };
    let Some((provider, model_id)) = reference
        .split_once('/')
        .filter(|(p, m)| !p.is_empty() && !m.is_empty())
    else {
        let message = format!("expected \"provider/model\", found {reference:?}");
        report(Severity::Error, Code::BadValue, &at, message);
        return;
    };
    let Some(entry) = providers.and_then(|p| p.get(provider)) else {
        let known = providers
            .map(|p| p.keys().map(String::as_str).collect::<Vec<_>>())
            .unwrap_or_default();
        let hint = match suggestion(provider, known.iter().copied()) {
            Some(close) => format!("; did you mean {close:?}?"),
            None if known.is_empty() => "; models.providers defines none".to_owned(),
            None => format!(" (it defines {})", known.join(", ")),
        };
        let message = format!("provider {provider:?} is not in models.providers{hint}");
        report(Severity::Error, Code::UnknownReference, &at, message);
        return;
    };
    let Some(models) = entry.get("models").and_then(Value::as_array) else {
        return;
    };
    let ids: Vec<&str> = models
        .iter()
        .filter_map(|m| m.get("id")?.as_str())
        .collect();
    if !ids.is_empty() && !ids.contains(&model_id) {
        let hint = suggestion(model_id, ids.iter().copied())
            .map(|m| format!("; did you mean {m:?}?"))
            .unwrap_or_default();
        let message = format!("provider {provider:?} lists no model {model_id:?}{hint}");
        report(Severity::Warning, Code::UnknownReference, &at, message);
    }
}
