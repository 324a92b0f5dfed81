//! The models a host reaches and whether their providers take its
//! credentials (the gateway's `models.list` and `models.status`), and a
//! one-off request outside any run: a session's summary for compaction.
//! Never a key's value.

use std::time::Duration;

use talon_protocol::gateway::{Model, ProviderStatus};
use talon_provider::{ChatRequest, Message as ModelMessage, ProviderConfig};

use crate::conversation::Conversation;
use crate::provider::{MOCK_MODEL, mock_provider, primary, providers};
use crate::{Host, RuntimeError};

/// How long a provider gets to answer the credential check.
const AUTH_CHECK: Duration = Duration::from_secs(5);

impl Host {
    /// The providers as this host reaches them (every one pointed at the
    /// route's base URL, the scripted mock's, which also stands alone when
    /// no provider is configured).
    fn reached(&self) -> Result<Vec<ProviderConfig>, RuntimeError> {
        let mut list = providers(self.config())?;
        if let Some(url) = &self.route().base_url {
            if list.is_empty() {
                list.push(mock_provider());
            }
            for provider in &mut list {
                provider.base_url = url.clone();
            }
        }
        Ok(list)
    }

    /// The configured providers' models, then `agent`'s primary model if
    /// no provider lists it.
    pub fn models(&self, agent: &str) -> Result<Vec<Model>, RuntimeError> {
        let mut models = Vec::new();
        for provider in self.reached()? {
            for model in &provider.models {
                models.push(Model {
                    id: format!("{}/{}", provider.id, model.id),
                    provider: provider.id.clone(),
                    name: model.name.clone().unwrap_or_else(|| model.id.clone()),
                    context_window: model.context_window,
                });
            }
            if provider.id == "mock" && provider.models.is_empty() {
                models.push(Model {
                    id: format!("mock/{MOCK_MODEL}"),
                    provider: "mock".into(),
                    name: MOCK_MODEL.into(),
                    context_window: None,
                });
            }
        }
        if let Some(reference) = primary(self.config(), agent)? {
            let id = format!("{}/{}", reference.provider, reference.model);
            if !models.iter().any(|m| m.id == id) {
                models.push(Model {
                    id,
                    provider: reference.provider,
                    name: reference.model,
                    context_window: None,
                });
            }
        }
        Ok(models)
    }

    /// Every provider's credentials checked at once.
    pub async fn provider_status(&self) -> Result<Vec<ProviderStatus>, RuntimeError> {
        let checks = self.reached()?.into_iter().map(|provider| async move {
            let id = provider.id.clone();
            let keyless = provider.api_key.is_none() && id != "mock";
            let outcome = match talon_provider::build(provider) {
                Err(error) => Err(error.to_string()),
                Ok(client) => client
                    .check_auth(AUTH_CHECK)
                    .await
                    .map_err(|error| error.to_string()),
            };
            let (authenticated, detail) = match outcome {
                Ok(()) => (true, None),
                Err(_) if keyless => (
                    false,
                    Some(format!(
                        "no API key is configured (models.providers.{id}.apiKey)"
                    )),
                ),
                Err(error) => (false, Some(error)),
            };
            ProviderStatus {
                provider: id,
                authenticated,
                detail,
            }
        });
        Ok(futures::future::join_all(checks).await)
    }

    /// `agent`'s model's answer to `history` framed by `prompt` (a system
    /// message before it) and `ask` (the user's message after it), outside
    /// any run: a session's summary.
    pub async fn summarize(
        &self,
        agent: &str,
        history: &Conversation,
        prompt: &str,
        ask: &str,
    ) -> Result<String, SummaryError> {
        let crate::provider::Selected {
            provider: client,
            model,
            ..
        } = self.model(agent).map_err(SummaryError::Model)?;
        let mut messages = vec![ModelMessage::System(prompt.into())];
        messages.extend(history.0.iter().cloned());
        messages.push(ModelMessage::User(ask.into()));
        let request = ChatRequest {
            model,
            messages,
            tools: Default::default(),
            stream: false,
            ..ChatRequest::default()
        };
        let reply = client
            .complete(&request, &|_| {}, &Default::default())
            .await
            .map_err(SummaryError::Provider)?;
        Ok(reply.text)
    }
}

/// Why [`Host::summarize`] has no answer.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    /// The agent's model cannot be reached from the config.
    #[error(transparent)]
    Model(RuntimeError),
    /// The provider failed the request.
    #[error("the model could not summarise the session: {0}")]
    Provider(#[source] talon_provider::ProviderError),
}
