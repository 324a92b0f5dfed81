// Credentials as the gateway checks and mints them: the bearer token of a
// request (the fake's own admin token, or one `tokens.create` minted and
// that has not expired or been replaced), scopes (`admin` implies every
// one), `tokens.create` (scopes from a preset and a list, 1 s to 30 days,
// an idempotency key giving the same id and a fresh secret), and stream
// tickets (`tokens.ticket`: `tkt_` and 64 hex digits, some of the caller's
// scopes, one stream, once, within 60 s).

import { randomBytes } from "node:crypto";

import { caps, SCOPE_PRESETS, SCOPES, type protocol as P, refusals } from "@talon/sdk";

import { Failure, fail, notFound, unauthenticated } from "./errors.js";
import { State, now, sha256, type Caller, type MintedToken } from "./state.js";

/** How long a stream ticket may wait to be used (the gateway's default). */
const TICKET_TTL_MS = caps.TICKET_TTL_MS;
/** The longest life `tokens.create` gives: 30 days. */
const MAX_TOKEN_TTL_MS = caps.MAX_TOKEN_TTL_MS;
/** The fake's own token's id. */
const OWN_TOKEN_ID = "tok_fakegateway00";

/** The scopes each preset grants: the protocol's, generated. */
const PRESETS: Readonly<Record<P.ScopePreset, readonly P.Scope[]>> = SCOPE_PRESETS;

/** Scopes in the protocol's order, each once. */
function ordered(scopes: readonly P.Scope[]): P.Scope[] {
  return SCOPES.filter((s) => scopes.includes(s));
}

/** `forbidden` unless `caller` holds `scope` (or `admin`). */
export function requireScope(caller: Caller, scope: P.Scope): void {
  if (!caller.scopes.includes("admin") && !caller.scopes.includes(scope)) throw fail(refusals.forbidden(scope));
}

/** The caller an `Authorization` header names, or `unauthenticated` with the reason. */
export function authenticate(state: State, header: string | undefined): Caller {
  if (header === undefined) throw unauthenticated("missing");
  if (!header.startsWith("Bearer ")) throw unauthenticated("malformed");
  const secret = header.slice("Bearer ".length).trim();
  if (secret === state.token) return { tokenId: OWN_TOKEN_ID, scopes: ["admin"] };
  if (!secret.startsWith("talon_") || secret.length > 128) throw unauthenticated("malformed");
  const minted = state.tokens.get(secret);
  if (!minted) throw unauthenticated("unknown");
  if (minted.expiresAt <= now()) throw unauthenticated("expired");
  return { tokenId: minted.id, scopes: minted.scopes, expiresAt: minted.expiresAt };
}

/** The caller a stream ticket stands for, consuming it, or `unauthenticated` (`reason: ticket`). */
export function redeemTicket(state: State, ticket: string): Caller {
  if (!/^tkt_[0-9a-fA-F]{64}$/.test(ticket)) throw unauthenticated("ticket");
  const taken = state.tickets.get(ticket);
  state.tickets.delete(ticket);
  if (!taken || taken.expiresAt <= now()) throw unauthenticated("ticket");
  if (taken.tokenId !== OWN_TOKEN_ID) {
    const live = [...state.tokens.values()].some((t) => t.id === taken.tokenId && t.expiresAt > now());
    if (!live) throw unauthenticated("ticket");
  }
  return { tokenId: taken.tokenId, scopes: taken.scopes, ticket: taken.stream };
}

/** What a ticket's caller may not do: `forbidden`, `reason: ticket`. */
export function ticketRefusal(what: string): Failure {
  return new Failure(refusals.ticketCalls(what));
}

/** Whether `caller` may open `stream`: a token any its scopes allow, a ticket only its own. */
export function mayOpen(caller: Caller, stream: P.TicketStream): void {
  if (caller.ticket !== undefined && JSON.stringify(caller.ticket) !== JSON.stringify(stream)) {
    throw ticketRefusal("this ticket opens another stream");
  }
}

/** Whether `events.subscribe` asks for exactly the filter `named` (its cursor is the caller's). */
export function askedBy(named: P.StreamFilter, p: P.EventsSubscribeParams): boolean {
  const same = <T>(a: T | null | undefined, b: T | null | undefined) =>
    JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
  return same(named.sessionKey, p.sessionKey) && same(named.agentId, p.agentId) && same(named.types, p.types);
}

/** A stream's caller: its bearer token, else (with no `Authorization` header) its ticket. */
export function streamCaller(state: State, header: string | undefined, ticket: string | undefined): Caller {
  if (ticket !== undefined && header === undefined) return redeemTicket(state, ticket);
  return authenticate(state, header);
}

/** `tokens.ticket`: a ticket for one stream (the log's when none is named), read-only: `session.read` and nothing else. */
export function mintTicket(state: State, caller: Caller, p: P.TokensTicketParams): P.StreamTicket {
  if (caller.ticket !== undefined) throw ticketRefusal("tokens.ticket");
  if ((p.scopes ?? []).some((scope) => scope !== "session.read")) {
    throw fail(refusals.ticketScopes());
  }
  const scopes: P.Scope[] = ["session.read"];
  requireScope(caller, "session.read");
  const stream: P.TicketStream = p.stream ?? { events: {} };
  if ("run" in stream && !state.runs.has(stream.run.runId)) throw notFound("run", stream.run.runId);
  const ticket = `tkt_${randomBytes(32).toString("hex")}`;
  const expiresAt = now() + TICKET_TTL_MS;
  for (const [key, old] of state.tickets) if (old.expiresAt <= now()) state.tickets.delete(key);
  state.tickets.set(ticket, { expiresAt, scopes, tokenId: caller.tokenId, stream });
  return { expiresAt, scopes, ticket, stream };
}

/** `tokens.list`: minted tokens by id, a page at a time, revoked ones on request. */
export function listTokens(state: State, p: P.TokensListParams): P.TokensListResult {
  const limit = Math.min(Math.max(p.limit ?? 100, 1), 500);
  const all = [...state.tokensById.values()]
    .filter((t) => (p.cursor ? t.id > p.cursor : true) && (p.includeRevoked === true || t.revokedAt === undefined))
    .filter((t) => p.subject == null || t.subject === p.subject)
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const page = all.slice(0, limit);
  const tokens = page.map((t) => ({
    id: t.id,
    name: t.name,
    scopes: t.scopes,
    createdAt: t.createdAt,
    expiresAt: t.expiresAt,
    ...(t.revokedAt === undefined ? {} : { revokedAt: t.revokedAt }),
    parentId: t.parentId,
    ...(t.subject === undefined ? {} : { subject: t.subject }),
    ...(t.agents === undefined ? {} : { agents: t.agents }),
  }));
  const last = page.at(-1);
  return all.length > limit && last ? { tokens, nextCursor: last.id } : { tokens };
}

/** `tokens.revoke`: the token and every token minted under it (theirs too), each keeping the time it was first revoked. */
export function revokeToken(state: State, p: P.TokensRevokeParams): P.TokensRevokeResult {
  const root = state.tokensById.get(p.tokenId);
  if (!root) throw notFound("token", p.tokenId);
  const tree = [root];
  // `tree` grows as it is walked: each token's children are walked too.
  for (const parent of tree) {
    for (const t of state.tokensById.values()) if (t.parentId === parent.id) tree.push(t);
  }
  const at = now();
  for (const t of tree) {
    t.revokedAt ??= at;
    state.tokens.delete(t.secret);
  }
  const rest = tree
    .slice(1)
    .map((t) => t.id)
    .sort();
  return { tokenId: p.tokenId, revoked: [root.id, ...rest] };
}

/** `tokens.create`: a named token with the scopes `p` grants. */
export function createToken(state: State, caller: Caller, p: P.TokensCreateParams): P.CreatedToken {
  const granted: P.Scope[] = p.preset ? [...PRESETS[p.preset]] : [];
  for (const scope of p.scopes ?? []) {
    if (!SCOPES.includes(scope)) throw fail(refusals.unknownScope());
    granted.push(scope);
  }
  const scopes = ordered(granted);
  if (scopes.length === 0) throw fail(refusals.noScopes());
  if (p.expiresInMs < 1000 || p.expiresInMs > MAX_TOKEN_TTL_MS) {
    throw fail(refusals.tokenLifetime(p.expiresInMs, MAX_TOKEN_TTL_MS));
  }
  const expiresAt = now() + p.expiresInMs;
  // Whom it acts for (the gateway's `Binding::under`, with an unbound
  // parent): checked and echoed; what a bound token sees is not modelled.
  const admin = scopes.includes("admin");
  const subject = p.subject ?? undefined;
  const asked = p.agents ?? undefined;
  if (subject === "") throw fail(refusals.subjectEmpty());
  if (subject !== undefined && admin) throw fail(refusals.subjectOnAdmin());
  if (asked !== undefined && admin) throw fail(refusals.agentsOnAdmin());
  if (asked !== undefined && (asked.length === 0 || asked.length > caps.MAX_TOKEN_AGENTS)) {
    throw fail(refusals.agentsCount(caps.MAX_TOKEN_AGENTS));
  }
  const agents = asked === undefined ? undefined : [...new Set(asked)].sort();
  // Under its parent: no scope the caller lacks, no life past the caller's.
  const beyond = scopes.find((scope) => !caller.scopes.includes("admin") && !caller.scopes.includes(scope));
  if (beyond !== undefined) throw fail(refusals.scopeBeyondMinter(beyond));
  if (caller.expiresAt !== undefined && expiresAt > caller.expiresAt) {
    throw fail(refusals.tokenOutlivesMinter(caller.expiresAt - now()));
  }
  const secret = `talon_${randomBytes(32).toString("hex")}`;
  const key = p.idempotencyKey ?? undefined;
  let id = `tok_${randomBytes(8).toString("hex")}`;
  if (key !== undefined) {
    id = `tok_${sha256(`tokens.create\0${caller.tokenId}\0${key}`).slice(0, 16)}`;
    const earlier = state.keyedTokens.get(`${caller.tokenId}\0${key}`);
    if (earlier) {
      const rebound = earlier.subject !== subject || earlier.agents?.join() !== agents?.join();
      if (earlier.name !== p.name || earlier.scopes.join() !== scopes.join() || rebound) {
        throw fail(refusals.tokenKeyReused(key, earlier.id, "has another name, scopes or binding"));
      }
      // A retry: the same id, a new secret; the earlier secret stops working.
      state.tokens.delete(earlier.secret);
    }
  }
  const minted: MintedToken = {
    id,
    name: p.name,
    scopes,
    expiresAt,
    secret,
    createdAt: now(),
    parentId: caller.tokenId,
    ...(subject === undefined ? {} : { subject }),
    ...(agents === undefined ? {} : { agents }),
  };
  state.tokens.set(secret, minted);
  state.tokensById.set(id, minted);
  if (key !== undefined) state.keyedTokens.set(`${caller.tokenId}\0${key}`, minted);
  return {
    expiresAt,
    id,
    name: p.name,
    scopes,
    token: secret,
    ...(minted.subject === undefined ? {} : { subject: minted.subject }),
    ...(minted.agents === undefined ? {} : { agents: minted.agents }),
  };
}
