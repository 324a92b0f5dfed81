//! The filtering proxy of one command whose network is `"allow"`: served
//! by the gateway process on a Unix socket of the command's own, in a
//! private directory (mode 0700); the sandbox sees the socket read-only
//! in [`MOUNT`] (a remote sandbox, the end of its `ssh -R` forward);
//! inside, a bridge (`socat`, see `bwrap`) listens on
//! `127.0.0.1:3128` and connects each client to it.
//!
//! Each connection carries one request ([`crate::http`]): its host name
//! and port are checked against `allowHosts` before anything is
//! resolved; the proxy resolves names itself (the sandbox has no DNS),
//! tries IPv4 addresses first, and then tunnels (`CONNECT`) or forwards
//! the request in origin form with `Connection: close`, so that a client
//! following a redirect comes back, and is checked, for every hop.
//! Every refusal answers `403` with a one-line reason and is logged
//! (`tracing::warn!`, target `talon::sandbox`, with host, port and why).
//!
//! Bounds: [`MAX_CONNECTIONS`] at once, a head within [`HEAD_TIMEOUT`],
//! a tunnel idle at most [`IDLE`] and open at most [`TOTAL`]. The
//! proxy's task, and every connection's, ends when its [`Running`] is
//! dropped (it lives in the command's `Guard`), and the directory goes
//! with it.

use std::net::SocketAddr;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio::sync::Semaphore;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::{Instant, timeout};

use crate::JailError;
use crate::allow::Host;
use crate::http::{self, ReadError, Request};
use crate::policy::Policy;

/// Where the proxy's directory is seen in the sandbox.
pub(crate) const MOUNT: &str = "/run/talon-proxy";
/// The socket's name in it.
pub(crate) const SOCKET: &str = "proxy.sock";

/// Connections served at once; more are refused (and past half as many
/// again, closed unanswered).
const MAX_CONNECTIONS: usize = 128;
/// How long a client has to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long resolving a name, or connecting to one address, may take.
const DIAL_TIMEOUT: Duration = Duration::from_secs(10);
/// The most addresses of one name tried.
const MAX_ADDRESSES: usize = 4;
/// How long a tunnel or a forwarded request may pass no byte either way.
const IDLE: Duration = Duration::from_secs(300);
/// How long a tunnel or a forwarded request may stay open.
const TOTAL: Duration = Duration::from_secs(3600);
/// How long a refusal is written, and the rest of the request read and
/// dropped (so that the client reads the refusal, not a reset).
const LINGER: Duration = Duration::from_secs(2);
/// How much of the rest of a refused request is read and dropped.
const LINGER_BYTES: usize = 1 << 20;

/// Logs a refusal: a warning, target `talon::sandbox`, with the host
/// (`-` before one is read), the port (0 likewise) and why.
macro_rules! refused {
    ($host:expr, $port:expr, $why:expr) => {
        tracing::warn!(
            target: "talon::sandbox",
            host = %$host,
            port = $port,
            why = %$why,
            "the sandbox's proxy refused a request"
        )
    };
}

/// A running proxy: its task and its directory, both ended on drop.
#[derive(Debug)]
pub(crate) struct Running {
    task: JoinHandle<()>,
    dir: Dir,
}

impl Running {
    /// Binds the socket in a new private directory and serves it on the
    /// current tokio runtime.
    pub(crate) fn start(policy: Arc<Policy>) -> Result<Running, JailError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|e| JailError::Io {
            what: "starting its network proxy (outside a tokio runtime)",
            source: std::io::Error::other(e),
        })?;
        let dir = Dir::new()?;
        let listener = UnixListener::bind(dir.0.join(SOCKET)).map_err(|source| JailError::Io {
            what: "binding its network proxy's socket",
            source,
        })?;
        let task = runtime.spawn(serve(listener, policy));
        Ok(Running { task, dir })
    }

    /// The socket.
    pub(crate) fn socket(&self) -> PathBuf {
        self.dir.0.join(SOCKET)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Drops the listener and the set of connections, which aborts
        // each of them.
        self.task.abort();
    }
}

/// A private directory (mode 0700), removed with its socket on drop.
#[derive(Debug)]
struct Dir(PathBuf);

impl Dir {
    fn new() -> Result<Dir, JailError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let mut last = None;
        for _ in 0..8 {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let path = std::env::temp_dir().join(format!(
                "talon-proxy-{}-{}-{nanos:08x}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            // mkdir never follows or reuses what is there: a name taken
            // (by anyone) is skipped.
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(Dir(path)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(source) => {
                    return Err(JailError::Io {
                        what: "making its network proxy's directory",
                        source,
                    });
                }
            }
        }
        Err(JailError::Io {
            what: "making its network proxy's directory",
            source: last.unwrap_or_else(|| std::io::Error::other("no free name")),
        })
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.0.join(SOCKET));
        if let Err(e) = std::fs::remove_dir(&self.0) {
            tracing::warn!(target: "talon::sandbox", dir = %self.0.display(), error = %e, "a command's proxy directory could not be removed");
        }
    }
}

/// Accepts until aborted.
async fn serve(listener: UnixListener, policy: Arc<Policy>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let refusals = Arc::new(Semaphore::new(MAX_CONNECTIONS / 2));
    let mut connections = JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let client = match listener.accept().await {
            Ok((client, _)) => client,
            Err(e) => {
                // Out of descriptors, most likely: wait for some to close.
                tracing::warn!(target: "talon::sandbox", error = %e, "the sandbox's proxy could not accept a connection");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => {
                let policy = Arc::clone(&policy);
                connections.spawn(async move {
                    handle(client, &policy).await;
                    drop(slot);
                });
            }
            Err(_) => {
                let why = format!("more than {MAX_CONNECTIONS} connections at once");
                refused!("-", 0u16, why);
                // Answered from a smaller pool (briefly: LINGER); past
                // it, closed unanswered.
                if let Ok(slot) = Arc::clone(&refusals).try_acquire_owned() {
                    connections.spawn(async move {
                        answer(client, "403 Forbidden", &refusal(&why)).await;
                        drop(slot);
                    });
                }
            }
        }
    }
}

fn refusal(why: &str) -> String {
    format!("refused by the sandbox's proxy: {why}")
}

/// A complete response with a one-line text body.
fn response(status: &str, line: &str) -> Vec<u8> {
    let body: String = line
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .chain(std::iter::once('\n'))
        .collect();
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Answers `status` with `line`, then reads and drops what the client
/// still sends for a moment, so that it reads the answer.
async fn answer(mut client: UnixStream, status: &str, line: &str) {
    let bytes = response(status, line);
    let _ = timeout(LINGER, async {
        client.write_all(&bytes).await?;
        client.shutdown().await?;
        let mut sink = [0u8; 8192];
        let mut drained = 0;
        while drained < LINGER_BYTES {
            match client.read(&mut sink).await? {
                0 => break,
                n => drained += n,
            }
        }
        Ok::<_, std::io::Error>(())
    })
    .await;
}

/// One connection: its head, the check, then the tunnel or the forward.
async fn handle(mut client: UnixStream, policy: &Policy) {
    let (head, rest) = match timeout(HEAD_TIMEOUT, http::read_head(&mut client)).await {
        Ok(Ok(read)) => read,
        Ok(Err(ReadError::Closed)) => return,
        Ok(Err(ReadError::Io(e))) => {
            tracing::debug!(target: "talon::sandbox", error = %e, "a sandbox proxy connection failed");
            return;
        }
        Ok(Err(ReadError::Refused(why))) => return refuse(client, "-", 0, &why).await,
        Err(_) => {
            let why = format!("no request head within {} s", HEAD_TIMEOUT.as_secs());
            return refuse(client, "-", 0, &why).await;
        }
    };
    let request = match http::parse(&head) {
        Ok(request) => request,
        Err(why) => return refuse(client, "-", 0, &why).await,
    };
    let (host, port) = request.target();
    if !policy.allows(host, port) {
        let why = match host {
            Host::Ip(_) => format!(
                "{host}:{port} is not in allowHosts (an IP address is allowed only where it is listed as one)"
            ),
            Host::Name(_) => format!("{host}:{port} is not in allowHosts"),
        };
        return refuse(client, &host.to_string(), port, &why).await;
    }
    let mut upstream = match dial(host, port).await {
        Ok(upstream) => upstream,
        Err(why) => {
            tracing::warn!(target: "talon::sandbox", host = %host, port, why = %why, "the sandbox's proxy could not reach an allowed host");
            let line = format!("the sandbox's proxy could not reach {host}:{port}: {why}");
            return answer(client, "502 Bad Gateway", &line).await;
        }
    };
    tracing::debug!(target: "talon::sandbox", host = %host, port, connect = matches!(request, Request::Connect { .. }), "the sandbox's proxy passes a request");
    let sent = match &request {
        Request::Connect { .. } => {
            let established = b"HTTP/1.1 200 Connection established\r\n\r\n";
            timeout(IDLE, async {
                client.write_all(established).await?;
                if !rest.is_empty() {
                    upstream.write_all(&rest).await?;
                }
                Ok::<_, std::io::Error>(())
            })
            .await
        }
        Request::Forward { head, .. } => {
            timeout(IDLE, async {
                upstream.write_all(head).await?;
                upstream.write_all(&rest).await
            })
            .await
        }
    };
    if !matches!(sent, Ok(Ok(()))) {
        return;
    }
    let until_upstream_ends = matches!(request, Request::Forward { .. });
    if let Err(why) = relay(client, upstream, until_upstream_ends).await {
        tracing::debug!(target: "talon::sandbox", host = %host, port, why, "a sandbox proxy connection closed");
    }
}

/// Logs a refusal and answers it.
async fn refuse(client: UnixStream, host: &str, port: u16, why: &str) {
    refused!(host, port, why);
    answer(client, "403 Forbidden", &refusal(why)).await;
}

/// A connection to `host:port`, resolving a name (IPv4 addresses first).
async fn dial(host: &Host, port: u16) -> Result<TcpStream, String> {
    let mut addresses: Vec<SocketAddr> = match host {
        Host::Ip(ip) => vec![SocketAddr::new(*ip, port)],
        Host::Name(name) => timeout(DIAL_TIMEOUT, tokio::net::lookup_host((name.as_str(), port)))
            .await
            .map_err(|_| format!("resolving it took over {} s", DIAL_TIMEOUT.as_secs()))?
            .map_err(|e| format!("resolving it: {e}"))?
            .collect(),
    };
    addresses.sort_by_key(SocketAddr::is_ipv6);
    addresses.dedup();
    addresses.truncate(MAX_ADDRESSES);
    let mut why = "it resolves to no address".to_owned();
    for address in addresses {
        match timeout(DIAL_TIMEOUT, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => why = format!("{address}: {e}"),
            Err(_) => why = format!("{address}: no answer within {} s", DIAL_TIMEOUT.as_secs()),
        }
    }
    Err(why)
}

/// Copies both ways until both sides have closed (or, forwarding a
/// request, until the server has), within [`IDLE`] and [`TOTAL`].
async fn relay(
    client: UnixStream,
    upstream: TcpStream,
    until_upstream_ends: bool,
) -> Result<(), &'static str> {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut upstream_read, mut upstream_write) = upstream.into_split();
    let deadline = Instant::now() + TOTAL;
    let mut up = vec![0u8; 16 * 1024];
    let mut down = vec![0u8; 16 * 1024];
    let (mut client_open, mut upstream_open) = (true, true);
    while client_open || upstream_open {
        tokio::select! {
            read = client_read.read(&mut up), if client_open => match read {
                Ok(0) | Err(_) => {
                    client_open = false;
                    let _ = upstream_write.shutdown().await;
                }
                Ok(n) => match timeout(IDLE, upstream_write.write_all(&up[..n])).await {
                    Ok(Ok(())) => {}
                    Ok(Err(_)) => return Err("the server stopped reading"),
                    Err(_) => return Err("the server read nothing for too long"),
                },
            },
            read = upstream_read.read(&mut down), if upstream_open => match read {
                Ok(0) | Err(_) => {
                    upstream_open = false;
                    let _ = client_write.shutdown().await;
                    if until_upstream_ends {
                        return Ok(());
                    }
                }
                Ok(n) => match timeout(IDLE, client_write.write_all(&down[..n])).await {
                    Ok(Ok(())) => {}
                    Ok(Err(_)) => return Err("the client stopped reading"),
                    Err(_) => return Err("the client read nothing for too long"),
                },
            },
            () = tokio::time::sleep(IDLE) => return Err("idle for too long"),
            () = tokio::time::sleep_until(deadline) => return Err("open for too long"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;

    #[tokio::test]
    async fn the_proxy_ends_and_its_directory_goes_when_it_is_dropped() {
        let running = Running::start(Arc::new(Policy::default())).unwrap();
        let dir = running.dir.0.clone();
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&dir).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o700);
        let mut client = UnixStream::connect(dir.join(SOCKET)).await.unwrap();
        client
            .write_all(b"CONNECT a.test:443 HTTP/1.1\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        client.read_to_string(&mut answer).await.unwrap();
        assert_eq!(
            answer.lines().last(),
            Some("refused by the sandbox's proxy: a.test:443 is not in allowHosts")
        );
        drop(running);
        assert!(!dir.exists());
        assert!(UnixStream::connect(dir.join(SOCKET)).await.is_err());
    }

    #[test]
    fn outside_a_runtime_it_says_so() {
        let err = Running::start(Arc::new(Policy::default())).unwrap_err();
        assert!(err.to_string().starts_with(
            "the command was not run: starting its network proxy (outside a tokio runtime): "
        ));
    }
}
