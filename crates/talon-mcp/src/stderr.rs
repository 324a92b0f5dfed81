//! A bounded tail of a stdio server's stderr, for error messages. The
//! reader keeps draining the pipe (a full pipe would block the child) and
//! keeps the last lines, each cut to a bounded length.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::watch;

/// Lines kept.
pub const MAX_LINES: usize = 20;
/// Characters kept of one line.
pub const MAX_LINE: usize = 400;

/// The tail of one child's stderr.
#[derive(Clone, Debug)]
pub struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    done: watch::Receiver<bool>,
}

impl StderrTail {
    /// Starts draining `reader`.
    pub fn spawn(reader: impl AsyncRead + Unpin + Send + 'static) -> Self {
        let lines = Arc::new(Mutex::new(VecDeque::new()));
        let (tx, done) = watch::channel(false);
        let sink = lines.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(reader);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match reader.read_until(b'\n', &mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let line: String = String::from_utf8_lossy(&buf)
                            .trim_end()
                            .chars()
                            .take(MAX_LINE)
                            .collect();
                        if let Ok(mut lines) = sink.lock() {
                            if lines.len() == MAX_LINES {
                                lines.pop_front();
                            }
                            lines.push_back(line);
                        }
                    }
                }
            }
            let _ = tx.send(true);
        });
        Self { lines, done }
    }

    /// A tail with nothing in it (HTTP servers).
    pub fn empty() -> Self {
        let (_, done) = watch::channel(true);
        Self {
            lines: Arc::default(),
            done,
        }
    }

    /// The tail now, one line per line, with `secrets` redacted.
    pub fn text(&self, secrets: &[String]) -> String {
        let lines = self.lines.lock().map(|l| l.clone()).unwrap_or_default();
        let mut text = lines.into_iter().collect::<Vec<_>>().join("\n");
        for secret in secrets.iter().filter(|s| s.len() >= 4) {
            text = text.replace(secret.as_str(), "<redacted>");
        }
        text
    }

    /// The tail once the child closed stderr (it exited), or after
    /// `grace`, whichever comes first.
    pub async fn settled(&self, grace: Duration, secrets: &[String]) -> String {
        let mut done = self.done.clone();
        let _ = tokio::time::timeout(grace, done.wait_for(|d| *d)).await;
        self.text(secrets)
    }
}
