//! `API.read` declarations, snapshot-tested.

use serde_json::json;
use talon_codemode::dts::{DtsTool, index_dts, server_dts};

#[test]
fn server_declarations_type_every_schema_shape() {
    let create_issue = json!({
        "type": "object",
        "properties": {
            "owner": {"type": "string", "description": "Repository owner."},
            "repo": {"type": "string"},
            "title": {"type": "string", "description": "Issue title.\nKeep it short."},
            "labels": {"type": "array", "items": {"type": "string"}},
            "state": {"type": "string", "enum": ["open", "closed"]},
            "milestone": {"type": ["integer", "null"]},
            "assignee": {"anyOf": [{"type": "string"}, {"type": "object", "properties": {"login": {"type": "string"}}, "required": ["login"]}]},
            "meta": {"type": "object", "additionalProperties": {"type": "number"}},
            "committer": {
                "type": "object",
                "description": "Who commits.",
                "properties": {"name": {"type": "string", "description": "Display name"}, "email": {"type": "string"}},
                "required": ["name"]
            },
            "x-weird key": {"const": 3}
        },
        "required": ["owner", "repo", "title"]
    });
    let echo = json!({"type": "object", "properties": {"message": {"type": "string", "description": "Text to echo back */ safely"}}, "required": ["message"]});
    let empty = json!({"type": "object"});
    let tools = [
        DtsTool {
            name: "create_issue",
            description: "Create an issue in a repository.",
            input_schema: &create_issue,
        },
        DtsTool {
            name: "echo",
            description: "Echo a message.",
            input_schema: &echo,
        },
        DtsTool {
            name: "get-tiny-image",
            description: "",
            input_schema: &empty,
        },
        DtsTool {
            name: "42",
            description: "Unnamed.",
            input_schema: &empty,
        },
    ];
    insta::assert_snapshot!(server_dts("github", &tools));
}

#[test]
fn the_index_lists_servers_in_order() {
    insta::assert_snapshot!(index_dts(&[
        ("github", 3),
        ("everything", 1),
        ("my-server", 2)
    ]));
}
