//! `tools.codeMode`, as the Code Mode seed defines it: `true`, or an object
//! whose `enabled: true` is the only gate (setting other fields does not
//! enable Code Mode), with every limit defaulted and clamped to the seed's
//! range. An agent's `tools.codeMode` overrides the global one field by
//! field.

use std::time::Duration;

use serde_json::{Map, Value};

/// A cell language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    /// The default.
    JavaScript,
    /// Type syntax is stripped before evaluation.
    TypeScript,
}

impl Language {
    /// The config and input spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::JavaScript => "javascript",
            Self::TypeScript => "typescript",
        }
    }

    /// A language by its config spelling.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "javascript" => Some(Self::JavaScript),
            "typescript" => Some(Self::TypeScript),
            _ => None,
        }
    }
}

/// Effective Code Mode settings of a run (after merging and clamping).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeModeConfig {
    /// Enabled languages (non-empty).
    pub languages: Vec<Language>,
    /// Wall clock of one `exec` or `wait` (100..=60,000 ms).
    pub timeout: Duration,
    /// QuickJS heap limit (1 MiB..=1 GiB).
    pub memory_limit_bytes: usize,
    /// Output budget (1 KiB..=10 MiB).
    pub max_output_bytes: usize,
    /// Snapshot budget (1 KiB..=256 MiB).
    pub max_snapshot_bytes: usize,
    /// Concurrent nested calls (1..=128).
    pub max_pending_tool_calls: usize,
    /// How long a suspended cell can be resumed (1..=86,400 s).
    pub snapshot_ttl: Duration,
    /// Hits of a search without a limit (1..=`max_search_limit`).
    pub search_default_limit: usize,
    /// Most hits of a search (1..=50).
    pub max_search_limit: usize,
    /// Largest cell source in bytes, checked before anything reads it
    /// (1 KiB..=[`MAX_SOURCE_BYTES_CEILING`]).
    pub max_source_bytes: usize,
}

/// The default `maxSourceBytes`: 1 MiB.
pub const DEFAULT_MAX_SOURCE_BYTES: usize = 1 << 20;

/// The highest `maxSourceBytes` accepted (larger values are clamped).
pub const MAX_SOURCE_BYTES_CEILING: usize = 4 << 20;

impl Default for CodeModeConfig {
    fn default() -> Self {
        Self {
            languages: vec![Language::JavaScript, Language::TypeScript],
            timeout: Duration::from_millis(10_000),
            memory_limit_bytes: 64 << 20,
            max_output_bytes: 64 << 10,
            max_snapshot_bytes: 10 << 20,
            max_pending_tool_calls: 16,
            snapshot_ttl: Duration::from_secs(900),
            search_default_limit: 8,
            max_search_limit: 50,
            max_source_bytes: DEFAULT_MAX_SOURCE_BYTES,
        }
    }
}

/// A bad `tools.codeMode` value: `invalid_config`, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid_config: {field}: {message}")]
pub struct CodeModeConfigError {
    /// The full path of the field, e.g. `tools.codeMode.timeoutMs`.
    pub field: String,
    /// What was expected.
    pub message: String,
}

impl CodeModeConfigError {
    /// The protocol code of every config error.
    pub fn code(&self) -> talon_protocol::CodeModeErrorCode {
        talon_protocol::CodeModeErrorCode::InvalidConfig
    }
}

impl CodeModeConfig {
    /// Reads the global `tools.codeMode` and an agent's override (either
    /// may be absent). `Ok(None)`: Code Mode is off for this agent.
    pub fn resolve(
        global: Option<&Value>,
        agent: Option<&Value>,
    ) -> Result<Option<Self>, CodeModeConfigError> {
        let global = normalise(global, "tools.codeMode")?;
        let agent = normalise(agent, "agents.<id>.tools.codeMode")?;
        let mut merged = global.clone().unwrap_or_default();
        if let Some(agent) = &agent {
            for (key, value) in agent {
                merged.insert(key.clone(), value.clone());
            }
        }
        let field_root = if agent.is_some() {
            "agents.<id>.tools.codeMode"
        } else {
            "tools.codeMode"
        };
        let enabled = match merged.get("enabled") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(error(field_root, "enabled", "expected true or false")),
        };
        let config = parse_fields(&merged, field_root)?;
        Ok(enabled.then_some(config))
    }
}

/// `true` → `{enabled: true}`, `false`/null/absent → `{}` or nothing.
fn normalise(
    value: Option<&Value>,
    root: &str,
) -> Result<Option<Map<String, Value>>, CodeModeConfigError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(enabled)) => {
            let mut map = Map::new();
            map.insert("enabled".into(), Value::Bool(*enabled));
            Ok(Some(map))
        }
        Some(Value::Object(map)) => Ok(Some(map.clone())),
        Some(_) => Err(CodeModeConfigError {
            field: root.into(),
            message: "expected true, false or an object".into(),
        }),
    }
}

fn error(root: &str, field: &str, message: impl Into<String>) -> CodeModeConfigError {
    CodeModeConfigError {
        field: format!("{root}.{field}"),
        message: message.into(),
    }
}

fn parse_fields(
    map: &Map<String, Value>,
    root: &str,
) -> Result<CodeModeConfig, CodeModeConfigError> {
    let mut config = CodeModeConfig::default();
    let int = |field: &str, min: u64, max: u64| -> Result<Option<u64>, CodeModeConfigError> {
        match map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                    .map(|f| f as u64)
            }) {
                Some(v) => Ok(Some(v.clamp(min, max))),
                None => Err(error(root, field, "expected a non-negative integer")),
            },
            Some(_) => Err(error(root, field, "expected a non-negative integer")),
        }
    };
    if let Some(ms) = int("timeoutMs", 100, 60_000)? {
        config.timeout = Duration::from_millis(ms);
    }
    if let Some(v) = int("memoryLimitBytes", 1 << 20, 1 << 30)? {
        config.memory_limit_bytes = v as usize;
    }
    if let Some(v) = int("maxOutputBytes", 1024, 10 << 20)? {
        config.max_output_bytes = v as usize;
    }
    if let Some(v) = int("maxSnapshotBytes", 1024, 256 << 20)? {
        config.max_snapshot_bytes = v as usize;
    }
    if let Some(v) = int("maxPendingToolCalls", 1, 128)? {
        config.max_pending_tool_calls = v as usize;
    }
    if let Some(v) = int("snapshotTtlSeconds", 1, 86_400)? {
        config.snapshot_ttl = Duration::from_secs(v);
    }
    if let Some(v) = int("maxSearchLimit", 1, 50)? {
        config.max_search_limit = v as usize;
    }
    if let Some(v) = int("maxSourceBytes", 1024, MAX_SOURCE_BYTES_CEILING as u64)? {
        config.max_source_bytes = v as usize;
    }
    if let Some(v) = int("searchDefaultLimit", 1, u64::MAX)? {
        config.search_default_limit = v as usize;
    }
    config.search_default_limit = config
        .search_default_limit
        .clamp(1, config.max_search_limit);
    match map.get("runtime") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s == "quickjs-wasi" => {}
        Some(_) => {
            return Err(error(
                root,
                "runtime",
                "the only supported runtime is \"quickjs-wasi\"",
            ));
        }
    }
    match map.get("mode") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s == "only" => {}
        Some(_) => return Err(error(root, "mode", "the only supported mode is \"only\"")),
    }
    if let Some(value) = map.get("languages").filter(|v| !v.is_null()) {
        let Some(list) = value.as_array() else {
            return Err(error(
                root,
                "languages",
                "expected an array of \"javascript\" and \"typescript\"",
            ));
        };
        let mut languages = Vec::new();
        for item in list {
            let language = item.as_str().and_then(Language::parse).ok_or_else(|| {
                error(
                    root,
                    "languages",
                    format!("unknown language {item}; expected \"javascript\" or \"typescript\""),
                )
            })?;
            if !languages.contains(&language) {
                languages.push(language);
            }
        }
        if languages.is_empty() {
            return Err(error(root, "languages", "enable at least one language"));
        }
        config.languages = languages;
    }
    for key in map.keys() {
        const KNOWN: &[&str] = &[
            "enabled",
            "runtime",
            "mode",
            "languages",
            "timeoutMs",
            "memoryLimitBytes",
            "maxOutputBytes",
            "maxSnapshotBytes",
            "maxPendingToolCalls",
            "snapshotTtlSeconds",
            "searchDefaultLimit",
            "maxSearchLimit",
            "maxSourceBytes",
        ];
        if !KNOWN.contains(&key.as_str()) {
            tracing::warn!(key = %format!("{root}.{key}"), "unknown Code Mode setting ignored");
        }
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn resolve(global: Value) -> Result<Option<CodeModeConfig>, CodeModeConfigError> {
        CodeModeConfig::resolve(Some(&global), None)
    }

    #[test]
    fn enabled_is_the_only_gate() {
        assert_eq!(resolve(json!(true)), Ok(Some(CodeModeConfig::default())));
        assert_eq!(resolve(json!(false)), Ok(None));
        assert_eq!(
            resolve(json!({"timeoutMs": 5000})),
            Ok(None),
            "other fields do not enable it"
        );
        assert_eq!(CodeModeConfig::resolve(None, None), Ok(None));
        assert!(resolve(json!({"enabled": true})).unwrap().is_some());
    }

    #[test]
    fn defaults_and_clamps_are_the_seeds() {
        let c = resolve(json!({"enabled": true, "timeoutMs": 1, "memoryLimitBytes": 1, "maxOutputBytes": 1,
            "maxSnapshotBytes": 1, "maxPendingToolCalls": 0, "snapshotTtlSeconds": 0, "maxSearchLimit": 999,
            "searchDefaultLimit": 999}))
        .unwrap()
        .unwrap();
        assert_eq!(c.timeout, Duration::from_millis(100));
        assert_eq!(
            (
                c.memory_limit_bytes,
                c.max_output_bytes,
                c.max_snapshot_bytes
            ),
            (1 << 20, 1024, 1024)
        );
        assert_eq!(
            (c.max_pending_tool_calls, c.snapshot_ttl),
            (1, Duration::from_secs(1))
        );
        assert_eq!((c.max_search_limit, c.search_default_limit), (50, 50));
        let high = resolve(json!({"enabled": true, "timeoutMs": 1e9, "memoryLimitBytes": 1e12, "snapshotTtlSeconds": 1e9}))
            .unwrap()
            .unwrap();
        assert_eq!(high.timeout, Duration::from_millis(60_000));
        assert_eq!(high.memory_limit_bytes, 1 << 30);
        assert_eq!(high.snapshot_ttl, Duration::from_secs(86_400));
        let d = CodeModeConfig::default();
        assert_eq!(
            (d.timeout, d.memory_limit_bytes, d.max_output_bytes),
            (Duration::from_millis(10_000), 67_108_864, 65_536)
        );
        assert_eq!(
            (
                d.max_snapshot_bytes,
                d.max_pending_tool_calls,
                d.snapshot_ttl
            ),
            (10_485_760, 16, Duration::from_secs(900))
        );
        assert_eq!((d.search_default_limit, d.max_search_limit), (8, 50));
        assert_eq!(d.max_source_bytes, 1_048_576);
    }

    #[test]
    fn max_source_bytes_is_clamped_and_overridden_per_agent() {
        let source = |v: Value| resolve(v).unwrap().unwrap().max_source_bytes;
        assert_eq!(source(json!({"enabled": true, "maxSourceBytes": 1})), 1024);
        assert_eq!(
            source(json!({"enabled": true, "maxSourceBytes": 65536})),
            65_536
        );
        assert_eq!(
            source(json!({"enabled": true, "maxSourceBytes": 1e12})),
            MAX_SOURCE_BYTES_CEILING
        );
        let global = json!({"enabled": true, "maxSourceBytes": 4096});
        let c = CodeModeConfig::resolve(Some(&global), Some(&json!({"maxSourceBytes": 200000})))
            .unwrap()
            .unwrap();
        assert_eq!(c.max_source_bytes, 200_000);
        assert_eq!(
            resolve(json!({"enabled": true, "maxSourceBytes": "1MB"}))
                .unwrap_err()
                .field,
            "tools.codeMode.maxSourceBytes"
        );
    }

    #[test]
    fn agents_override_field_by_field() {
        let global = json!({"enabled": true, "timeoutMs": 5000, "languages": ["javascript"]});
        let agent = json!({"timeoutMs": 20000});
        let c = CodeModeConfig::resolve(Some(&global), Some(&agent))
            .unwrap()
            .unwrap();
        assert_eq!(
            (c.timeout, c.languages.clone()),
            (Duration::from_millis(20_000), vec![Language::JavaScript])
        );
        assert_eq!(
            CodeModeConfig::resolve(Some(&global), Some(&json!(false))),
            Ok(None)
        );
        assert!(
            CodeModeConfig::resolve(Some(&json!(false)), Some(&json!(true)))
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn bad_values_are_invalid_config_naming_the_field() {
        let field = |v: Value| resolve(v).unwrap_err().field;
        assert_eq!(field(json!("on")), "tools.codeMode");
        assert_eq!(field(json!({"enabled": "yes"})), "tools.codeMode.enabled");
        assert_eq!(
            field(json!({"enabled": true, "runtime": "node"})),
            "tools.codeMode.runtime"
        );
        assert_eq!(
            field(json!({"enabled": true, "mode": "mixed"})),
            "tools.codeMode.mode"
        );
        assert_eq!(
            field(json!({"enabled": true, "languages": ["python"]})),
            "tools.codeMode.languages"
        );
        assert_eq!(
            field(json!({"enabled": true, "languages": []})),
            "tools.codeMode.languages"
        );
        assert_eq!(
            field(json!({"enabled": true, "timeoutMs": "10s"})),
            "tools.codeMode.timeoutMs"
        );
        assert_eq!(
            field(json!({"enabled": true, "maxPendingToolCalls": -3})),
            "tools.codeMode.maxPendingToolCalls"
        );
        let e = CodeModeConfig::resolve(Some(&json!(true)), Some(&json!({"timeoutMs": []})))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid_config: agents.<id>.tools.codeMode.timeoutMs: expected a non-negative integer"
        );
        assert_eq!(e.code(), talon_protocol::CodeModeErrorCode::InvalidConfig);
    }
}
