//! Base images: VMs captured once after QuickJS is initialised and the
//! sandbox's prelude (`js/base.js`) has run: the bare image, and one per
//! surface prelude, which ran that prelude too. Creating a VM means
//! instantiating the module and writing the image's pages, never
//! re-initialising QuickJS or a guest API.

use std::path::PathBuf;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use wasmtime::{Engine, InstancePre, Linker, Store};

use crate::abi::{ExportIndex, Exports};
use crate::config::{Limits, Prelude};
use crate::error::{Result, SandboxError};
use crate::functions::HostFunctions;
use crate::guest::{eval_raw, install_function};
use crate::host::{ClassIds, GuestPointers, HostState, NOW_FN, PRINT_FN, RANDOM_FN};
use crate::props::STRINGS;
use crate::runtime::{
    QUICKJS_WASM, QUICKJS_WASM_SHA256, Unit, hex, instantiate, link, load_module,
};

/// Granularity of image and snapshot diffs.
pub(crate) const PAGE: usize = 4096;
/// WebAssembly's page size.
pub(crate) const WASM_PAGE: usize = 65_536;

const BASE_PRELUDE: &str = include_str!("js/base.js");

/// A base image and the module its VMs instantiate: the image baked into a
/// module of its own when that worked (instances start as the image,
/// copy-on-write), else the original module, which gets the image copied
/// in.
pub(crate) struct Image {
    pub base: BaseImage,
    pub pre: InstancePre<HostState>,
    pub exports: ExportIndex,
}

/// What building an image needs, kept by the sandbox for images built on
/// first use. It does not keep the original module: once every image is
/// baked nothing instantiates it, and its code would stay resident (2.4 MB).
pub(crate) struct ImageBuilder {
    pub engine: Engine,
    pub linker: Linker<HostState>,
    /// Where compiled modules are cached.
    pub cache: Option<PathBuf>,
}

impl ImageBuilder {
    /// The original module, linked: from the cache when it is there.
    pub fn original(&self) -> Result<(InstancePre<HostState>, bool)> {
        let unit = Unit {
            name: "quickjs",
            bytes: QUICKJS_WASM,
            sha256: QUICKJS_WASM_SHA256.to_owned(),
        };
        let (module, from_cache) = load_module(&self.engine, self.cache.as_deref(), &unit)?;
        Ok((link(&self.linker, &module)?, from_cache))
    }

    /// Builds the image of `prelude` (`None`: the bare image) on
    /// `original` and bakes it.
    pub fn build(
        &self,
        original: &InstancePre<HostState>,
        prelude: Option<&Prelude>,
    ) -> Result<Image> {
        let mut base = BaseImage::build(&self.engine, original, prelude)?;
        let baked = crate::bake::bake(QUICKJS_WASM, &base.memory, base.registers.stack_pointer)
            .and_then(|bytes| {
                let unit = Unit {
                    name: "quickjs-base",
                    sha256: hex(Sha256::digest(&bytes)),
                    bytes: &bytes,
                };
                let (module, _) = load_module(&self.engine, self.cache.as_deref(), &unit)?;
                link(&self.linker, &module)
            });
        let pre = match baked {
            Ok(pre) => {
                base.baked = true;
                pre
            }
            Err(e) => {
                tracing::warn!(prelude = ?base.prelude, error = %e, "image not baked; VMs copy it instead");
                original.clone()
            }
        };
        Ok(Image {
            exports: ExportIndex::new(pre.module())?,
            base,
            pre,
        })
    }
}

/// The registers of a VM that live outside linear memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Registers {
    pub stack_pointer: u32,
    pub runtime: u32,
    pub context: u32,
    pub ptrs: GuestPointers,
}

pub(crate) struct BaseImage {
    /// The prelude it ran after the sandbox's own (`None`: the bare image).
    pub prelude: Option<String>,
    /// Host functions the image already installed (by its prelude).
    pub hosted: std::collections::BTreeSet<String>,
    /// The image's whole linear memory (snapshots are diffs against it).
    pub memory: Vec<u8>,
    /// Pages where the image differs from a freshly instantiated module.
    pub dirty_pages: Vec<u32>,
    pub registers: Registers,
    pub classes: ClassIds,
    /// `true` when instances come from the baked module and already hold
    /// the image.
    pub baked: bool,
    /// Identifies module + preludes + image; snapshots carry it.
    pub id: [u8; 32],
}

impl BaseImage {
    pub fn build(
        engine: &Engine,
        pre: &InstancePre<HostState>,
        prelude: Option<&Prelude>,
    ) -> Result<Self> {
        // The image must be the same in every process: snapshots name it
        // by hash, and the baked module is cached by hash. So the clock is
        // frozen and the random source fixed while it is built (guests get
        // host-backed `Math.random` and `performance.now` anyway).
        let fresh_state =
            || HostState::deterministic(Limits::default(), Arc::new(HostFunctions::new()));
        let index = ExportIndex::new(pre.module())?;
        let (mut store, ex) = instantiate(engine, pre, &index, fresh_state()?)?;
        let registers = initialise(&mut store, &ex, prelude)?;
        let classes = class_ids(&mut store, &ex)?;
        let memory = ex.memory.data(&store).to_vec();

        let (pristine_store, pristine) = instantiate(engine, pre, &index, fresh_state()?)?;
        let pristine = pristine.memory.data(&pristine_store);
        let dirty_pages = (0..memory.len() / PAGE)
            .filter(|&i| {
                let page = &memory[i * PAGE..(i + 1) * PAGE];
                match pristine.get(i * PAGE..(i + 1) * PAGE) {
                    Some(before) => before != page,
                    None => page.iter().any(|b| *b != 0),
                }
            })
            .map(|i| i as u32)
            .collect();

        let mut hasher = Sha256::new();
        hasher.update(QUICKJS_WASM_SHA256.as_bytes());
        hasher.update(BASE_PRELUDE.as_bytes());
        if let Some(prelude) = prelude {
            hasher.update(prelude.name.as_bytes());
            hasher.update([0]);
            hasher.update(prelude.source.as_bytes());
        }
        hasher.update(&memory);
        let id = hasher.finalize().into();
        let hosted = prelude
            .iter()
            .flat_map(|p| p.host_functions.iter().cloned())
            .collect();
        Ok(Self {
            prelude: prelude.map(|p| p.name.clone()),
            hosted,
            memory,
            dirty_pages,
            registers,
            classes,
            baked: false,
            id,
        })
    }

    /// Makes a freshly instantiated store hold the image: for the baked
    /// module only the host's side of the registers, otherwise the pages
    /// too.
    pub fn apply(&self, store: &mut Store<HostState>, ex: &Exports) -> Result<()> {
        if self.baked {
            let state = store.data_mut();
            state.classes = self.classes;
            state.ptrs = self.registers.ptrs;
            state.context = self.registers.context;
            return Ok(());
        }
        grow_to(store, ex, self.memory.len())?;
        let data = ex.memory.data_mut(&mut *store);
        for &page in &self.dirty_pages {
            let range = page as usize * PAGE..(page as usize + 1) * PAGE;
            data[range.clone()].copy_from_slice(&self.memory[range]);
        }
        store.data_mut().classes = self.classes;
        set_registers(store, ex, &self.registers)
    }
}

/// Grows linear memory to at least `bytes`.
pub(crate) fn grow_to(store: &mut Store<HostState>, ex: &Exports, bytes: usize) -> Result<()> {
    let current = ex.memory.data_size(&*store);
    if bytes > current {
        let pages = (bytes - current).div_ceil(WASM_PAGE) as u64;
        ex.memory
            .grow(&mut *store, pages)
            .map_err(|_| SandboxError::MemoryLimit)?;
    }
    Ok(())
}

pub(crate) fn set_registers(
    store: &mut Store<HostState>,
    ex: &Exports,
    r: &Registers,
) -> Result<()> {
    ex.qjs_set_runtime_and_context
        .call(&mut *store, (r.runtime, r.context))?;
    ex.stack_pointer
        .set(&mut *store, wasmtime::Val::I32(r.stack_pointer as i32))
        .map_err(|e| SandboxError::internal_failed("stack pointer", e))?;
    store.data_mut().ptrs = r.ptrs;
    store.data_mut().context = r.context;
    Ok(())
}

pub(crate) fn read_registers(store: &mut Store<HostState>, ex: &Exports) -> Result<Registers> {
    let stack_pointer =
        ex.stack_pointer
            .get(&mut *store)
            .i32()
            .ok_or_else(|| SandboxError::corrupt("stack pointer is not an i32"))? as u32;
    Ok(Registers {
        stack_pointer,
        runtime: ex.qjs_get_runtime_ptr.call(&mut *store, ())?,
        context: ex.qjs_get_context_ptr.call(&mut *store, ())?,
        ptrs: store.data().ptrs,
    })
}

/// Runs `_initialize` and `qjs_init`, allocates the VM's fixed guest
/// buffers, installs the sandbox's own host functions and runs its prelude,
/// then the surface's `prelude` (with its host functions installed first).
fn initialise(
    store: &mut Store<HostState>,
    ex: &Exports,
    prelude: Option<&Prelude>,
) -> Result<Registers> {
    let init = |e: SandboxError| match e {
        SandboxError::RuntimeUnavailable(_) | SandboxError::RuntimeFailed { .. } => e,
        other => SandboxError::runtime_failed("initialising QuickJS", other),
    };
    let eval = |store: &mut Store<HostState>, code: &str, file: &str| match eval_raw(
        store, ex, code, file,
    ) {
        Err(SandboxError::PendingException) => {
            let exc = ex.qjs_get_exception.call(&mut *store, ())?;
            let error = crate::props::read_error_fields(store, ex, exc)?;
            Err(SandboxError::runtime(format!("{file} threw {error}")))
        }
        other => other,
    };
    ex._initialize
        .call(&mut *store, ())
        .map_err(|e| init(e.into()))?;
    if ex
        .qjs_init
        .call(&mut *store, ())
        .map_err(|e| init(e.into()))?
        != 0
    {
        return Err(SandboxError::runtime("qjs_init failed"));
    }
    let scratch = ex
        .wasm_malloc
        .call(&mut *store, crate::host::SCRATCH_BYTES)
        .map_err(|e| init(e.into()))?;
    let strings = ex.alloc_bytes(&mut *store, STRINGS).map_err(init)?;
    if scratch == 0 {
        return Err(SandboxError::runtime("no memory for the scratch buffer"));
    }
    let getter = "Object.getOwnPropertyDescriptor(Error.prototype, 'stack').get";
    store.data_mut().ptrs = GuestPointers {
        scratch,
        strings,
        stack_getter: 0,
    };
    store.data_mut().context = ex
        .qjs_get_context_ptr
        .call(&mut *store, ())
        .map_err(|e| init(e.into()))?;
    let stack_getter = eval(store, getter, "<talon-base>").map_err(init)?;
    store.data_mut().ptrs = GuestPointers {
        scratch,
        strings,
        stack_getter,
    };
    for name in [PRINT_FN, RANDOM_FN, NOW_FN] {
        install_function(store, ex, name).map_err(init)?;
    }
    let result = eval(store, BASE_PRELUDE, "<talon-base>").map_err(init)?;
    ex.qjs_free_value
        .call(&mut *store, result)
        .map_err(|e| init(e.into()))?;
    if let Some(prelude) = prelude {
        for name in &prelude.host_functions {
            install_function(store, ex, name).map_err(init)?;
        }
        let result = eval(
            store,
            &prelude.source,
            &format!("<prelude:{}>", prelude.name),
        )
        .map_err(init)?;
        ex.qjs_free_value
            .call(&mut *store, result)
            .map_err(|e| init(e.into()))?;
    }
    ex.qjs_run_gc
        .call(&mut *store, ())
        .map_err(|e| init(e.into()))?;
    read_registers(store, ex)
}

/// Reads the class ids of the values that may cross the bridge, from
/// samples evaluated in the image before any guest code exists.
fn class_ids(store: &mut Store<HostState>, ex: &Exports) -> Result<ClassIds> {
    let mut class_of = |code: &str| -> Result<i32> {
        let value = eval_raw(&mut *store, ex, code, "<talon-base>")?;
        let class = ex.qjs_get_class_id.call(&mut *store, value)?;
        ex.qjs_free_value.call(&mut *store, value)?;
        Ok(class)
    };
    let mut typed: Option<(i32, i32)> = None;
    for ctor in [
        "Uint8ClampedArray",
        "Int8Array",
        "Uint8Array",
        "Int16Array",
        "Uint16Array",
        "Int32Array",
        "Uint32Array",
        "BigInt64Array",
        "BigUint64Array",
        "Float16Array",
        "Float32Array",
        "Float64Array",
    ] {
        let class = class_of(&format!("typeof {ctor} === 'function' ? new {ctor}(0) : 0"))?;
        if class > 0 {
            typed = Some(typed.map_or((class, class), |(lo, hi)| (lo.min(class), hi.max(class))));
        }
    }
    let classes = ClassIds {
        object: class_of("({})")?,
        array: class_of("[]")?,
        error: class_of("new TypeError('x')")?,
        arguments: class_of("(function () { 'use strict'; return arguments })(1)")?,
        mapped_arguments: class_of("(function (a) { return arguments })(1)")?,
        typed_arrays: typed.unwrap_or((-1, -1)),
    };
    if classes.object <= 0 || classes.array <= 0 || classes.error <= 0 {
        return Err(SandboxError::runtime(format!(
            "unexpected class ids {classes:?}"
        )));
    }
    Ok(classes)
}
