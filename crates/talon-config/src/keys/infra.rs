//! The schema of the sections that set up the gateway's surroundings:
//! MCP servers, the store and the gateway itself.

use super::{DAY_MS, HOUR_MS, U32_MAX, secret_value, strings, whole};
use crate::schema::{Node, field, openclaw};

pub(super) fn mcp_servers() -> Node {
    let ms = || whole(1, HOUR_MS, "Milliseconds, 1–3600000.");
    let server = Node::object(
        vec![
            field("command", Node::text("A stdio server's command.")),
            field("args", Node::array(Node::string(""), "Its arguments.")),
            field("env", Node::map(secret_value(), "Its environment.")),
            field("cwd", Node::string("Its working directory.")),
            field("url", Node::text("A streamable HTTP server's URL.")),
            field(
                "headers",
                Node::map(secret_value(), "Headers sent to an HTTP server."),
            ),
            field("enabled", Node::bool("Default true.")),
            field(
                "connectOnStart",
                Node::bool("Connect at start, not at first use (default false)."),
            ),
            field("connectionTimeoutMs", ms()),
            field("requestTimeoutMs", ms()),
            openclaw("transport", "Told by command or url; not read."),
            openclaw("type", "Told by command or url; not read."),
        ],
        "",
    );
    Node::map(
        server,
        "MCP servers by name (the <server> of mcp:<server>:<tool>).",
    )
}

pub(super) fn store() -> Node {
    let days = || Node::number(Some(0.0), Some(36_500.0), "Days (fractions allowed).");
    Node::object(
        vec![
            field(
                "url",
                Node::text("sqlite:PATH or postgres://… ($TALON_DATABASE_URL wins)."),
            ),
            field(
                "retention",
                Node::object(
                    vec![
                        field("maxAgeDays", days()),
                        field(
                            "maxEvents",
                            Node::integer(Some(1), None, "At most this many events."),
                        ),
                        field("artifactMaxAgeDays", days()),
                    ],
                    "How long the store keeps things.",
                ),
            ),
        ],
        "Where the gateway keeps its state.",
    )
}

pub(super) fn gateway() -> Node {
    let ms = || whole(1, DAY_MS, "Milliseconds.");
    let limits = Node::object(
        vec![
            field(
                "callsPerSecond",
                Node::number(Some(0.0), Some(1e9), "Calls a token may make per second."),
            ),
            field(
                "burst",
                whole(1, U32_MAX, "Calls above the rate a token may burst."),
            ),
            field(
                "maxStreams",
                whole(1, 1 << 20, "Open SSE and WebSocket streams."),
            ),
            field(
                "maxStreamsPerToken",
                whole(1, 1 << 20, "Open streams of one token (default 64)."),
            ),
            field(
                "maxStreamsPerSubject",
                whole(
                    1,
                    1 << 20,
                    "Open streams of every token bound to one subject (default 256).",
                ),
            ),
            field(
                "maxRequestsPerToken",
                whole(
                    1,
                    1 << 20,
                    "Requests of one token in flight, WebSockets included (default 64).",
                ),
            ),
            field(
                "maxRequestsPerSubject",
                whole(
                    1,
                    1 << 20,
                    "Requests in flight of every token bound to one subject (default 256).",
                ),
            ),
            field(
                "streamBytesPerToken",
                whole(
                    1,
                    1 << 40,
                    "Bytes one token's streams may hold unsent (default 16 MiB).",
                ),
            ),
            field("slowReaderTimeoutMs", ms()),
            field("bodyReadTimeoutMs", ms()),
            field(
                "minBodyBytesPerSecond",
                whole(
                    1,
                    1 << 40,
                    "The slowest a request body may arrive after 5 s (default 1024).",
                ),
            ),
            field(
                "maxBodyBytes",
                whole(1, 1 << 30, "The largest request body."),
            ),
            field("maxConnections", whole(1, 1 << 20, "Open connections.")),
            field("headerReadTimeoutMs", ms()),
            field("stalledWriteTimeoutMs", ms()),
            field("wsPingIntervalMs", ms()),
            field("sseHeartbeatIntervalMs", ms()),
            field(
                "inputBytesPerSecond",
                whole(1, 1 << 40, "Bytes a token may write per second."),
            ),
            field(
                "inputBurstBytes",
                whole(1, 1 << 40, "Bytes above the rate a token may burst."),
            ),
            field("maxStoredBytes", whole(1, 1 << 50, "The store's quota.")),
            field(
                "maxStoredBytesPerSubject",
                whole(
                    1,
                    1 << 50,
                    "What the records of one subject's tokens may hold, in bytes.",
                ),
            ),
            field(
                "maxStoredBytesPerToken",
                whole(
                    1,
                    1 << 50,
                    "What the records one token made may hold, in bytes.",
                ),
            ),
        ],
        "The gateway's limits.",
    );
    let runs = Node::object(
        vec![
            field(
                "maxConcurrent",
                whole(1, 65_536, "Runs at once (default 64)."),
            ),
            field(
                "maxQueued",
                whole(1, U32_MAX, "Runs waiting (default 10000)."),
            ),
            field("drainGraceMs", ms()),
        ],
        "Run scheduling.",
    );
    let security = Node::object(
        vec![
            field(
                "allowedHosts",
                strings("Host names the gateway answers to (`*.example.com` for subdomains)."),
            ),
            field(
                "allowedOrigins",
                strings("Browser origins allowed (scheme://host[:port])."),
            ),
            field(
                "streamTicketTtlMs",
                whole(1, HOUR_MS, "How long a stream ticket lives."),
            ),
        ],
        "Hosts, origins and tickets.",
    );
    let secret = Node::object(
        vec![
            field(
                "env",
                Node::text("A variable of the gateway's environment."),
            ),
            field("file", Node::text("An absolute path.")),
        ],
        "{env: \"VARIABLE\"} or {file: \"/absolute/path\"}.",
    );
    let environments = Node::object(
        vec![
            field(
                "sourceRoots",
                strings("Directories environments may be created from (absolute)."),
            ),
            field(
                "repositories",
                Node::map(Node::text("An absolute path."), "Git repositories by name."),
            ),
            field(
                "secrets",
                Node::map(secret, "Secrets an environment may be given, by name."),
            ),
            field(
                "forges",
                Node::map(
                    Node::object(
                        vec![
                            field(
                                "api",
                                Node::text(
                                    "The REST API's base URL (https://api.github.com, or a GitHub Enterprise, Gitea or Forgejo .../api/v3).",
                                ),
                            ),
                            field(
                                "remote",
                                Node::text(
                                    "The repository's git URL pushes go to (http or https).",
                                ),
                            ),
                            field("repository", Node::text("owner/repo.")),
                            field(
                                "token",
                                Node::text(
                                    "The name of the secret (gateway.environments.secrets) holding its token.",
                                ),
                            ),
                        ],
                        "A forge environments' changes become pull requests on.",
                    ),
                    "Forges by name (an environment's settings.pullRequest.forge).",
                ),
            ),
            field(
                "sshHosts",
                Node::map(
                    Node::open_object(
                        "{host, port?, user, hostKey (pinned: \"ssh-ed25519 AAAA...\"), identity: {secret: NAME}, workdir?, sandbox?: \"bubblewrap\" | \"none\", leaseSeconds?}",
                    ),
                    "Hosts the ssh environment provider may run workspaces on, by name (settings.host).",
                ),
            ),
        ],
        "What environments may use.",
    );
    let openai = Node::object(
        vec![
            field(
                "enabled",
                Node::bool(
                    "Serve /v1/models, /v1/chat/completions and /v1/responses (absent: only on a loopback address).",
                ),
            ),
            field(
                "onApproval",
                Node::word(
                    &["wait", "deny"],
                    "A call that needs an approval waits for an answer up to approvalWaitMs (wait), or is denied at once (deny).",
                ),
            ),
            field("approvalWaitMs", ms()),
        ],
        "The OpenAI-compatible surface.",
    );
    let mut fields = vec![
        field("limits", limits),
        field("runs", runs),
        field("openai", openai),
        field("security", security),
        field("environments", environments),
    ];
    fields.extend(
        [
            "port",
            "bind",
            "auth",
            "mode",
            "controlUi",
            "tailscale",
            "remote",
            "reload",
            "tls",
            "http",
            "nodes",
            "trustedProxies",
        ]
        .into_iter()
        .map(|k| openclaw(k, "OpenClaw's; `talon gateway --listen` sets the address.")),
    );
    Node::object(fields, "The gateway.")
}

pub(super) fn diagnostics() -> Node {
    let otel = Node::object(
        vec![
            field(
                "enabled",
                Node::bool("Export OpenTelemetry traces over OTLP/HTTP (default false)."),
            ),
            field(
                "endpoint",
                Node::text(
                    "The collector's OTLP/HTTP base URL; /v1/traces is added \
                     ($OTEL_EXPORTER_OTLP_ENDPOINT when absent, else http://localhost:4318).",
                ),
            ),
            field(
                "protocol",
                Node::word(
                    &["http/protobuf"],
                    "The OTLP protocol (only http/protobuf).",
                ),
            ),
            field(
                "serviceName",
                Node::text("The service.name resource attribute (default talon)."),
            ),
            field(
                "headers",
                Node::map(
                    Node::string(""),
                    "Headers sent with every export (also $OTEL_EXPORTER_OTLP_HEADERS).",
                ),
            ),
            field("traces", Node::bool("Export spans (default true).")),
            field(
                "sampleRate",
                Node::number(
                    None,
                    Some(1.0),
                    "The share of new traces kept, 0 to 1 (default 1).",
                ),
            ),
            openclaw("metrics", "OpenClaw's OTLP metrics; Talon serves /metrics."),
            openclaw("logs", "OpenClaw's OTLP logs; Talon does not export logs."),
            openclaw("flushIntervalMs", "OpenClaw's."),
            openclaw("captureContent", "OpenClaw's."),
        ],
        "OpenTelemetry export (OpenClaw's diagnostics.otel).",
    );
    Node::object(
        vec![
            field(
                "enabled",
                Node::bool("false turns every diagnostic export off."),
            ),
            field("otel", otel),
            openclaw("flags", "OpenClaw's."),
            openclaw("stuckSessionWarnMs", "OpenClaw's."),
            openclaw("cacheTrace", "OpenClaw's."),
        ],
        "Diagnostics: OpenTelemetry traces.",
    )
}
