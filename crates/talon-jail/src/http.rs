//! The one request head the sandbox's proxy reads on each connection:
//! read under fixed caps, parsed strictly, and, for a plain HTTP request,
//! rewritten to the origin form its server expects.
//!
//! Accepted: `CONNECT host:port HTTP/1.x` (authority form, the port
//! required), and `GET`, `HEAD`, `POST`, `PUT`, `PATCH`, `DELETE` or
//! `OPTIONS` with an absolute `http://host[:port]/path` target. Refused:
//! any other method or target form, a request line over [`MAX_LINE`]
//! bytes, a head over [`MAX_HEAD`] bytes or [`MAX_HEADERS`] fields, bare
//! CR or LF, control characters, folded lines, credentials in the URL.
//! Everything after the head (a request body, or TLS in a tunnel) is
//! copied as it comes, never parsed.

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::allow::{Host, parse_authority};

/// The longest request line read.
pub(crate) const MAX_LINE: usize = 8192;
/// The largest request head read (line and fields).
pub(crate) const MAX_HEAD: usize = 65_536;
/// The most header fields a head may have.
pub(crate) const MAX_HEADERS: usize = 100;

/// The methods forwarded in absolute form.
const FORWARDED: &[&str] = &["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// Fields not forwarded: the hop-by-hop ones (RFC 9110, 7.6.1), the
/// proxy's own, and `Host` (set from the checked URL).
const DROPPED: &[&str] = &[
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "upgrade",
    "host",
];

/// Why no head was read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The client closed before sending anything.
    Closed,
    /// A read failed.
    Io(std::io::Error),
    /// What came is refused (the reason).
    Refused(String),
}

/// Reads up to the end of the head (`CRLF CRLF`): the head, and what
/// came after it in the same reads.
pub(crate) async fn read_head<R: AsyncRead + Unpin>(
    reader: &mut R,
) -> Result<(Vec<u8>, Vec<u8>), ReadError> {
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        let n = reader.read(&mut chunk).await.map_err(ReadError::Io)?;
        if n == 0 {
            return Err(if buf.is_empty() {
                ReadError::Closed
            } else {
                ReadError::Refused("the connection closed inside the request head".into())
            });
        }
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        let line_end = buf.iter().position(|&b| b == b'\n');
        if line_end.map_or(buf.len(), |end| end + 1) > MAX_LINE {
            return Err(ReadError::Refused(format!(
                "the request line is longer than {MAX_LINE} bytes"
            )));
        }
        if let Some(at) = find(&buf[from..], b"\r\n\r\n") {
            let end = from + at + 4;
            if end > MAX_HEAD {
                break;
            }
            let rest = buf.split_off(end);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            break;
        }
    }
    Err(ReadError::Refused(format!(
        "the request head is larger than {MAX_HEAD} bytes"
    )))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A request the proxy may carry out once its host and port are allowed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Request {
    /// `CONNECT`: a tunnel to `host:port`.
    Connect {
        /// The host asked for.
        host: Host,
        /// Its port.
        port: u16,
    },
    /// A plain HTTP request, to send to `host:port` as `head`.
    Forward {
        /// The host of its URL.
        host: Host,
        /// Its port (80 by default).
        port: u16,
        /// The head to send: origin form, `Host` from the URL, the
        /// hop-by-hop fields dropped, `Connection: close`.
        head: Vec<u8>,
    },
}

impl Request {
    /// The host and port it reaches.
    pub(crate) fn target(&self) -> (&Host, u16) {
        match self {
            Request::Connect { host, port } | Request::Forward { host, port, .. } => (host, *port),
        }
    }
}

/// `text`, cut to `max` characters for a message.
fn shown(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{:?}...", &text[..at]),
        None => format!("{text:?}"),
    }
}

/// Parses a head as [`read_head`] returned it (ending in `CRLF CRLF`);
/// the error is why it is refused.
pub(crate) fn parse(head: &[u8]) -> Result<Request, String> {
    let body = head
        .strip_suffix(b"\r\n\r\n")
        .ok_or("the request head does not end with an empty line")?;
    let mut lines = Vec::new();
    let mut rest = body;
    while let Some(at) = find(rest, b"\r\n") {
        lines.push(&rest[..at]);
        rest = &rest[at + 2..];
    }
    lines.push(rest);
    if lines
        .iter()
        .any(|l| l.contains(&b'\r') || l.contains(&b'\n'))
    {
        return Err("a bare CR or LF in the request head".into());
    }
    let mut lines = lines.into_iter();
    let line = lines.next().ok_or("an empty request")?;
    let line = std::str::from_utf8(line)
        .ok()
        .filter(|l| l.bytes().all(|b| (0x20..0x7f).contains(&b)))
        .ok_or("the request line is not printable ASCII")?;
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!(
            "malformed request line {} (METHOD target HTTP/1.1)",
            shown(line, 80)
        ));
    };
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Err(format!("HTTP version {} (1.0 or 1.1)", shown(version, 16)));
    }
    let mut fields: Vec<(&str, &[u8])> = Vec::new();
    for line in lines {
        if fields.len() == MAX_HEADERS {
            return Err(format!("more than {MAX_HEADERS} header fields"));
        }
        fields.push(field(line)?);
    }
    if method == "CONNECT" {
        let (host, port) = parse_authority(target, None)
            .map_err(|why| format!("CONNECT {}: {why}", shown(target, 80)))?;
        return Ok(Request::Connect { host, port });
    }
    if !FORWARDED.contains(&method) {
        return Err(format!(
            "method {} (CONNECT, or {} with an http:// URL)",
            shown(method, 16),
            FORWARDED.join(", ")
        ));
    }
    forward(method, target, version, &fields)
}

/// One `name: value` field.
fn field(line: &[u8]) -> Result<(&str, &[u8]), String> {
    if line.first().is_some_and(|b| *b == b' ' || *b == b'\t') {
        return Err("a folded header line".into());
    }
    let colon = line
        .iter()
        .position(|&b| b == b':')
        .ok_or("a header line without a colon")?;
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    let token = |b: &u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(b);
    if name.is_empty() || !name.iter().all(token) {
        return Err("a header name that is not a token".into());
    }
    if value.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        return Err("a control character in a header value".into());
    }
    let name = std::str::from_utf8(name).map_err(|_| "a header name that is not ASCII")?;
    Ok((name, value.trim_ascii()))
}

/// An absolute-form request, rewritten to origin form.
fn forward(
    method: &str,
    target: &str,
    version: &str,
    fields: &[(&str, &[u8])],
) -> Result<Request, String> {
    let scheme_len = "http://".len();
    let scheme = target.get(..scheme_len).unwrap_or_default();
    if !scheme.eq_ignore_ascii_case("http://") {
        let form = if target.starts_with('/') {
            "an origin-form target (this is a proxy: an absolute http:// URL, or CONNECT)"
        } else if target
            .get(..8)
            .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
        {
            "an https:// URL in the request line (HTTPS goes through CONNECT)"
        } else {
            "a target that is not an http:// URL"
        };
        return Err(format!("{method} {}: {form}", shown(target, 80)));
    }
    let rest = &target[scheme_len..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let (host, port) = parse_authority(authority, Some(80))
        .map_err(|why| format!("{method} {authority}: {why}"))?;
    let path = match path.as_bytes().first() {
        None => "/".to_owned(),
        Some(b'/') => path.to_owned(),
        Some(_) => format!("/{path}"),
    };
    let mut head = format!("{method} {path} {version}\r\nHost: {host}").into_bytes();
    if port != 80 {
        head.extend_from_slice(format!(":{port}").as_bytes());
    }
    head.extend_from_slice(b"\r\n");
    let listed: Vec<String> = fields
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("connection"))
        .flat_map(|(_, value)| value.split(|&b| b == b','))
        .map(|token| String::from_utf8_lossy(token.trim_ascii()).to_ascii_lowercase())
        .collect();
    for (name, value) in fields {
        let lower = name.to_ascii_lowercase();
        if DROPPED.contains(&lower.as_str()) || listed.contains(&lower) {
            continue;
        }
        head.extend_from_slice(name.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value);
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok(Request::Forward { host, port, head })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;

    #[test]
    fn an_absolute_request_is_rewritten_to_origin_form() {
        let head = b"GET http://Example.com:8080/a?b=1 HTTP/1.1\r\nHost: evil.test\r\n\
                     Proxy-Connection: keep-alive\r\nConnection: x-hop\r\nX-Hop: 1\r\n\
                     Accept: */*\r\n\r\n";
        let Request::Forward { host, port, head } = parse(head).unwrap() else {
            panic!("not forwarded");
        };
        assert_eq!((host, port), (Host::Name("example.com".into()), 8080));
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "GET /a?b=1 HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        let Request::Forward { head, .. } =
            parse(b"HEAD http://a.test?q HTTP/1.0\r\n\r\n").unwrap()
        else {
            panic!("not forwarded");
        };
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "HEAD /?q HTTP/1.0\r\nHost: a.test\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn connect_needs_a_port_and_odd_heads_are_refused() {
        assert_eq!(
            parse(b"CONNECT [::1]:443 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap(),
            Request::Connect {
                host: Host::Ip("::1".parse().unwrap()),
                port: 443
            }
        );
        let cases: [(&[u8], &str); 8] = [
            (
                b"CONNECT a.test HTTP/1.1\r\n\r\n",
                "CONNECT \"a.test\": \"a.test\" has no port",
            ),
            (
                b"TRACE http://a.test/ HTTP/1.1\r\n\r\n",
                "method \"TRACE\" (CONNECT, or GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS with an http:// URL)",
            ),
            (
                b"GET /x HTTP/1.1\r\n\r\n",
                "GET \"/x\": an origin-form target (this is a proxy: an absolute http:// URL, or CONNECT)",
            ),
            (
                b"GET https://a.test/ HTTP/1.1\r\n\r\n",
                "GET \"https://a.test/\": an https:// URL in the request line (HTTPS goes through CONNECT)",
            ),
            (
                b"GET http://u:p@a.test/ HTTP/1.1\r\n\r\n",
                "GET u:p@a.test: credentials in the address (user@host)",
            ),
            (
                b"GET http://a.test/ HTTP/2\r\n\r\n",
                "HTTP version \"HTTP/2\" (1.0 or 1.1)",
            ),
            (
                b"GET http://a.test/ HTTP/1.1\r\nA: b\nC: d\r\n\r\n",
                "a bare CR or LF in the request head",
            ),
            (
                b"GET http://a.test/ HTTP/1.1\r\n x: y\r\n\r\n",
                "a folded header line",
            ),
        ];
        for (head, why) in cases {
            assert_eq!(
                parse(head).unwrap_err(),
                why,
                "{}",
                String::from_utf8_lossy(head)
            );
        }
    }

    #[tokio::test]
    async fn heads_are_read_under_their_caps() {
        let mut ok: &[u8] = b"CONNECT a.test:443 HTTP/1.1\r\n\r\n\x16\x03";
        let (head, rest) = read_head(&mut ok).await.unwrap();
        assert_eq!((head.len(), rest), (31, b"\x16\x03".to_vec()));
        let long = format!(
            "GET http://a.test/{} HTTP/1.1\r\n\r\n",
            "a".repeat(MAX_LINE)
        );
        let Err(ReadError::Refused(why)) = read_head(&mut long.as_bytes()).await else {
            panic!("read");
        };
        assert_eq!(why, "the request line is longer than 8192 bytes");
        let big = format!(
            "GET http://a.test/ HTTP/1.1\r\n{}",
            "X: y\r\n".repeat(20_000)
        );
        let Err(ReadError::Refused(why)) = read_head(&mut big.as_bytes()).await else {
            panic!("read");
        };
        assert_eq!(why, "the request head is larger than 65536 bytes");
        let mut empty: &[u8] = b"";
        assert!(matches!(
            read_head(&mut empty).await,
            Err(ReadError::Closed)
        ));
    }
}
