//! A run's events on their way to the store: [`StoreSink`] takes them from
//! the agent loop without blocking it (the loop's sink is synchronous) and
//! appends them in order, as many to a commit as have arrived, so a run
//! streaming a delta per token never waits for each commit. Subscribers
//! read the store, so no one sees an event before it is committed.

use std::sync::Mutex;

use talon_agent::EventSink;
use talon_protocol::Event;
use talon_store::{Pending, Store};
use tokio::sync::mpsc;

/// Appends a run's events to the store, in order.
#[derive(Debug)]
pub(crate) struct StoreSink {
    queue: Mutex<Option<mpsc::UnboundedSender<Event>>>,
    forwarder: Mutex<Option<tokio::task::JoinHandle<Result<u64, talon_store::StoreError>>>>,
}

impl StoreSink {
    /// A sink over `store`, forwarding on a task of its own.
    pub(crate) fn start(store: Store) -> Self {
        let (queue, mut inbox) = mpsc::unbounded_channel::<Event>();
        let forwarder = tokio::spawn(async move {
            let mut pending: Vec<Pending> = Vec::new();
            let mut appended = 0u64;
            let mut failure = None;
            while let Some(first) = inbox.recv().await {
                let mut batch = vec![first];
                while let Ok(next) = inbox.try_recv() {
                    batch.push(next);
                }
                appended += batch.len() as u64;
                match store.submit(batch).await {
                    Ok(p) => pending.push(p),
                    Err(error) => {
                        tracing::error!(%error, "a run's events could not be queued for the store");
                        failure.get_or_insert(error);
                    }
                }
                // Answered commits are dropped as the run goes, so a long
                // run holds only what is still in flight.
                if pending.len() > 64 {
                    for p in pending.drain(..pending.len() - 8) {
                        if let Err(error) = p.durable().await {
                            failure.get_or_insert(error);
                        }
                    }
                }
            }
            for p in pending {
                if let Err(error) = p.durable().await {
                    failure.get_or_insert(error);
                }
            }
            match failure {
                Some(error) => Err(error),
                None => Ok(appended),
            }
        });
        Self {
            queue: Mutex::new(Some(queue)),
            forwarder: Mutex::new(Some(forwarder)),
        }
    }

    /// Takes no more events and waits until every one taken is durable;
    /// returns how many were appended.
    pub(crate) async fn close(&self) -> Result<u64, talon_store::StoreError> {
        drop(self.queue.lock().ok().and_then(|mut q| q.take()));
        let forwarder = self.forwarder.lock().ok().and_then(|mut f| f.take());
        match forwarder {
            Some(task) => task.await.map_err(|_| talon_store::StoreError::Closed)?,
            None => Ok(0),
        }
    }
}

impl EventSink for StoreSink {
    fn emit(&self, event: Event) {
        let sent = self
            .queue
            .lock()
            .ok()
            .and_then(|q| q.as_ref().map(|q| q.send(event).is_ok()));
        if sent != Some(true) {
            tracing::warn!("an event arrived after its run's sink closed; dropped");
        }
    }
}
