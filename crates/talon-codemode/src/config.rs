//! `tools.codeMode`, as the Code Mode seed defines it: `true`, or an object
//! whose `enabled: true` is the only gate (setting other fields does not
//! enable Code Mode), with every limit defaulted and clamped to the seed's
//! range. An agent's `tools.codeMode` overrides the global one field by
//! field. The section's keys, types and words are declared once in
//! `talon_config::model::CodeModeSection` (checked when the config is
//! loaded); this module applies the defaults and the clamps.

use std::time::Duration;

pub use talon_config::model::{CellLanguage, CodeModeSection, CodeModeSetting};

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

impl CodeModeConfig {
    /// The global `tools.codeMode` and an agent's override, as the config
    /// declares them (types and words checked when the config was
    /// loaded). An agent's fields override the global ones one by one;
    /// `enabled` is the only gate (`None`: Code Mode is off for this
    /// agent).
    pub fn resolve(
        global: Option<&CodeModeSetting>,
        agent: Option<&CodeModeSetting>,
    ) -> Option<Self> {
        let merged = merge(&section(global), &section(agent));
        merged
            .enabled
            .unwrap_or(false)
            .then(|| Self::from_section(&merged))
    }

    /// The settings a section gives, whether or not it enables Code Mode:
    /// absent limits defaulted, the others clamped into the seed's ranges.
    pub fn from_section(section: &CodeModeSection) -> Self {
        let mut config = Self::default();
        let clamp = |v: Option<u64>, min: u64, max: u64| v.map(|v| v.clamp(min, max));
        let size = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        if let Some(ms) = clamp(section.timeout_ms, 100, 60_000) {
            config.timeout = Duration::from_millis(ms);
        }
        if let Some(v) = clamp(section.memory_limit_bytes, 1 << 20, 1 << 30) {
            config.memory_limit_bytes = size(v);
        }
        if let Some(v) = clamp(section.max_output_bytes, 1024, 10 << 20) {
            config.max_output_bytes = size(v);
        }
        if let Some(v) = clamp(section.max_snapshot_bytes, 1024, 256 << 20) {
            config.max_snapshot_bytes = size(v);
        }
        if let Some(v) = clamp(section.max_pending_tool_calls, 1, 128) {
            config.max_pending_tool_calls = size(v);
        }
        if let Some(v) = clamp(section.snapshot_ttl_seconds, 1, 86_400) {
            config.snapshot_ttl = Duration::from_secs(v);
        }
        if let Some(v) = clamp(section.max_search_limit, 1, 50) {
            config.max_search_limit = size(v);
        }
        if let Some(v) = clamp(
            section.max_source_bytes,
            1024,
            MAX_SOURCE_BYTES_CEILING as u64,
        ) {
            config.max_source_bytes = size(v);
        }
        if let Some(v) = clamp(section.search_default_limit, 1, u64::MAX) {
            config.search_default_limit = size(v);
        }
        config.search_default_limit = config
            .search_default_limit
            .clamp(1, config.max_search_limit);
        if let Some(list) = section.languages.as_ref().filter(|l| !l.is_empty()) {
            let mut languages = Vec::new();
            for language in list {
                let language = match language {
                    CellLanguage::Javascript => Language::JavaScript,
                    CellLanguage::Typescript => Language::TypeScript,
                };
                if !languages.contains(&language) {
                    languages.push(language);
                }
            }
            config.languages = languages;
        }
        config
    }
}

/// `true`/`false` as `{enabled}`; an object as it is.
pub fn section(setting: Option<&CodeModeSetting>) -> CodeModeSection {
    match setting {
        None => CodeModeSection::default(),
        Some(CodeModeSetting::Switch(enabled)) => CodeModeSection {
            enabled: Some(*enabled),
            ..CodeModeSection::default()
        },
        Some(CodeModeSetting::Settings(section)) => section.clone(),
    }
}

/// `over`'s fields where it sets them, else `base`'s.
pub fn merge(base: &CodeModeSection, over: &CodeModeSection) -> CodeModeSection {
    CodeModeSection {
        enabled: over.enabled.or(base.enabled),
        runtime: over.runtime.or(base.runtime),
        mode: over.mode.or(base.mode),
        languages: over.languages.clone().or_else(|| base.languages.clone()),
        timeout_ms: over.timeout_ms.or(base.timeout_ms),
        memory_limit_bytes: over.memory_limit_bytes.or(base.memory_limit_bytes),
        max_output_bytes: over.max_output_bytes.or(base.max_output_bytes),
        max_snapshot_bytes: over.max_snapshot_bytes.or(base.max_snapshot_bytes),
        max_pending_tool_calls: over.max_pending_tool_calls.or(base.max_pending_tool_calls),
        snapshot_ttl_seconds: over.snapshot_ttl_seconds.or(base.snapshot_ttl_seconds),
        max_search_limit: over.max_search_limit.or(base.max_search_limit),
        search_default_limit: over.search_default_limit.or(base.search_default_limit),
        max_source_bytes: over.max_source_bytes.or(base.max_source_bytes),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn setting(value: Value) -> CodeModeSetting {
        serde_json::from_value(value).unwrap()
    }

    fn resolve(global: Value) -> Option<CodeModeConfig> {
        CodeModeConfig::resolve(Some(&setting(global)), None)
    }

    #[test]
    fn enabled_is_the_only_gate() {
        assert_eq!(resolve(json!(true)), Some(CodeModeConfig::default()));
        assert_eq!(resolve(json!(false)), None);
        assert_eq!(
            resolve(json!({"timeoutMs": 5000})),
            None,
            "other fields do not enable it"
        );
        assert_eq!(CodeModeConfig::resolve(None, None), None);
        assert!(resolve(json!({"enabled": true})).is_some());
    }

    #[test]
    fn defaults_and_clamps_are_the_seeds() {
        let c = resolve(json!({"enabled": true, "timeoutMs": 1, "memoryLimitBytes": 1, "maxOutputBytes": 1,
            "maxSnapshotBytes": 1, "maxPendingToolCalls": 0, "snapshotTtlSeconds": 0, "maxSearchLimit": 999,
            "searchDefaultLimit": 999}))
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
        let high = resolve(json!({"enabled": true, "timeoutMs": 1_000_000_000_u64,
            "memoryLimitBytes": 1_000_000_000_000_u64, "snapshotTtlSeconds": 1_000_000_000_u64}))
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
        let source = |v: Value| resolve(v).unwrap().max_source_bytes;
        assert_eq!(source(json!({"enabled": true, "maxSourceBytes": 1})), 1024);
        assert_eq!(
            source(json!({"enabled": true, "maxSourceBytes": 65536})),
            65_536
        );
        assert_eq!(
            source(json!({"enabled": true, "maxSourceBytes": 1_000_000_000_000_u64})),
            MAX_SOURCE_BYTES_CEILING
        );
        let global = setting(json!({"enabled": true, "maxSourceBytes": 4096}));
        let agent = setting(json!({"maxSourceBytes": 200000}));
        let c = CodeModeConfig::resolve(Some(&global), Some(&agent)).unwrap();
        assert_eq!(c.max_source_bytes, 200_000);
    }

    #[test]
    fn agents_override_field_by_field() {
        let global =
            setting(json!({"enabled": true, "timeoutMs": 5000, "languages": ["javascript"]}));
        let agent = setting(json!({"timeoutMs": 20000}));
        let c = CodeModeConfig::resolve(Some(&global), Some(&agent)).unwrap();
        assert_eq!(
            (c.timeout, c.languages.clone()),
            (Duration::from_millis(20_000), vec![Language::JavaScript])
        );
        assert_eq!(
            CodeModeConfig::resolve(Some(&global), Some(&setting(json!(false)))),
            None
        );
        assert!(
            CodeModeConfig::resolve(Some(&setting(json!(false))), Some(&setting(json!(true))))
                .is_some()
        );
    }
}
