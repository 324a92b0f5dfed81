//! How the OpenAI-compatible surface behaves (`gateway.openai`): on or
//! off, and what a run it started does when it needs an approval. A leaf:
//! the state holds it, and the surface's handlers read it there.

use std::time::Duration;

/// How the OpenAI-compatible surface behaves (`gateway.openai`).
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiPolicy {
    /// On or off; `None`: on only while the gateway listens on loopback.
    pub enabled: Option<bool>,
    /// What a run that needs an approval does.
    pub on_approval: ApprovalRule,
}

impl Default for OpenAiPolicy {
    fn default() -> Self {
        Self {
            enabled: None,
            on_approval: ApprovalRule::Wait(DEFAULT_APPROVAL_WAIT),
        }
    }
}

/// How long a run the surface started waits for an approval by default.
pub const DEFAULT_APPROVAL_WAIT: Duration = Duration::from_secs(60);

/// What a run the surface started does when it needs an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalRule {
    /// Waits this long for an answer (SDK, dashboard), then is denied.
    Wait(Duration),
    /// Denied at once.
    Deny,
}

impl OpenAiPolicy {
    /// Whether the surface is served on `listen`.
    pub(crate) fn serves(&self, listen: std::net::SocketAddr) -> bool {
        self.enabled.unwrap_or_else(|| listen.ip().is_loopback())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_by_default_only_on_loopback() {
        let default = OpenAiPolicy::default();
        for (addr, on) in [
            ("127.0.0.1:7420", true),
            ("[::1]:7420", true),
            ("0.0.0.0:7420", false),
            ("[::]:7420", false),
            ("192.168.1.5:7420", false),
        ] {
            assert_eq!(default.serves(addr.parse().unwrap()), on, "{addr}");
        }
        let forced = OpenAiPolicy {
            enabled: Some(true),
            ..OpenAiPolicy::default()
        };
        assert!(forced.serves("0.0.0.0:7420".parse().unwrap()));
        let off = OpenAiPolicy {
            enabled: Some(false),
            ..OpenAiPolicy::default()
        };
        assert!(!off.serves("127.0.0.1:7420".parse().unwrap()));
    }
}
