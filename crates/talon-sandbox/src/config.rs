//! Limits and options of the sandbox and of each VM.

use std::path::PathBuf;
use std::time::Duration;

/// Limits on what crosses the bridge between guest and host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BridgeLimits {
    /// Maximum nesting of arrays and objects.
    pub max_depth: usize,
    /// Maximum size of one converted value, measured as compact JSON.
    pub max_bytes: usize,
}

impl Default for BridgeLimits {
    fn default() -> Self {
        Self {
            max_depth: 64,
            max_bytes: 8 * 1024 * 1024,
        }
    }
}

/// Per-VM limits. The defaults and the clamps of [`Limits::clamped`] are the
/// Code Mode seed's (`timeoutMs`, `memoryLimitBytes`, `maxOutputBytes`,
/// `maxSnapshotBytes`, `maxPendingToolCalls`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock budget of one operation (an `exec` or a `wait`). When it
    /// passes, QuickJS's interrupt handler stops the guest gracefully.
    pub timeout: Duration,
    /// How long after `timeout` the hard stop (wasmtime epoch trap) fires
    /// for guest code that the interrupt handler cannot reach, such as a
    /// long native regex or sort. A VM stopped this way is discarded.
    pub hard_stop_grace: Duration,
    /// QuickJS heap limit.
    pub memory_limit_bytes: usize,
    /// QuickJS stack limit (at most 512 KiB, half the module's stack).
    pub max_stack_bytes: u32,
    /// Output budget of the VM.
    pub max_output_bytes: usize,
    /// Largest snapshot (compressed, as stored) that may be produced or
    /// restored.
    pub max_snapshot_bytes: usize,
    /// Largest number of asynchronous host calls pending at once
    /// (1..=1024); one more is refused with `too_many_pending_tool_calls`.
    pub max_pending_calls: usize,
    /// Limits on values crossing the bridge.
    pub bridge: BridgeLimits,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_millis(10_000),
            hard_stop_grace: Duration::from_millis(250),
            memory_limit_bytes: 64 * 1024 * 1024,
            max_stack_bytes: 256 * 1024,
            max_output_bytes: 64 * 1024,
            max_snapshot_bytes: 10 * 1024 * 1024,
            max_pending_calls: 16,
            bridge: BridgeLimits::default(),
        }
    }
}

impl Limits {
    /// The seed's runtime clamps applied to every field (and sane bounds on
    /// the others). VMs always run with clamped limits.
    pub fn clamped(mut self) -> Self {
        let ms = (self.timeout.as_millis() as u64).clamp(100, 60_000);
        self.timeout = Duration::from_millis(ms);
        self.hard_stop_grace = self
            .hard_stop_grace
            .clamp(Duration::from_millis(10), Duration::from_secs(5));
        self.memory_limit_bytes = self.memory_limit_bytes.clamp(1 << 20, 1 << 30);
        self.max_stack_bytes = self.max_stack_bytes.clamp(16 * 1024, 512 * 1024);
        self.max_output_bytes = self.max_output_bytes.clamp(1024, 10 << 20);
        self.max_snapshot_bytes = self.max_snapshot_bytes.clamp(1024, 256 << 20);
        self.max_pending_calls = self.max_pending_calls.clamp(1, 1024);
        self.bridge.max_depth = self.bridge.max_depth.clamp(1, 256);
        self.bridge.max_bytes = self.bridge.max_bytes.clamp(1024, 64 << 20);
        self
    }

    /// The cap on linear memory: the heap limit plus room for the base
    /// image, the allocator's overhead and the C stack. QuickJS's own limit
    /// fires first; this one backs it up.
    pub(crate) fn store_memory_bytes(&self) -> usize {
        self.memory_limit_bytes
            .saturating_add(self.memory_limit_bytes / 4)
            .saturating_add(8 << 20)
    }
}

/// What the guest's clock reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Clock {
    /// The host's wall clock; the monotonic clock counts from VM creation.
    #[default]
    System,
    /// A frozen wall clock (milliseconds since the Unix epoch) and a
    /// monotonic clock that reads zero: for reproducible runs.
    Fixed {
        /// The instant `Date.now()` returns.
        unix_ms: u64,
    },
}

/// Options of one VM.
#[derive(Debug, Clone, Default)]
pub struct VmOptions {
    /// Its limits.
    pub limits: Limits,
    /// Its clock.
    pub clock: Clock,
    /// The prelude whose image it starts from, by [`Prelude::name`] (the
    /// guest API is already installed there); `None`: the bare image, with
    /// only the sandbox's own prelude. A snapshot restores only into the
    /// image it was made from.
    pub prelude: Option<String>,
}

/// A surface's guest API (Code Mode's is one): a script run once, after the
/// sandbox's own prelude, into an image of its own, which VMs choose with
/// [`VmOptions::prelude`]; VMs of other images never see it. Its host
/// functions are installed as globals before it runs, so it can capture
/// them and hide the globals; VMs created from the image do not install
/// them again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prelude {
    /// Shown as the file name in stack traces: `<prelude:NAME>`.
    pub name: String,
    /// The JavaScript source, run as a global script.
    pub source: String,
    /// Host functions (by name) it needs installed first.
    pub host_functions: Vec<String>,
}

/// Options of the whole sandbox (one per process).
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// Where the precompiled module is cached. `None`: `$TALON_CACHE_DIR`,
    /// else `$XDG_CACHE_HOME/talon`, else `$HOME/.cache/talon`; with none of
    /// those the module is compiled in memory on every start.
    pub cache_dir: Option<PathBuf>,
    /// How often the hard-stop clock ticks.
    pub epoch_tick: Duration,
    /// Worker threads of the VM pool. `0`: one per available core.
    pub pool_threads: usize,
    /// Jobs that may wait for a worker before `Pool::run` waits too.
    pub pool_queue: usize,
    /// VMs that may be alive at once (each holds a slot of the pooling
    /// allocator: address space is reserved for all of them up front).
    pub max_live_vms: u32,
    /// Bytes of each VM's memory kept resident when its slot is reused, so
    /// a new VM does not page-fault its way through the base image.
    pub keep_resident_bytes: usize,
    /// The surfaces' guest APIs, each baked into its own image (names are
    /// unique).
    pub preludes: Vec<Prelude>,
    /// The key that authenticates snapshots. `None`: the key stored in
    /// `<cache dir>/snapshot.key` (created on first use, mode 0600), so that
    /// snapshots survive a restart; with no cache dir, a random key per
    /// process.
    pub snapshot_key: Option<[u8; 32]>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            cache_dir: None,
            epoch_tick: Duration::from_millis(5),
            pool_threads: 0,
            pool_queue: 256,
            max_live_vms: 64,
            keep_resident_bytes: 2 << 20,
            preludes: Vec::new(),
            snapshot_key: None,
        }
    }
}
