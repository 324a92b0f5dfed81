//! The process-wide sandbox: one wasmtime `Engine`, the module compiled once
//! (and cached on disk as a precompiled artifact keyed by wasmtime's
//! compatibility hash), the linker with every import, the base images (the
//! bare one and one per surface prelude), and the epoch ticker behind the
//! hard-stop deadline.

use std::fs::File;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use talon_fs::Symlinks;
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, InstancePre, Linker, Module,
    PoolingAllocationConfig, Store,
};

use crate::abi::{ExportIndex, Exports};
use crate::config::{Prelude, SandboxConfig, VmOptions};
use crate::error::{Result, SandboxError};
use crate::functions::HostFunctions;
use crate::host::{HostState, define_imports};
use crate::image::{Image, ImageBuilder};
use crate::snapshot::SnapshotKey;
use crate::vm::Vm;

/// The embedded module: `quickjs.wasm` from npm `quickjs-wasi`, checked by
/// the build script.
pub const QUICKJS_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/quickjs.wasm"));
/// The npm version of the embedded module.
pub const QUICKJS_WASI_VERSION: &str = env!("TALON_QUICKJS_WASI_VERSION");
/// SHA-256 of the embedded module.
pub const QUICKJS_WASM_SHA256: &str = env!("TALON_QUICKJS_WASM_SHA256");

/// A handle on the sandbox. Cheap to clone; one per process is enough.
#[derive(Clone)]
pub struct Sandbox {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub engine: Engine,
    /// The bare image first, then one per configured prelude, in order:
    /// each built on first use (a process rarely needs them all, and each
    /// costs ~12 ms to build and bake, and its memory).
    slots: Vec<Slot>,
    /// Held while an image is built, so each is built once. It holds the
    /// original module loaded at start until the first image is built
    /// with it (later builds load it again from the cache).
    building: Mutex<Option<InstancePre<HostState>>>,
    builder: ImageBuilder,
    pub snapshot_key: SnapshotKey,
    pub config: SandboxConfig,
    ticker_stop: Arc<AtomicBool>,
    /// How the module was obtained, for diagnostics.
    pub load: ModuleLoad,
}

/// An image, built on first use.
struct Slot {
    /// `None`: the bare image.
    prelude: Option<Prelude>,
    image: OnceLock<Arc<Image>>,
}

impl Slot {
    fn name(&self) -> Option<&str> {
        self.prelude.as_ref().map(|p| p.name.as_str())
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}

/// Where the compiled module came from, and how long that took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleLoad {
    /// `true` when a cached artifact was used.
    pub from_cache: bool,
    /// Time to obtain the compiled module.
    pub elapsed: Duration,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("load", &self.inner.load)
            .finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Builds the sandbox: engine, compiled module (from the cache when it
    /// can), the epoch ticker. The images (the bare one and one per
    /// prelude, each baked into a module of its own) are built on first
    /// use. Fails with [`SandboxError::RuntimeUnavailable`].
    pub fn new(config: SandboxConfig) -> Result<Self> {
        let engine = engine(&config)?;

        let started = Instant::now();
        let mut linker = Linker::new(&engine);
        define_imports(&mut linker)?;
        let builder = ImageBuilder {
            engine: engine.clone(),
            linker,
            cache: cache_dir(&config),
        };
        // Loaded now so that a module that cannot be compiled fails the
        // start; kept only for the first image (its code would otherwise
        // stay resident).
        let (original, from_cache) = builder.original()?;
        let mut slots = vec![Slot {
            prelude: None,
            image: OnceLock::new(),
        }];
        for prelude in &config.preludes {
            if slots
                .iter()
                .any(|s| s.name() == Some(prelude.name.as_str()))
            {
                return Err(SandboxError::runtime(format!(
                    "two preludes named {:?}",
                    prelude.name
                )));
            }
            slots.push(Slot {
                prelude: Some(prelude.clone()),
                image: OnceLock::new(),
            });
        }
        let ticker_stop = Arc::new(AtomicBool::new(false));
        spawn_ticker(engine.clone(), config.epoch_tick, ticker_stop.clone())?;
        let load = ModuleLoad {
            from_cache,
            elapsed: started.elapsed(),
        };
        tracing::debug!(?load, "sandbox ready");
        let snapshot_key = host_secret(&config)?;
        Ok(Self {
            inner: Arc::new(Inner {
                engine,
                slots,
                building: Mutex::new(Some(original)),
                builder,
                snapshot_key,
                config,
                ticker_stop,
                load,
            }),
        })
    }

    /// Whether the sandbox has an image for the prelude named `name` (VMs
    /// name it in [`VmOptions::prelude`]).
    pub fn has_prelude(&self, name: &str) -> bool {
        self.inner.slots.iter().any(|s| s.name() == Some(name))
    }

    /// Builds the image of `prelude` now if it has not been built yet, so
    /// that a surface pays for it when it starts, not inside its first
    /// cell's time budget (on a machine with an empty cache that includes
    /// compiling the baked module). Fails with
    /// [`SandboxError::RuntimeUnavailable`] if the prelude throws.
    pub fn prepare(&self, prelude: &str) -> Result<()> {
        self.image(Some(prelude)).map(drop)
    }

    /// The image VMs with `prelude` start from (`None`: the bare image),
    /// built now if it has not been yet. A prelude that throws fails here,
    /// with [`SandboxError::RuntimeUnavailable`].
    pub(crate) fn image(&self, prelude: Option<&str>) -> Result<Arc<Image>> {
        let slot = self
            .inner
            .slots
            .iter()
            .find(|s| s.name() == prelude)
            .ok_or_else(|| {
                let name = prelude.unwrap_or_default();
                SandboxError::Internal(format!("the sandbox has no prelude named {name:?}"))
            })?;
        if let Some(image) = slot.image.get() {
            return Ok(image.clone());
        }
        let mut building = self
            .inner
            .building
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(image) = slot.image.get() {
            return Ok(image.clone());
        }
        let builder = &self.inner.builder;
        let started = Instant::now();
        let original = match building.take() {
            Some(original) => original,
            None => builder.original()?.0,
        };
        let image = Arc::new(builder.build(&original, slot.prelude.as_ref())?);
        tracing::debug!(prelude = ?slot.name(), elapsed = ?started.elapsed(), "image built");
        let _ = slot.image.set(image.clone());
        Ok(image)
    }

    /// How the compiled module was obtained.
    pub fn module_load(&self) -> &ModuleLoad {
        &self.inner.load
    }

    /// Creates a VM from the base image, with `functions` installed as
    /// globals.
    pub fn create_vm(&self, options: VmOptions, functions: HostFunctions) -> Result<Vm> {
        Vm::create(self.clone(), options, Arc::new(functions))
    }

    /// Rebuilds a VM from a snapshot made by [`Vm::snapshot`]. The host
    /// functions are re-attached by name; none are installed anew.
    pub fn restore_vm(
        &self,
        snapshot: &[u8],
        options: VmOptions,
        functions: HostFunctions,
    ) -> Result<Vm> {
        Vm::restore(self.clone(), snapshot, options, Arc::new(functions))
    }

    /// A store and an instance of `image`'s module with every import, the
    /// image not yet applied (see [`crate::image::BaseImage::apply`]).
    pub(crate) fn instantiate(
        &self,
        image: &Image,
        state: HostState,
    ) -> Result<(Store<HostState>, Arc<Exports>)> {
        instantiate(&self.inner.engine, &image.pre, &image.exports, state)
    }

    pub(crate) fn ticks_for(&self, budget: Duration) -> u64 {
        let tick = self.inner.config.epoch_tick.as_nanos().max(1);
        (budget.as_nanos() / tick) as u64 + 2
    }
}

/// Links `module` against every import.
pub(crate) fn link(linker: &Linker<HostState>, module: &Module) -> Result<InstancePre<HostState>> {
    linker
        .instantiate_pre(module)
        .map_err(|e| SandboxError::runtime_failed("linking", e))
}

/// The largest linear memory a VM may have: the clamped heap limit plus
/// the store's headroom (see `Limits::store_memory_bytes`).
const MAX_LINEAR_MEMORY: usize = (1 << 30) + (1 << 28) + (8 << 20);

/// One engine per sandbox: epoch interruption for the hard stop, a 1 MiB
/// wasm stack, and the pooling allocator (instances reuse warm slots); if
/// the pool's address space cannot be reserved, instances are allocated on
/// demand instead.
fn engine(config: &SandboxConfig) -> Result<Engine> {
    let mut wasm_config = Config::new();
    wasm_config.epoch_interruption(true);
    wasm_config.max_wasm_stack(1 << 20);
    let on_demand = wasm_config.clone();
    let mut pool = PoolingAllocationConfig::new();
    pool.total_memories(config.max_live_vms)
        .total_core_instances(config.max_live_vms)
        .total_tables(config.max_live_vms)
        .max_memory_size(MAX_LINEAR_MEMORY)
        .linear_memory_keep_resident(config.keep_resident_bytes)
        .table_keep_resident(64 << 10);
    wasm_config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    match Engine::new(&wasm_config) {
        Ok(engine) => Ok(engine),
        Err(e) => {
            tracing::warn!(error = %e, "pooling allocator unavailable; allocating instances on demand");
            Engine::new(&on_demand).map_err(|e| SandboxError::runtime_failed("engine", e))
        }
    }
}

/// Ticks of "no deadline": the store still needs one once epochs are on.
pub(crate) const NO_DEADLINE_TICKS: u64 = 1 << 40;

pub(crate) fn instantiate(
    engine: &Engine,
    pre: &InstancePre<HostState>,
    index: &ExportIndex,
    state: HostState,
) -> Result<(Store<HostState>, Arc<Exports>)> {
    let mut store = Store::new(engine, state);
    store.limiter(|state| &mut state.limiter);
    store.set_epoch_deadline(NO_DEADLINE_TICKS);
    store.epoch_deadline_trap();
    let instance = pre.instantiate(&mut store).map_err(|e| {
        SandboxError::runtime_failed("instantiating a VM (at most max_live_vms live at once)", e)
    })?;
    let exports = Arc::new(Exports::resolve(&mut store, &instance, index)?);
    store.data_mut().exports = Some(exports.clone());
    Ok((store, exports))
}

fn spawn_ticker(engine: Engine, tick: Duration, stop: Arc<AtomicBool>) -> Result<()> {
    std::thread::Builder::new()
        .name("talon-sandbox-epoch".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(tick);
                engine.increment_epoch();
            }
        })
        .map(|_| ())
        .map_err(|e| SandboxError::runtime_failed("epoch ticker", e))
}

fn cache_dir(config: &SandboxConfig) -> Option<PathBuf> {
    talon_fs::cache_dir(config.cache_dir.as_deref())
}

/// The cache key: a name, the module's hash and the engine's compatibility
/// hash.
fn cache_key(engine: &Engine, name: &str, module_sha256: &str) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    format!("{name}-{}-{:016x}", &module_sha256[..16], hasher.finish())
}

/// Loads the compiled module from the cache, or compiles it (once, under a
/// file lock, so concurrent processes do not all pay the compile) and
/// stores it. The artifact's SHA-256 is stored beside it and checked before
/// the artifact is trusted.
pub(crate) fn load_module(
    engine: &Engine,
    cache: Option<&Path>,
    unit: &Unit<'_>,
) -> Result<(Module, bool)> {
    let compile = |engine: &Engine| compile(engine, unit.bytes);
    let Some(cache) = cache else {
        return Ok((compile(engine)?, false));
    };
    let dir = cache.join("modules");
    if let Err(e) = std::fs::create_dir_all(&dir) {
        tracing::warn!(dir = %dir.display(), error = %e, "module cache unavailable; compiling in memory");
        return Ok((compile(engine)?, false));
    }
    let key = cache_key(engine, unit.name, &unit.sha256);
    let artifact = dir.join(format!("{key}.cwasm"));
    if let Some(module) = read_cached(engine, &artifact) {
        return Ok((module, true));
    }
    let lock = open_lock(&dir.join(format!("{key}.lock")))
        .and_then(|f| f.lock().map(|()| f))
        .map_err(|e| tracing::warn!(error = %e, "module cache lock unavailable"))
        .ok();
    // Another process may have compiled it while we waited for the lock.
    if let Some(module) = read_cached(engine, &artifact) {
        return Ok((module, true));
    }
    let module = compile(engine)?;
    match module.serialize() {
        Ok(bytes) => {
            if let Err(e) = write_cached(&artifact, &bytes) {
                tracing::warn!(error = %e, "could not write the module cache");
            }
        }
        Err(e) => tracing::warn!(error = %e, "could not serialize the module"),
    }
    drop(lock);
    Ok((module, false))
}

/// The host's secret for a config: `snapshot_key` when set, else
/// `<cache dir>/snapshot.key` (32 random bytes, mode 0600, created on first
/// use and shared by every process with that cache directory), else a
/// random key for this call alone. Snapshots are sealed with it; anything
/// else that needs a secret (the suspended-cell store) derives its own
/// labelled key from it and never uses it directly.
pub fn host_secret(config: &SandboxConfig) -> Result<SnapshotKey> {
    match config.snapshot_key {
        Some(key) => Ok(key),
        None => snapshot_key(cache_dir(config).as_deref()),
    }
}

/// The most a key file read may return (a key is 32 bytes; one more byte
/// tells a wrong size).
const KEY_FILE_CAP: u64 = 64;
/// The largest compiled-module artifact read from the cache (today's is
/// 2.3 MiB).
const MAX_ARTIFACT_BYTES: u64 = 256 << 20;

/// Reads the snapshot key from the cache dir, creating it on first use.
fn snapshot_key(cache: Option<&Path>) -> Result<SnapshotKey> {
    let random = || -> Result<SnapshotKey> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| SandboxError::runtime_failed("no CSPRNG", e))?;
        Ok(key)
    };
    let Some(cache) = cache else {
        tracing::warn!("no cache directory: snapshots will not survive a restart");
        return random();
    };
    let path = cache.join("snapshot.key");
    // The cache directory is configurable: read only a regular file, and
    // never more than a key's worth (a planted FIFO or device must not hang
    // or flood the process).
    let read_key = |path: &Path| talon_fs::read_capped(path, KEY_FILE_CAP, Symlinks::Refuse);
    if let Ok(bytes) = read_key(&path) {
        if let Ok(key) = <SnapshotKey>::try_from(bytes.as_slice()) {
            return Ok(key);
        }
        tracing::warn!(path = %path.display(), "snapshot key has the wrong size; replacing it");
        let _ = std::fs::remove_file(&path);
    }
    let key = random()?;
    let written = std::fs::create_dir_all(cache).and_then(|()| {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(&key)?;
        file.sync_all()?;
        // Another process may have won the race: keep whichever landed.
        let linked = std::fs::hard_link(&tmp, &path);
        std::fs::remove_file(&tmp)?;
        linked.or_else(|e| if path.exists() { Ok(()) } else { Err(e) })
    });
    match written.and_then(|()| read_key(&path).map_err(std::io::Error::other)) {
        Ok(bytes) => <SnapshotKey>::try_from(bytes.as_slice())
            .map_err(|_| SandboxError::runtime(format!("{}: not a 32-byte key", path.display()))),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot store the snapshot key; using a per-process key");
            Ok(key)
        }
    }
}

/// Opens (creating) a lock file without following a link or blocking on a
/// planted FIFO, and only if it is a regular file.
fn open_lock(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    if file.metadata()?.is_file() {
        Ok(file)
    } else {
        Err(std::io::Error::other("not a regular file"))
    }
}

/// A module to compile or load from the cache.
pub(crate) struct Unit<'a> {
    pub name: &'a str,
    pub bytes: &'a [u8],
    pub sha256: String,
}

fn compile(engine: &Engine, bytes: &[u8]) -> Result<Module> {
    Module::new(engine, bytes).map_err(|e| SandboxError::runtime_failed("compile", e))
}

fn read_cached(engine: &Engine, artifact: &Path) -> Option<Module> {
    let bytes = talon_fs::read_capped(artifact, MAX_ARTIFACT_BYTES, Symlinks::Refuse).ok()?;
    let expected = talon_fs::read_capped_to_string(
        &artifact.with_extension("sha256"),
        KEY_FILE_CAP * 4,
        Symlinks::Refuse,
    )
    .ok()?;
    if hex(Sha256::digest(&bytes)) != expected.trim() {
        tracing::warn!(artifact = %artifact.display(), "cached module fails its checksum; recompiling");
        return None;
    }
    #[allow(
        unsafe_code,
        reason = "the artifact was written by this code for this engine's compatibility hash and \
                  its SHA-256 was just verified, which is what `Module::deserialize` requires"
    )]
    // SAFETY: see the reason above; wasmtime also checks the header.
    let module = unsafe { Module::deserialize(engine, &bytes) };
    module
        .map_err(|e| tracing::warn!(error = %e, "cached module rejected; recompiling"))
        .ok()
}

fn write_cached(artifact: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let checksum = artifact.with_extension("sha256");
    write_new(&checksum, hex(Sha256::digest(bytes)).as_bytes())?;
    write_new(artifact, bytes)
}

/// Writes `path` through a fresh temporary file (`O_EXCL`, so a planted
/// link or FIFO at the temporary name is never followed) and a rename.
fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let tmp = path.with_extension(format!(
        "{}.tmp{}",
        path.extension()
            .and_then(|e| e.to_str())
            .unwrap_or_default(),
        std::process::id()
    ));
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(&tmp)?;
    file.write_all(bytes)?;
    drop(file);
    std::fs::rename(&tmp, path)
}

pub(crate) use hex::encode as hex;
