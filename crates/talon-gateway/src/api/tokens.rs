//! `tokens.list` and `tokens.revoke`: an admin's view of the tokens (never
//! a secret or its hash) and revocation down a token's lineage (every
//! token minted under it goes with it; `revocation` ends their streams).

use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::{Subject, TokenId};
use talon_protocol::gateway::{
    ApiError, TokenInfo, TokensListParams, TokensListResult, TokensRevokeParams, TokensRevokeResult,
};

use super::Api;
use crate::auth::identity::Caller;
use crate::error::api_error;

/// A page's size when none is asked.
const DEFAULT_PAGE: u32 = 100;

impl Api {
    pub(super) async fn list_tokens(
        &self,
        p: TokensListParams,
    ) -> Result<TokensListResult, ApiError> {
        let limit = p
            .limit
            .unwrap_or(DEFAULT_PAGE)
            .clamp(1, talon_store::MAX_TOKENS_PAGE);
        // One more than asked says whether there is a next page.
        let mut page = self
            .store
            .tokens_page(
                p.cursor.as_ref().map(TokenId::as_str),
                limit + 1,
                p.include_revoked.unwrap_or(false),
                p.subject.as_ref().map(Subject::as_str),
            )
            .await
            .map_err(api_error)?;
        let more = page.len() > limit as usize;
        page.truncate(limit as usize);
        let next_cursor = more
            .then(|| page.last().map(|t| TokenId::new(t.id.as_str())))
            .flatten();
        Ok(TokensListResult {
            tokens: page
                .into_iter()
                .map(|t| TokenInfo {
                    subject: t.subject.map(Subject::new),
                    agents: t.agents.map(|a| a.into_iter().map(AgentId::new).collect()),
                    id: TokenId::new(t.id),
                    name: t.name,
                    scopes: t.scopes,
                    created_at: t.created_at,
                    expires_at: t.expires_at,
                    revoked_at: t.revoked_at,
                    parent_id: t.parent_id.map(TokenId::new),
                })
                .collect(),
            next_cursor,
        })
    }

    pub(super) async fn revoke_tokens(
        &self,
        caller: &Caller,
        p: TokensRevokeParams,
    ) -> Result<TokensRevokeResult, ApiError> {
        let revoked = self
            .store
            .revoke_token_tree(p.token_id.as_str(), self.store.now_ms())
            .await
            .map_err(api_error)?
            .ok_or_else(|| {
                talon_protocol::gateway::refuse::not_found("token", p.token_id.as_str())
            })?;
        tracing::info!(
            token = %p.token_id, by = %caller.token_id, revoked = revoked.len(),
            "tokens revoked through tokens.revoke"
        );
        Ok(TokensRevokeResult {
            token_id: p.token_id,
            revoked: revoked.into_iter().map(TokenId::new).collect(),
        })
    }
}
