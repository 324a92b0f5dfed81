//! [`Events`]: an event stream that resumes by itself. It follows one
//! run (to its terminal event) or the whole log, filtered (until dropped),
//! over Server-Sent Events, remembering the id of the last event it
//! delivered. A connection that drops is reopened at once with that id as
//! the cursor (then with the client's backoff while the gateway cannot be
//! reached), and an event at or below the cursor is never delivered
//! twice, so the stream has no gap and no duplicate. `cursor_expired`
//! (the events after the cursor are gone) ends the stream with that
//! error, never with silence; so does a failure the retry policy gives up
//! on.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use futures::stream::BoxStream;
use futures::{Stream, StreamExt as _};
use talon_protocol::Event;

use crate::client::{Client, EventStream, StreamQuery};
use crate::error::{Error, Result};

/// A resuming event stream (see the module docs).
pub struct Events {
    inner: BoxStream<'static, Result<Event>>,
    cursor: Arc<AtomicU64>,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("cursor", &self.cursor())
            .finish_non_exhaustive()
    }
}

/// What is followed.
#[derive(Debug, Clone)]
enum Target {
    /// One run, until its terminal event.
    Run(String),
    /// Every event the token may see, filtered; never ends by itself.
    All(StreamQuery),
}

struct Follow {
    client: Client,
    target: Target,
    cursor: Arc<AtomicU64>,
    stream: Option<EventStream>,
    /// Failed opens (and cuts before any event) in a row.
    failures: u32,
    /// Whether the open stream has delivered nothing yet.
    fresh: bool,
    done: bool,
}

impl Events {
    /// One run's events after `after` (from the first when `None`).
    pub(crate) fn of_run(client: Client, run_id: String, after: Option<u64>) -> Self {
        Self::follow(client, Target::Run(run_id), after)
    }

    /// Every event the token may see, filtered by `query`, after `after`.
    pub(crate) fn of_log(client: Client, query: StreamQuery, after: Option<u64>) -> Self {
        Self::follow(client, Target::All(query), after)
    }

    fn follow(client: Client, target: Target, after: Option<u64>) -> Self {
        let cursor = Arc::new(AtomicU64::new(after.unwrap_or(0)));
        let follow = Follow {
            client,
            target,
            cursor: cursor.clone(),
            stream: None,
            failures: 0,
            fresh: true,
            done: false,
        };
        let inner = futures::stream::unfold(follow, |mut follow| async move {
            let item = follow.next().await?;
            Some((item, follow))
        })
        .boxed();
        Self { inner, cursor }
    }

    /// The id of the last event delivered (`None` before the first): save
    /// it to resume elsewhere (`Run::events_after`, `Talon::events`).
    pub fn cursor(&self) -> Option<u64> {
        match self.cursor.load(Ordering::Acquire) {
            0 => None,
            id => Some(id),
        }
    }
}

impl Follow {
    fn after(&self) -> Option<u64> {
        match self.cursor.load(Ordering::Acquire) {
            0 => None,
            id => Some(id),
        }
    }

    fn name(&self) -> &str {
        match &self.target {
            Target::Run(id) => id,
            Target::All(_) => "the event log",
        }
    }

    async fn open(&mut self) -> Result<EventStream> {
        match &self.target {
            Target::Run(id) => self.client.stream_run_events(id, self.after()).await,
            Target::All(query) => self.client.stream_events(query, self.after()).await,
        }
    }

    async fn next(&mut self) -> Option<Result<Event>> {
        loop {
            if self.done {
                return None;
            }
            let Some(stream) = self.stream.as_mut() else {
                match self.open().await {
                    Ok(stream) => {
                        self.stream = Some(stream);
                        self.fresh = true;
                    }
                    Err(error) => {
                        if let Some(error) = self.back_off(error).await {
                            return Some(Err(error));
                        }
                    }
                }
                continue;
            };
            match stream.next().await {
                Some(Ok(event)) => {
                    self.failures = 0;
                    self.fresh = false;
                    if let Ok(id) = event.id.as_str().parse::<u64>() {
                        if id <= self.cursor.load(Ordering::Acquire) {
                            continue;
                        }
                        self.cursor.store(id, Ordering::Release);
                    }
                    if matches!(self.target, Target::Run(_)) && event.kind.is_terminal() {
                        self.done = true;
                    }
                    return Some(Ok(event));
                }
                Some(Err(error)) if error.retryable() => {
                    tracing::debug!(target = %self.name(), %error, "events were cut; resuming");
                    self.stream = None;
                    // A stream cut before it delivered anything counts as a
                    // failed open: reopen with backoff, not in a tight loop.
                    if self.fresh
                        && let Some(error) = self.back_off(error).await
                    {
                        return Some(Err(error));
                    }
                }
                Some(Err(error)) => {
                    self.done = true;
                    return Some(Err(error));
                }
                None => self.stream = None,
            }
        }
    }

    /// Waits before the next open, or gives up (returning the error).
    async fn back_off(&mut self, error: Error) -> Option<Error> {
        self.failures += 1;
        match self.client.retry_policy().delay(self.failures, &error) {
            Some(delay) => {
                tracing::debug!(target = %self.name(), ?delay, %error, "reopening events");
                tokio::time::sleep(delay).await;
                None
            }
            None => {
                self.done = true;
                Some(error)
            }
        }
    }
}

impl Stream for Events {
    type Item = Result<Event>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}
