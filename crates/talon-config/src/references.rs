//! The cross-reference pass: what a schema cannot say (ids present and
//! unique, model references that resolve, variables that are set, a
//! sandbox policy that can be enforced), over the typed document.

use crate::check::{Code, Path, Severity, suggestion};
use crate::model::{
    Document, ModelRef, ProviderEntry, SandboxMode, SandboxNetwork, SandboxSection,
};

/// A finding of the cross-reference pass: severity, code, where, message.
pub(crate) type Report<'a> = dyn FnMut(Severity, Code, &Path, String) + 'a;

type Providers = std::collections::BTreeMap<String, ProviderEntry>;

/// Checks what the schema cannot: ids present and unique, models naming
/// providers that exist (and models those providers list), keys and
/// provider headers read from variables that are set.
pub(crate) fn cross_reference(document: &Document, report: &mut Report<'_>) {
    let root = Path::default();
    let providers = &document.models.providers;
    for (id, provider) in providers {
        let at = root.key("models").key("providers").key(id);
        let secrets = provider
            .api_key
            .iter()
            .map(|value| (at.key("apiKey"), value))
            .chain(
                provider
                    .headers
                    .iter()
                    .map(|(name, value)| (at.key("headers").key(name), value)),
            );
        for (at, value) in secrets {
            if let Some(name) = value.variable()
                && std::env::var_os(name).is_none_or(|v| v.is_empty())
            {
                let message = format!(
                    "environment variable {name} is not set: runs on provider {id:?} will fail"
                );
                report(Severity::Warning, Code::UnknownReference, &at, message);
            }
        }
    }
    let agents = root.key("agents");
    if let Some(model) = &document.agents.defaults.common.model {
        model_reference(
            model,
            &agents.key("defaults").key("model"),
            providers,
            report,
        );
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, agent) in document.agents.list.iter().enumerate() {
        let at = agents.key("list").index(i);
        match agent.id.as_deref() {
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
        if let Some(model) = &agent.common.model {
            model_reference(model, &at.key("model"), providers, report);
        }
    }
    sandboxes(document, report);
}

/// Each sandbox section as the sandbox will enforce it (an agent's own
/// over the defaults): what `talon_jail::Policy::check` refuses, and what
/// it reads otherwise than an OpenClaw user may expect. An agent is told
/// only of what its own keys change.
fn sandboxes(document: &Document, report: &mut Report<'_>) {
    let agents = Path::default().key("agents");
    let base = document.agents.default_sandbox();
    let base_error = base.policy().err();
    let at = agents.key("defaults").key("sandbox");
    sandbox(&base, &base, base_error.as_ref(), &at, report);
    for (i, _, own, merged) in document.agents.own_sandboxes() {
        let at = agents.key("list").index(i).key("sandbox");
        sandbox(&merged, own, base_error.as_ref(), &at, report);
    }
}

fn sandbox(
    merged: &SandboxSection,
    own: &SandboxSection,
    inherited: Option<&talon_jail::PolicyError>,
    at: &Path,
    report: &mut Report<'_>,
) {
    match merged.policy() {
        Err(error) if Some(&error) != inherited || std::ptr::eq(merged, own) => {
            let at = error
                .key()
                .split('.')
                .fold(at.clone(), |at, key| at.key(key));
            report(Severity::Error, Code::BadValue, &at, error.to_string());
        }
        Err(_) => {}
        Ok(policy) => {
            if own.mode == Some(SandboxMode::NonMain) {
                let message = "mode \"non-main\": Talon sandboxes every command (as \"all\"); \"off\" is the only unsandboxed mode";
                report(
                    Severity::Note,
                    Code::NotUsed,
                    &at.key("mode"),
                    message.to_owned(),
                );
            }
            let sets_network = own.network.is_some() || own.allow_hosts.is_some();
            if sets_network
                && policy.network == SandboxNetwork::Allow
                && policy.allow_hosts.is_empty()
            {
                let message =
                    "network \"allow\" with no allowHosts: commands get no network (as \"off\")";
                report(
                    Severity::Warning,
                    Code::BadValue,
                    &at.key("network"),
                    message.to_owned(),
                );
            }
        }
    }
}

fn model_reference(model: &ModelRef, at: &Path, providers: &Providers, report: &mut Report<'_>) {
    let (reference, at) = match model {
        ModelRef::Name(s) => (s.as_str(), at.clone()),
        ModelRef::Primary(p) => match p.primary.as_deref() {
            Some(s) => (s, at.key("primary")),
            None => return,
        },
    };
    let Some((provider, model_id)) = reference
        .split_once('/')
        .filter(|(p, m)| !p.is_empty() && !m.is_empty())
    else {
        let message = format!("expected \"provider/model\", found {reference:?}");
        report(Severity::Error, Code::BadValue, &at, message);
        return;
    };
    let Some(entry) = providers.get(provider) else {
        let known: Vec<&str> = providers.keys().map(String::as_str).collect();
        let hint = match suggestion(provider, known.iter().copied()) {
            Some(close) => format!("; did you mean {close:?}?"),
            None if known.is_empty() => "; models.providers defines none".to_owned(),
            None => format!(" (it defines {})", known.join(", ")),
        };
        let message = format!("provider {provider:?} is not in models.providers{hint}");
        report(Severity::Error, Code::UnknownReference, &at, message);
        return;
    };
    let ids: Vec<&str> = entry.models.iter().map(|m| m.id.as_str()).collect();
    if !ids.is_empty() && !ids.contains(&model_id) {
        let hint = suggestion(model_id, ids.iter().copied())
            .map(|m| format!("; did you mean {m:?}?"))
            .unwrap_or_default();
        let message = format!("provider {provider:?} lists no model {model_id:?}{hint}");
        report(Severity::Warning, Code::UnknownReference, &at, message);
    }
}
