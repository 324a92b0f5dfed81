//! `tools.toolSearch`, exactly as the Tool Search seed defines it: `true`,
//! `false`, or an object with `mode`, `codeTimeoutMs`, `searchDefaultLimit`
//! and `maxSearchLimit`, each clamped to the seed's range. The keys, types
//! and words are declared once in `talon_config::model::ToolSearchSection`
//! (checked when the config is loaded); this module applies the defaults
//! and the clamps.

use std::time::Duration;

pub use talon_config::model::{ToolSearchMode, ToolSearchSection, ToolSearchSetting};

/// Which surface Tool Search gives the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// `tool_search_code`: a JavaScript body with `openclaw.tools.*`.
    #[default]
    Code,
    /// `tool_search`, `tool_describe`, `tool_call` as structured tools.
    Tools,
    /// The structured tools plus a bounded prompt directory of names.
    Directory,
}

impl Mode {
    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Code => "code",
            Self::Tools => "tools",
            Self::Directory => "directory",
        }
    }
}

/// Effective Tool Search settings (after clamping).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSearchConfig {
    /// The surface.
    pub mode: Mode,
    /// Wall-clock budget of one `tool_search_code` call (1,000..=60,000 ms).
    pub code_timeout: Duration,
    /// Hits when a search gives no limit (1..=`max_search_limit`).
    pub search_default_limit: usize,
    /// Most hits a search may ask for (1..=50).
    pub max_search_limit: usize,
}

impl Default for ToolSearchConfig {
    fn default() -> Self {
        Self {
            mode: Mode::Code,
            code_timeout: Duration::from_millis(10_000),
            search_default_limit: 8,
            max_search_limit: 20,
        }
    }
}

impl ToolSearchConfig {
    /// `tools.toolSearch` as the config declares it (types and words
    /// checked when the config was loaded; the agent's own setting, when
    /// it has one, in place of the global). `None` when Tool Search is
    /// off; the limits clamped into the seed's ranges.
    pub fn from_setting(setting: Option<&ToolSearchSetting>) -> Option<Self> {
        let section = match setting {
            None | Some(ToolSearchSetting::Switch(false)) => return None,
            Some(ToolSearchSetting::Switch(true)) => return Some(Self::default()),
            Some(ToolSearchSetting::Settings(section)) => section,
        };
        let mut config = Self::default();
        if let Some(mode) = section.mode {
            config.mode = match mode {
                ToolSearchMode::Code => Mode::Code,
                ToolSearchMode::Tools => Mode::Tools,
                ToolSearchMode::Directory => Mode::Directory,
            };
        }
        let size = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        if let Some(ms) = section.code_timeout_ms {
            config.code_timeout = Duration::from_millis(ms.clamp(1_000, 60_000));
        }
        if let Some(most) = section.max_search_limit {
            config.max_search_limit = size(most.clamp(1, 50));
        }
        if let Some(default) = section.search_default_limit {
            config.search_default_limit = size(default.max(1));
        }
        config.search_default_limit = config
            .search_default_limit
            .clamp(1, config.max_search_limit);
        Some(config)
    }

    /// Clamps a requested search limit (`None`: the default).
    pub fn limit(&self, requested: Option<u64>) -> usize {
        requested.map_or(self.search_default_limit, |n| {
            (n as usize).clamp(1, self.max_search_limit)
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn parse(value: Value) -> Option<ToolSearchConfig> {
        ToolSearchConfig::from_setting(Some(&serde_json::from_value(value).unwrap()))
    }

    #[test]
    fn booleans_and_absence() {
        assert_eq!(ToolSearchConfig::from_setting(None), None);
        assert_eq!(parse(json!(false)), None);
        assert_eq!(parse(json!(true)), Some(ToolSearchConfig::default()));
    }

    #[test]
    fn objects_with_the_seeds_defaults_and_clamps() {
        let config = parse(json!({"mode": "tools"})).unwrap();
        assert_eq!(
            (
                config.mode,
                config.search_default_limit,
                config.max_search_limit
            ),
            (Mode::Tools, 8, 20)
        );
        let clamped =
            parse(json!({"codeTimeoutMs": 5, "maxSearchLimit": 500, "searchDefaultLimit": 99}))
                .unwrap();
        assert_eq!(clamped.code_timeout, Duration::from_millis(1_000));
        assert_eq!(
            (clamped.max_search_limit, clamped.search_default_limit),
            (50, 50)
        );
        let small = parse(json!({"maxSearchLimit": 3, "codeTimeoutMs": 999_999})).unwrap();
        assert_eq!((small.max_search_limit, small.search_default_limit), (3, 3));
        assert_eq!(small.code_timeout, Duration::from_millis(60_000));
        assert_eq!(small.limit(Some(100)), 3);
        assert_eq!(small.limit(Some(0)), 1);
        assert_eq!(small.limit(None), 3);
    }
}
