//! Plugin namespaces: compact domain APIs (`Issues.list(...)`) that a
//! plugin registers for Code Mode, in the Rust form of the seed's registry
//! (`registerCodeModeNamespaceForPlugin`, `createCodeModeNamespaceTool`,
//! `clearCodeModeNamespacesForPlugin`, `clearCodeModeNamespacesForTest`).
//!
//! A namespace is visible in a run only when every one of its
//! `required_tool_names` is in the run's catalog and owned by the
//! registering plugin. Its scope is built for the run and serialized to a
//! plain descriptor: JSON data plus the paths of callable members, each of
//! which names one of the required tools. Raw host functions, cycles,
//! unsafe keys and undeclared tools are refused before any guest code
//! runs. A namespace call is a catalog tool call: it goes through the
//! run's `ToolRunner` like `tools.call`.
//!
//! The scope walk that turns a scope into a descriptor is in `serialize`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use talon_protocol::gateway::bounded::{AgentId, RunId, SessionId, SessionKey};

use serde_json::{Value, json};
use talon_protocol::ToolSource;
use talon_sandbox::HostCallError;
use talon_tools::{CancellationToken, Catalog};

mod serialize;

use serialize::serialize;

/// Maps a namespace function's guest arguments to the backing tool's input.
pub type InputMapper = Arc<dyn Fn(&[Value]) -> Value + Send + Sync>;

/// A raw host function: the kind of scope member the seed forbids. It can
/// be expressed so that it can be refused.
pub type RawFunction = Arc<dyn Fn(&[Value]) -> Value + Send + Sync>;

/// Builds a namespace's scope for one run.
pub type CreateScope = Arc<dyn Fn(&NamespaceContext) -> ScopeValue + Send + Sync>;

/// What `createScope(ctx)` receives: the run it builds the scope for.
#[derive(Debug, Clone)]
pub struct NamespaceContext {
    /// Agent id.
    pub agent_id: AgentId,
    /// Session key (empty for none).
    pub session_key: SessionKey,
    /// Session id (empty for none).
    pub session_id: SessionId,
    /// Run id.
    pub run_id: RunId,
    /// The plugin's config for this run.
    pub config: Value,
    /// Cancelled when the run is aborted.
    pub cancel: CancellationToken,
}

/// A callable member: `createCodeModeNamespaceTool(toolName, inputMapper?)`.
#[derive(Clone)]
pub struct NamespaceTool {
    /// The backing catalog tool's name (one of `required_tool_names`).
    pub tool_name: String,
    /// Maps guest arguments to the tool input; without one, the first
    /// argument (or `{}`) is the input.
    pub input_mapper: Option<InputMapper>,
}

impl std::fmt::Debug for NamespaceTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamespaceTool")
            .field("tool_name", &self.tool_name)
            .field("input_mapper", &self.input_mapper.is_some())
            .finish()
    }
}

impl NamespaceTool {
    /// The tool input for these guest arguments.
    pub fn input(&self, args: &[Value]) -> Value {
        match &self.input_mapper {
            Some(mapper) => mapper(args),
            None => match args.first() {
                None | Some(Value::Null) => json!({}),
                Some(first) => first.clone(),
            },
        }
    }
}

/// A scope value: JSON-compatible data, callable members, and shared
/// (possibly cyclic) nodes.
#[derive(Clone)]
pub enum ScopeValue {
    /// `null`, a boolean, a number or a string (arrays and objects inside
    /// are plain data too).
    Data(Value),
    /// An array.
    Array(Vec<ScopeValue>),
    /// An object, in key order.
    Object(Vec<(String, ScopeValue)>),
    /// A callable member.
    Tool(NamespaceTool),
    /// A node that may be referenced from several places (or from itself).
    Shared(Arc<RwLock<ScopeValue>>),
    /// A raw host function: always refused.
    RawFunction(RawFunction),
}

impl std::fmt::Debug for ScopeValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Data(v) => write!(f, "Data({v})"),
            Self::Array(items) => f.debug_tuple("Array").field(items).finish(),
            Self::Object(fields) => f.debug_tuple("Object").field(fields).finish(),
            Self::Tool(tool) => tool.fmt(f),
            Self::Shared(_) => f.write_str("Shared(..)"),
            Self::RawFunction(_) => f.write_str("RawFunction(..)"),
        }
    }
}

/// `createCodeModeNamespaceTool(toolName, inputMapper?)`.
pub fn create_code_mode_namespace_tool(
    tool_name: impl Into<String>,
    input_mapper: Option<InputMapper>,
) -> ScopeValue {
    ScopeValue::Tool(NamespaceTool {
        tool_name: tool_name.into(),
        input_mapper,
    })
}

/// What a plugin registers.
#[derive(Clone)]
pub struct NamespaceRegistration {
    /// Registry key, unique across plugins.
    pub id: String,
    /// The guest global (and key of `namespaces`).
    pub global_name: String,
    /// Added to the `exec` description when the namespace is visible.
    pub description: String,
    /// Tools that must be in the run, owned by the plugin; the only tools
    /// callable members may target.
    pub required_tool_names: Vec<String>,
    /// Optional usage text for the `exec` description.
    pub prompt: Option<String>,
    /// Builds the run's scope.
    pub create_scope: CreateScope,
}

impl std::fmt::Debug for NamespaceRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamespaceRegistration")
            .field("id", &self.id)
            .field("global_name", &self.global_name)
            .field("required_tool_names", &self.required_tool_names)
            .finish_non_exhaustive()
    }
}

/// Why a registration or a scope was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NamespaceError {
    /// The id is empty or taken by another plugin.
    #[error("namespace id {0:?} is empty or registered by another plugin")]
    Id(String),
    /// `globalName` is not a JavaScript identifier, or collides with a
    /// built-in global, `__openclaw*`, or another plugin's namespace.
    #[error("namespace globalName {0:?}: {1}")]
    GlobalName(String, &'static str),
    /// No required tools.
    #[error("namespace {0:?} declares no requiredToolNames")]
    NoTools(String),
    /// A raw function in the scope.
    #[error("namespace {0:?}: raw function at {1:?}; use createCodeModeNamespaceTool")]
    RawFunction(String, String),
    /// A cycle in the scope.
    #[error("namespace {0:?}: circular scope at {1:?}")]
    Cycle(String, String),
    /// An unsafe key in the scope.
    #[error("namespace {0:?}: unsafe key {1:?}")]
    UnsafeKey(String, String),
    /// A callable member naming a tool outside `requiredToolNames`.
    #[error("namespace {0:?}: {1:?} targets undeclared tool {2:?}")]
    UndeclaredTool(String, String, String),
    /// The scope is too deep.
    #[error("namespace {0:?}: scope deeper than {MAX_DEPTH} levels")]
    TooDeep(String),
}

/// Globals a namespace may not take.
const RESERVED: &[&str] = &[
    "ALL_TOOLS",
    "API",
    "MCP",
    "tools",
    "namespaces",
    "text",
    "json",
    "yield_control",
    "console",
    "globalThis",
    "Object",
    "Array",
    "Function",
    "Promise",
    "JSON",
    "Math",
    "Reflect",
    "Proxy",
    "Error",
    "Symbol",
    "String",
    "Number",
    "Boolean",
    "Date",
    "RegExp",
    "Map",
    "Set",
    "WeakMap",
    "WeakSet",
    "BigInt",
    "performance",
    "eval",
    "undefined",
    "NaN",
    "Infinity",
    "arguments",
];

/// JavaScript reserved words (never valid as a binding).
const KEYWORDS: &[&str] = &[
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "implements",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "static",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "var",
    "void",
    "while",
    "with",
    "yield",
];

/// Deepest scope accepted.
pub const MAX_DEPTH: usize = 32;
/// Separator of callable paths between guest and host.
pub const PATH_SEPARATOR: char = '\u{1f}';

/// Whether `name` is a JavaScript identifier (ASCII form).
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        && !KEYWORDS.contains(&name)
}

fn check_global_name(name: &str) -> Result<(), NamespaceError> {
    let bad = |why| Err(NamespaceError::GlobalName(name.to_owned(), why));
    if !is_identifier(name) {
        return bad("not a JavaScript identifier");
    }
    if RESERVED.contains(&name) {
        return bad("collides with a Code Mode or JavaScript built-in");
    }
    if name.starts_with("__openclaw") || name.starts_with("__talon") {
        return bad("the __openclaw and __talon prefixes are reserved");
    }
    Ok(())
}

/// The process-local namespace registry, keyed by namespace id.
#[derive(Default)]
pub struct NamespaceRegistry {
    entries: Mutex<BTreeMap<String, (String, NamespaceRegistration)>>,
}

impl std::fmt::Debug for NamespaceRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamespaceRegistry").finish_non_exhaustive()
    }
}

impl NamespaceRegistry {
    /// An empty registry (tests, embedders with their own plugin loader).
    pub fn new() -> Self {
        Self::default()
    }

    /// The process's registry, which the free functions use.
    pub fn global() -> &'static Arc<NamespaceRegistry> {
        static GLOBAL: OnceLock<Arc<NamespaceRegistry>> = OnceLock::new();
        GLOBAL.get_or_init(|| Arc::new(NamespaceRegistry::new()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (String, NamespaceRegistration)>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Registers (or, for the same plugin and id, replaces) a namespace.
    pub fn register(
        &self,
        plugin_id: &str,
        registration: NamespaceRegistration,
    ) -> Result<(), NamespaceError> {
        if registration.id.trim().is_empty() {
            return Err(NamespaceError::Id(registration.id));
        }
        check_global_name(&registration.global_name)?;
        if registration.required_tool_names.is_empty() {
            return Err(NamespaceError::NoTools(registration.id));
        }
        let mut entries = self.lock();
        if let Some((owner, _)) = entries.get(&registration.id)
            && owner != plugin_id
        {
            return Err(NamespaceError::Id(registration.id));
        }
        if entries.iter().any(|(id, (_, other))| {
            *id != registration.id && other.global_name == registration.global_name
        }) {
            return Err(NamespaceError::GlobalName(
                registration.global_name,
                "already taken by another namespace",
            ));
        }
        entries.insert(
            registration.id.clone(),
            (plugin_id.to_owned(), registration),
        );
        Ok(())
    }

    /// Removes every namespace of a plugin (disable, uninstall, rollback).
    pub fn clear_plugin(&self, plugin_id: &str) -> usize {
        let mut entries = self.lock();
        let before = entries.len();
        entries.retain(|_, (owner, _)| owner != plugin_id);
        before - entries.len()
    }

    /// Removes everything (tests).
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// Registered namespaces: (plugin id, registration), by id.
    pub fn list(&self) -> Vec<(String, NamespaceRegistration)> {
        self.lock().values().cloned().collect()
    }

    /// The namespaces visible in a run, with scopes built and serialized.
    /// Namespaces whose scope is refused are reported and left out.
    pub fn for_run(&self, catalog: &Catalog, ctx: &NamespaceContext) -> RunNamespaces {
        let mut out = RunNamespaces::default();
        for (plugin_id, registration) in self.list() {
            let mut tools = BTreeMap::new();
            let visible = registration.required_tool_names.iter().all(|name| {
                let found = catalog.entries().iter().find(|e| {
                    e.tool.name == *name
                        && e.tool.source == ToolSource::Plugin
                        && e.tool.owner == plugin_id
                });
                if let Some(entry) = found {
                    tools.insert(name.clone(), entry.id.clone());
                }
                found.is_some()
            });
            if !visible {
                continue;
            }
            let scope = (registration.create_scope)(ctx);
            match serialize(&registration, &scope) {
                Ok((value, callables)) => out.visible.push(VisibleNamespace {
                    plugin_id,
                    tool_ids: tools,
                    value,
                    callables,
                    registration,
                }),
                Err(error) => {
                    tracing::warn!(plugin = %plugin_id, %error, "code mode namespace refused");
                    out.refused.push(error);
                }
            }
        }
        out
    }
}

/// `registerCodeModeNamespaceForPlugin(pluginId, registration)` on the
/// process registry.
pub fn register_code_mode_namespace_for_plugin(
    plugin_id: &str,
    registration: NamespaceRegistration,
) -> Result<(), NamespaceError> {
    NamespaceRegistry::global().register(plugin_id, registration)
}

/// `clearCodeModeNamespacesForPlugin(pluginId)` on the process registry.
pub fn clear_code_mode_namespaces_for_plugin(plugin_id: &str) -> usize {
    NamespaceRegistry::global().clear_plugin(plugin_id)
}

/// `clearCodeModeNamespacesForTest()` on the process registry.
pub fn clear_code_mode_namespaces_for_test() {
    NamespaceRegistry::global().clear();
}

/// A namespace visible in a run.
#[derive(Debug, Clone)]
pub struct VisibleNamespace {
    /// The owner.
    pub plugin_id: String,
    /// The registration.
    pub registration: NamespaceRegistration,
    /// Required tool name → catalog id in this run.
    pub tool_ids: BTreeMap<String, String>,
    /// The scope's plain data (callable members are `null` here).
    pub value: Value,
    /// Callable members by joined path.
    pub callables: BTreeMap<String, NamespaceTool>,
}

/// The namespaces of one run.
#[derive(Debug, Clone, Default)]
pub struct RunNamespaces {
    /// Visible ones, by id.
    pub visible: Vec<VisibleNamespace>,
    /// Scopes refused (the namespace is absent from the run).
    pub refused: Vec<NamespaceError>,
}

impl RunNamespaces {
    /// Descriptors for the guest: `[{id, globalName, value, callables}]`.
    pub fn descriptors(&self) -> Value {
        Value::Array(
            self.visible
                .iter()
                .map(|ns| {
                    let callables: Vec<Vec<&str>> = ns
                        .callables
                        .keys()
                        .map(|path| path.split(PATH_SEPARATOR).collect())
                        .collect();
                    json!({"id": ns.registration.id, "globalName": ns.registration.global_name,
                           "value": ns.value, "callables": callables})
                })
                .collect(),
        )
    }

    /// Resolves a guest call: the backing tool's catalog id and input.
    pub fn resolve(
        &self,
        id: &str,
        path: &str,
        args: &[Value],
    ) -> Result<(String, Value), HostCallError> {
        let ns = self
            .visible
            .iter()
            .find(|ns| ns.registration.id == id)
            .ok_or_else(|| not_found(format!("unknown namespace {:?}", clip(id))))?;
        let tool = ns.callables.get(path).ok_or_else(|| {
            not_found(format!(
                "namespace {:?} has no callable {:?}",
                ns.registration.global_name,
                clip(&path.replace(PATH_SEPARATOR, "."))
            ))
        })?;
        let catalog_id = ns
            .tool_ids
            .get(&tool.tool_name)
            .ok_or_else(|| not_found(format!("tool {:?} is not declared", tool.tool_name)))?;
        Ok((catalog_id.clone(), tool.input(args)))
    }
}

fn not_found(message: String) -> HostCallError {
    HostCallError::new(message).with_code("not_found")
}

fn clip(text: &str) -> String {
    text.chars().take(128).collect()
}
