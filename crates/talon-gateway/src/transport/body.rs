//! Reading a request body within the gateway's limits: at most
//! `max_body_bytes`, whole within `body_read_timeout`, and never slower
//! than `min_body_bytes_per_second` once its first [`GRACE`] is over, so a
//! client that trickles a body holds its connection (and its place under
//! `max_connections`) for seconds, not forever. A body over a limit is
//! refused with `invalid_request` (`details.reason`: `body_too_large`,
//! `body_too_slow`) and the connection is closed after the answer.

use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use futures::StreamExt as _;
use talon_protocol::gateway::{ApiError, ErrorCode};
use tokio::time::Instant;

use crate::limits::Limits;

/// How long a body may arrive at any rate before the minimum applies.
pub(crate) const GRACE: Duration = Duration::from_secs(5);

/// Why a body was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Over `max_body_bytes`, or cut off by the client.
    TooLarge,
    /// Past `body_read_timeout`, or under `min_body_bytes_per_second`.
    TooSlow,
}

impl Refused {
    /// The refusal as the protocol's error.
    pub(crate) fn error(self, limits: &Limits) -> ApiError {
        match self {
            Self::TooLarge => {
                talon_protocol::gateway::refuse::body_too_large(limits.max_body_bytes as u64)
            }
            Self::TooSlow => ApiError::new(
                ErrorCode::InvalidRequest,
                format!(
                    "the body did not arrive in time: at most {} ms, and at least {} bytes a second after the first {} s",
                    limits.body_read_timeout.as_millis(),
                    limits.min_body_bytes_per_second,
                    GRACE.as_secs()
                ),
            )
            .with_details(talon_protocol::gateway::ErrorDetails::reason("body_too_slow")),
        }
    }
}

/// The whole body, or why not.
pub(crate) async fn read(body: Body, limits: &Limits) -> Result<Bytes, Refused> {
    let started = Instant::now();
    let deadline = started + limits.body_read_timeout;
    let rate = limits.min_body_bytes_per_second.max(1) as f64;
    let mut stream = body.into_data_stream();
    let mut read = BytesMut::new();
    loop {
        // The next bytes are due when the rate says one more byte should
        // have arrived, and by the deadline.
        let behind = Duration::from_secs_f64((read.len() + 1) as f64 / rate);
        let due = deadline.min(started + GRACE + behind);
        match tokio::time::timeout_at(due, stream.next()).await {
            Err(_) => return Err(Refused::TooSlow),
            Ok(None) => return Ok(read.freeze()),
            Ok(Some(Err(_))) => return Err(Refused::TooLarge),
            Ok(Some(Ok(data))) => {
                if read.len() + data.len() > limits.max_body_bytes {
                    return Err(Refused::TooLarge);
                }
                read.extend_from_slice(&data);
            }
        }
    }
}

/// `response` closing its connection after it is sent: what remains of a
/// refused body is never read.
pub(crate) fn closing(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body of `chunks`, each after `every`.
    fn paced(chunks: usize, size: usize, every: Duration) -> Body {
        let stream = futures::stream::unfold(0, move |sent| async move {
            if sent == chunks {
                return None;
            }
            tokio::time::sleep(every).await;
            Some((
                Ok::<_, std::io::Error>(Bytes::from(vec![b' '; size])),
                sent + 1,
            ))
        });
        Body::from_stream(stream)
    }

    fn limits() -> Limits {
        Limits {
            max_body_bytes: 1 << 20,
            body_read_timeout: Duration::from_secs(60),
            min_body_bytes_per_second: 100,
            ..Limits::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_slower_than_the_minimum_after_the_grace_is_cut() {
        // 200 bytes a second: fine.
        let read_ok = read(paced(20, 200, Duration::from_secs(1)), &limits()).await;
        assert_eq!(read_ok.map(|b| b.len()), Ok(4_000));
        // 50 bytes a second: within the grace, then behind the minimum.
        let started = Instant::now();
        let slow = read(paced(100, 50, Duration::from_secs(1)), &limits()).await;
        assert_eq!(slow, Err(Refused::TooSlow));
        let took = started.elapsed();
        assert!(took > GRACE && took < Duration::from_secs(15), "{took:?}");
        // Nothing at all: cut once the grace and the first byte's time are
        // over.
        let silent = read(paced(1, 1, Duration::from_secs(3_600)), &limits()).await;
        assert_eq!(silent, Err(Refused::TooSlow));
        // Fast enough but past the deadline.
        let long = Limits {
            body_read_timeout: Duration::from_secs(10),
            ..limits()
        };
        let late = read(paced(30, 1_000, Duration::from_secs(1)), &long).await;
        assert_eq!(late, Err(Refused::TooSlow));
        // Over the size cap.
        let small = Limits {
            max_body_bytes: 1_000,
            ..limits()
        };
        let large = read(paced(3, 600, Duration::from_millis(1)), &small).await;
        assert_eq!(large, Err(Refused::TooLarge));
    }
}
