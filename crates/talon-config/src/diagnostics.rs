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
        let diagnostics = &self.document()?.diagnostics;
        let otel = &diagnostics.otel;
        let enabled = match (diagnostics.enabled, otel.enabled) {
            (Some(false), _) => Some(false),
            (_, otel) => otel,
        };
        let text = |s: &Option<String>| s.as_ref().map(|s| s.trim().to_owned());
        let endpoint = text(&otel.endpoint);
        if let Some(url) = &endpoint
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(invalid(
                "diagnostics.otel.endpoint",
                "expected an http:// or https:// URL (the collector's OTLP/HTTP port, 4318)",
            ));
        }
        Ok(OtelSettings {
            enabled,
            endpoint,
            service_name: text(&otel.service_name),
            headers: otel.headers.clone(),
            traces: otel.traces,
            sample_rate: otel.sample_rate,
        })
    }
}
