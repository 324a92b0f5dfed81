//! The `diagnostics` section's OpenTelemetry export, OpenClaw's
//! `diagnostics.otel` keys. Off unless `diagnostics.otel.enabled` is true;
//! `diagnostics.enabled: false` turns it off whatever `otel` says.
//!
//! ```json5
//! diagnostics: {
//!   otel: {
//!     enabled: true,
//!     endpoint: "http://otel-collector:4318",   // `/v1/traces` is added
//!     protocol: "http/protobuf",                // the one Talon speaks
//!     serviceName: "talon",
//!     headers: { "x-honeycomb-team": "..." },
//!     traces: true,
//!     sampleRate: 1.0,                          // of new traces
//!   },
//! }
//! ```
//!
//! The process's environment fills in what the file leaves out (the
//! OpenTelemetry variables: `OTEL_EXPORTER_OTLP_ENDPOINT`, ...): that is
//! the caller's business (the CLI), not this crate's.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::gateway::invalid;
use crate::{Config, Result};

/// The OTLP protocol Talon exports with.
pub const OTLP_PROTOCOL: &str = "http/protobuf";

/// `diagnostics.otel`, as given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OtelSettings {
    /// `diagnostics.otel.enabled` (with `diagnostics.enabled` not false).
    pub enabled: Option<bool>,
    /// `diagnostics.otel.endpoint`: the collector's base URL.
    pub endpoint: Option<String>,
    /// `diagnostics.otel.serviceName`: the `service.name` resource
    /// attribute.
    pub service_name: Option<String>,
    /// `diagnostics.otel.headers`: sent with every export.
    pub headers: BTreeMap<String, String>,
    /// `diagnostics.otel.traces`: whether spans are exported (default
    /// true once enabled).
    pub traces: Option<bool>,
    /// `diagnostics.otel.sampleRate`: the share of new traces kept, 0 to 1.
    pub sample_rate: Option<f64>,
}

impl Config {
    /// The `diagnostics.otel` section.
    pub fn otel(&self) -> Result<OtelSettings> {
        let flag = |key: &str| match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(invalid(key, "expected true or false")),
        };
        let text = |key: &str| match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim().to_owned())),
            Some(_) => Err(invalid(key, "expected a non-empty string")),
        };
        let enabled = match (
            flag("diagnostics.enabled")?,
            flag("diagnostics.otel.enabled")?,
        ) {
            (Some(false), _) => Some(false),
            (_, otel) => otel,
        };
        if let Some(protocol) = text("diagnostics.otel.protocol")?
            && protocol != OTLP_PROTOCOL
        {
            return Err(invalid(
                "diagnostics.otel.protocol",
                &format!("Talon exports OTLP as {OTLP_PROTOCOL:?}, not {protocol:?}"),
            ));
        }
        let endpoint = text("diagnostics.otel.endpoint")?;
        if let Some(url) = &endpoint
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(invalid(
                "diagnostics.otel.endpoint",
                "expected an http:// or https:// URL (the collector's OTLP/HTTP port, 4318)",
            ));
        }
        let mut headers = BTreeMap::new();
        match self.get("diagnostics.otel.headers") {
            None => {}
            Some(Value::Object(map)) => {
                for (name, value) in map {
                    let Value::String(value) = value else {
                        return Err(invalid(
                            &format!("diagnostics.otel.headers.{name}"),
                            "expected a string",
                        ));
                    };
                    headers.insert(name.clone(), value.clone());
                }
            }
            Some(_) => {
                return Err(invalid(
                    "diagnostics.otel.headers",
                    "expected an object of header names to values",
                ));
            }
        }
        let sample_rate = match self.get("diagnostics.otel.sampleRate") {
            None => None,
            Some(v) => match v.as_f64() {
                Some(rate) if (0.0..=1.0).contains(&rate) => Some(rate),
                _ => {
                    return Err(invalid(
                        "diagnostics.otel.sampleRate",
                        "expected a number from 0 to 1",
                    ));
                }
            },
        };
        Ok(OtelSettings {
            enabled,
            endpoint,
            service_name: text("diagnostics.otel.serviceName")?,
            headers,
            traces: flag("diagnostics.otel.traces")?,
            sample_rate,
        })
    }
}
