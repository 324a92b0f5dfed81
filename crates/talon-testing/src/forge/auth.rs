//! The forge's credentials: basic-auth values decoded (git sends the token
//! as the password) and `Authorization` headers redacted for the record.

use axum::http::HeaderMap;

/// The headers with credentials replaced by whether they were the token.
pub(super) fn recorded_headers(headers: &HeaderMap, token: &str) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            let value = if name == axum::http::header::AUTHORIZATION {
                redact_authorization(&value, token)
            } else {
                value.replace(token, "[token]")
            };
            (name.as_str().to_owned(), value)
        })
        .collect()
}

fn redact_authorization(value: &str, token: &str) -> String {
    let (scheme, credential) = value.trim().split_once(' ').unwrap_or((value.trim(), ""));
    let mark = |secret: &str| {
        if secret == token {
            "[token]"
        } else {
            "[wrong]"
        }
    };
    if scheme.eq_ignore_ascii_case("basic") {
        match basic_credentials(value) {
            Some((user, password)) => format!("{scheme} {user}:{}", mark(&password)),
            None => format!("{scheme} [wrong]"),
        }
    } else {
        format!("{scheme} {}", mark(credential.trim()))
    }
}

/// The user and password of a `Basic` authorization value.
pub(super) fn basic_credentials(value: &str) -> Option<(String, String)> {
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = String::from_utf8(base64_decode(encoded.trim())?).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

/// Standard base64 (padding optional).
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut buffer = 0u32;
    let mut bits = 0u32;
    for c in text.trim_end_matches('=').bytes() {
        let value = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        buffer = (buffer << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((buffer >> bits) & 0xff) as u8);
        }
    }
    Some(out)
}
