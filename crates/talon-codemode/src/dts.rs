//! TypeScript declarations of MCP servers for the guest's `API.read`, in
//! the seed's form: `mcp/index.d.ts` lists the visible servers,
//! `mcp/<server>.d.ts` declares `namespace MCP.<server>` with `$api` and one
//! function per tool, typed from the tool's JSON Schema (required and
//! optional fields, nested objects, enums, arrays, unions, descriptions as
//! JSDoc with `@param` lines).
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

/// The name a server or tool gets in the guest's `MCP` namespace, as in
/// the seed's examples: its words in lowerCamelCase (`create_issue` →
/// `createIssue`, `chrome-devtools` → `chromeDevtools`); `None` when no
/// identifier remains (such tools stay callable by exact id).
pub fn guest_name(name: &str) -> Option<String> {
    let words: Vec<&str> = name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let mut out = String::new();
    for (i, word) in words.iter().enumerate() {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            if i == 0 {
                out.push(first.to_ascii_lowercase());
            } else {
                out.push(first.to_ascii_uppercase());
            }
            out.extend(chars);
        }
    }
    is_identifier(&out).then_some(out)
}

/// `mcp/index.d.ts` for the visible servers (name, tool count).
pub fn index_dts(servers: &[(&str, usize)]) -> String {
    let mut servers: Vec<&(&str, usize)> = servers.iter().collect();
    servers.sort_by(|a, b| a.0.cmp(b.0));
    let mut out = String::from(
        "// MCP servers visible in this run. Read one server's API with API.read(\"mcp/<server>.d.ts\").\n",
    );
    for (name, tools) in servers {
        let Some(guest) = guest_name(name) else {
            continue;
        };
        out.push_str(&format!(
            "// MCP.{guest}: server {name:?}, {tools} tool{} (mcp/{name}.d.ts)\n",
            if *tools == 1 { "" } else { "s" }
        ));
    }
    out.push_str(RESULT_TYPES);
    out
}

/// The result types every declaration file shares, as the seed spells them.
const RESULT_TYPES: &str = "type McpToolResult = {\n  content?: unknown[];\n  structuredContent?: unknown;\n  \
                            isError?: boolean;\n  [key: string]: unknown;\n};\n\
                            /** `$api()`: this header as text; with `{ schema: true }`, the tool's JSON Schema. */\n\
                            type McpApiHeader = string | { name: string; description?: string; inputSchema: unknown };\n";

/// `mcp/<server>.d.ts`, in the seed's form: a `declare namespace
/// MCP.<server>` with `$api` and one function per tool.
pub fn server_dts(server: &str, tools: &[DtsTool<'_>]) -> String {
    let mut tools: Vec<&DtsTool<'_>> = tools.iter().collect();
    tools.sort_by(|a, b| a.name.cmp(b.name));
    let namespace = guest_name(server).unwrap_or_else(|| "_".to_owned());
    let mut out = format!(
        "// MCP server {server:?}.\n{RESULT_TYPES}\ndeclare namespace MCP.{namespace} {{\n"
    );
    out.push_str(
        "  /** Return this TypeScript-style API header. */\n  \
         function $api(toolName?: string, options?: { schema?: boolean }): Promise<McpApiHeader>;\n",
    );
    let mut unnamed = Vec::new();
    let names: Vec<Option<String>> = tools.iter().map(|t| guest_name(t.name)).collect();
    for (tool, function) in tools.iter().zip(&names) {
        let unique = function
            .as_ref()
            .filter(|f| names.iter().filter(|n| n.as_ref() == Some(*f)).count() == 1);
        let Some(function) = unique else {
            unnamed.push(tool.name);
            continue;
        };
        out.push('\n');
        push_function_doc(&mut out, tool);
        let input = render_type(tool.input_schema, 1, 0);
        out.push_str(&format!(
            "  function {function}(input: {input}): Promise<McpToolResult>;\n"
        ));
    }
    for name in unnamed {
        out.push_str(&format!(
            "\n  // {name:?} has no unambiguous identifier form: call it as MCP.{namespace}[{name:?}](input).\n"
        ));
    }
    out.push_str("}\n");
    out
}

/// The tool's description and `@param` lines for its top-level inputs.
fn push_function_doc(out: &mut String, tool: &DtsTool<'_>) {
    let mut text = tool.description.trim().to_owned();
    if let Some(properties) = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    {
        for (name, property) in properties {
            if let Some(description) = property.get("description").and_then(Value::as_str) {
                let first = description.lines().next().unwrap_or_default().trim();
                text.push_str(&format!("\n@param {name} {first}"));
            }
        }
    }
    push_doc(out, text.trim_start_matches('\n'), 1);
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

#[cfg(test)]
mod tests {
    use super::guest_name;

    #[test]
    fn colliding_tool_names_get_no_function() {
        let schema = serde_json::json!({"type": "object"});
        let tool = |name| super::DtsTool {
            name,
            description: "",
            input_schema: &schema,
        };
        let text = super::server_dts(
            "s",
            &[tool("create_issue"), tool("create-issue"), tool("list")],
        );
        assert!(text.contains("function list(input"));
        assert!(!text.contains("function createIssue"));
        assert!(text.contains("// \"create-issue\" has no unambiguous identifier form"));
        assert!(text.contains("// \"create_issue\" has no unambiguous identifier form"));
    }

    #[test]
    fn guest_names() {
        assert_eq!(guest_name("github").as_deref(), Some("github"));
        assert_eq!(guest_name("create_issue").as_deref(), Some("createIssue"));
        assert_eq!(guest_name("takeSnapshot").as_deref(), Some("takeSnapshot"));
        assert_eq!(
            guest_name("chrome-devtools").as_deref(),
            Some("chromeDevtools")
        );
        assert_eq!(
            guest_name("get-tiny-image").as_deref(),
            Some("getTinyImage")
        );
        assert_eq!(guest_name("my server v2").as_deref(), Some("myServerV2"));
        assert_eq!(guest_name("123"), None);
        assert_eq!(guest_name("---"), None);
    }
}
