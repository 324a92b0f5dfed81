//! Where the `talon` command's logs go and how they look: stderr, filtered
//! by `TALON_LOG` (else `RUST_LOG`, else `warn`; the `EnvFilter` syntax),
//! as text or, with `TALON_LOG_FORMAT=json`, one JSON object a line
//! (`timestamp`, `level`, `target`, `fields`, the spans it is inside).
//! Colour only when stderr is a terminal, so a log file never holds ANSI
//! escapes. The debugging switches (`talon_protocol::debug::DebugSwitch`:
//! `TALON_DEBUG_CODE_MODE`, `_MODEL_TRANSPORT`, `_MODEL_PAYLOAD`, `_SSE`, or
//! their `OPENCLAW_DEBUG_*` spellings) add their targets at `info` whatever
//! the filter says. Of the OpenTelemetry SDK's own events only its
//! dropped-span warnings are shown (Talon logs failed exports itself,
//! once per run of failures).
//!
//! Every field is escaped in both formats ([`escape`] for text, JSON's own
//! escaping for JSON): a control character, a line or paragraph separator
//! or a bidirectional control in a value (a token's name, a WebSocket
//! method, a path) is written as `\u{..}`, so no input can start a line
//! of its own or recolour a terminal.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogFormat {
    /// Human-readable text (the default).
    Text,
    /// One JSON object a line.
    Json,
}

impl LogFormat {
    /// The format `TALON_LOG_FORMAT` names (`text` or `json`), or the
    /// error to print for another value.
    pub(crate) fn parse(value: Option<&str>) -> Result<Self, String> {
        match value.map(str::trim) {
            None | Some("") | Some("text") => Ok(Self::Text),
            Some("json") => Ok(Self::Json),
            Some(other) => Err(format!(
                "TALON_LOG_FORMAT={other:?} is not a log format: use `text` or `json`"
            )),
        }
    }
}

/// The filter: `TALON_LOG`, else `RUST_LOG`, else `warn`, plus the debug
/// switches' targets.
fn filter() -> EnvFilter {
    let mut filter = EnvFilter::try_from_env("TALON_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new("warn"));
    // The debugging switches (TALON_DEBUG_*, or OPENCLAW_DEBUG_*) show
    // their lines whatever TALON_LOG says.
    for switch in talon_protocol::debug::DebugSwitch::ALL {
        if switch.value().is_some()
            && let Ok(directive) = format!("{}=info", switch.target()).parse()
        {
            filter = filter.add_directive(directive);
        }
    }
    filter
}

/// Installs the process's subscriber: the log lines (filtered by
/// [`filter`]) and the OTLP span layer ([`crate::otlp`], idle until an
/// exporter starts; its filter is its own, so traces do not depend on the
/// log level). A `TALON_LOG_FORMAT` it does not know is reported on
/// stderr and text is used.
pub(crate) fn init() {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::filter::FilterExt as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;

    let format = LogFormat::parse(std::env::var("TALON_LOG_FORMAT").ok().as_deref())
        .unwrap_or_else(|message| {
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "talon: warning: {message}");
            LogFormat::Text
        });
    let lines = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let lines = match format {
        LogFormat::Text => lines
            .fmt_fields(escaped_fields())
            .with_ansi(std::io::stderr().is_terminal())
            .boxed(),
        LogFormat::Json => lines
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .boxed(),
    };
    let spans = crate::otlp::layer::OtlpLayer.with_filter(crate::otlp::layer::Wanted);
    // Trace spans are for the exporter only. The hint keeps the level's
    // (without one the pair has none, and the subscriber's maximum level,
    // and the `log` crate's, would be `TRACE`: see `otlp::layer::Wanted`).
    let not_traces = tracing_subscriber::filter::filter_fn(|meta| {
        !(meta.is_span() && meta.target() == crate::otlp::layer::TARGET)
            && crate::otlp::layer::shown(meta)
    })
    .with_max_level_hint(tracing::level_filters::LevelFilter::TRACE);
    let _ = tracing_subscriber::registry()
        .with(lines.with_filter(filter().and(not_traces)))
        .with(spans)
        .try_init();
}

/// Whether a character is written escaped: it could end a line, move the
/// cursor, recolour a terminal or reorder what a reader sees.
fn hostile(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with every [`hostile`] character written as `\u{hex}`.
pub(crate) fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hostile) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hostile(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The text format's fields: `name=value` separated by spaces, the
/// message bare, every value [`escape`]d (the default formatter writes a
/// `%` value as it is).
fn escaped_fields() -> impl for<'w> tracing_subscriber::fmt::FormatFields<'w> + 'static {
    use tracing_subscriber::field::MakeExt as _;
    tracing_subscriber::fmt::format::debug_fn(|writer, field, value| {
        let text = format!("{value:?}");
        let text = escape(&text);
        if field.name() == "message" {
            write!(writer, "{text}")
        } else {
            write!(writer, "{}={text}", field.name())
        }
    })
    .delimited(" ")
}

#[cfg(test)]
mod tests {
    use super::LogFormat;

    #[test]
    fn hostile_characters_are_escaped_and_others_kept() {
        assert_eq!(super::escape("plain caf\u{e9} \\n"), "plain caf\u{e9} \\n");
        assert_eq!(
            super::escape("a\nb\r\u{1b}[31m\u{2028}\u{202e}\u{7f}"),
            "a\\u{a}b\\u{d}\\u{1b}[31m\\u{2028}\\u{202e}\\u{7f}"
        );
    }

    /// The only test of this binary's that installs the subscriber: the
    /// most verbose level anything is asked at is the filter's (`warn` by
    /// default), not `TRACE`, so the `log` crate's level is too.
    #[test]
    fn the_most_verbose_level_is_the_filters() {
        use tracing::level_filters::LevelFilter;
        let expected = <tracing_subscriber::EnvFilter as tracing_subscriber::layer::Filter<
            tracing_subscriber::Registry,
        >>::max_level_hint(&super::filter())
        .unwrap_or(LevelFilter::TRACE);
        super::init();
        assert_eq!(LevelFilter::current(), expected);
        if std::env::var_os("TALON_LOG").is_none() && std::env::var_os("RUST_LOG").is_none() {
            assert_eq!(expected, LevelFilter::WARN);
        }
    }

    #[test]
    fn formats_parse_and_others_are_refused() {
        assert_eq!(LogFormat::parse(None), Ok(LogFormat::Text));
        assert_eq!(LogFormat::parse(Some("text")), Ok(LogFormat::Text));
        assert_eq!(LogFormat::parse(Some(" json ")), Ok(LogFormat::Json));
        assert_eq!(
            LogFormat::parse(Some("xml")),
            Err("TALON_LOG_FORMAT=\"xml\" is not a log format: use `text` or `json`".into())
        );
    }
}
