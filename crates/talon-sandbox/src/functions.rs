//! Host functions the guest can call, registered by stable name.
//!
//! A VM never stores a host closure in guest memory: the guest holds a
//! function object that carries only its name, and every call is looked up
//! by that name in the [`HostFunctions`] the VM was created or restored
//! with. That is what lets a restored snapshot call the same functions.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

/// A synchronous host function: JSON arguments in, a JSON value or a plain
/// error out.
pub type SyncHostFn = dyn Fn(&[Value]) -> Result<Value, HostCallError> + Send + Sync;

/// How a host function answers.
#[derive(Clone)]
pub enum HostFunction {
    /// Returns while the guest waits.
    Sync(Arc<SyncHostFn>),
    /// Returns a promise at once; the call is queued as a [`PendingCall`]
    /// and the host settles it later with `Vm::settle`.
    Async,
}

impl std::fmt::Debug for HostFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Sync(_) => f.write_str("Sync"),
            Self::Async => f.write_str("Async"),
        }
    }
}

/// The set of host functions of a VM, by name. Each is installed as a
/// (configurable, non-enumerable) global of that name when a VM is created
/// from the base image; a prelude can capture and hide it.
#[derive(Debug, Clone, Default)]
pub struct HostFunctions {
    map: HashMap<String, HostFunction>,
}

impl HostFunctions {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a synchronous function. Names starting with `__talon_` are
    /// reserved for the sandbox itself.
    pub fn sync(
        mut self,
        name: impl Into<String>,
        f: impl Fn(&[Value]) -> Result<Value, HostCallError> + Send + Sync + 'static,
    ) -> Self {
        self.map
            .insert(name.into(), HostFunction::Sync(Arc::new(f)));
        self
    }

    /// Adds an asynchronous function.
    pub fn asynchronous(mut self, name: impl Into<String>) -> Self {
        self.map.insert(name.into(), HostFunction::Async);
        self
    }

    /// Looks a function up by name.
    pub fn get(&self, name: &str) -> Option<&HostFunction> {
        self.map.get(name)
    }

    /// The registered names, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.map.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }
}

/// A call of an asynchronous host function that waits for the host.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingCall {
    /// Unique within the VM (and across its snapshots).
    pub id: u64,
    /// The host function's name.
    pub name: String,
    /// The arguments, converted to JSON.
    pub args: Vec<Value>,
}

/// An error a host function reports to the guest: a plain `Error` with
/// `message` and `code` on the guest's side (defined with Code Mode's other
/// contracts in `talon-protocol`).
pub use talon_protocol::HostCallError;
