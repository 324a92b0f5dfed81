//! Low-level guest operations shared by the VM, the base image and the
//! imports: evaluating source, installing host functions, building errors.

use wasmtime::AsContextMut;

use crate::abi::{Exports, PROP_HIDDEN};
use crate::error::{Result, SandboxError};
use crate::functions::HostCallError;
use crate::host::HostState;
use crate::props::{Strings, clear_exception};

/// Evaluates `code` as a global script; returns the completion value box,
/// or `PendingException` with the exception left in the context.
pub(crate) fn eval_raw<T: AsContextMut<Data = HostState>>(
    store: &mut T,
    ex: &Exports,
    code: &str,
    filename: &str,
) -> Result<u32> {
    let code_ptr = ex.alloc_bytes(&mut *store, code.as_bytes())?;
    let name_ptr = match ex.alloc_bytes(&mut *store, filename.as_bytes()) {
        Ok(ptr) => ptr,
        Err(e) => {
            ex.wasm_free.call(&mut *store, code_ptr)?;
            return Err(e);
        }
    };
    let result = ex
        .qjs_eval
        .call(&mut *store, (code_ptr, code.len() as u32, name_ptr, 0));
    ex.wasm_free.call(&mut *store, code_ptr)?;
    ex.wasm_free.call(&mut *store, name_ptr)?;
    ex.check_value(&mut *store, result?)
}

/// Creates a host function object named `name` and defines it as a
/// configurable, non-enumerable global.
pub(crate) fn install_function<T: AsContextMut<Data = HostState>>(
    store: &mut T,
    ex: &Exports,
    name: &str,
) -> Result<()> {
    let name_ptr = ex.alloc_bytes(&mut *store, name.as_bytes())?;
    let function = ex
        .qjs_new_host_function
        .call(&mut *store, (name_ptr, name.len() as u32, 0));
    let function = match function
        .map_err(SandboxError::from)
        .and_then(|f| ex.check_value(&mut *store, f))
    {
        Ok(f) => f,
        Err(e) => {
            ex.wasm_free.call(&mut *store, name_ptr)?;
            return Err(e);
        }
    };
    let global = ex.qjs_get_global.call(&mut *store, ())?;
    let status = ex
        .qjs_define_prop_string
        .call(&mut *store, (global, name_ptr, function, PROP_HIDDEN))?;
    for owned in [function, global] {
        ex.qjs_free_value.call(&mut *store, owned)?;
    }
    ex.wasm_free.call(&mut *store, name_ptr)?;
    if status < 0 {
        clear_exception(store, ex)?;
        return Err(SandboxError::Internal(format!(
            "could not define global {name}"
        )));
    }
    Ok(())
}

/// Builds a plain guest `Error` (owned box) from a host error: only the
/// message and code cross. Runs no guest code (the prelude locks the
/// engine's stack-trace hooks).
pub(crate) fn new_error<T: AsContextMut<Data = HostState>>(
    store: &mut T,
    ex: &Exports,
    error: &HostCallError,
) -> Result<u32> {
    let strings = Strings::at(store.as_context().data().ptrs.strings);
    let err = ex.qjs_new_error.call(&mut *store, ())?;
    let err = ex.check_value(&mut *store, err)?;
    let set = |store: &mut T, key: u32, text: &str| -> Result<()> {
        let value = ex.new_string(&mut *store, text)?;
        ex.qjs_define_prop_string
            .call(&mut *store, (err, key, value, PROP_HIDDEN))?;
        ex.qjs_free_value.call(&mut *store, value)?;
        Ok(())
    };
    let result = set(store, strings.message, &error.message).and_then(|()| {
        error
            .code
            .as_deref()
            .map_or(Ok(()), |code| set(store, strings.code, code))
    });
    if let Err(e) = result {
        ex.qjs_free_value.call(&mut *store, err)?;
        return Err(e);
    }
    Ok(err)
}
