//! Every key Talon reads, as one [`Node`] tree, and the cross-references
//! between sections.
//!
//! Each feature crate still interprets its own section (and its errors
//! name the field); this tree is what the whole-file check and the
//! published JSON Schema say about them, so a key added to a crate is
//! added here in the same change (the tests of `talon-config` load a
//! config that sets every key, and each crate's own parser).
//!
//! OpenClaw's keys for features Talon does not have are declared with
//! [`openclaw`]: they load, and the check notes that they do nothing.

use crate::schema::{Field, Kind, Node, Rest, field, openclaw};

mod infra;
mod references;

use infra::{diagnostics, gateway, mcp_servers, store};
pub(crate) use references::cross_reference;

const U32_MAX: i64 = u32::MAX as i64;
const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 86_400_000;

/// The whole document.
pub fn schema() -> Node {
    let mut fields = vec![
        field(
            "models",
            Node::object(vec![field("providers", providers())], "Model providers."),
        ),
        field(
            "agents",
            Node::object(
                vec![
                    field("defaults", agent_defaults()),
                    field("list", Node::array(agent(), "The agents, by id.")),
                ],
                "Agents: defaults and the list.",
            ),
        ),
        field("tools", tools()),
        field(
            "mcp",
            Node::object(
                vec![field("servers", mcp_servers())],
                "MCP servers whose tools agents may call.",
            ),
        ),
        field("store", store()),
        field("gateway", gateway()),
        field("diagnostics", diagnostics()),
    ];
    fields.extend(
        [
            "meta",
            "env",
            "wizard",
            "logging",
            "update",
            "browser",
            "ui",
            "auth",
            "skills",
            "plugins",
            "messages",
            "commands",
            "session",
            "channels",
            "talk",
            "audio",
            "hooks",
            "cron",
            "web",
            "discovery",
            "canvasHost",
            "bindings",
            "broadcast",
            "approvals",
            "memory",
            "media",
            "nodeHost",
            "secrets",
            "acp",
        ]
        .into_iter()
        .map(|k| openclaw(k, "OpenClaw's; Talon does not read it.")),
    );
    let mut root = Node::object(fields, "Talon's config (OpenClaw's shape, JSON5).");
    root.description = "Talon's config (talon.json5): OpenClaw's shape and syntax (JSON5).";
    root
}

fn whole(min: i64, max: i64, description: &'static str) -> Node {
    Node::integer(Some(min), Some(max), description)
}

/// A non-negative integer the crate clamps into its range.
fn clamped(description: &'static str) -> Node {
    Node::integer(Some(0), None, description)
}

fn strings(description: &'static str) -> Node {
    Node::array(Node::text(""), description)
}

fn model_ref() -> Node {
    Node::one_of(
        vec![
            Node::text("\"provider/model\"."),
            Node::object(
                vec![
                    field("primary", Node::text("\"provider/model\".")),
                    openclaw(
                        "fallbacks",
                        "OpenClaw's fallback models; Talon does not use them.",
                    ),
                ],
                "",
            ),
        ],
        "The model: \"provider/model\" or {primary: \"provider/model\"}.",
    )
}

/// A price in US dollars per million tokens.
fn price(description: &'static str) -> Node {
    Node::number(None, Some(1e6), description)
}

fn providers() -> Node {
    let model = Node::object(
        vec![
            field("id", Node::text("The model's id at the provider.")),
            field("name", Node::string("A display name.")),
            field(
                "contextWindow",
                Node::integer(Some(1), None, "Its context window, in tokens."),
            ),
            field(
                "maxTokens",
                Node::integer(Some(1), None, "The most tokens it writes."),
            ),
            field(
                "reasoning",
                Node::bool(
                    "Whether it reasons: extended thinking at \"medium\" when the agent sets no thinkingDefault (default false).",
                ),
            ),
            openclaw("input", "OpenClaw's."),
            field(
                "cost",
                Node::object(
                    vec![
                        field("input", price("Uncached prompt tokens (required).")),
                        field("output", price("Completion tokens (required).")),
                        field("cacheRead", price("Prompt tokens read from the cache.")),
                        field("cacheWrite", price("Prompt tokens written to the cache.")),
                    ],
                    "Its prices in US dollars per million tokens: runs report `usage.costUsd` and `/metrics` `talon_model_cost_usd_total` from them; without them, no cost.",
                ),
            ),
            openclaw("compat", "OpenClaw's."),
            openclaw("headers", "OpenClaw's."),
        ],
        "",
    );
    let provider = Node::object(
        vec![
            field(
                "baseUrl",
                Node::text("The API's base URL (http:// or https://)."),
            ),
            field(
                "apiKey",
                Node::one_of(
                    vec![
                        Node::string("The key, or \"${VARIABLE}\"."),
                        Node::object(
                            vec![field("env", Node::text("The variable."))],
                            "{env: \"VARIABLE\"}.",
                        ),
                    ],
                    "The API key: a string, \"${VARIABLE}\" or {env: \"VARIABLE\"}.",
                ),
            ),
            field(
                "api",
                Node::word(
                    &["openai-completions", "anthropic-messages"],
                    "The wire format: OpenAI's Chat Completions or Anthropic's Messages (default \"openai-completions\").",
                ),
            ),
            field("models", Node::array(model, "The models it serves.")),
            field(
                "timeoutMs",
                Node::integer(Some(1), None, "A request's time limit (default 120000)."),
            ),
            field(
                "maxRetries",
                Node::integer(
                    Some(0),
                    None,
                    "Retries of a failed request, at most 10 (default 3).",
                ),
            ),
            field(
                "idleTimeoutMs",
                Node::integer(
                    Some(1),
                    None,
                    "The longest silence inside a streamed reply (default 60000).",
                ),
            ),
            field(
                "headers",
                Node::map(
                    Node::one_of(
                        vec![
                            Node::string("The value, or \"${VARIABLE}\"."),
                            Node::object(
                                vec![field("env", Node::text("The variable."))],
                                "{env: \"VARIABLE\"}.",
                            ),
                        ],
                        "",
                    ),
                    "Headers sent on every request, by name (e.g. anthropic-beta); \
                     not authorization, x-api-key, anthropic-version, content-type, \
                     content-length or host.",
                ),
            ),
            openclaw("auth", "OpenClaw's."),
            openclaw("authHeader", "OpenClaw's."),
        ],
        "",
    );
    Node::map(
        provider,
        "Providers by id: the \"provider\" of \"provider/model\".",
    )
}

fn code_mode() -> Node {
    let settings = Node::object(
        vec![
            field("enabled", Node::bool("The only switch (default false).")),
            field(
                "runtime",
                Node::word(&["quickjs-wasi"], "The cell runtime."),
            ),
            field(
                "mode",
                Node::word(&["only"], "The model sees exec and wait only."),
            ),
            field(
                "languages",
                Node::array(
                    Node::word(&["javascript", "typescript"], ""),
                    "Cell languages (default both).",
                ),
            ),
            field(
                "timeoutMs",
                clamped("A cell's time limit, 100–60000 (default 10000)."),
            ),
            field(
                "memoryLimitBytes",
                clamped("A cell's memory, 1 MiB–1 GiB (default 64 MiB)."),
            ),
            field(
                "maxOutputBytes",
                clamped("A cell's output, 1 KiB–10 MiB (default 64 KiB)."),
            ),
            field(
                "maxSnapshotBytes",
                clamped("A suspended cell, 1 KiB–256 MiB (default 10 MiB)."),
            ),
            field(
                "maxPendingToolCalls",
                clamped("Pending calls a cell may hold, 1–128 (default 16)."),
            ),
            field(
                "snapshotTtlSeconds",
                clamped("How long a suspended cell is kept, 1–86400 (default 900)."),
            ),
            field(
                "maxSearchLimit",
                clamped("The most results a search returns, 1–50 (default 50)."),
            ),
            field(
                "searchDefaultLimit",
                clamped("Results when a search names none (default 8)."),
            ),
            field(
                "maxSourceBytes",
                clamped("A cell's source, 1 KiB–4 MiB (default 1 MiB)."),
            ),
        ],
        "",
    );
    Node::one_of(
        vec![Node::bool(""), settings],
        "Code Mode: true, false or its settings.",
    )
}

fn tool_search() -> Node {
    let settings = Node::object(
        vec![
            field(
                "mode",
                Node::word(
                    &["code", "tools", "directory"],
                    "How the catalog is offered (default code).",
                ),
            ),
            field(
                "codeTimeoutMs",
                clamped("A search cell's time limit, 1000–60000 (default 10000)."),
            ),
            field(
                "maxSearchLimit",
                clamped("The most results, 1–50 (default 20)."),
            ),
            field(
                "searchDefaultLimit",
                clamped("Results when a search names none (default 8)."),
            ),
        ],
        "",
    );
    Node::one_of(
        vec![Node::bool(""), settings],
        "Tool Search: true, false or its settings.",
    )
}

fn approvals() -> Node {
    let action = || Node::word(&["ask", "allow", "deny"], "");
    let rule = Node::object(
        vec![
            field(
                "tool",
                Node::string("A tool name or catalog id; `*` matches anything."),
            ),
            field("source", Node::string("core, mcp, plugin or app.")),
            field(
                "toolKind",
                Node::word(
                    &["tool", "code_mode_exec"],
                    "What the rule decides: tool calls (`tool`, the default) or Code Mode cells (`code_mode_exec`).",
                ),
            ),
            field(
                "risk",
                Node::word(&["low", "medium", "high", "critical"], "The tool's risk."),
            ),
            field("action", action()),
        ],
        "",
    );
    let object = Node::object(
        vec![
            field("mode", action()),
            field(
                "timeoutMs",
                Node::integer(Some(1), None, "How long an approval waits (default 24 h)."),
            ),
            field(
                "rules",
                Node::array(rule, "The first rule that matches decides."),
            ),
        ],
        "",
    );
    Node::one_of(
        vec![action(), object],
        "Approvals: \"ask\", \"allow\", \"deny\" or {mode, timeoutMs, rules}.",
    )
}

/// OpenClaw's `tools` keys Talon does not read.
const OPENCLAW_TOOLS: &[&str] = &[
    "profile",
    "byProvider",
    "web",
    "media",
    "links",
    "message",
    "agentToAgent",
    "elevated",
    "exec",
    "subagents",
    "alsoAllow",
];

fn tool_fields() -> Vec<Field> {
    let mut fields = vec![
        field("codeMode", code_mode()),
        field("toolSearch", tool_search()),
        field(
            "allow",
            strings("Tool names, globs or group:<name>; absent: all."),
        ),
        field(
            "deny",
            strings("Tool names, globs or group:<name>; deny wins."),
        ),
        field(
            "directOnly",
            strings(
                "Tools the model always sees by name, never hidden behind Code Mode or Tool Search: names, catalog ids (client:app:<name> for an app's tools), globs or group:<name>.",
            ),
        ),
        field(
            "sandbox",
            Node::object(
                vec![field(
                    "tools",
                    Node::object(
                        vec![
                            field(
                                "allow",
                                strings("Sandboxed runs may use only these (and tools.allow's)."),
                            ),
                            field("deny", strings("Sandboxed runs may not use these.")),
                            field("alsoAllow", strings("Added to tools.sandbox.tools.allow.")),
                        ],
                        "OpenClaw's tool policy for sandboxed runs (every run, unless agents.defaults.sandbox.mode is \"off\").",
                    ),
                )],
                "OpenClaw's sandbox tool policy.",
            ),
        ),
    ];
    fields.extend(
        OPENCLAW_TOOLS
            .iter()
            .map(|k| openclaw(k, "OpenClaw's; Talon does not read it.")),
    );
    fields
}

fn tools() -> Node {
    let mut fields = tool_fields();
    fields.push(field("approvals", approvals()));
    Node::object(
        fields,
        "Tools: Code Mode, Tool Search, policy and approvals.",
    )
}

/// OpenClaw's agent keys Talon does not read.
const OPENCLAW_AGENT: &[&str] = &[
    "default",
    "identity",
    "groupChat",
    "subagents",
    "skills",
    "heartbeat",
    "humanDelay",
    "agentDir",
    "memorySearch",
    "contextTokens",
    "verboseDefault",
    "elevatedDefault",
    "timeoutSeconds",
    "compaction",
    "contextPruning",
    "userTimezone",
    "envelopeTimezone",
    "imageModel",
    "blockStreamingDefault",
    "blockStreamingBreak",
    "blockStreamingChunk",
    "maxConcurrent",
    "skipBootstrap",
    "bootstrapMaxChars",
    "repoRoot",
    "typingMode",
    "typingIntervalSeconds",
    "cliBackends",
    "mediaMaxMb",
];

/// The levels of `thinkingDefault` and `params.thinking`.
const THINKING: &[&str] = &[
    "off", "minimal", "low", "medium", "high", "xhigh", "max", "adaptive",
];

/// OpenClaw's model parameters: Talon reads `cacheRetention`, and
/// `thinking` in a model's entry (`agents.defaults.models`); the others
/// pass through unread.
fn params(model: bool) -> Node {
    let mut fields = vec![field(
        "cacheRetention",
        Node::word(
            &["none", "short", "long"],
            "Prompt-cache breakpoints (anthropic-messages): five minutes (short) or an hour (long, api.anthropic.com only); default short at api.anthropic.com, else none.",
        ),
    )];
    if model {
        fields.push(field(
            "thinking",
            Node::word(
                THINKING,
                "Extended thinking for this model (an agent's thinkingDefault wins over it; it wins over agents.defaults.thinkingDefault).",
            ),
        ));
    }
    Node::new(
        Kind::Object {
            fields,
            rest: Rest::Open,
        },
        "Model parameters: Talon reads those listed; OpenClaw's others are not read.",
    )
}

/// `agents.defaults.sandbox` and `agents.list[].sandbox`: the sandbox of
/// every command the agent's model runs (read by `talon_jail::Policy`,
/// whose bounds these repeat).
fn sandbox() -> Node {
    let limits = Node::object(
        vec![
            field(
                "cpuSeconds",
                Node::integer(
                    Some(1),
                    Some(86_400),
                    "CPU seconds per process (default 300).",
                ),
            ),
            field(
                "memoryBytes",
                Node::integer(
                    Some(16 << 20),
                    None,
                    "Data bytes per process (default 4 GiB).",
                ),
            ),
            field(
                "processes",
                Node::integer(
                    Some(8),
                    Some(65_536),
                    "Processes and threads at once (default 256).",
                ),
            ),
            field(
                "openFiles",
                Node::integer(
                    Some(16),
                    Some(1_048_576),
                    "Open files per process (default 1024).",
                ),
            ),
            field(
                "fileSizeBytes",
                Node::integer(
                    Some(1 << 20),
                    None,
                    "The largest file written (default 1 GiB).",
                ),
            ),
            field(
                "tmpBytes",
                Node::integer(
                    Some(1 << 20),
                    None,
                    "The private /tmp's size (default 512 MiB).",
                ),
            ),
            field(
                "diskReserveBytes",
                Node::integer(
                    Some(0),
                    None,
                    "The free space the workspace's filesystem keeps: a command whose writes leave less is stopped (default 1 GiB; 0: not checked).",
                ),
            ),
        ],
        "Per-command resource limits.",
    );
    let mut fields = vec![
        field(
            "mode",
            Node::word(
                &["all", "non-main", "off"],
                "Whether commands run sandboxed: all (default; non-main is treated as all), or off (unsandboxed: the admin's explicit choice).",
            ),
        ),
        field(
            "scope",
            Node::word(
                &["session", "agent", "shared"],
                "Which commands share a scratch workspace with workspaceAccess none (default session).",
            ),
        ),
        field(
            "workspaceAccess",
            Node::word(
                &["rw", "ro", "none"],
                "The agent's workspace in the sandbox: rw (default), ro (and write/edit refuse), or none (a scratch workspace).",
            ),
        ),
        field(
            "network",
            Node::word(
                &["off", "allow", "host"],
                "Where commands may reach: off (default), allow (only allowHosts, through a filtering proxy; needs socat), or the host's network.",
            ),
        ),
        field(
            "allowHosts",
            strings(
                "With network allow, the host:port pairs commands may reach (at most 256): a name (api.example.com:443), a wildcard below a name (*.pypi.org:443), or an IP address only where listed as one; empty is the same as off.",
            ),
        ),
        field("limits", limits),
    ];
    fields.extend(
        ["docker", "browser", "prune", "sessionToolsVisibility", "workspaceRoot"]
            .iter()
            .map(|k| openclaw(k, "OpenClaw's container setting; Talon's sandbox has no containers and does not read it.")),
    );
    Node::object(
        fields,
        "The sandbox of every command the model runs (bubblewrap namespaces, a read-only system, seccomp, limits).",
    )
}

fn agent_fields() -> Vec<Field> {
    let mut fields = vec![
        field("model", model_ref()),
        field(
            "reasoningDefault",
            Node::word(
                &["off", "on", "stream"],
                "Whether the model's reasoning is shown as thinking.delta events (on and stream: yes; default off).",
            ),
        ),
        field(
            "thinkingDefault",
            Node::word(
                THINKING,
                "Extended thinking: off, or a budget (minimal and low 1024 tokens, medium 4096, high 16384, xhigh and max 32768), or adaptive.",
            ),
        ),
        field("params", params(false)),
        field("workspace", Node::text("The agent's working directory.")),
        field("sandbox", sandbox()),
        field(
            "tools",
            Node::object(
                tool_fields(),
                "This agent's tool settings (over the global ones).",
            ),
        ),
    ];
    fields.extend(
        OPENCLAW_AGENT
            .iter()
            .map(|k| openclaw(k, "OpenClaw's; Talon does not read it.")),
    );
    fields
}

fn agent_defaults() -> Node {
    let mut fields = agent_fields();
    let model = Node::new(
        Kind::Object {
            fields: vec![field("params", params(true))],
            rest: Rest::Open,
        },
        "",
    );
    fields.push(field(
        "models",
        Node::map(
            model,
            "Per model (\"provider/model\"): its params (cacheRetention, thinking).",
        ),
    ));
    Node::object(fields, "What every agent gets unless it says otherwise.")
}

fn agent() -> Node {
    let mut fields = vec![
        field("id", Node::text("The agent's id (required, unique).")),
        field("name", Node::string("A display name.")),
        field("description", Node::string("What it is for.")),
    ];
    fields.extend(agent_fields());
    fields.push(openclaw(
        "models",
        "OpenClaw's; Talon reads agents.defaults.models.",
    ));
    Node::object(fields, "")
}

fn secret_value() -> Node {
    Node::one_of(
        vec![
            Node::string("A value, \"${VARIABLE}\", or a template with ${VARIABLE}s."),
            Node::number(None, None, ""),
            Node::bool(""),
            Node::object(
                vec![field("env", Node::text("The variable."))],
                "{env: \"VARIABLE\"}.",
            ),
        ],
        "",
    )
}
