//! Scope serialization: a namespace's scope, as built for one run, walked
//! into plain JSON data plus the joined paths of its callable members.
//! Raw functions, cycles, unsafe keys, undeclared tools and scopes deeper
//! than [`MAX_DEPTH`] are refused here.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, RwLock};

use serde_json::{Map, Value};

use super::{
    MAX_DEPTH, NamespaceError, NamespaceRegistration, NamespaceTool, PATH_SEPARATOR, ScopeValue,
};

pub(super) type Serialized = (Value, BTreeMap<String, NamespaceTool>);

/// The scope as plain data plus callable paths. Shared nodes serialize
/// once per reference; a node met again on its own path is a cycle.
pub(super) fn serialize(
    registration: &NamespaceRegistration,
    scope: &ScopeValue,
) -> Result<Serialized, NamespaceError> {
    let declared: HashSet<&str> = registration
        .required_tool_names
        .iter()
        .map(String::as_str)
        .collect();
    let mut walker = Walker {
        id: &registration.id,
        declared,
        path: Vec::new(),
        on_path: Vec::new(),
        callables: BTreeMap::new(),
    };
    let value = walker.walk(scope)?;
    Ok((value, walker.callables))
}

struct Walker<'a> {
    id: &'a str,
    declared: HashSet<&'a str>,
    path: Vec<String>,
    on_path: Vec<*const RwLock<ScopeValue>>,
    callables: BTreeMap<String, NamespaceTool>,
}

impl Walker<'_> {
    fn here(&self) -> String {
        self.path.join(".")
    }

    fn walk(&mut self, value: &ScopeValue) -> Result<Value, NamespaceError> {
        if self.path.len() > MAX_DEPTH {
            return Err(NamespaceError::TooDeep(self.id.to_owned()));
        }
        match value {
            ScopeValue::Data(data) => {
                self.check_data_keys(data, 0)?;
                Ok(data.clone())
            }
            ScopeValue::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    self.path.push(i.to_string());
                    out.push(self.walk(item)?);
                    self.path.pop();
                }
                Ok(Value::Array(out))
            }
            ScopeValue::Object(fields) => {
                let mut out = Map::new();
                for (key, item) in fields {
                    self.check_key(key)?;
                    self.path.push(key.clone());
                    let v = self.walk(item)?;
                    self.path.pop();
                    out.insert(key.clone(), v);
                }
                Ok(Value::Object(out))
            }
            ScopeValue::Tool(tool) => {
                if self.path.is_empty() {
                    return Err(NamespaceError::UnsafeKey(self.id.to_owned(), String::new()));
                }
                if !self.declared.contains(tool.tool_name.as_str()) {
                    return Err(NamespaceError::UndeclaredTool(
                        self.id.to_owned(),
                        self.here(),
                        tool.tool_name.clone(),
                    ));
                }
                let joined = self.path.join(&PATH_SEPARATOR.to_string());
                self.callables.insert(joined, tool.clone());
                Ok(Value::Null)
            }
            ScopeValue::Shared(node) => {
                let ptr = Arc::as_ptr(node);
                if self.on_path.contains(&ptr) {
                    return Err(NamespaceError::Cycle(self.id.to_owned(), self.here()));
                }
                self.on_path.push(ptr);
                let inner = node
                    .read()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .clone();
                let out = self.walk(&inner);
                self.on_path.pop();
                out
            }
            ScopeValue::RawFunction(_) => {
                Err(NamespaceError::RawFunction(self.id.to_owned(), self.here()))
            }
        }
    }

    fn check_key(&self, key: &str) -> Result<(), NamespaceError> {
        if key.is_empty()
            || matches!(key, "__proto__" | "constructor" | "prototype")
            || key.contains(PATH_SEPARATOR)
        {
            return Err(NamespaceError::UnsafeKey(
                self.id.to_owned(),
                key.to_owned(),
            ));
        }
        Ok(())
    }

    fn check_data_keys(&self, data: &Value, depth: usize) -> Result<(), NamespaceError> {
        if self.path.len() + depth > MAX_DEPTH {
            return Err(NamespaceError::TooDeep(self.id.to_owned()));
        }
        match data {
            Value::Object(map) => {
                for (key, v) in map {
                    self.check_key(key)?;
                    self.check_data_keys(v, depth + 1)?;
                }
            }
            Value::Array(items) => {
                for v in items {
                    self.check_data_keys(v, depth + 1)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}
