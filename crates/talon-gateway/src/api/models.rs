//! `models.list` (the configured providers' models, and the agents'
//! primary models) and `models.status` (per provider: whether the
//! gateway holds credentials and whether the provider accepts them; never
//! a key's value), both from the host (`talon_runtime::models`).

use talon_protocol::gateway::*;
use talon_runtime::Host;

fn config_error(error: talon_runtime::RuntimeError) -> ApiError {
    ApiError::new(ErrorCode::Unavailable, error.to_string())
}

/// `models.list`.
pub(super) fn list(
    host: &Host,
    p: params::ModelsListParams,
) -> Result<params::ModelsListResult, ApiError> {
    let models = host.models(super::DEFAULT_AGENT).map_err(config_error)?;
    let (models, next_cursor) = talon_protocol::gateway::page::page_after(
        models,
        p.cursor.as_ref().map(|c| c.as_str()),
        p.limit,
        |m| m.id.as_str(),
    )?;
    Ok(params::ModelsListResult {
        models,
        next_cursor,
    })
}

/// `models.status`: every provider checked at once.
pub(super) async fn status(host: &Host) -> Result<params::ModelsStatusResult, ApiError> {
    Ok(params::ModelsStatusResult {
        providers: host.provider_status().await.map_err(config_error)?,
    })
}
