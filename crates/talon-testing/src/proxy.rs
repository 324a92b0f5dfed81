//! [`StreamCutter`]: a TCP proxy on 127.0.0.1 in front of a real gateway
//! that cuts an event stream mid-run, the way a flaky network or a
//! restarting load balancer would. Armed with
//! [`cut_next_stream(n)`](StreamCutter::cut_next_stream), the next request
//! on any connection that is a `GET .../events` has its response closed
//! right after `n` whole Server-Sent Events frames (counted by the blank
//! line that ends each). Everything else is relayed untouched. Clients'
//! resume logic is tested (and benchmarked) against the real server this
//! way; the fake gateway injects the same fault itself
//! (`talon_sdk_testing::Fault::DropStream`).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The proxy (cheap to clone; it serves until the runtime ends).
#[derive(Debug, Clone)]
pub struct StreamCutter {
    addr: SocketAddr,
    inner: Arc<Mutex<Cuts>>,
}

#[derive(Debug, Default)]
struct Cuts {
    armed: Option<usize>,
    done: usize,
    last: Option<Instant>,
}

impl StreamCutter {
    /// Listens on a free loopback port and relays to `target`.
    pub async fn start(target: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let proxy = Self {
            addr: listener.local_addr()?,
            inner: Arc::default(),
        };
        let me = proxy.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let me = me.clone();
                tokio::spawn(async move { me.relay(client, target).await });
            }
        });
        Ok(proxy)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Cuts the next event stream after `frames` frames.
    pub fn cut_next_stream(&self, frames: usize) {
        self.cuts().armed = Some(frames);
    }

    /// How many streams were cut.
    pub fn cut_count(&self) -> usize {
        self.cuts().done
    }

    /// When the last cut happened.
    pub fn last_cut(&self) -> Option<Instant> {
        self.cuts().last
    }

    fn cuts(&self) -> std::sync::MutexGuard<'_, Cuts> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn relay(self, client: TcpStream, target: SocketAddr) {
        let Ok(server) = TcpStream::connect(target).await else {
            return;
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let (mut client_read, mut client_write) = client.into_split();
        let (mut server_read, mut server_write) = server.into_split();
        // Set when this connection carries a stream request while armed:
        // the response that follows is the one to cut.
        let cut: Arc<Mutex<Option<usize>>> = Arc::default();
        let upstream = {
            let cut = cut.clone();
            let me = self.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    let n = match client_read.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    let head = String::from_utf8_lossy(&buf[..n.min(512)]).into_owned();
                    let line = head.lines().next().unwrap_or_default();
                    if line.starts_with("GET ")
                        && line.contains("/events")
                        && let Some(frames) = me.cuts().armed.take()
                    {
                        *cut.lock().unwrap_or_else(PoisonError::into_inner) = Some(frames);
                    }
                    if server_write.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            })
        };
        let mut buf = vec![0u8; 16 * 1024];
        let mut frames = 0usize;
        let mut last = 0u8;
        'relay: loop {
            let n = match server_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let limit = *cut.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(limit) = limit {
                for (i, &b) in buf[..n].iter().enumerate() {
                    if b == b'\n' && last == b'\n' {
                        frames += 1;
                        if frames == limit {
                            let _ = client_write.write_all(&buf[..=i]).await;
                            let mut cuts = self.cuts();
                            cuts.done += 1;
                            cuts.last = Some(Instant::now());
                            break 'relay;
                        }
                    }
                    last = b;
                }
            }
            if client_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        upstream.abort();
        // Dropping both halves closes the connection: a stream cut
        // mid-body ends early for the client.
    }
}
