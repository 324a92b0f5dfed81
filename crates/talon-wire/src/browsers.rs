//! The rules of the Host and Origin checks: which names the gateway
//! answers to ([`BrowserPolicy`]: loopback, the listen address,
//! `gateway.security.allowedHosts`) and which pages may call it (its own
//! origin, or one in `gateway.security.allowedOrigins`). [`crate::guard`]
//! applies them to a request, for the gateway and the fake alike.

use std::net::{IpAddr, SocketAddr};

use axum::http::HeaderValue;

/// What browsers and the names the gateway answers to may do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrowserPolicy {
    /// Host names, beyond loopback and the listen address, the gateway
    /// answers to: exact (`talon.example.com`) or `*.example.com` (any
    /// subdomain, not the name itself). Compared without the port.
    pub allowed_hosts: Vec<String>,
    /// Origins (`https://app.example.com`, scheme, host and port as the
    /// browser sends them) allowed to call the gateway from a page: their
    /// CORS preflights are answered and their WebSockets accepted.
    pub allowed_origins: Vec<String>,
}

/// A Host header's name: lower case, no port, no trailing dot; IPv6
/// literals without their brackets. `None` when malformed.
pub fn host_name(raw: &str) -> Option<String> {
    let raw = raw.trim();
    if raw.is_empty() || raw.len() > 255 {
        return None;
    }
    let name = if let Some(rest) = raw.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        if !(after.is_empty() || after.strip_prefix(':').is_some_and(is_port)) {
            return None;
        }
        inside.parse::<std::net::Ipv6Addr>().ok()?;
        inside
    } else {
        match raw.rsplit_once(':') {
            Some((name, port)) if is_port(port) => name,
            Some(_) => return None,
            None => raw,
        }
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b':' | b'_'));
    valid.then_some(name)
}

fn is_port(text: &str) -> bool {
    !text.is_empty() && text.len() <= 5 && text.bytes().all(|b| b.is_ascii_digit())
}

/// Whether the server answers to `host`: loopback, the address it
/// listens on, or a name the policy allows.
pub fn host_allowed(host: &str, policy: &BrowserPolicy, listen: SocketAddr) -> bool {
    if host == "localhost" {
        return true;
    }
    if let Ok(ip) = host.parse::<IpAddr>()
        && (ip.is_loopback() || (!listen.ip().is_unspecified() && ip == listen.ip()))
    {
        return true;
    }
    policy.allowed_hosts.iter().any(|allowed| {
        let allowed = allowed.trim_end_matches('.').to_ascii_lowercase();
        match allowed.strip_prefix("*.") {
            Some(suffix) => host
                .strip_suffix(suffix)
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            None => host == allowed,
        }
    })
}

/// What an `Origin` may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginVerdict {
    /// The gateway's own origin (a page it serves).
    SameOrigin,
    /// A configured origin: CORS applies.
    Listed(HeaderValue),
    /// Any other (shown, cut short).
    Refused(String),
}

/// The port an authority (`name:port`, `[v6]:port`) names, if it names
/// one.
pub fn explicit_port(authority: &str) -> Option<u16> {
    let authority = authority.trim();
    let tail = match authority.strip_prefix('[') {
        Some(rest) => rest.split_once(']')?.1.strip_prefix(':')?,
        None => authority.rsplit_once(':')?.1,
    };
    tail.parse().ok()
}

/// Whether `origin` is listed, or is the page the request's `host` (its
/// name and explicit port) serves: same name, and the same port, a port
/// left out being the origin scheme's default (so a TLS proxy's
/// `https://name` matches `Host: name`).
pub fn origin_allowed(
    origin: &HeaderValue,
    (host, port): (&str, Option<u16>),
    policy: &BrowserPolicy,
) -> OriginVerdict {
    let text = origin.to_str().unwrap_or("").trim();
    let shown = || text.chars().take(100).collect::<String>();
    if policy
        .allowed_origins
        .iter()
        .any(|allowed| allowed.trim_end_matches('/').eq_ignore_ascii_case(text))
    {
        return OriginVerdict::Listed(origin.clone());
    }
    // `scheme://authority`, the authority naming this gateway's host.
    let same = text
        .split_once("://")
        .and_then(|(scheme, authority)| {
            let default = match scheme {
                "http" => 80,
                "https" => 443,
                _ => return None,
            };
            let name = host_name(authority)?;
            let ports_agree =
                explicit_port(authority).unwrap_or(default) == port.unwrap_or(default);
            Some(name == host && ports_agree)
        })
        .unwrap_or(false);
    if same {
        OriginVerdict::SameOrigin
    } else {
        OriginVerdict::Refused(shown())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listen() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 7420))
    }

    #[test]
    fn host_names_parse_as_browsers_send_them() {
        assert_eq!(host_name("LocalHost:7420").as_deref(), Some("localhost"));
        assert_eq!(host_name("[::1]:7420").as_deref(), Some("::1"));
        assert_eq!(host_name("example.com.").as_deref(), Some("example.com"));
        for bad in ["", "a b", "x:y", "[::1", "[zz]:1", "host:123456", "é.com"] {
            assert_eq!(host_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn loopback_the_listen_address_and_listed_names_are_served() {
        let policy = BrowserPolicy {
            allowed_hosts: vec!["talon.example.com".into(), "*.corp.example".into()],
            allowed_origins: Vec::new(),
        };
        let lan = SocketAddr::from(([10, 0, 0, 5], 7420));
        for (host, listen, ok) in [
            ("localhost", listen(), true),
            ("127.9.9.9", listen(), true),
            ("::1", listen(), true),
            ("10.0.0.5", lan, true),
            ("10.0.0.6", lan, false),
            ("10.0.0.5", SocketAddr::from(([0, 0, 0, 0], 7420)), false),
            ("talon.example.com", listen(), true),
            ("a.corp.example", listen(), true),
            ("corp.example", listen(), false),
            ("evilcorp.example", listen(), false),
            ("rebind.attacker.test", listen(), false),
            ("localhost.attacker.test", listen(), false),
        ] {
            assert_eq!(host_allowed(host, &policy, listen), ok, "{host}");
        }
    }

    #[test]
    fn origins_are_the_gateways_own_or_listed() {
        let policy = BrowserPolicy {
            allowed_hosts: Vec::new(),
            allowed_origins: vec!["https://app.example.com".into()],
        };
        let verdict = |origin: &str| match origin_allowed(
            &HeaderValue::from_str(origin).unwrap(),
            ("127.0.0.1", Some(7420)),
            &policy,
        ) {
            OriginVerdict::SameOrigin => "same",
            OriginVerdict::Listed(_) => "listed",
            OriginVerdict::Refused(_) => "refused",
        };
        assert_eq!(verdict("http://127.0.0.1:7420"), "same");
        assert_eq!(verdict("https://app.example.com"), "listed");
        assert_eq!(verdict("https://app.example.com.evil.test"), "refused");
        assert_eq!(verdict("null"), "refused");
        assert_eq!(verdict("file://127.0.0.1"), "refused");
        assert_eq!(verdict("http://localhost:7420"), "refused");
        // Another port of the same host is another origin.
        assert_eq!(verdict("http://127.0.0.1:8080"), "refused");
        assert_eq!(verdict("http://127.0.0.1"), "refused");
        assert_eq!(explicit_port("[::1]:7420"), Some(7420));
        assert_eq!(explicit_port("talon.example.com"), None);
    }
}
