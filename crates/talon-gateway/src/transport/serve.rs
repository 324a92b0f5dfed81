//! The accept loop: HTTP/1.1 (with upgrades, for the WebSocket) on every
//! accepted connection, with the connection limits a long-lived server
//! needs ([`Limits`]): at most `max_connections` at once; a request head
//! must arrive within `header_read_timeout`; every socket has TCP
//! keepalive and `TCP_USER_TIMEOUT` (`stalled_write_timeout`), so a peer
//! that vanished or stopped reading its stream is dropped by the kernel
//! and its stream slot freed, the client resuming by cursor. A connection
//! whose answer is a stream (Server-Sent Events, a WebSocket) has its
//! kernel send buffer capped at [`STREAM_SEND_BUFFER`] (the kernel doubles
//! it for its own book-keeping), so that an unread stream holds at most
//! that in the kernel instead of the up to 4 MiB autotuning gives it;
//! other answers keep autotuning (downloads stay fast). Shutdown stops
//! accepting, lets every connection finish its exchange, and returns when
//! all have closed (streams end on the gateway's `closing` signal).

use std::convert::Infallible;
use std::future::Future;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{Request, StatusCode, header};
use axum::response::Response;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};

use crate::limits::Limits;

/// Idle time before TCP keepalive probes start, and between probes.
const KEEPALIVE: (Duration, Duration) = (Duration::from_secs(60), Duration::from_secs(10));
/// The most a connection buffers of a request it reads (its head must fit).
const MAX_READ_BUFFER: usize = 64 << 10;
/// The send buffer asked for a stream's socket: 256 KiB, which the kernel
/// doubles, keeps a reader over a 50 ms path at 10 MB/s.
pub const STREAM_SEND_BUFFER: usize = 256 << 10;

/// Serves `app` on `listener` until `stop` turns true.
pub(crate) async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let open = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    loop {
        let permit = tokio::select! {
            permit = open.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = stopped(&mut stop) => break,
        };
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(error) => {
                    // Out of descriptors or a connection reset before it
                    // was taken: not fatal; back off a little.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stopped(&mut stop) => break,
        };
        tune(&tcp, &limits);
        let service = Streams {
            app: TowerToHyperService::new(app.clone()),
            fd: tcp.as_raw_fd(),
        };
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout)
            // What one connection may buffer of a request it reads.
            .max_buf_size(MAX_READ_BUFFER)
            .serve_connection(TokioIo::new(tcp), service)
            .with_upgrades();
        let mut stopping = stop.clone();
        tokio::spawn(async move {
            let mut connection = std::pin::pin!(connection);
            let ended = tokio::select! {
                ended = connection.as_mut() => Some(ended),
                () = stopped(&mut stopping) => None,
            };
            // On shutdown the exchange in progress finishes; the
            // connection is not kept alive for another.
            let ended = match ended {
                Some(ended) => ended,
                None => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(error) = ended {
                tracing::debug!(%error, "a connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    // Every connection has closed once all the permits are back.
    let all = u32::try_from(limits.max_connections.max(1)).unwrap_or(u32::MAX);
    let _ = open.acquire_many(all).await;
    Ok(())
}

/// Returns once `stop` is true (or its sender is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stop| *stop).await;
}

/// Socket options of an accepted connection.
fn tune(tcp: &TcpStream, limits: &Limits) {
    let socket = socket2::SockRef::from(tcp);
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(KEEPALIVE.0)
        .with_interval(KEEPALIVE.1);
    let tuned = tcp
        .set_nodelay(true)
        .and_then(|()| socket.set_tcp_keepalive(&keepalive))
        .and_then(|()| socket.set_tcp_user_timeout(Some(limits.stalled_write_timeout)));
    if let Err(error) = tuned {
        tracing::debug!(%error, "could not set a connection's socket options");
    }
}

/// The gateway's routes on one connection, capping the connection's send
/// buffer once a route answers with a stream.
struct Streams {
    app: TowerToHyperService<axum::Router>,
    /// The connection's socket, owned by the connection this service
    /// serves.
    fd: RawFd,
}

impl hyper::service::Service<Request<Incoming>> for Streams {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let answer = self.app.call(request);
        let fd = self.fd;
        Box::pin(async move {
            let response = answer.await?;
            if is_stream(&response) {
                #[allow(
                    unsafe_code,
                    reason = "the descriptor is the socket of the connection that polls this future: hyper polls a request's service future inside the connection's own future, which owns the socket, so it is open for as long as this borrow"
                )]
                let socket = unsafe { BorrowedFd::borrow_raw(fd) };
                if let Err(error) =
                    socket2::SockRef::from(&socket).set_send_buffer_size(STREAM_SEND_BUFFER)
                {
                    tracing::debug!(%error, "could not cap a stream's send buffer");
                }
            }
            Ok(response)
        })
    }
}

/// Whether `response` is a stream that may be held open unread: Server-Sent
/// Events, or a switch to the WebSocket.
fn is_stream(response: &Response) -> bool {
    response.status() == StatusCode::SWITCHING_PROTOCOLS
        || response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: StatusCode, content_type: Option<&str>) -> Response {
        let mut response = Response::new(axum::body::Body::empty());
        *response.status_mut() = status;
        if let Some(value) = content_type {
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, value.parse().unwrap());
        }
        response
    }

    #[test]
    fn event_streams_and_websockets_are_streams_and_nothing_else_is() {
        let cases = [
            (StatusCode::OK, Some("text/event-stream"), true),
            (
                StatusCode::OK,
                Some("text/event-stream; charset=utf-8"),
                true,
            ),
            (StatusCode::SWITCHING_PROTOCOLS, None, true),
            (StatusCode::OK, Some("application/json"), false),
            (StatusCode::OK, Some("application/octet-stream"), false),
            (StatusCode::OK, None, false),
        ];
        let seen: Vec<_> = cases
            .iter()
            .map(|(status, content_type, _)| is_stream(&answer(*status, *content_type)))
            .collect();
        let expected: Vec<_> = cases.iter().map(|(_, _, stream)| *stream).collect();
        assert_eq!(seen, expected);
    }
}
