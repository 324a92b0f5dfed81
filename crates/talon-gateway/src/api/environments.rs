//! `environments.list/create/status/delete`: managed environments through
//! their provider ([`talon_environments`]). `create` checks the settings,
//! stores the environment `provisioning`, prepares its workspace and
//! answers it `ready` (or `failed`, saying why in `detail`); the same
//! idempotency key answers the same environment. `delete` releases the
//! workspace by the settings' policy and answers it `deleted`.

use crate::auth::identity::Caller;
use talon_protocol::gateway::bounded::{EnvironmentId, ProviderId, Subject};
use talon_protocol::gateway::params::{
    EnvironmentsCreateParams, EnvironmentsDeleteParams, EnvironmentsListParams,
    EnvironmentsListResult,
};
use talon_protocol::gateway::{ApiError, Environment, EnvironmentStatus};

use super::{Api, new_id};
use crate::error::api_error;
use talon_environments::dir_of;

fn status_name(status: EnvironmentStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

impl Api {
    pub(super) async fn list_environments(
        &self,
        caller: &Caller,
        p: EnvironmentsListParams,
    ) -> Result<EnvironmentsListResult, ApiError> {
        let owner = caller.owner();
        // Bounded by the environments quota; paged here.
        let environments = self
            .store
            .environments(owner.subject.as_deref())
            .await
            .map_err(api_error)?;
        let (environments, next_cursor) = talon_protocol::gateway::page::page_after(
            environments,
            p.cursor.as_ref().map(|c| c.as_str()),
            p.limit,
            |e: &Environment| e.id.as_str(),
        )?;
        Ok(EnvironmentsListResult {
            environments,
            next_cursor,
        })
    }

    pub(super) async fn create_environment(
        &self,
        caller: &Caller,
        p: EnvironmentsCreateParams,
    ) -> Result<Environment, ApiError> {
        let provider = self.engine.providers().get(p.provider.as_str())?;
        let settings = p.settings.clone().unwrap_or_else(|| serde_json::json!({}));
        let state_dir = self.engine.state_dir();
        provider.check(&settings, self.engine.environment_context(&state_dir))?;
        let id = match &p.idempotency_key {
            Some(key) => {
                let id = caller.keyed_id("environment", key.as_str(), "env");
                // The id is in the caller's namespace: the environment
                // is its own (or its subject's) whenever it exists.
                if let Some(first) = self
                    .store
                    .environment::<Environment>(&id)
                    .await
                    .map_err(api_error)?
                {
                    return if first.provider == p.provider
                        && first.settings.as_ref() == Some(&settings)
                    {
                        Ok(first)
                    } else {
                        Err(talon_protocol::gateway::refuse::idempotency_reused(
                            key.as_str(),
                        ))
                    };
                }
                id
            }
            None => new_id("env")?,
        };
        let now = self.store.now_ms();
        let mut environment = Environment {
            subject: caller.subject().map(Subject::new),
            id: EnvironmentId::new(id.clone()),
            provider: ProviderId::new(provider.id()),
            status: EnvironmentStatus::Provisioning,
            capabilities: provider.capabilities(self.engine.environment_context(&state_dir)),
            created_at: Some(now),
            settings: Some(settings.clone()),
            workspace: None,
            detail: None,
        };
        self.store
            .create_environment(
                (&id, caller.subject(), Some(&caller.token_id)),
                &status_name(environment.status),
                now,
                &environment,
            )
            .await
            .map_err(api_error)?;
        let dir = dir_of(&self.engine.state_dir(), &id);
        let context = talon_environments::Context {
            room: self
                .stored
                .as_ref()
                .and_then(crate::limits::stored::StoredBytes::room),
            ..self.engine.environment_context(&state_dir)
        };
        match provider.prepare(&settings, &dir, context).await {
            Ok(workspace) => {
                environment.status = EnvironmentStatus::Ready;
                environment.workspace = Some(workspace.display().to_string());
            }
            Err(error) => {
                tracing::warn!(environment = %id, error = %error.message, "an environment could not be prepared");
                environment.status = EnvironmentStatus::Failed;
                environment.detail = Some(error.message);
                // What was made of it goes.
                let _ = tokio::fs::remove_dir_all(&dir).await;
            }
        }
        // What it takes on disk counts in the store's quota.
        let walked = dir.clone();
        let footprint = tokio::task::spawn_blocking(move || talon_environments::footprint(&walked))
            .await
            .unwrap_or_default();
        self.store
            .set_environment_footprint(&id, footprint)
            .await
            .map_err(api_error)?;
        if let Some(stored) = &self.stored {
            stored.add(footprint);
        }
        self.store
            .update_environment(&id, &status_name(environment.status), &environment)
            .await
            .map_err(api_error)?;
        Ok(environment)
    }

    pub(super) async fn delete_environment(
        &self,
        caller: &Caller,
        p: EnvironmentsDeleteParams,
    ) -> Result<Environment, ApiError> {
        let mut environment =
            crate::auth::owned::environment_for(&self.store, caller, p.environment_id.as_str())
                .await?;
        if environment.status == EnvironmentStatus::Deleted {
            return Ok(environment);
        }
        let provider = self.engine.providers().get(environment.provider.as_str())?;
        let settings = environment.settings.clone().unwrap_or_default();
        let dir = dir_of(&self.engine.state_dir(), environment.id.as_str());
        environment.detail = Some(provider.release(&settings, &dir).await?);
        environment.status = EnvironmentStatus::Deleted;
        // A workspace kept by policy still takes its room.
        let walked = dir.clone();
        let footprint = tokio::task::spawn_blocking(move || talon_environments::footprint(&walked))
            .await
            .unwrap_or_default();
        self.store
            .set_environment_footprint(environment.id.as_str(), footprint)
            .await
            .map_err(api_error)?;
        self.store
            .update_environment(
                environment.id.as_str(),
                &status_name(environment.status),
                &environment,
            )
            .await
            .map_err(api_error)?;
        Ok(environment)
    }

    /// The environment a new run names, which must be ready.
    pub(super) async fn ready_environment(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<Environment, ApiError> {
        let environment = crate::auth::owned::environment_for(&self.store, caller, id).await?;
        if environment.status != EnvironmentStatus::Ready {
            return Err(talon_protocol::gateway::refuse::environment_not_ready(
                id,
                &status_name(environment.status),
            )
            .with_details(talon_protocol::gateway::ErrorDetails {
                environment: Some(Box::new(environment)),
                ..Default::default()
            }));
        }
        Ok(environment)
    }
}
