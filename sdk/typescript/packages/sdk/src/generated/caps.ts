// Generated from the gateway's method table by `talon_protocol::codegen::typescript`:
// do not edit. Regenerate with `UPDATE_GENERATED=1 cargo nextest run -p talon-protocol generated`.
//
// The caps every server of the protocol holds a request to, and the gateway's
// defaults the fakes copy (the Rust side: `talon_protocol::gateway::caps`).

/** The longest input a run takes, in bytes (the messages' contents). */
export const MAX_INPUT_BYTES = 1048576;

/** Most client tools a run takes. */
export const MAX_CLIENT_TOOLS = 128;

/** The longest `tools.invoke` tool reference (a catalog id or name), in bytes. */
export const MAX_TOOL_REF_BYTES = 512;

/** Most keys in a session's metadata. */
export const METADATA_KEYS = 64;

/** The most bytes a session's metadata takes, as JSON. */
export const METADATA_BYTES = 16384;

/** The longest session metadata key, in characters. */
export const METADATA_KEY_CHARS = 128;

/** Items in a page when the caller asks for no `limit`. */
export const DEFAULT_LIMIT = 100;

/** The most items in a page, whatever the caller asks. */
export const MAX_LIMIT = 500;

/** The longest approval summary, in bytes. */
export const MAX_APPROVAL_SUMMARY_BYTES = 300;

/** The longest a token lives, in milliseconds (30 days). */
export const MAX_TOKEN_TTL_MS = 2592000000;

/** Most agents a token may be bound to. */
export const MAX_TOKEN_AGENTS = 64;

/** How long a stream ticket stays good, in milliseconds. */
export const TICKET_TTL_MS = 60000;

/** Subscriptions one WebSocket connection may hold at once. */
export const MAX_SUBSCRIPTIONS = 16;

/** The gateway's default cap on a request body, in bytes. */
export const DEFAULT_MAX_BODY_BYTES = 4194304;

/** How long `runs.wait` waits when the caller names no `timeoutMs`. */
export const DEFAULT_WAIT_MS = 30000;

/** The longest `runs.wait` waits, whatever the caller asks. */
export const DEFAULT_MAX_WAIT_MS = 600000;

/** How many characters of its input a run's `summary` keeps. */
export const RUN_SUMMARY_CHARS = 120;

/** The longest `runs.list` `text`, in characters. */
export const MAX_RUN_TEXT_CHARS = 200;

/** The days `usage.summary` reads when the caller names no start. */
export const USAGE_DEFAULT_DAYS = 30;

/** The most days `usage.summary` reads. */
export const USAGE_MAX_DAYS = 366;
