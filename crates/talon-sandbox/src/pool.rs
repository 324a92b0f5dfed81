//! A bounded pool of worker threads that run guest code, so that guest code
//! never blocks an async runtime's worker. Each job gets the [`Sandbox`];
//! VMs are `Send` and may move between jobs.

use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::{Semaphore, oneshot};

use crate::error::{Result, SandboxError};
use crate::runtime::Sandbox;

type Job = Box<dyn FnOnce(&Sandbox) + Send>;

/// Worker threads with 8 MiB stacks (wasm frames run on the host stack).
pub struct Pool {
    sender: Option<crossbeam_channel::Sender<Job>>,
    admission: Arc<Semaphore>,
    workers: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("workers", &self.workers.len())
            .finish_non_exhaustive()
    }
}

impl Pool {
    /// Starts the workers configured in the sandbox's `SandboxConfig`.
    pub fn new(sandbox: &Sandbox) -> Result<Self> {
        let config = &sandbox.inner.config;
        let threads = if config.pool_threads == 0 {
            std::thread::available_parallelism().map_or(2, usize::from)
        } else {
            config.pool_threads
        };
        let capacity = threads + config.pool_queue;
        let (sender, receiver) = crossbeam_channel::bounded::<Job>(capacity);
        let mut workers = Vec::with_capacity(threads);
        for i in 0..threads {
            let receiver = receiver.clone();
            let sandbox = sandbox.clone();
            let worker = std::thread::Builder::new()
                .name(format!("talon-vm-{i}"))
                .stack_size(8 << 20)
                .spawn(move || {
                    for job in receiver {
                        job(&sandbox);
                    }
                })
                .map_err(|e| SandboxError::runtime_failed("spawning a VM worker", e))?;
            workers.push(worker);
        }
        Ok(Self {
            sender: Some(sender),
            admission: Arc::new(Semaphore::new(capacity)),
            workers,
        })
    }

    /// Runs `job` on a worker and waits for it without blocking the caller's
    /// thread. When every worker is busy and the queue is full, waits for
    /// room first.
    pub async fn run<R, F>(&self, job: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&Sandbox) -> R + Send + 'static,
    {
        let permit = self
            .admission
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| SandboxError::PoolClosed)?;
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |sandbox| {
            let _permit = permit;
            // A panicking job (say, in a host function) must not take the
            // worker down; its caller sees the dropped channel.
            if let Ok(result) =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(sandbox)))
            {
                let _ = tx.send(result);
            }
        });
        let sender = self.sender.as_ref().ok_or(SandboxError::PoolClosed)?;
        sender.try_send(job).map_err(|_| SandboxError::PoolClosed)?;
        rx.await
            .map_err(|_| SandboxError::Internal("a VM worker died".into()))
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.admission.close();
        self.sender.take();
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
    }
}
