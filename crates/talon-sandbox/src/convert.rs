//! Values crossing the bridge: guest values to JSON and back.
//!
//! Reading a guest value never runs guest code. The walk uses only own
//! *data* properties read through property descriptors: no getters, no
//! proxy traps (proxies are refused), no `toJSON`, no `toString`, and no
//! look-up that could reach a tampered prototype. Depth, size and cycles
//! are bounded by [`BridgeLimits`].

use serde_json::{Map, Number, Value};
use wasmtime::AsContextMut;

use crate::abi::{Exports, PROP_DEFAULT};
use crate::config::BridgeLimits;
use crate::error::{GuestError, Result, SandboxError};
use crate::host::HostState;

/// Property names kept NUL-terminated in guest memory for the VM's life.
pub(crate) const STRINGS: &[u8] = b"value\0length\0name\0message\0stack\0code\0";

/// Offsets of [`STRINGS`] in guest memory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Strings {
    pub value: u32,
    pub length: u32,
    pub name: u32,
    pub message: u32,
    pub stack: u32,
    pub code: u32,
}

impl Strings {
    pub fn at(base: u32) -> Self {
        Self {
            value: base,
            length: base + 6,
            name: base + 13,
            message: base + 18,
            stack: base + 26,
            code: base + 32,
        }
    }
}

/// Converts the guest value in box `value` (borrowed) to JSON. `undefined`,
/// functions and symbols become `null` at the top and are omitted inside
/// objects, as `JSON.stringify` does.
pub(crate) fn to_json<T: AsContextMut<Data = HostState>>(
    store: &mut T,
    ex: &Exports,
    value: u32,
    limits: &BridgeLimits,
) -> Result<Value> {
    let ptrs = store.as_context().data().ptrs;
    let mut walker = Walker {
        ex,
        limits,
        strings: Strings::at(ptrs.strings),
        scratch: ptrs.scratch,
        path: Vec::new(),
        seen: Vec::new(),
        bytes: 0,
    };
    Ok(walker.walk(store, value)?.unwrap_or(Value::Null))
}

enum Segment {
    Index(u32),
    Key(String),
}

struct Walker<'a> {
    ex: &'a Exports,
    limits: &'a BridgeLimits,
    strings: Strings,
    scratch: u32,
    path: Vec<Segment>,
    seen: Vec<u32>,
    bytes: usize,
}

impl Walker<'_> {
    fn here(&self) -> String {
        let mut out = String::from("$");
        for seg in &self.path {
            match seg {
                Segment::Index(i) => out.push_str(&format!("[{i}]")),
                Segment::Key(k) => out.push_str(&format!(".{k}")),
            }
        }
        out
    }

    fn unconvertible(&self, what: &str) -> SandboxError {
        SandboxError::Unconvertible(format!("{what} at {}", self.here()))
    }

    fn count(&mut self, bytes: usize) -> Result<()> {
        self.bytes += bytes;
        if self.bytes > self.limits.max_bytes {
            return Err(SandboxError::ValueTooLarge(format!(
                "more than {} bytes at {}",
                self.limits.max_bytes,
                self.here()
            )));
        }
        Ok(())
    }

    fn walk<T: AsContextMut<Data = HostState>>(
        &mut self,
        store: &mut T,
        v: u32,
    ) -> Result<Option<Value>> {
        let ex = self.ex;
        let s = &mut *store;
        if ex.qjs_is_number.call(&mut *s, v)? != 0 {
            self.count(8)?;
            let n = ex.qjs_get_float64.call(&mut *s, v)?;
            return Ok(Some(number(n)));
        }
        if ex.qjs_is_string.call(&mut *s, v)? != 0 {
            let text = ex.read_string(&mut *s, v, self.scratch)?;
            self.count(text.len() + 2)?;
            return Ok(Some(Value::String(text)));
        }
        if ex.qjs_is_bool.call(&mut *s, v)? != 0 {
            self.count(4)?;
            return Ok(Some(Value::Bool(ex.qjs_get_bool.call(&mut *s, v)? != 0)));
        }
        if ex.qjs_is_null.call(&mut *s, v)? != 0 {
            self.count(4)?;
            return Ok(Some(Value::Null));
        }
        if ex.qjs_is_big_int.call(&mut *s, v)? != 0 {
            return Err(self.unconvertible("a BigInt (convert it with String() or Number())"));
        }
        if ex.qjs_is_object.call(&mut *s, v)? == 0 || ex.qjs_is_function.call(&mut *s, v)? != 0 {
            // undefined, symbols, functions.
            return Ok(None);
        }
        if ex.qjs_is_proxy.call(&mut *s, v)? != 0 {
            return Err(self.unconvertible("a Proxy"));
        }
        if let Some(kind) = self.exotic_kind(s, v)? {
            return Err(self.unconvertible(&format!("a {kind} (convert it to plain data first)")));
        }
        if self.path.len() >= self.limits.max_depth {
            return Err(SandboxError::ValueTooLarge(format!(
                "nesting deeper than {} at {}",
                self.limits.max_depth,
                self.here()
            )));
        }
        let identity = ex.qjs_get_value_ptr.call(&mut *s, v)?;
        if self.seen.contains(&identity) {
            return Err(self.unconvertible("a cycle"));
        }
        self.seen.push(identity);
        let result = if ex.qjs_is_array.call(&mut *s, v)? != 0 {
            self.array(s, v).map(Some)
        } else if ex.qjs_is_error.call(&mut *s, v)? != 0 {
            self.error(s, v).map(Some)
        } else {
            self.object(s, v).map(Some)
        };
        self.seen.pop();
        result
    }

    fn exotic_kind<T: AsContextMut<Data = HostState>>(
        &self,
        s: &mut T,
        v: u32,
    ) -> Result<Option<&'static str>> {
        let ex = self.ex;
        let checks: [(&wasmtime::TypedFunc<u32, i32>, &'static str); 10] = [
            (&ex.qjs_is_promise, "Promise (await it first)"),
            (&ex.qjs_is_date, "Date"),
            (&ex.qjs_is_map, "Map"),
            (&ex.qjs_is_set, "Set"),
            (&ex.qjs_is_regexp, "RegExp"),
            (&ex.qjs_is_weak_map, "WeakMap"),
            (&ex.qjs_is_weak_set, "WeakSet"),
            (&ex.qjs_is_weak_ref, "WeakRef"),
            (&ex.qjs_is_array_buffer, "ArrayBuffer"),
            (&ex.qjs_is_data_view, "DataView"),
        ];
        for (check, kind) in checks {
            if check.call(&mut *s, v)? != 0 {
                return Ok(Some(kind));
            }
        }
        let scratch = self.scratch;
        let buffer = ex
            .qjs_get_typed_array_buffer
            .call(&mut *s, (v, scratch, scratch + 4, scratch + 8))?;
        if buffer != 0 {
            let is_typed = ex.qjs_is_exception.call(&mut *s, buffer)? == 0;
            ex.qjs_free_value.call(&mut *s, buffer)?;
            if is_typed {
                return Ok(Some("typed array"));
            }
            clear_exception(s, ex)?;
        }
        Ok(None)
    }

    fn array<T: AsContextMut<Data = HostState>>(&mut self, s: &mut T, v: u32) -> Result<Value> {
        let ex = self.ex;
        let key = ex.qjs_new_string.call(&mut *s, (self.strings.length, 6))?;
        let key = ex
            .check_value(&mut *s, key)
            .map_err(|_| SandboxError::MemoryLimit)?;
        let length = read_own_data(s, ex, self.strings, v, key);
        ex.qjs_free_value.call(&mut *s, key)?;
        let length = match length? {
            OwnProperty::Data(len) => {
                let n = ex.qjs_get_float64.call(&mut *s, len)?;
                ex.qjs_free_value.call(&mut *s, len)?;
                n as u32
            }
            _ => return Err(self.unconvertible("an array without a plain length")),
        };
        self.count(2)?;
        let mut items = Vec::with_capacity(length.min(4096) as usize);
        for i in 0..length {
            self.path.push(Segment::Index(i));
            let key = ex.qjs_new_number.call(&mut *s, f64::from(i))?;
            let key = ex
                .check_value(&mut *s, key)
                .map_err(|_| SandboxError::MemoryLimit)?;
            let item = read_own_data(s, ex, self.strings, v, key);
            ex.qjs_free_value.call(&mut *s, key)?;
            let value = match item? {
                OwnProperty::Absent => Value::Null,
                OwnProperty::Accessor => {
                    return Err(self.unconvertible("an accessor (getters are not run)"));
                }
                OwnProperty::Data(item) => {
                    let value = self.walk(s, item);
                    ex.qjs_free_value.call(&mut *s, item)?;
                    value?.unwrap_or(Value::Null)
                }
            };
            self.count(1)?;
            items.push(value);
            self.path.pop();
        }
        Ok(Value::Array(items))
    }

    fn object<T: AsContextMut<Data = HostState>>(&mut self, s: &mut T, v: u32) -> Result<Value> {
        let ex = self.ex;
        let keys = ex.qjs_get_own_property_names.call(&mut *s, v)?;
        let keys = match ex.check_value(&mut *s, keys) {
            Ok(keys) => keys,
            Err(_) => {
                clear_exception(s, ex)?;
                return Err(self.unconvertible("an object whose keys cannot be read"));
            }
        };
        let result = self.object_entries(s, v, keys);
        ex.qjs_free_value.call(&mut *s, keys)?;
        result
    }

    fn object_entries<T: AsContextMut<Data = HostState>>(
        &mut self,
        s: &mut T,
        v: u32,
        keys: u32,
    ) -> Result<Value> {
        let ex = self.ex;
        let len_box = ex
            .qjs_get_prop_string
            .call(&mut *s, (keys, self.strings.length))?;
        let len = ex.qjs_get_float64.call(&mut *s, len_box)? as u32;
        ex.qjs_free_value.call(&mut *s, len_box)?;
        self.count(2)?;
        let mut map = Map::new();
        for i in 0..len {
            let key = ex.qjs_get_prop_uint32.call(&mut *s, (keys, i))?;
            let name = if ex.qjs_is_string.call(&mut *s, key)? != 0 {
                ex.read_string(&mut *s, key, self.scratch)
            } else {
                Err(SandboxError::corrupt("property key is not a string"))
            };
            let name = match name {
                Ok(name) => name,
                Err(e) => {
                    ex.qjs_free_value.call(&mut *s, key)?;
                    return Err(e);
                }
            };
            self.path.push(Segment::Key(name.clone()));
            let prop = read_own_data(s, ex, self.strings, v, key);
            ex.qjs_free_value.call(&mut *s, key)?;
            match prop? {
                OwnProperty::Absent => {}
                OwnProperty::Accessor => {
                    return Err(self.unconvertible("an accessor (getters are not run)"));
                }
                OwnProperty::Data(item) => {
                    let value = self.walk(s, item);
                    ex.qjs_free_value.call(&mut *s, item)?;
                    if let Some(value) = value? {
                        self.count(name.len() + 4)?;
                        map.insert(name, value);
                    }
                }
            }
            self.path.pop();
        }
        Ok(Value::Object(map))
    }

    fn error<T: AsContextMut<Data = HostState>>(&mut self, s: &mut T, v: u32) -> Result<Value> {
        let e = read_error_fields(s, self.ex, self.strings, self.scratch, v)?;
        self.count(e.name.len() + e.message.len() + 32)?;
        let mut map = Map::new();
        map.insert("name".into(), Value::String(e.name));
        map.insert("message".into(), Value::String(e.message));
        Ok(Value::Object(map))
    }
}

fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
        Value::Number(Number::from(n as i64))
    } else {
        Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

/// An own property as seen through its descriptor.
pub(crate) enum OwnProperty {
    Absent,
    Accessor,
    /// An owned box holding the value.
    Data(u32),
}

/// Reads own property `key` (a borrowed key box) of `obj` without running
/// guest code. The caller has excluded proxies.
pub(crate) fn read_own_data<T: AsContextMut<Data = HostState>>(
    s: &mut T,
    ex: &Exports,
    strings: Strings,
    obj: u32,
    key: u32,
) -> Result<OwnProperty> {
    let desc = ex
        .qjs_get_own_property_descriptor
        .call(&mut *s, (obj, key))?;
    if desc == 0 {
        return Ok(OwnProperty::Absent);
    }
    if ex.qjs_is_exception.call(&mut *s, desc)? != 0 {
        ex.qjs_free_value.call(&mut *s, desc)?;
        clear_exception(s, ex)?;
        return Ok(OwnProperty::Absent);
    }
    // The descriptor is an engine-made plain object: `value` is an own data
    // property exactly when the property is a data property.
    let result = if ex
        .qjs_has_own_property
        .call(&mut *s, (desc, strings.value))?
        == 1
    {
        OwnProperty::Data(
            ex.qjs_get_prop_string
                .call(&mut *s, (desc, strings.value))?,
        )
    } else {
        OwnProperty::Accessor
    };
    ex.qjs_free_value.call(&mut *s, desc)?;
    Ok(result)
}

/// Reads a string-valued data property `key_cstr` of `obj` or of its
/// prototype chain (for `name`), without running guest code.
fn read_string_prop<T: AsContextMut<Data = HostState>>(
    s: &mut T,
    ex: &Exports,
    (strings, scratch): (Strings, u32),
    obj: u32,
    (key_cstr, key_len): (u32, u32),
    inherit: bool,
) -> Result<Option<String>> {
    let key = ex.qjs_new_string.call(&mut *s, (key_cstr, key_len))?;
    let key = ex
        .check_value(&mut *s, key)
        .map_err(|_| SandboxError::MemoryLimit)?;
    let mut current = ex.qjs_dup_value.call(&mut *s, obj)?;
    let mut found = None;
    for _ in 0..16 {
        if ex.qjs_is_object.call(&mut *s, current)? == 0
            || ex.qjs_is_proxy.call(&mut *s, current)? != 0
        {
            break;
        }
        if let OwnProperty::Data(value) = read_own_data(s, ex, strings, current, key)? {
            if ex.qjs_is_string.call(&mut *s, value)? != 0 {
                found = Some(ex.read_string(&mut *s, value, scratch)?);
            }
            ex.qjs_free_value.call(&mut *s, value)?;
            break;
        }
        if !inherit {
            break;
        }
        let proto = ex.qjs_get_prototype_of.call(&mut *s, current)?;
        ex.qjs_free_value.call(&mut *s, current)?;
        current = proto;
    }
    ex.qjs_free_value.call(&mut *s, current)?;
    ex.qjs_free_value.call(&mut *s, key)?;
    Ok(found)
}

/// Reads `name`, `message` and `stack` of a thrown value (borrowed box).
pub(crate) fn read_error_fields<T: AsContextMut<Data = HostState>>(
    s: &mut T,
    ex: &Exports,
    strings: Strings,
    scratch: u32,
    v: u32,
) -> Result<GuestError> {
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
        });
    }
    let at = (strings, scratch);
    let name = read_string_prop(s, ex, at, v, (strings.name, 4), true)?;
    let message = read_string_prop(s, ex, at, v, (strings.message, 7), true)?;
    let stack = read_string_prop(s, ex, at, v, (strings.stack, 5), false)?;
    Ok(GuestError {
        name: name.unwrap_or_else(|| "Error".into()),
        message: message.unwrap_or_default(),
        stack: stack.filter(|s| !s.is_empty()),
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

/// Builds a guest value from JSON; returns an owned box. Object keys are
/// defined, never assigned, so `__proto__` is an ordinary key and no setter
/// on a tampered `Object.prototype` runs.
pub(crate) fn from_json<T: AsContextMut<Data = HostState>>(
    s: &mut T,
    ex: &Exports,
    value: &Value,
    limits: &BridgeLimits,
) -> Result<u32> {
    build(s, ex, value, limits, 0)
}

fn build<T: AsContextMut<Data = HostState>>(
    s: &mut T,
    ex: &Exports,
    value: &Value,
    limits: &BridgeLimits,
    depth: usize,
) -> Result<u32> {
    if depth > limits.max_depth {
        return Err(SandboxError::ValueTooLarge(format!(
            "nesting deeper than {}",
            limits.max_depth
        )));
    }
    let made = match value {
        Value::Null => ex.qjs_get_null.call(&mut *s, ())?,
        Value::Bool(true) => ex.qjs_get_true.call(&mut *s, ())?,
        Value::Bool(false) => ex.qjs_get_false.call(&mut *s, ())?,
        Value::Number(n) => ex
            .qjs_new_number
            .call(&mut *s, n.as_f64().unwrap_or(f64::NAN))?,
        Value::String(text) => return guard(s, ex, |s| ex.new_string(s, text)),
        Value::Array(items) => {
            let arr = guard(s, ex, |s| {
                let arr = ex.qjs_new_array.call(&mut *s, ())?;
                ex.check_value(s, arr)
            })?;
            for (i, item) in items.iter().enumerate() {
                let child = match build(s, ex, item, limits, depth + 1) {
                    Ok(child) => child,
                    Err(e) => {
                        ex.qjs_free_value.call(&mut *s, arr)?;
                        return Err(e);
                    }
                };
                let status = ex
                    .qjs_set_prop_uint32
                    .call(&mut *s, (arr, i as u32, child))?;
                ex.qjs_free_value.call(&mut *s, child)?;
                if status < 0 {
                    ex.qjs_free_value.call(&mut *s, arr)?;
                    clear_exception(s, ex)?;
                    return Err(SandboxError::MemoryLimit);
                }
            }
            return Ok(arr);
        }
        Value::Object(map) => {
            let obj = guard(s, ex, |s| {
                let obj = ex.qjs_new_object.call(&mut *s, ())?;
                ex.check_value(s, obj)
            })?;
            for (key, item) in map {
                let fail = |s: &mut T, e: SandboxError| -> Result<u32> {
                    ex.qjs_free_value.call(&mut *s, obj)?;
                    Err(e)
                };
                if key.as_bytes().contains(&0) {
                    return fail(
                        s,
                        SandboxError::Unconvertible("an object key containing NUL".into()),
                    );
                }
                let child = match build(s, ex, item, limits, depth + 1) {
                    Ok(child) => child,
                    Err(e) => return fail(s, e),
                };
                let key_ptr = match ex.alloc_bytes(&mut *s, key.as_bytes()) {
                    Ok(ptr) => ptr,
                    Err(e) => {
                        ex.qjs_free_value.call(&mut *s, child)?;
                        return fail(s, e);
                    }
                };
                let status = ex
                    .qjs_define_prop_string
                    .call(&mut *s, (obj, key_ptr, child, PROP_DEFAULT))?;
                ex.wasm_free.call(&mut *s, key_ptr)?;
                ex.qjs_free_value.call(&mut *s, child)?;
                if status < 0 {
                    clear_exception(s, ex)?;
                    return fail(s, SandboxError::MemoryLimit);
                }
            }
            return Ok(obj);
        }
    };
    if made == 0 {
        return Err(SandboxError::MemoryLimit);
    }
    Ok(made)
}

/// Runs an allocation; a pending exception (out of memory) is cleared and
/// reported as [`SandboxError::MemoryLimit`].
fn guard<T: AsContextMut<Data = HostState>>(
    s: &mut T,
    ex: &Exports,
    f: impl FnOnce(&mut T) -> Result<u32>,
) -> Result<u32> {
    match f(s) {
        Err(SandboxError::PendingException) => {
            clear_exception(s, ex)?;
            Err(SandboxError::MemoryLimit)
        }
        other => other,
    }
}
