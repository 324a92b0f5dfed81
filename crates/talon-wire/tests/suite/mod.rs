//! Shared helpers: a response rendered to a value compared whole (status,
//! every header, the body as JSON), and a driver for futures that are
//! ready at once.

mod cursor;
mod errors;
mod range;
mod sse;
mod ws;

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// A response as a client sees it.
#[derive(Debug, PartialEq)]
pub struct Rendered {
    pub status: u16,
    /// Every header, in the order the response holds them.
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

/// The output of a future that needs no runtime (an in-memory body, a
/// handler that awaits nothing): it must be ready on the first poll.
pub fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the future was not ready at once"),
    }
}

/// Renders `response`, reading its body (JSON) whole.
pub fn render(response: impl IntoResponse) -> Rendered {
    let response: Response = response.into_response();
    let (parts, body) = response.into_parts();
    let bytes = ready(axum::body::to_bytes(body, 1 << 20)).unwrap();
    Rendered {
        status: parts.status.as_u16(),
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| (name.as_str().to_owned(), value.to_str().unwrap().to_owned()))
            .collect(),
        body: serde_json::from_slice(&bytes).unwrap(),
    }
}

/// A header list from literal pairs.
pub fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}
