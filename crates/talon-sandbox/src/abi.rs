//! Typed handles on the `qjs_*` exports of `quickjs.wasm`, and helpers for
//! guest memory.
//!
//! The module's C API works on *boxed* values: a `u32` pointer to a
//! heap-allocated `JSValue` that the caller owns and frees with
//! `qjs_free_value`. The helpers here never interpret guest memory beyond
//! bounds-checked reads and writes of byte ranges, so a hostile or corrupted
//! guest can make a call fail but can never make the host misbehave.

use wasmtime::{
    AsContext, AsContextMut, Extern, Instance, Memory, Module, ModuleExport, TypedFunc,
};

use crate::error::{Result, SandboxError};

macro_rules! exports {
    ($( $field:ident : $p:ty => $r:ty ),* $(,)?) => {
        /// The exports Talon calls, resolved once per instance. Fields are
        /// named exactly as the exports.
        #[derive(Clone)]
        #[allow(non_snake_case, reason = "fields carry the C export names")]
        pub(crate) struct Exports {
            pub memory: Memory,
            pub stack_pointer: wasmtime::Global,
            $( pub $field: TypedFunc<$p, $r>, )*
        }

        /// Where each export sits in a module, looked up once per module so
        /// that resolving an instance's exports does no name look-ups.
        #[allow(non_snake_case, reason = "fields carry the C export names")]
        pub(crate) struct ExportIndex {
            memory: ModuleExport,
            stack_pointer: ModuleExport,
            $( $field: ModuleExport, )*
        }

        impl ExportIndex {
            pub fn new(module: &Module) -> Result<Self> {
                let find = |name: &str| {
                    module
                        .get_export_index(name)
                        .ok_or_else(|| SandboxError::runtime(format!("module has no export {name}")))
                };
                Ok(Self {
                    memory: find("memory")?,
                    stack_pointer: find("__stack_pointer")?,
                    $( $field: find(stringify!($field))?, )*
                })
            }
        }

        impl Exports {
            pub fn resolve(mut store: impl AsContextMut, instance: &Instance, index: &ExportIndex) -> Result<Self> {
                let missing = |name: &str| SandboxError::runtime(format!("export {name} has the wrong kind"));
                let memory = instance
                    .get_module_export(&mut store, &index.memory)
                    .and_then(Extern::into_memory)
                    .ok_or_else(|| missing("memory"))?;
                let stack_pointer = instance
                    .get_module_export(&mut store, &index.stack_pointer)
                    .and_then(Extern::into_global)
                    .ok_or_else(|| missing("__stack_pointer"))?;
                Ok(Self {
                    memory,
                    stack_pointer,
                    $( $field: instance
                        .get_module_export(&mut store, &index.$field)
                        .and_then(Extern::into_func)
                        .ok_or_else(|| missing(stringify!($field)))?
                        .typed(&store)
                        .map_err(|e| SandboxError::runtime_failed(
                            format!("export {}", stringify!($field)), e))?, )*
                })
            }
        }
    };
}

exports! {
    _initialize: () => (),
    qjs_init: () => i32,
    qjs_eval: (u32, u32, u32, i32) => u32,
    qjs_get_exception: () => u32,
    qjs_is_exception: u32 => i32,
    qjs_is_null: u32 => i32,
    qjs_is_bool: u32 => i32,
    qjs_is_number: u32 => i32,
    qjs_is_string: u32 => i32,
    qjs_is_big_int: u32 => i32,
    qjs_is_object: u32 => i32,
    qjs_is_array: u32 => i32,
    qjs_is_function: u32 => i32,
    qjs_is_promise: u32 => i32,
    qjs_is_proxy: u32 => i32,
    qjs_is_map: u32 => i32,
    qjs_is_set: u32 => i32,
    qjs_is_date: u32 => i32,
    qjs_is_regexp: u32 => i32,
    qjs_is_weak_map: u32 => i32,
    qjs_is_weak_set: u32 => i32,
    qjs_is_weak_ref: u32 => i32,
    qjs_is_array_buffer: u32 => i32,
    qjs_is_data_view: u32 => i32,
    qjs_get_bool: u32 => i32,
    qjs_get_class_id: u32 => i32,
    qjs_is_uncatchable_error: u32 => i32,
    qjs_get_float64: u32 => f64,
    qjs_get_string_len: (u32, u32) => u32,
    qjs_free_cstring: u32 => (),
    qjs_new_string: (u32, u32) => u32,
    qjs_new_number: f64 => u32,
    qjs_new_object: () => u32,
    qjs_new_array: () => u32,
    qjs_get_undefined: () => u32,
    qjs_get_null: () => u32,
    qjs_get_true: () => u32,
    qjs_get_false: () => u32,
    qjs_free_value: u32 => (),
    qjs_dup_value: u32 => u32,
    qjs_get_global: () => u32,
    qjs_define_prop_string: (u32, u32, u32, i32) => i32,
    qjs_call: (u32, u32, u32, u32) => u32,
    qjs_new_host_function: (u32, u32, i32) => u32,
    qjs_new_promise: (u32, u32) => u32,
    qjs_promise_state: u32 => i32,
    qjs_promise_result: u32 => u32,
    qjs_is_job_pending: () => i32,
    qjs_execute_pending_job: () => i32,
    qjs_throw: u32 => u32,
    qjs_new_error: () => u32,
    qjs_get_value_ptr: u32 => u32,
    JS_GetOwnPropertyNames: (u32, u32, u32, i64, i32) => i32,
    JS_FreePropertyEnum: (u32, u32, u32) => (),
    JS_GetOwnProperty: (u32, u32, i64, u32) => i32,
    JS_AtomToCStringLen: (u32, u32, u32) => u32,
    JS_FreeCString: (u32, u32) => (),
    JS_NewAtom: (u32, u32) => u32,
    JS_NewAtomUInt32: (u32, u32) => u32,
    JS_FreeAtom: (u32, u32) => (),
    JS_FreeValue: (u32, i64) => (),
    qjs_define_prop_value: (u32, u32, u32, i32) => i32,
    qjs_get_prototype_of: u32 => u32,
    qjs_get_runtime_ptr: () => u32,
    qjs_get_context_ptr: () => u32,
    qjs_set_runtime_and_context: (u32, u32) => (),
    qjs_set_memory_limit: u32 => (),
    qjs_set_max_stack_size: u32 => (),
    qjs_set_interrupt_handler: i32 => (),
    qjs_set_module_loader: i32 => (),
    qjs_run_gc: () => (),
    wasm_malloc: u32 => u32,
    wasm_free: u32 => (),
}

/// `JS_PROP_CONFIGURABLE | JS_PROP_WRITABLE` (not enumerable).
pub(crate) const PROP_HIDDEN: i32 = 1 | 2;
/// `JS_PROP_CONFIGURABLE | JS_PROP_WRITABLE | JS_PROP_ENUMERABLE`.
pub(crate) const PROP_DEFAULT: i32 = 1 | 2 | 4;

/// `qjs_promise_state` results (`JSPromiseStateEnum`).
pub(crate) const PROMISE_PENDING: i32 = 0;
pub(crate) const PROMISE_FULFILLED: i32 = 1;
pub(crate) const PROMISE_REJECTED: i32 = 2;

impl Exports {
    /// Copies `len` bytes at `ptr` out of guest memory.
    pub fn read_bytes(&self, store: impl AsContext, ptr: u32, len: u32) -> Result<Vec<u8>> {
        let data = self.memory.data(&store);
        let start = ptr as usize;
        let end = start
            .checked_add(len as usize)
            .filter(|end| *end <= data.len())
            .ok_or_else(|| SandboxError::corrupt("guest pointer out of bounds"))?;
        Ok(data[start..end].to_vec())
    }

    /// Reads a little-endian `i64` at `ptr` (a boxed `JSValue`).
    pub fn read_i64(&self, store: impl AsContext, ptr: u32) -> Result<i64> {
        let data = self.memory.data(&store);
        let start = ptr as usize;
        data.get(start..start + 8)
            .and_then(|b| b.try_into().ok())
            .map(i64::from_le_bytes)
            .ok_or_else(|| SandboxError::corrupt("guest pointer out of bounds"))
    }

    /// Reads a little-endian `u32` at `ptr`.
    pub fn read_u32(&self, store: impl AsContext, ptr: u32) -> Result<u32> {
        let data = self.memory.data(&store);
        let start = ptr as usize;
        data.get(start..start + 4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
            .ok_or_else(|| SandboxError::corrupt("guest pointer out of bounds"))
    }

    /// Allocates `bytes` plus a NUL terminator in guest memory. The caller
    /// frees the returned pointer with `wasm_free`.
    pub fn alloc_bytes(&self, mut store: impl AsContextMut, bytes: &[u8]) -> Result<u32> {
        let len = u32::try_from(bytes.len() + 1)
            .map_err(|_| SandboxError::ValueTooLarge("string exceeds 4 GiB".into()))?;
        let ptr = self.wasm_malloc.call(&mut store, len)?;
        if ptr == 0 {
            return Err(SandboxError::MemoryLimit);
        }
        let data = self.memory.data_mut(&mut store);
        let start = ptr as usize;
        let slot = data
            .get_mut(start..start + bytes.len() + 1)
            .ok_or_else(|| SandboxError::corrupt("malloc returned an out-of-bounds pointer"))?;
        slot[..bytes.len()].copy_from_slice(bytes);
        slot[bytes.len()] = 0;
        Ok(ptr)
    }

    /// Creates a guest string from UTF-8 text.
    pub fn new_string(&self, mut store: impl AsContextMut, text: &str) -> Result<u32> {
        let ptr = self.alloc_bytes(&mut store, text.as_bytes())?;
        // `text.len()` fits: alloc_bytes checked `len + 1`.
        let value = self
            .qjs_new_string
            .call(&mut store, (ptr, text.len() as u32));
        self.wasm_free.call(&mut store, ptr)?;
        let value = value?;
        self.check_value(&mut store, value)
    }

    /// Turns a returned box that holds the exception sentinel into an error
    /// (freeing the sentinel); otherwise returns the box.
    pub fn check_value(&self, mut store: impl AsContextMut, value: u32) -> Result<u32> {
        if value == 0 {
            return Err(SandboxError::MemoryLimit);
        }
        if self.qjs_is_exception.call(&mut store, value)? != 0 {
            self.qjs_free_value.call(&mut store, value)?;
            return Err(SandboxError::PendingException);
        }
        Ok(value)
    }

    /// Reads at most `cap` bytes of a guest string value (the caller has
    /// checked `qjs_is_string`), cut at a character boundary; the guest's
    /// copy is freed either way.
    pub fn read_string_capped(
        &self,
        mut store: impl AsContextMut,
        value: u32,
        scratch: u32,
        cap: usize,
    ) -> Result<String> {
        let cstr = self.qjs_get_string_len.call(&mut store, (value, scratch))?;
        if cstr == 0 {
            return Err(SandboxError::MemoryLimit);
        }
        let len = self.read_u32(&store, scratch)?;
        let take = (len as usize).min(cap) as u32;
        let bytes = self.read_bytes(&store, cstr, take);
        self.qjs_free_cstring.call(&mut store, cstr)?;
        let mut text = decode_wtf8(bytes?);
        if (len as usize) > cap {
            let mut end = text.len().min(cap);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
        }
        Ok(text)
    }
}

/// Decodes QuickJS's WTF-8: valid UTF-8 stays as is; each encoded lone
/// surrogate (`ED A0..BF 80..BF`) becomes one U+FFFD.
pub(crate) fn decode_wtf8(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => {
            let bytes = error.into_bytes();
            let mut out = String::with_capacity(bytes.len());
            let mut rest = bytes.as_slice();
            while !rest.is_empty() {
                match std::str::from_utf8(rest) {
                    Ok(valid) => {
                        out.push_str(valid);
                        break;
                    }
                    Err(e) => {
                        let (valid, after) = rest.split_at(e.valid_up_to());
                        // `valid` is valid UTF-8 by construction.
                        out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                        out.push('\u{FFFD}');
                        let skip = match after {
                            [0xED, 0xA0..=0xBF, 0x80..=0xBF, ..] => 3,
                            _ => e.error_len().unwrap_or(after.len()),
                        };
                        rest = &after[skip.min(after.len())..];
                    }
                }
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::decode_wtf8;

    #[test]
    fn wtf8_surrogates_become_one_replacement_character() {
        assert_eq!(decode_wtf8(b"plain".to_vec()), "plain");
        assert_eq!(
            decode_wtf8(vec![b'x', 0xED, 0xA0, 0x80, b'y']),
            "x\u{FFFD}y"
        );
        assert_eq!(
            decode_wtf8(vec![0xED, 0xBF, 0xBF, 0xED, 0xA0, 0x80]),
            "\u{FFFD}\u{FFFD}"
        );
        assert_eq!(
            decode_wtf8(vec![b'a', 0xFF, b'b', 0xE2, 0x82]),
            "a\u{FFFD}b\u{FFFD}"
        );
    }
}
