//! `ErrorResponse` rendered: every code's status and the `{"error": ..}`
//! body, `Retry-After` rounded up to whole seconds, the RFC 6750
//! `WWW-Authenticate` challenge on 401 (and only there), `no_route` and
//! `method_not_allowed`.

use serde_json::json;
use talon_protocol::gateway::{ApiError, AuthRefusal, ErrorCode};
use talon_wire::{ErrorResponse, method_not_allowed, no_route};

use super::{Rendered, headers, ready, render};

const JSON: (&str, &str) = ("content-type", "application/json");

#[test]
fn every_code_is_sent_with_its_status_and_the_error_envelope() {
    let got: Vec<(u16, Rendered)> = ErrorCode::ALL
        .iter()
        .chain([&ErrorCode::Unknown])
        .filter(|code| **code != ErrorCode::Unauthenticated)
        .map(|&code| {
            let rendered = render(ErrorResponse(ApiError::new(code, "m")));
            (code.http_status(), rendered)
        })
        .collect();
    let expected: Vec<(u16, Rendered)> = [
        ("invalid_request", 400, false),
        ("forbidden", 403, false),
        ("not_found", 404, false),
        ("conflict", 409, false),
        ("rate_limited", 429, true),
        ("unavailable", 503, true),
        ("unsupported", 501, false),
        ("timeout", 504, true),
        ("cursor_expired", 410, false),
        ("internal", 500, true),
        ("quota_exceeded", 507, false),
        ("method_not_allowed", 405, false),
        ("unknown", 500, false),
    ]
    .into_iter()
    .map(|(code, status, retryable)| {
        (
            status,
            Rendered {
                status,
                headers: headers(&[JSON]),
                body: json!({"error": {"code": code, "message": "m", "retryable": retryable}}),
            },
        )
    })
    .collect();
    assert_eq!(got, expected);
}

#[test]
fn details_and_retry_after_ms_travel_in_the_body() {
    let error = ApiError::new(ErrorCode::Unavailable, "draining")
        .with_retry_after_ms(250)
        .with_details(
            serde_json::from_value(json!({"phase": "drain", "nested": {"a": [1, null]}})).unwrap(),
        );
    assert_eq!(
        render(ErrorResponse(error)),
        Rendered {
            status: 503,
            headers: headers(&[JSON, ("retry-after", "1")]),
            body: json!({"error": {
                "code": "unavailable",
                "message": "draining",
                "retryable": true,
                "retryAfterMs": 250,
                "details": {"phase": "drain", "nested": {"a": [1, null]}},
            }}),
        }
    );
}

#[test]
fn retry_after_is_rounded_up_to_whole_seconds() {
    let got: Vec<(u64, Vec<(String, String)>)> = [
        0,
        1,
        999,
        1000,
        1001,
        1999,
        2000,
        60_000,
        u64::MAX - 1,
        u64::MAX,
    ]
    .into_iter()
    .map(|ms| {
        let error = ApiError::new(ErrorCode::RateLimited, "slow").with_retry_after_ms(ms);
        (ms, render(ErrorResponse(error)).headers)
    })
    .collect();
    let secs = |ms: u64, s: &str| (ms, headers(&[JSON, ("retry-after", s)]));
    assert_eq!(
        got,
        [
            secs(0, "0"),
            secs(1, "1"),
            secs(999, "1"),
            secs(1000, "1"),
            secs(1001, "2"),
            secs(1999, "2"),
            secs(2000, "2"),
            secs(60_000, "60"),
            secs(u64::MAX - 1, "18446744073709552"),
            secs(u64::MAX, "18446744073709552"),
        ]
    );
}

#[test]
fn retry_after_follows_the_field_whatever_the_code() {
    let error = ApiError::new(ErrorCode::Conflict, "later").with_retry_after_ms(1500);
    assert_eq!(
        render(ErrorResponse(error)).headers,
        headers(&[JSON, ("retry-after", "2")])
    );
}

#[test]
fn unauthenticated_carries_the_bearer_challenge_for_each_refusal() {
    let got: Vec<Rendered> = [
        AuthRefusal::Missing,
        AuthRefusal::Malformed,
        AuthRefusal::Unknown,
        AuthRefusal::Revoked,
        AuthRefusal::Expired,
    ]
    .into_iter()
    .map(|refusal| render(ErrorResponse(refusal.error())))
    .collect();
    let expected: Vec<Rendered> = [
        ("missing", "no token: send Authorization: Bearer <token> (`talon token create` makes one)"),
        ("malformed", "the Authorization header is not `Bearer talon_<secret>`"),
        ("unknown", "this token is not known to this gateway"),
        ("revoked", "this token was revoked"),
        ("expired", "this token has expired"),
    ]
    .into_iter()
    .map(|(reason, message)| {
        let challenge = if reason == "missing" {
            "Bearer realm=\"talon\"".to_owned()
        } else {
            format!(
                "Bearer realm=\"talon\", error=\"invalid_token\", error_description=\"the token is {reason}\""
            )
        };
        Rendered {
            status: 401,
            headers: headers(&[JSON, ("www-authenticate", &challenge)]),
            body: json!({"error": {
                "code": "unauthenticated",
                "message": message,
                "retryable": false,
                "details": {"reason": reason},
            }}),
        }
    })
    .collect();
    assert_eq!(got, expected);
}

#[test]
fn a_reason_unfit_for_a_header_falls_back_to_the_plain_challenge() {
    // Only a lowercase ASCII word is echoed: quotes, line breaks, capitals,
    // non-ASCII and non-strings could break or forge the header.
    for details in [
        None,
        serde_json::from_value(json!({})).ok(),
        serde_json::from_value(json!({"reason": 7})).ok(),
        serde_json::from_value(json!({"reason": null})).ok(),
        serde_json::from_value(json!({"reason": "Expired"})).ok(),
        serde_json::from_value(json!({"reason": "x\", error=\"forged"})).ok(),
        serde_json::from_value(json!({"reason": "line\r\nSet-Cookie: a=b"})).ok(),
        serde_json::from_value(json!({"reason": "expiré"})).ok(),
        serde_json::from_value(json!({"reason": "two words"})).ok(),
        serde_json::from_value(json!(["reason", "expired"])).ok(),
    ] {
        let mut error = ApiError::new(ErrorCode::Unauthenticated, "no");
        error.details = details.clone();
        assert_eq!(
            render(ErrorResponse(error)).headers,
            headers(&[JSON, ("www-authenticate", "Bearer realm=\"talon\"")]),
            "{details:?}"
        );
    }
}

#[test]
fn an_empty_reason_yields_a_description_naming_none() {
    // `"reason": ""` passes the lowercase filter vacuously; what it yields
    // is pinned here: a challenge whose description names no reason.
    let error = ApiError::new(ErrorCode::Unauthenticated, "no")
        .with_details(talon_protocol::gateway::ErrorDetails::reason(""));
    assert_eq!(
        render(ErrorResponse(error)).headers,
        headers(&[
            JSON,
            (
                "www-authenticate",
                "Bearer realm=\"talon\", error=\"invalid_token\", error_description=\"the token is \""
            )
        ])
    );
}

#[test]
fn only_unauthenticated_carries_a_challenge() {
    for code in ErrorCode::ALL {
        let error = ApiError::new(code, "m")
            .with_details(talon_protocol::gateway::ErrorDetails::reason("expired"));
        let names: Vec<String> = render(ErrorResponse(error))
            .headers
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        let expected: &[&str] = if code == ErrorCode::Unauthenticated {
            &["content-type", "www-authenticate"]
        } else {
            &["content-type"]
        };
        assert_eq!(names, expected, "{code}");
    }
}

#[test]
fn no_route_is_not_found_saying_where_methods_are() {
    assert_eq!(
        render(ready(no_route())),
        Rendered {
            status: 404,
            headers: headers(&[JSON]),
            body: json!({"error": {
                "code": "not_found",
                "message": "no such route: methods are POST /v1/<method>, described by /v1/openapi.json and readable at /docs",
                "retryable": false,
            }}),
        }
    );
}

#[test]
fn method_not_allowed_is_405_with_the_envelope_and_allow() {
    for allow in ["POST", "GET, HEAD"] {
        assert_eq!(
            render(method_not_allowed(allow)),
            Rendered {
                status: 405,
                headers: headers(&[JSON, ("allow", allow)]),
                body: json!({"error": {
                    "code": "method_not_allowed",
                    "message": format!("this path takes {allow} only"),
                    "retryable": false,
                }}),
            }
        );
    }
}
