//! `tools.toolSearch`, exactly as the Tool Search seed defines it: `true`,
//! `false`, or an object with `mode`, `codeTimeoutMs`, `searchDefaultLimit`
//! and `maxSearchLimit`, each clamped to the seed's range.

use std::time::Duration;

use serde_json::Value;

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

/// A bad `tools.toolSearch` value: the field and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid_config: {field}: {message}")]
pub struct ToolSearchConfigError {
    /// The full path of the field, e.g. `tools.toolSearch.mode`.
    pub field: String,
    /// What was expected.
    pub message: String,
}

const FIELD: &str = "tools.toolSearch";

fn error(field: &str, message: impl Into<String>) -> ToolSearchConfigError {
    ToolSearchConfigError {
        field: format!("{FIELD}.{field}"),
        message: message.into(),
    }
}

impl ToolSearchConfig {
    /// Reads `tools.toolSearch` (`None` when absent). Returns `None` when
    /// Tool Search is off.
    pub fn from_json(value: Option<&Value>) -> Result<Option<Self>, ToolSearchConfigError> {
        let object = match value {
            None | Some(Value::Null) | Some(Value::Bool(false)) => return Ok(None),
            Some(Value::Bool(true)) => return Ok(Some(Self::default())),
            Some(Value::Object(object)) => object,
            Some(_) => {
                return Err(ToolSearchConfigError {
                    field: FIELD.into(),
                    message: "expected true, false or an object".into(),
                });
            }
        };
        let mut config = Self::default();
        for (key, value) in object {
            match key.as_str() {
                "mode" => {
                    config.mode = match value.as_str() {
                        Some("code") => Mode::Code,
                        Some("tools") => Mode::Tools,
                        Some("directory") => Mode::Directory,
                        _ => {
                            return Err(error(
                                "mode",
                                "expected \"code\", \"tools\" or \"directory\"",
                            ));
                        }
                    }
                }
                "codeTimeoutMs" => {
                    let ms = integer(value, "codeTimeoutMs")?;
                    config.code_timeout = Duration::from_millis(ms.clamp(1_000, 60_000));
                }
                "maxSearchLimit" => {
                    config.max_search_limit =
                        integer(value, "maxSearchLimit")?.clamp(1, 50) as usize
                }
                "searchDefaultLimit" => {
                    config.search_default_limit =
                        integer(value, "searchDefaultLimit")?.max(1) as usize;
                }
                other => {
                    tracing::warn!(key = %format!("{FIELD}.{other}"), "unknown Tool Search setting ignored")
                }
            }
        }
        config.search_default_limit = config
            .search_default_limit
            .clamp(1, config.max_search_limit);
        Ok(Some(config))
    }

    /// Clamps a requested search limit (`None`: the default).
    pub fn limit(&self, requested: Option<u64>) -> usize {
        requested.map_or(self.search_default_limit, |n| {
            (n as usize).clamp(1, self.max_search_limit)
        })
    }
}

fn integer(value: &Value, field: &str) -> Result<u64, ToolSearchConfigError> {
    match value {
        Value::Number(n) if n.as_u64().is_some() => Ok(n.as_u64().unwrap_or_default()),
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0 && f > 0.0) => {
            Ok(n.as_f64().unwrap_or_default() as u64)
        }
        _ => Err(error(field, "expected a positive integer")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(value: Value) -> Result<Option<ToolSearchConfig>, ToolSearchConfigError> {
        ToolSearchConfig::from_json(Some(&value))
    }

    #[test]
    fn booleans_and_absence() {
        assert_eq!(ToolSearchConfig::from_json(None), Ok(None));
        assert_eq!(parse(json!(false)), Ok(None));
        assert_eq!(parse(json!(true)), Ok(Some(ToolSearchConfig::default())));
    }

    #[test]
    fn objects_with_the_seeds_defaults_and_clamps() {
        let config = parse(json!({"mode": "tools"})).unwrap().unwrap();
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
                .unwrap()
                .unwrap();
        assert_eq!(clamped.code_timeout, Duration::from_millis(1_000));
        assert_eq!(
            (clamped.max_search_limit, clamped.search_default_limit),
            (50, 50)
        );
        let small = parse(json!({"maxSearchLimit": 3, "codeTimeoutMs": 999_999}))
            .unwrap()
            .unwrap();
        assert_eq!((small.max_search_limit, small.search_default_limit), (3, 3));
        assert_eq!(small.code_timeout, Duration::from_millis(60_000));
        assert_eq!(small.limit(Some(100)), 3);
        assert_eq!(small.limit(Some(0)), 1);
        assert_eq!(small.limit(None), 3);
    }

    #[test]
    fn bad_values_name_the_field() {
        assert_eq!(parse(json!("yes")).unwrap_err().field, "tools.toolSearch");
        assert_eq!(
            parse(json!({"mode": "magic"})).unwrap_err().field,
            "tools.toolSearch.mode"
        );
        let e = parse(json!({"codeTimeoutMs": "soon"})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid_config: tools.toolSearch.codeTimeoutMs: expected a positive integer"
        );
        assert_eq!(
            parse(json!({"maxSearchLimit": -1})).unwrap_err().field,
            "tools.toolSearch.maxSearchLimit"
        );
        assert_eq!(
            parse(json!({"searchDefaultLimit": 1.5})).unwrap_err().field,
            "tools.toolSearch.searchDefaultLimit"
        );
    }
}
