//! `tokens.*` in the fake: minting (with idempotency keys: a retry gets the
//! same id and a new secret, a reused key with other terms `conflict`),
//! listing and revoking the tokens it minted, and stream tickets.

use talon_protocol::gateway::bounded::TokenId;
use talon_protocol::gateway::caps::TICKET_TTL_MS;
use talon_protocol::gateway::params::*;
use talon_protocol::gateway::*;

use crate::state::{KeyedToken, Shared};

/// `tokens.create`.
pub(crate) fn create(shared: &Shared, p: TokensCreateParams) -> Result<CreatedToken, ApiError> {
    let now = shared.now_ms();
    let (scopes, expires_at) = p.grant(now)?;
    // Bound tokens are checked and echoed; what they see is not
    // modelled (see "Deliberately absent").
    let binding = p.bind_under(&scopes, &talon_protocol::gateway::Binding::default())?;
    let name = p.name.to_string();
    let key = p.idempotency_key.as_ref().map(|k| k.to_string());
    let (id, token) = shared.write(|s| {
        let token = format!("talon_{}", s.new_id("fake"));
        s.tokens.retain(|_, (expires, _)| *expires > now);
        let id = match key.as_ref().and_then(|k| s.keyed_tokens.get(k)) {
            // A retry: the same id, a new secret; the old one stops.
            Some(earlier)
                if earlier.name == name
                    && earlier.scopes == scopes
                    && earlier.binding == binding =>
            {
                s.tokens.remove(&earlier.token);
                earlier.id.clone()
            }
            Some(earlier) => {
                return Err(talon_protocol::gateway::refuse::token_key_reused(
                    key.as_deref().unwrap_or_default(),
                    earlier.id.as_str(),
                    "has another name, scopes or binding",
                )
                .with_details(talon_protocol::gateway::ErrorDetails {
                    token_id: Some(earlier.id.to_string()),
                    ..Default::default()
                }));
            }
            None => s.new_id("tok"),
        };
        if let Some(key) = &key {
            let minted = KeyedToken {
                id: id.clone(),
                token: token.clone(),
                name: name.clone(),
                scopes: scopes.clone(),
                binding: binding.clone(),
            };
            s.keyed_tokens.insert(key.clone(), minted);
        }
        s.tokens.insert(token.clone(), (expires_at, scopes.clone()));
        let info = talon_protocol::gateway::TokenInfo {
            subject: binding.subject.clone(),
            agents: binding.agents.clone(),
            id: TokenId::new(id.as_str()),
            name: Some(name.clone()),
            scopes: scopes.clone(),
            created_at: now,
            expires_at: Some(expires_at),
            revoked_at: None,
            parent_id: Some(TokenId::new(crate::state::FAKE_TOKEN_ID)),
        };
        s.minted.insert(id.clone(), (info, token.clone()));
        Ok((id, token))
    })?;
    Ok(CreatedToken {
        subject: binding.subject,
        agents: binding.agents,
        token,
        id: TokenId::new(id),
        name,
        scopes,
        expires_at,
    })
}

/// `tokens.list`: the minted tokens, by id.
pub(crate) fn list(shared: &Shared, p: TokensListParams) -> Result<TokensListResult, ApiError> {
    let limit = p.limit.unwrap_or(100).clamp(1, 500) as usize;
    let include_revoked = p.include_revoked.unwrap_or(false);
    Ok(shared.read(|s| {
        let mut tokens: Vec<TokenInfo> = s
            .minted
            .values()
            .map(|(info, _)| info)
            .filter(|info| {
                p.cursor
                    .as_ref()
                    .is_none_or(|c| info.id.as_str() > c.as_str())
            })
            .filter(|info| include_revoked || info.revoked_at.is_none())
            .take(limit + 1)
            .cloned()
            .collect();
        let more = tokens.len() > limit;
        tokens.truncate(limit);
        let next_cursor = more.then(|| tokens.last().map(|t| t.id.clone())).flatten();
        TokensListResult {
            tokens,
            next_cursor,
        }
    }))
}

/// `tokens.revoke`.
pub(crate) fn revoke(
    shared: &Shared,
    p: TokensRevokeParams,
) -> Result<TokensRevokeResult, ApiError> {
    let now = shared.now_ms();
    shared.write(|s| {
        let Some((info, secret)) = s.minted.get_mut(p.token_id.as_str()) else {
            return Err(talon_protocol::gateway::refuse::not_found(
                "token",
                p.token_id.as_str(),
            ));
        };
        // Every token here is minted by the fake's own: none has
        // descendants.
        let revoked = if info.revoked_at.is_none() {
            info.revoked_at = Some(now);
            let secret = secret.clone();
            s.tokens.remove(&secret);
            vec![p.token_id.clone()]
        } else {
            Vec::new()
        };
        Ok(TokensRevokeResult {
            token_id: p.token_id.clone(),
            revoked,
        })
    })
}

/// `tokens.ticket`: a stream ticket for `TICKET_TTL_MS`.
pub(crate) fn ticket(shared: &Shared, p: TokensTicketParams) -> Result<StreamTicket, ApiError> {
    let (scopes, stream) = p.grant()?;
    if let talon_protocol::gateway::TicketStream::Run(run) = &stream {
        shared.read(|s| s.run(run.run_id.as_str()).map(|_| ()))?;
    }
    let now = shared.now_ms();
    let expires_at = now + TICKET_TTL_MS;
    let ticket = shared.write(|s| {
        let ticket: String = s.new_id("tkt");
        s.tickets.retain(|_, (expires, _)| *expires > now);
        s.tickets
            .insert(ticket.clone(), (expires_at, stream.clone()));
        ticket
    });
    Ok(StreamTicket {
        ticket,
        expires_at,
        scopes,
        stream,
    })
}
