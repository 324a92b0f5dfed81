//! The accept loop: HTTP/1.1 (with upgrades, for the WebSocket) on every
//! accepted connection, with the connection limits a long-lived server
//! needs ([`Limits`]): at most `max_connections` at once; a request head
//! must arrive within `header_read_timeout`; every socket has TCP
//! keepalive and `TCP_USER_TIMEOUT` (`stalled_write_timeout`), so a peer
//! that vanished or stopped reading its stream is dropped by the kernel
//! and its stream slot freed, the client resuming by cursor. Shutdown stops
//! accepting, lets every connection finish its exchange, and returns when
//! all have closed (streams end on the gateway's `closing` signal).

use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};

use crate::limits::Limits;

/// Idle time before TCP keepalive probes start, and between probes.
const KEEPALIVE: (Duration, Duration) = (Duration::from_secs(60), Duration::from_secs(10));
/// The most a connection buffers of a request it reads (its head must fit).
const MAX_READ_BUFFER: usize = 64 << 10;

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
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout)
            // What one connection may buffer of a request it reads.
            .max_buf_size(MAX_READ_BUFFER)
            .serve_connection(TokioIo::new(tcp), TowerToHyperService::new(app.clone()))
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
