//! The caps every server of the protocol holds a request to, and the
//! gateway's defaults the fakes copy, declared once. The gateway and the
//! Rust fake read these constants; the TypeScript fake reads the same
//! numbers from `@talon/sdk`'s generated `caps.ts` ([`CAPS`], rendered by
//! [`crate::codegen::typescript`]). A gateway default an admin can change
//! in the config (`gateway.limits.*`, `gateway.runs.*`) starts from here.

/// One cap: its name (the same in Rust and TypeScript), value and doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cap {
    /// Its name, `MAX_INPUT_BYTES`.
    pub name: &'static str,
    /// Its value.
    pub value: u64,
    /// What it bounds.
    pub doc: &'static str,
}

macro_rules! caps {
    ($($(#[doc = $doc:literal])+ $name:ident: $ty:ty = $value:expr;)*) => {
        $($(#[doc = $doc])+ pub const $name: $ty = $value;)*

        /// Every cap, in the order declared.
        pub const CAPS: &[Cap] = &[$(Cap {
            name: stringify!($name),
            value: $name as u64,
            doc: concat!($($doc),+),
        }),*];
    };
}

caps! {
    /// The longest input a run takes, in bytes (the messages' contents).
    MAX_INPUT_BYTES: usize = 1 << 20;
    /// Most client tools a run takes.
    MAX_CLIENT_TOOLS: usize = 128;
    /// The longest `tools.invoke` tool reference (a catalog id or name), in bytes.
    MAX_TOOL_REF_BYTES: usize = 512;
    /// Most keys in a session's metadata.
    METADATA_KEYS: usize = 64;
    /// The most bytes a session's metadata takes, as JSON.
    METADATA_BYTES: usize = 16 << 10;
    /// The longest session metadata key, in characters.
    METADATA_KEY_CHARS: usize = 128;
    /// Items in a page when the caller asks for no `limit`.
    DEFAULT_LIMIT: u32 = 100;
    /// The most items in a page, whatever the caller asks.
    MAX_LIMIT: u32 = 500;
    /// The longest approval summary, in bytes.
    MAX_APPROVAL_SUMMARY_BYTES: usize = 300;
    /// The longest a token lives, in milliseconds (30 days).
    MAX_TOKEN_TTL_MS: u64 = 30 * 24 * 3_600_000;
    /// Most agents a token may be bound to.
    MAX_TOKEN_AGENTS: usize = 64;
    /// How long a stream ticket stays good, in milliseconds.
    TICKET_TTL_MS: u64 = 60_000;
    /// Subscriptions one WebSocket connection may hold at once.
    MAX_SUBSCRIPTIONS: usize = 16;
    /// The gateway's default cap on a request body, in bytes.
    DEFAULT_MAX_BODY_BYTES: usize = 4 << 20;
    /// How long `runs.wait` waits when the caller names no `timeoutMs`.
    DEFAULT_WAIT_MS: u64 = 30_000;
    /// The longest `runs.wait` waits, whatever the caller asks.
    DEFAULT_MAX_WAIT_MS: u64 = 600_000;
    /// How many characters of its input a run's `summary` keeps.
    RUN_SUMMARY_CHARS: usize = 120;
    /// The longest `runs.list` `text`, in characters.
    MAX_RUN_TEXT_CHARS: usize = 200;
    /// The days `usage.summary` reads when the caller names no start.
    USAGE_DEFAULT_DAYS: u64 = 30;
    /// The most days `usage.summary` reads.
    USAGE_MAX_DAYS: u64 = 366;
}
