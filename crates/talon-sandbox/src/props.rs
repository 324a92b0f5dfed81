//! Reading guest properties without running guest code: the engine's own
//! `JS_GetOwnProperty` on raw values, the fixed property-name strings kept
//! in guest memory, and the capped read of a thrown value's `name`,
//! `message` and `stack`.

use serde_json::Value;
use wasmtime::AsContextMut;

use crate::abi::Exports;
use crate::config::BridgeLimits;
use crate::convert::to_json;
use crate::error::{GuestError, Result, SandboxError};
use crate::host::{ClassIds, HostState};

/// Property names kept NUL-terminated in guest memory for the VM's life.
pub(crate) const STRINGS: &[u8] = b"length\0name\0message\0stack\0code\0";

/// Offsets of [`STRINGS`] in guest memory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Strings {
    pub length: u32,
    pub name: u32,
    pub message: u32,
    pub stack: u32,
    pub code: u32,
}

impl Strings {
    pub fn at(base: u32) -> Self {
        Self {
            length: base,
            name: base + 7,
            message: base + 12,
            stack: base + 20,
            code: base + 26,
        }
    }
}

/// The guest addresses the reading side needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct At {
    pub ctx: u32,
    pub scratch: u32,
    pub strings: Strings,
    pub stack_getter: u32,
    pub classes: ClassIds,
}

impl At {
    pub fn of(state: &HostState) -> Self {
        Self {
            ctx: state.context,
            scratch: state.ptrs.scratch,
            strings: Strings::at(state.ptrs.strings),
            stack_getter: state.ptrs.stack_getter,
            classes: state.classes,
        }
    }
}

/// An own property as the engine stores it.
pub(crate) enum OwnProperty {
    Absent,
    /// A getter/setter pair (released; never called).
    Accessor,
    /// An owned box holding the value.
    Data(u32),
}

/// `JSPropertyDescriptor` in the scratch area: flags at +0, value +8,
/// getter +16, setter +24.
const DESC: u32 = 24;
/// `JS_PROP_GETSET`.
const PROP_GETSET: u32 = 1 << 4;

/// Reads own property `atom` of the raw object `obj` with the engine's
/// `JS_GetOwnProperty`: no getter, setter or prototype is involved. The
/// caller has excluded proxies.
pub(crate) fn own_property<T: AsContextMut<Data = HostState>>(
    s: &mut T,
    ex: &Exports,
    at: At,
    obj: i64,
    atom: u32,
) -> Result<OwnProperty> {
    let desc = at.scratch + DESC;
    let found = ex
        .JS_GetOwnProperty
        .call(&mut *s, (at.ctx, desc, obj, atom))?;
    if found < 0 {
        clear_exception(s, ex)?;
        return Ok(OwnProperty::Absent);
    }
    if found == 0 {
        return Ok(OwnProperty::Absent);
    }
    let flags = ex.read_u32(&*s, desc)?;
    let value = ex.read_i64(&*s, desc + 8)?;
    let getter = ex.read_i64(&*s, desc + 16)?;
    let setter = ex.read_i64(&*s, desc + 24)?;
    if flags & PROP_GETSET != 0 {
        for raw in [value, getter, setter] {
            ex.JS_FreeValue.call(&mut *s, (at.ctx, raw))?;
        }
        return Ok(OwnProperty::Accessor);
    }
    for raw in [getter, setter] {
        ex.JS_FreeValue.call(&mut *s, (at.ctx, raw))?;
    }
    match boxed(s, ex, value) {
        Ok(b) => Ok(OwnProperty::Data(b)),
        Err(e) => {
            ex.JS_FreeValue.call(&mut *s, (at.ctx, value))?;
            Err(e)
        }
    }
}

/// Puts an owned raw `JSValue` in a box (which `qjs_free_value` frees).
fn boxed<T: AsContextMut<Data = HostState>>(s: &mut T, ex: &Exports, raw: i64) -> Result<u32> {
    let ptr = ex.wasm_malloc.call(&mut *s, 8)?;
    if ptr == 0 {
        return Err(SandboxError::MemoryLimit);
    }
    ex.memory
        .write(&mut *s, ptr as usize, &raw.to_le_bytes())
        .map_err(|e| SandboxError::internal_failed("", e))?;
    Ok(ptr)
}

/// The text of a property-name atom.
pub(crate) fn atom_name<T: AsContextMut<Data = HostState>>(
    s: &mut T,
    ex: &Exports,
    at: At,
    atom: u32,
) -> Result<String> {
    let cstr = ex
        .JS_AtomToCStringLen
        .call(&mut *s, (at.ctx, at.scratch + 8, atom))?;
    if cstr == 0 {
        clear_exception(s, ex)?;
        return Err(SandboxError::MemoryLimit);
    }
    let len = ex.read_u32(&*s, at.scratch + 8)?;
    let bytes = ex.read_bytes(&*s, cstr, len);
    ex.JS_FreeCString.call(&mut *s, (at.ctx, cstr))?;
    Ok(crate::abi::decode_wtf8(bytes?))
}

/// Reads the string data property named by the NUL-terminated `key` on
/// `obj`, or (with `inherit`) on its prototype chain, without running guest
/// code.
fn read_string_prop<T: AsContextMut<Data = HostState>>(
    s: &mut T,
    ex: &Exports,
    at: At,
    obj: u32,
    key: u32,
    inherit: bool,
    cap: usize,
) -> Result<Option<String>> {
    let atom = ex.JS_NewAtom.call(&mut *s, (at.ctx, key))?;
    let mut current = ex.qjs_dup_value.call(&mut *s, obj)?;
    let mut found = None;
    for _ in 0..16 {
        if ex.qjs_is_object.call(&mut *s, current)? == 0
            || ex.qjs_is_proxy.call(&mut *s, current)? != 0
        {
            break;
        }
        let raw = ex.read_i64(&*s, current)?;
        match own_property(s, ex, at, raw, atom)? {
            OwnProperty::Data(value) => {
                if ex.qjs_is_string.call(&mut *s, value)? != 0 {
                    found = Some(ex.read_string_capped(&mut *s, value, at.scratch, cap)?);
                }
                ex.qjs_free_value.call(&mut *s, value)?;
                break;
            }
            OwnProperty::Accessor => break,
            OwnProperty::Absent if !inherit => break,
            OwnProperty::Absent => {}
        }
        let proto = ex.qjs_get_prototype_of.call(&mut *s, current)?;
        ex.qjs_free_value.call(&mut *s, current)?;
        current = proto;
    }
    ex.qjs_free_value.call(&mut *s, current)?;
    ex.JS_FreeAtom.call(&mut *s, (at.ctx, atom))?;
    Ok(found)
}

/// Reads `stack`: an own data property, or the engine's accessor on the
/// prototype chain, called only while it is still the engine's own getter.
fn read_stack<T: AsContextMut<Data = HostState>>(
    s: &mut T,
    ex: &Exports,
    at: At,
    v: u32,
) -> Result<Option<String>> {
    if let Some(own) = read_string_prop(s, ex, at, v, at.strings.stack, false, MAX_STACK_TEXT)? {
        return Ok(Some(own));
    }
    let engine_getter = ex.qjs_get_value_ptr.call(&mut *s, at.stack_getter)?;
    let atom = ex.JS_NewAtom.call(&mut *s, (at.ctx, at.strings.stack))?;
    let mut current = ex.qjs_get_prototype_of.call(&mut *s, v)?;
    let mut found = None;
    for _ in 0..8 {
        if ex.qjs_is_object.call(&mut *s, current)? == 0
            || ex.qjs_is_proxy.call(&mut *s, current)? != 0
        {
            break;
        }
        let raw = ex.read_i64(&*s, current)?;
        let desc = at.scratch + DESC;
        let status = ex
            .JS_GetOwnProperty
            .call(&mut *s, (at.ctx, desc, raw, atom))?;
        if status < 0 {
            clear_exception(s, ex)?;
            break;
        }
        if status > 0 {
            let flags = ex.read_u32(&*s, desc)?;
            let parts = [
                ex.read_i64(&*s, desc + 8)?,
                ex.read_i64(&*s, desc + 16)?,
                ex.read_i64(&*s, desc + 24)?,
            ];
            if flags & PROP_GETSET != 0 {
                let getter = boxed(s, ex, parts[1])?;
                if ex.qjs_get_value_ptr.call(&mut *s, getter)? == engine_getter {
                    let value = ex.qjs_call.call(&mut *s, (getter, v, 0, at.scratch + 16))?;
                    if ex.qjs_is_exception.call(&mut *s, value)? != 0 {
                        clear_exception(s, ex)?;
                    } else if ex.qjs_is_string.call(&mut *s, value)? != 0 {
                        found = Some(ex.read_string_capped(
                            &mut *s,
                            value,
                            at.scratch,
                            MAX_STACK_TEXT,
                        )?);
                    }
                    ex.qjs_free_value.call(&mut *s, value)?;
                }
                ex.qjs_free_value.call(&mut *s, getter)?;
                ex.JS_FreeValue.call(&mut *s, (at.ctx, parts[0]))?;
                ex.JS_FreeValue.call(&mut *s, (at.ctx, parts[2]))?;
            } else {
                for raw in parts {
                    ex.JS_FreeValue.call(&mut *s, (at.ctx, raw))?;
                }
            }
            break;
        }
        let next = ex.qjs_get_prototype_of.call(&mut *s, current)?;
        ex.qjs_free_value.call(&mut *s, current)?;
        current = next;
    }
    ex.qjs_free_value.call(&mut *s, current)?;
    ex.JS_FreeAtom.call(&mut *s, (at.ctx, atom))?;
    Ok(found)
}

/// Caps on the parts of an error copied out of the guest.
const MAX_NAME_TEXT: usize = 256;
const MAX_MESSAGE_TEXT: usize = 16 * 1024;
const MAX_STACK_TEXT: usize = 16 * 1024;

/// Reads `name`, `message` and `stack` of a thrown value (borrowed box),
/// each capped in size.
pub(crate) fn read_error_fields<T: AsContextMut<Data = HostState>>(
    s: &mut T,
    ex: &Exports,
    v: u32,
) -> Result<GuestError> {
    let at = At::of(s.as_context().data());
    if ex.qjs_is_object.call(&mut *s, v)? == 0 || ex.qjs_is_proxy.call(&mut *s, v)? != 0 {
        let limits = BridgeLimits {
            max_depth: 8,
            max_bytes: 4096,
        };
        let message = match to_json(s, ex, v, &limits) {
            Ok(Value::String(text)) => text,
            Ok(other) => other.to_string(),
            Err(_) => "a value that cannot be displayed".into(),
        };
        return Ok(GuestError {
            name: "Error".into(),
            message,
            stack: None,
            code: None,
        });
    }
    let name = read_string_prop(s, ex, at, v, at.strings.name, true, MAX_NAME_TEXT)?;
    let message = read_string_prop(s, ex, at, v, at.strings.message, true, MAX_MESSAGE_TEXT)?;
    let stack = read_stack(s, ex, at, v)?;
    let code = read_string_prop(s, ex, at, v, at.strings.code, false, MAX_NAME_TEXT)?;
    Ok(GuestError {
        name: name.unwrap_or_else(|| "Error".into()),
        message: message.unwrap_or_default(),
        stack: stack.filter(|s| !s.is_empty()),
        code: code.filter(|c| !c.is_empty()),
    })
}

/// Takes and frees the context's pending exception, if any.
pub(crate) fn clear_exception<T: AsContextMut<Data = HostState>>(
    s: &mut T,
    ex: &Exports,
) -> Result<()> {
    let exc = ex.qjs_get_exception.call(&mut *s, ())?;
    if exc != 0 {
        ex.qjs_free_value.call(&mut *s, exc)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{STRINGS, Strings};

    #[test]
    fn string_offsets_match_the_block() {
        let s = Strings::at(0);
        let at = |offset: u32| {
            let tail = &STRINGS[offset as usize..];
            let end = tail.iter().position(|b| *b == 0).unwrap();
            std::str::from_utf8(&tail[..end]).unwrap()
        };
        assert_eq!(
            [
                at(s.length),
                at(s.name),
                at(s.message),
                at(s.stack),
                at(s.code)
            ],
            ["length", "name", "message", "stack", "code"]
        );
    }
}
