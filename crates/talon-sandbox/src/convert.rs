//! Values crossing the bridge: guest values to JSON and back.
//!
//! Reading a guest value never runs guest code. The walk enumerates keys
//! with the engine's `JS_GetOwnPropertyNames` and reads each with
//! `JS_GetOwnProperty`: own *data* properties only, no getters, no proxy
//! traps (proxies are refused), no `toJSON`, no `toString`, no look-up that
//! could reach a tampered prototype, and no intermediate guest object whose
//! construction a tampered setter could observe. Depth, size and cycles are
//! bounded by [`BridgeLimits`].

use serde_json::{Map, Number, Value};
use wasmtime::AsContextMut;

use crate::abi::{Exports, PROP_DEFAULT};
use crate::config::BridgeLimits;
use crate::error::{Result, SandboxError};
use crate::host::HostState;
use crate::props::{At, OwnProperty, atom_name, clear_exception, own_property, read_error_fields};

/// Converts the guest value in box `value` (borrowed) to JSON. `undefined`,
/// functions and symbols become `null` at the top and are omitted inside
/// objects, as `JSON.stringify` does.
pub(crate) fn to_json<T: AsContextMut<Data = HostState>>(
    store: &mut T,
    ex: &Exports,
    value: u32,
    limits: &BridgeLimits,
) -> Result<Value> {
    let at = At::of(store.as_context().data());
    let mut walker = Walker {
        ex,
        limits,
        at,
        path: Vec::new(),
        seen: Vec::new(),
        bytes: 0,
    };
    Ok(walker.walk(store, value)?.unwrap_or(Value::Null))
}

enum Kind {
    Array,
    Object,
    Error,
}

/// The length of `text` as a JSON string literal, escapes included.
fn json_len(text: &str) -> usize {
    2 + text
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum::<usize>()
}

enum Segment {
    Index(u32),
    Key(String),
}

struct Walker<'a> {
    ex: &'a Exports,
    limits: &'a BridgeLimits,
    at: At,
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
                Segment::Key(k) if k.len() > 64 => {
                    let mut end = 64;
                    while !k.is_char_boundary(end) {
                        end -= 1;
                    }
                    out.push_str(&format!(".{}…", &k[..end]));
                }
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
            let n = ex.qjs_get_float64.call(&mut *s, v)?;
            let value = number(n);
            self.count(if value.is_null() { 4 } else { 8 })?;
            return Ok(Some(value));
        }
        if ex.qjs_is_string.call(&mut *s, v)? != 0 {
            let room = self.limits.max_bytes.saturating_sub(self.bytes) + 1;
            let text = ex.read_string_capped(&mut *s, v, self.at.scratch, room)?;
            self.count(json_len(&text))?;
            return Ok(Some(Value::String(text)));
        }
        if ex.qjs_is_bool.call(&mut *s, v)? != 0 {
            self.count(5)?;
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
        // Only plain objects, arrays, arguments and errors cross. The class
        // id is read without any check that could throw (and so build an
        // error, which would run engine hooks).
        let class = ex.qjs_get_class_id.call(&mut *s, v)?;
        let classes = self.at.classes;
        let kind = if class == classes.array && ex.qjs_is_array.call(&mut *s, v)? != 0 {
            Kind::Array
        } else if class == classes.error {
            Kind::Error
        } else if class == classes.object
            || class == classes.arguments
            || class == classes.mapped_arguments
        {
            Kind::Object
        } else {
            let what = self.describe(s, v, class)?;
            return Err(self.unconvertible(&format!("a {what} (convert it to plain data first)")));
        };
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
        let result = match kind {
            Kind::Array => self.array(s, v),
            Kind::Error => self.error(s, v),
            Kind::Object => self.object(s, v),
        };
        self.seen.pop();
        result.map(Some)
    }

    /// Names an object that may not cross, with checks that never throw.
    fn describe<T: AsContextMut<Data = HostState>>(
        &self,
        s: &mut T,
        v: u32,
        class: i32,
    ) -> Result<&'static str> {
        let ex = self.ex;
        let (lo, hi) = self.at.classes.typed_arrays;
        if (lo..=hi).contains(&class) {
            return Ok("typed array");
        }
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
                return Ok(kind);
            }
        }
        Ok("built-in object")
    }

    fn array<T: AsContextMut<Data = HostState>>(&mut self, s: &mut T, v: u32) -> Result<Value> {
        let ex = self.ex;
        let raw = ex.read_i64(&*s, v)?;
        let length_atom = ex
            .JS_NewAtom
            .call(&mut *s, (self.at.ctx, self.at.strings.length))?;
        let length = own_property(s, ex, self.at, raw, length_atom);
        ex.JS_FreeAtom.call(&mut *s, (self.at.ctx, length_atom))?;
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
            let atom = ex.JS_NewAtomUInt32.call(&mut *s, (self.at.ctx, i))?;
            let item = own_property(s, ex, self.at, raw, atom);
            ex.JS_FreeAtom.call(&mut *s, (self.at.ctx, atom))?;
            let value = match item? {
                OwnProperty::Absent => {
                    self.count(4)?;
                    Value::Null
                }
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
        let at = self.at;
        let raw = ex.read_i64(&*s, v)?;
        // JS_GetOwnPropertyNames(ctx, &tab, &len, obj, STRING | ENUM_ONLY):
        // the engine's own list, no intermediate array a setter could see.
        let status = ex
            .JS_GetOwnPropertyNames
            .call(&mut *s, (at.ctx, at.scratch, at.scratch + 4, raw, 1 | 16))?;
        if status < 0 {
            clear_exception(s, ex)?;
            return Err(self.unconvertible("an object whose keys cannot be read"));
        }
        let table = ex.read_u32(&*s, at.scratch)?;
        let len = ex.read_u32(&*s, at.scratch + 4)?;
        let mut atoms = Vec::with_capacity(len as usize);
        for i in 0..len {
            atoms.push(ex.read_u32(&*s, table + 8 * i + 4)?);
        }
        let result = self.object_entries(s, raw, &atoms);
        ex.JS_FreePropertyEnum.call(&mut *s, (at.ctx, table, len))?;
        result
    }

    fn object_entries<T: AsContextMut<Data = HostState>>(
        &mut self,
        s: &mut T,
        raw: i64,
        atoms: &[u32],
    ) -> Result<Value> {
        let ex = self.ex;
        self.count(2)?;
        let mut map = Map::new();
        for &atom in atoms {
            let name = atom_name(s, ex, self.at, atom)?;
            self.path.push(Segment::Key(name.clone()));
            match own_property(s, ex, self.at, raw, atom)? {
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
        let e = read_error_fields(s, self.ex, v)?;
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
                // Define, never assign: a setter on Array.prototype must not
                // see (or swallow) the host's elements.
                let key = ex.qjs_new_number.call(&mut *s, i as f64)?;
                let status = ex
                    .qjs_define_prop_value
                    .call(&mut *s, (arr, key, child, PROP_DEFAULT))?;
                ex.qjs_free_value.call(&mut *s, key)?;
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
