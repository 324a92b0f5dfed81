//! TypeScript declarations of MCP servers for the guest's `API.read`:
//! `mcp/index.d.ts` lists the visible servers, `mcp/<server>.d.ts` types
//! each server's tools from their JSON Schemas (required and optional
//! fields, nested objects, enums, arrays, unions, descriptions as JSDoc).
//! Output is deterministic: servers, tools and properties sort by name.

use serde_json::{Map, Value};

/// One tool of a server, as the declarations need it.
#[derive(Debug, Clone, Copy)]
pub struct DtsTool<'a> {
    /// The MCP tool name.
    pub name: &'a str,
    /// Its description.
    pub description: &'a str,
    /// Its input JSON Schema.
    pub input_schema: &'a Value,
}

/// Nesting beyond this renders as `unknown`.
const MAX_DEPTH: usize = 8;

/// `mcp/index.d.ts` for the visible servers (name, tool count).
pub fn index_dts(servers: &[(&str, usize)]) -> String {
    let mut servers: Vec<&(&str, usize)> = servers.iter().collect();
    servers.sort_by(|a, b| a.0.cmp(b.0));
    let mut out = String::from(
        "// MCP servers visible in this run. Each has its own declarations: API.read(\"mcp/<server>.d.ts\").\n\
         declare const MCP: {\n",
    );
    for (name, tools) in servers {
        out.push_str(&format!(
            "  /** {tools} tool{}: see mcp/{name}.d.ts */\n",
            if *tools == 1 { "" } else { "s" }
        ));
        out.push_str(&format!(
            "  readonly {}: {};\n",
            property_key(name),
            interface_name(name)
        ));
    }
    out.push_str("};\n");
    out
}

/// `mcp/<server>.d.ts`.
pub fn server_dts(server: &str, tools: &[DtsTool<'_>]) -> String {
    let mut tools: Vec<&DtsTool<'_>> = tools.iter().collect();
    tools.sort_by(|a, b| a.name.cmp(b.name));
    let mut out = format!(
        "// MCP server {server:?}: {} tool{}. Call as MCP.{}.<tool>(input); results keep MCP's shape.\n\
         interface MCPToolResult {{\n  content: Array<{{ type: string; text?: string; [key: string]: unknown }}>;\n  \
         structuredContent?: unknown;\n  isError?: boolean;\n}}\n\n",
        tools.len(),
        if tools.len() == 1 { "" } else { "s" },
        if is_identifier(server) {
            server.to_owned()
        } else {
            format!("[{server:?}]")
        },
    );
    out.push_str(&format!("interface {} {{\n", interface_name(server)));
    for tool in tools {
        push_doc(&mut out, tool.description, 1);
        let input = render_type(tool.input_schema, 1, 0);
        out.push_str(&format!(
            "  {}(input: {input}): Promise<MCPToolResult>;\n",
            property_key(tool.name)
        ));
    }
    out.push_str(
        "  /** The schema of one tool (or a list of all), as JSON. */\n  \
         $api(toolName?: string, options?: { schema?: boolean }): Promise<unknown>;\n}\n",
    );
    out
}

/// `MCP_<server>`, with characters that cannot appear in a type name
/// replaced by `_`.
fn interface_name(server: &str) -> String {
    let safe: String = server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("MCP_{safe}")
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

fn property_key(name: &str) -> String {
    if is_identifier(name) {
        name.to_owned()
    } else {
        format!("{name:?}")
    }
}

fn push_doc(out: &mut String, text: &str, indent: usize) {
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    let pad = "  ".repeat(indent);
    // `*/` would end the comment early.
    let text = text.replace("*/", "*\\/");
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() == 1 {
        out.push_str(&format!("{pad}/** {} */\n", lines[0]));
    } else {
        out.push_str(&format!("{pad}/**\n"));
        for line in lines {
            out.push_str(&format!("{pad} * {}\n", line.trim_end()));
        }
        out.push_str(&format!("{pad} */\n"));
    }
}

/// A JSON Schema as a TypeScript type, at `indent` levels.
fn render_type(schema: &Value, indent: usize, depth: usize) -> String {
    if depth > MAX_DEPTH {
        return "unknown".into();
    }
    let Some(object) = schema.as_object() else {
        return if schema == &Value::Bool(false) {
            "never".into()
        } else {
            "unknown".into()
        };
    };
    if let Some(value) = object.get("const") {
        return literal(value);
    }
    if let Some(values) = object.get("enum").and_then(Value::as_array) {
        return if values.is_empty() {
            "never".into()
        } else {
            values.iter().map(literal).collect::<Vec<_>>().join(" | ")
        };
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(variants) = object.get(key).and_then(Value::as_array) {
            let parts: Vec<String> = variants
                .iter()
                .map(|v| render_type(v, indent, depth + 1))
                .collect();
            return union(parts);
        }
    }
    if let Some(all) = object.get("allOf").and_then(Value::as_array) {
        let parts: Vec<String> = all
            .iter()
            .map(|v| render_type(v, indent, depth + 1))
            .collect();
        return if parts.is_empty() {
            "unknown".into()
        } else {
            parts.join(" & ")
        };
    }
    match object.get("type") {
        Some(Value::Array(types)) => {
            let parts: Vec<String> = types
                .iter()
                .filter_map(Value::as_str)
                .map(|t| {
                    let mut single = object.clone();
                    single.insert("type".into(), Value::String(t.into()));
                    render_type(&Value::Object(single), indent, depth + 1)
                })
                .collect();
            union(parts)
        }
        Some(Value::String(t)) => match t.as_str() {
            "string" => "string".into(),
            "number" | "integer" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => array(object, indent, depth),
            "object" => object_type(object, indent, depth),
            _ => "unknown".into(),
        },
        _ if object.contains_key("properties") => object_type(object, indent, depth),
        _ if object.contains_key("items") => array(object, indent, depth),
        _ => "unknown".into(),
    }
}

fn union(parts: Vec<String>) -> String {
    let mut unique: Vec<String> = Vec::new();
    for part in parts {
        if !unique.contains(&part) {
            unique.push(part);
        }
    }
    match unique.len() {
        0 => "unknown".into(),
        1 => unique.remove(0),
        _ => unique
            .iter()
            .map(|p| {
                if p.contains('\n') {
                    format!("({p})")
                } else {
                    p.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" | "),
    }
}

fn array(object: &Map<String, Value>, indent: usize, depth: usize) -> String {
    let item = object.get("items").map_or_else(
        || "unknown".to_owned(),
        |i| render_type(i, indent, depth + 1),
    );
    if item.contains(' ') || item.contains('\n') {
        format!("Array<{item}>")
    } else {
        format!("{item}[]")
    }
}

fn object_type(object: &Map<String, Value>, indent: usize, depth: usize) -> String {
    let required: Vec<&str> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let properties = object.get("properties").and_then(Value::as_object);
    let additional = object.get("additionalProperties");
    if properties.is_none_or(|p| p.is_empty()) {
        return match additional {
            Some(Value::Object(_)) => format!(
                "Record<string, {}>",
                render_type(additional.unwrap_or(&Value::Null), indent, depth + 1)
            ),
            Some(Value::Bool(false)) => "{}".into(),
            _ => "Record<string, unknown>".into(),
        };
    }
    let pad = "  ".repeat(indent + 1);
    let mut out = String::from("{\n");
    for (name, property) in properties.into_iter().flatten() {
        if let Some(description) = property.get("description").and_then(Value::as_str) {
            push_doc(&mut out, description, indent + 1);
        }
        let optional = if required.contains(&name.as_str()) {
            ""
        } else {
            "?"
        };
        out.push_str(&format!(
            "{pad}{}{optional}: {};\n",
            property_key(name),
            render_type(property, indent + 1, depth + 1)
        ));
    }
    if let Some(Value::Object(_)) = additional {
        out.push_str(&format!(
            "{pad}[key: string]: {};\n",
            render_type(additional.unwrap_or(&Value::Null), indent + 1, depth + 1)
        ));
    }
    out.push_str(&format!("{}}}", "  ".repeat(indent)));
    out
}

fn literal(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Number(_) | Value::Bool(_) | Value::Null => value.to_string(),
        _ => "unknown".into(),
    }
}
