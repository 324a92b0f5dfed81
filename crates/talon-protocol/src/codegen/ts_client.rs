//! `client.ts`: the TypeScript low-level client, one namespace per
//! resource, mirroring the seed's `oc.runs.events(runId, { after })`.
//!
//! A method's params become its arguments this way:
//! - no params (`Empty`): `(options?)`;
//! - params keyed by the namespace's own id (`runId` in `runs.*`,
//!   `approvalId` in `approvals.*`, the tool's name in `tools.invoke`):
//!   that id first, then the other params (optional when none is
//!   required), then `options?`;
//! - otherwise the params object (optional when none of its fields is
//!   required), then `options?`.
//!
//! Every method goes through one [`Caller`](#) (the hand-written
//! transport), which checks the table's `stability`, fills in an
//! idempotency key and retries by the method's effect. A list method (its
//! params take `cursor`, its result has `nextCursor` beside one array)
//! returns a `PagePromise` (hand-written, `pages.ts`): awaited, the first
//! page; iterated with `for await`, every item of every page.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use super::typescript::{HEADER, defs, doc_comment, methods_of, ref_name, takes_key, ts_name};

/// The property a namespace's methods take first, by namespace.
const KEYS: &[(&str, &str)] = &[
    ("agents", "agentId"),
    ("sessions", "sessionId"),
    ("runs", "runId"),
    ("tasks", "taskId"),
    ("tools", "tool"),
    ("artifacts", "artifactId"),
    ("approvals", "approvalId"),
    ("questions", "questionId"),
    ("environments", "environmentId"),
];

fn required(doc: &Value, params: &str) -> Vec<String> {
    defs(doc)
        .get(params)
        .and_then(|d| d.get("required"))
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A method's name split into its namespace and its function: `runs`,
/// `events`.
fn split(name: &str) -> (&str, &str) {
    name.split_once('.').unwrap_or(("", name))
}

/// `snake.case` or `dotted` namespace as a TypeScript type name: `runs` →
/// `RunsMethods`.
fn namespace_type(namespace: &str) -> String {
    let mut chars = namespace.chars();
    let first = chars.next().map(|c| c.to_ascii_uppercase());
    format!(
        "{}{}Methods",
        first.map(String::from).unwrap_or_default(),
        chars.as_str()
    )
}

struct Rendered {
    /// The interface member: doc and signature.
    signature: String,
    /// The implementation in the constructor.
    body: String,
}

fn render(doc: &Value, method: &Value) -> Rendered {
    let name = method["name"].as_str().unwrap_or_default();
    let (namespace, function) = split(name);
    let params = ts_name(ref_name(&method["params"]).unwrap_or("Empty")).to_owned();
    let result = ts_name(ref_name(&method["result"]).unwrap_or("Empty")).to_owned();
    let required = required(doc, &params);
    let key = KEYS
        .iter()
        .find(|(ns, key)| *ns == namespace && required.iter().any(|r| r == key))
        .map(|(_, key)| *key);
    let mut text = method["description"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let keyed = method["effect"] == "write" && takes_key(doc, &params);
    let effect = match (method["effect"].as_str(), keyed) {
        (Some("read"), _) => "reads, retried on a retryable error",
        (_, true) => "writes, given an idempotency key when none is passed and retried with it",
        _ => "writes, sent once",
    };
    let stability = match method["stability"].as_str() {
        Some("unsupported") => "not served yet: throws `unsupported`".to_owned(),
        Some(other) => other.to_owned(),
        None => String::new(),
    };
    let _ = write!(
        text,
        "\n\n`{name}`: needs `{}`; {effect}; {stability}.",
        method["scope"].as_str().unwrap_or_default()
    );
    let paged = paged_items(doc, &params, &result);
    let result_type = match &paged {
        Some(items) => format!("PagePromise<T.{result}, T.{result}[\"{items}\"][number]>"),
        None => format!("Promise<T.{result}>"),
    };
    // The arguments before `options`: (name, declaration).
    let mut args: Vec<(&str, String)> = Vec::new();
    let call_params = if params == "Empty" {
        "{}".to_owned()
    } else if let Some(key) = key {
        args.push((key, format!("{key}: T.{params}[\"{key}\"]")));
        if only_property(doc, &params) {
            format!("{{ {key} }}")
        } else {
            let optional = if required.iter().any(|r| r != key) {
                ""
            } else {
                "?"
            };
            args.push((
                "params",
                format!("params{optional}: Omit<T.{params}, \"{key}\">"),
            ));
            format!("{{ ...params, {key} }}")
        }
    } else if required.is_empty() {
        args.push(("params", format!("params?: T.{params}")));
        "params ?? {}".to_owned()
    } else {
        args.push(("params", format!("params: T.{params}")));
        "params".to_owned()
    };
    let mut signature = String::new();
    doc_comment(&mut signature, Some(&text), "  ");
    let declared: String = args.iter().map(|(_, d)| format!("{d}, ")).collect();
    let _ = writeln!(
        signature,
        "  {function}({declared}options?: CallOptions): {result_type};"
    );
    let names: String = args.iter().map(|(n, _)| format!("{n}, ")).collect();
    let body = match &paged {
        // Awaited, the first page; iterated, every item of every page.
        Some(items) => format!(
            "      {function}: ({names}options) =>\n        new PagePromise(\n          \
             (cursor) =>\n            caller.call(\"{name}\", cursor === undefined ? {call_params} : \
             {{ ...({call_params}), cursor }}, options),\n          \
             (page) => page.{items},\n          (page) => page.nextCursor,\n        ),\n"
        ),
        None => format!(
            "      {function}: ({names}options) =>\n        caller.call(\"{name}\", {call_params}, options),\n"
        ),
    };
    Rendered { signature, body }
}

/// The items' property of a list method's result, when the method pages:
/// its params take a `cursor` and its result has `nextCursor` beside one
/// array (`agents`, `runs`, ...).
fn paged_items(doc: &Value, params: &str, result: &str) -> Option<String> {
    let properties = |name: &str| {
        defs(doc)
            .get(name)
            .and_then(|d| d.get("properties"))
            .and_then(Value::as_object)
    };
    let takes_cursor = properties(params).is_some_and(|p| p.contains_key("cursor"));
    let result = properties(result)?;
    if !takes_cursor || !result.contains_key("nextCursor") {
        return None;
    }
    let mut arrays = result
        .iter()
        .filter(|(_, schema)| schema["type"] == "array")
        .map(|(name, _)| name.clone());
    match (arrays.next(), arrays.next()) {
        (Some(items), None) => Some(items),
        _ => None,
    }
}

/// Whether the params type has no property but its required ones.
fn only_property(doc: &Value, params: &str) -> bool {
    let def = defs(doc).get(params);
    let properties = def
        .and_then(|d| d.get("properties"))
        .and_then(Value::as_object)
        .map_or(0, serde_json::Map::len);
    properties == required(doc, params).len()
}

pub(super) fn client(doc: &Value) -> String {
    let mut by_namespace: BTreeMap<&str, Vec<Rendered>> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for method in methods_of(doc) {
        let name = method["name"].as_str().unwrap_or_default();
        let (namespace, _) = split(name);
        if !order.contains(&namespace) {
            order.push(namespace);
        }
        by_namespace
            .entry(namespace)
            .or_default()
            .push(render(doc, method));
    }
    let mut out = String::from(HEADER);
    out.push_str(
        "//\n// The low-level client: one namespace per resource, one function per method\n\
         // of the table.\n\n\
         import { PagePromise } from \"../pages.js\";\n\
         import type { MethodName, MethodTypes } from \"./methods.js\";\n\
         import type * as T from \"./types.js\";\n\n\
         /** Per-call options: cancellation, a deadline, retries. */\n\
         export interface CallOptions {\n\
         \x20 /** Aborts the call (and its retries). */\n  signal?: AbortSignal;\n\
         \x20 /** Gives up after this many milliseconds, retries included. */\n  timeoutMs?: number;\n\
         \x20 /** How many times a retryable failure is tried again (default: the client's). */\n  \
         maxRetries?: number;\n\
         }\n\n\
         /** What sends a call: the SDK's transport. */\n\
         export interface Caller {\n\
         \x20 call<M extends MethodName>(\n    method: M,\n    params: MethodTypes[M][\"params\"],\n    \
         options?: CallOptions,\n  ): Promise<MethodTypes[M][\"result\"]>;\n\
         }\n",
    );
    for namespace in &order {
        let _ = writeln!(out, "\n/** The `{namespace}.*` methods. */");
        let _ = writeln!(out, "export interface {} {{", namespace_type(namespace));
        for rendered in &by_namespace[namespace] {
            out.push_str(&rendered.signature);
        }
        out.push_str("}\n");
    }
    out.push_str(
        "\n/** The whole method table as namespaces over one [`Caller`]. */\n\
         export class GatewayClient {\n",
    );
    for namespace in &order {
        let _ = writeln!(
            out,
            "  readonly {namespace}: {};",
            namespace_type(namespace)
        );
    }
    out.push_str("\n  constructor(caller: Caller) {\n");
    for namespace in &order {
        let _ = writeln!(out, "    this.{namespace} = {{");
        for rendered in &by_namespace[namespace] {
            out.push_str(&rendered.body);
        }
        out.push_str("    };\n");
    }
    out.push_str("  }\n}\n");
    out
}
