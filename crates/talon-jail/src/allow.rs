//! The admin's network allow-list (`allowHosts`, read with
//! `network: "allow"`): what one entry may say, and whether a host and
//! port a sandboxed command asks its proxy for match one.
//!
//! An entry is `host:port` with an explicit port (1 to 65535):
//!
//! - a host name (`api.example.com`, `localhost`), matched exactly
//!   (case-insensitively, a trailing dot ignored);
//! - a wildcard, `*.` then a name of at least two labels (`*.pypi.org`),
//!   matching every name below it (`files.pypi.org`, `a.b.pypi.org`),
//!   never the name itself;
//! - an IP address (`10.0.0.5:8080`, `[::1]:8080`), matched only by a
//!   request for that very address: a name never matches an address, nor
//!   an address a name.
//!
//! Names are letters, digits, `-` and `_` in labels of at most 63
//! characters, at most 253 in all, and their last label never starts
//! with a digit, so that nothing the resolver would read as an address
//! (`2130706433`, `0x7f.1`, `127.1`) passes as a name.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// A host as an entry or a request names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Host {
    /// A host name, lower-case, without a trailing dot.
    Name(String),
    /// An IP address.
    Ip(IpAddr),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Host::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// Which hosts an entry matches.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    /// This host exactly.
    Exact(Host),
    /// Every name ending in `.` and this suffix.
    Below(String),
}

/// One entry of `allowHosts`: hosts and the one port they may be reached
/// on (read from, and written as, its `"host:port"` string).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(try_from = "String", into = "String")]
pub struct AllowHost {
    pattern: Pattern,
    port: u16,
}

/// The longest entry or requested authority read.
const MAX_AUTHORITY: usize = 300;

impl AllowHost {
    /// Whether a request for `host` on `port` matches this entry.
    pub(crate) fn matches(&self, host: &Host, port: u16) -> bool {
        if port != self.port {
            return false;
        }
        match (&self.pattern, host) {
            (Pattern::Exact(own), asked) => own == asked,
            (Pattern::Below(suffix), Host::Name(name)) => name
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            (Pattern::Below(_), Host::Ip(_)) => false,
        }
    }
}

impl FromStr for AllowHost {
    type Err = String;

    fn from_str(entry: &str) -> Result<AllowHost, String> {
        if entry.len() > MAX_AUTHORITY {
            return Err(format!("longer than {MAX_AUTHORITY} characters"));
        }
        let (host, port) = split_port(entry)?;
        let port = port.ok_or_else(|| {
            format!("{entry:?} has no port: write host:port (api.example.com:443)")
        })?;
        let pattern = match host.strip_prefix("*.") {
            Some(suffix) => {
                let name = name(suffix).map_err(|why| format!("{entry:?}: {why}"))?;
                if !name.contains('.') {
                    return Err(format!(
                        "{entry:?}: a wildcard needs a name of at least two labels after \"*.\" (*.example.com)"
                    ));
                }
                Pattern::Below(name)
            }
            None if host.contains('*') => {
                return Err(format!(
                    "{entry:?}: a wildcard is only \"*.\" at the start (*.example.com:443)"
                ));
            }
            None => Pattern::Exact(parse_host(host).map_err(|why| format!("{entry:?}: {why}"))?),
        };
        Ok(AllowHost { pattern, port })
    }
}

impl fmt::Display for AllowHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.pattern {
            Pattern::Exact(host) => write!(f, "{host}:{}", self.port),
            Pattern::Below(suffix) => write!(f, "*.{suffix}:{}", self.port),
        }
    }
}

impl TryFrom<String> for AllowHost {
    type Error = String;

    fn try_from(entry: String) -> Result<AllowHost, String> {
        entry.parse()
    }
}

impl From<AllowHost> for String {
    fn from(entry: AllowHost) -> String {
        entry.to_string()
    }
}

/// `host[:port]` (an IPv6 address in brackets), split; the port, when
/// present, checked.
fn split_port(authority: &str) -> Result<(&str, Option<u16>), String> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let end = rest
            .find(']')
            .ok_or("an IPv6 address without its closing \"]\"")?;
        let after = &rest[end + 1..];
        let port = match after.strip_prefix(':') {
            Some(port) => Some(port),
            None if after.is_empty() => None,
            None => return Err(format!("{authority:?} is not host:port")),
        };
        (&authority[..end + 2], port)
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match port {
        None => None,
        Some(port) => {
            let bad = || format!("{port:?} is not a port (1 to 65535)");
            if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            match port.parse::<u16>() {
                Ok(0) | Err(_) => return Err(bad()),
                Ok(port) => Some(port),
            }
        }
    };
    Ok((host, port))
}

/// A host: an IP address (IPv6 in brackets) or a name.
pub(crate) fn parse_host(host: &str) -> Result<Host, String> {
    if let Some(inner) = host.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .ok_or("an IPv6 address without its closing \"]\"")?;
        return inner
            .parse::<std::net::Ipv6Addr>()
            .map(|ip| Host::Ip(IpAddr::V6(ip)))
            .map_err(|_| format!("{inner:?} is not an IPv6 address"));
    }
    if let Ok(ip) = host.parse::<std::net::Ipv4Addr>() {
        return Ok(Host::Ip(IpAddr::V4(ip)));
    }
    name(host).map(Host::Name)
}

/// `host` as a checked, lower-case name without its trailing dot.
fn name(host: &str) -> Result<String, String> {
    let trimmed = host.strip_suffix('.').unwrap_or(host);
    if trimmed.is_empty() {
        return Err("no host name".into());
    }
    if trimmed.len() > 253 {
        return Err("a host name is at most 253 characters".into());
    }
    for label in trimmed.split('.') {
        let valid = !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !valid {
            return Err(format!(
                "{trimmed:?} is not a host name (labels of letters, digits, - and _, 1 to 63 characters)"
            ));
        }
    }
    if trimmed
        .rsplit('.')
        .next()
        .is_some_and(|last| last.starts_with(|c: char| c.is_ascii_digit()))
    {
        return Err(format!(
            "{trimmed:?} is neither an IP address nor a host name (a name's last label starts with a letter)"
        ));
    }
    Ok(trimmed.to_ascii_lowercase())
}

/// A requested `host:port` (the port required, or `default_port`).
pub(crate) fn parse_authority(
    authority: &str,
    default_port: Option<u16>,
) -> Result<(Host, u16), String> {
    if authority.len() > MAX_AUTHORITY {
        return Err(format!("a host longer than {MAX_AUTHORITY} characters"));
    }
    if authority.contains('@') {
        return Err("credentials in the address (user@host)".into());
    }
    let (host, port) = split_port(authority)?;
    let port = port
        .or(default_port)
        .ok_or_else(|| format!("{authority:?} has no port"))?;
    Ok((parse_host(host)?, port))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;

    fn allowed(entry: &str, asked: &str) -> bool {
        let entry: AllowHost = entry.parse().unwrap();
        let (host, port) = parse_authority(asked, None).unwrap();
        entry.matches(&host, port)
    }

    #[test]
    fn entries_match_their_names_ports_and_addresses_only() {
        let cases = [
            ("api.example.com:443", "API.example.com.:443", true),
            ("api.example.com:443", "api.example.com:80", false),
            ("api.example.com:443", "x.api.example.com:443", false),
            ("*.pypi.org:443", "files.pypi.org:443", true),
            ("*.pypi.org:443", "a.b.pypi.org:443", true),
            ("*.pypi.org:443", "pypi.org:443", false),
            ("*.pypi.org:443", "evilpypi.org:443", false),
            ("localhost:8080", "127.0.0.1:8080", false),
            ("127.0.0.1:8080", "127.0.0.1:8080", true),
            ("127.0.0.1:8080", "localhost:8080", false),
            ("[::1]:8080", "[::1]:8080", true),
        ];
        for (entry, asked, expected) in cases {
            assert_eq!(allowed(entry, asked), expected, "{entry} for {asked}");
        }
    }

    #[test]
    fn bad_entries_say_why() {
        let cases = [
            (
                "example.com",
                "\"example.com\" has no port: write host:port (api.example.com:443)",
            ),
            ("example.com:0", "\"0\" is not a port (1 to 65535)"),
            ("example.com:+1", "\"+1\" is not a port (1 to 65535)"),
            (
                "*.com:443",
                "\"*.com:443\": a wildcard needs a name of at least two labels after \"*.\" (*.example.com)",
            ),
            (
                "a.*.com:443",
                "\"a.*.com:443\": a wildcard is only \"*.\" at the start (*.example.com:443)",
            ),
            (
                "2130706433:80",
                "\"2130706433:80\": \"2130706433\" is neither an IP address nor a host name (a name's last label starts with a letter)",
            ),
            (
                "ex ample.com:80",
                "\"ex ample.com:80\": \"ex ample.com\" is not a host name (labels of letters, digits, - and _, 1 to 63 characters)",
            ),
        ];
        for (entry, why) in cases {
            assert_eq!(entry.parse::<AllowHost>().unwrap_err(), why, "{entry}");
        }
        assert_eq!(
            "*.Example.COM.:443"
                .parse::<AllowHost>()
                .unwrap()
                .to_string(),
            "*.example.com:443"
        );
    }
}
