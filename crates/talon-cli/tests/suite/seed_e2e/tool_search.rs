//! Seed 004's Tool Search plan ("E2E 검증") through a real gateway.

use super::*;

/// Seed 004, "E2E 검증": a large fake catalog; the gateway in direct mode,
/// then (stopped, `talon config set tools.toolSearch true`, started again)
/// with Tool Search's default `code` mode; the requests the mock recorded
/// and the session logs compared.
fn tool_search_plan(wire: Wire) {
    let bridge = "const hits = await openclaw.tools.search('manages widgets of kind 42'); \
                  const tool = await openclaw.tools.describe(hits[0].id); \
                  return await openclaw.tools.call(tool.id, {widget: 'w1'});";
    let mut plan = Plan::new(
        wire,
        json!([
            {"toolCalls": [{"name": "fake_tool_042", "arguments": {"widget": "w1"}}]},
            {"text": "done directly"},
            {"toolCalls": [{"name": "tool_search_code", "arguments": {"code": bridge}}]},
            {"text": "done through tool search"},
        ]),
        json!({"fake": {"command": "node", "args": [fixture(), "catalog", "300"]}}),
        "",
    );
    let input = |key: &str| json!({"input": "Operate widget w1.", "sessionKey": key, "tools": [pick_color()]});
    let mut r = Redactor::new().with(plan.home().to_str().unwrap(), "<home>");

    // Direct mode.
    let life = plan.start();
    let (direct, direct_events) = life.run(input("direct"));
    assert_eq!(direct["status"], "completed", "{direct}");
    let direct_request = plan.requests()[0].clone();
    let offered = request_tools(&direct_request);
    // 3. Direct mode exposes the fake tools' schemas to the provider: all
    // 300 of them, then the core tools, `ask_user` and the app's tool.
    let fakes: Vec<String> = (0..300).map(|i| format!("fake_tool_{i:03}")).collect();
    assert_eq!(offered[..300], fakes[..]);
    assert_eq!(
        offered[300..],
        [
            "edit",
            "exec",
            "grep",
            "list",
            "read",
            "write",
            "ask_user",
            "pick_color"
        ]
    );
    let exposed = request_tool_list(&direct_request)
        .into_iter()
        .find(|t| t["name"] == "fake_tool_042")
        .unwrap();
    pretty_assertions::assert_eq!(
        exposed,
        json!({
            "name": "fake_tool_042",
            "description": "Fake plugin tool number 42 that manages widgets of kind 42.",
            "parameters": {"type": "object", "properties": {
                "widget": {"type": "string", "description": "The widget identifier to operate on"},
                "mode": {"type": "string", "enum": ["fast", "safe", "dry-run"], "description": "How to run"},
                "count": {"type": "integer", "description": "How many widgets"}},
                "required": ["widget"]}})
    );
    // The log's run.started names what the request offered.
    let started = &direct_events[1];
    assert_eq!(started["type"], "run.started");
    assert_eq!(started["data"]["tools"], json!(offered));
    let mut shown = direct_events.clone();
    shown[1]["data"]["tools"] = format!("<the request's {} tools>", offered.len()).into();
    // 1. The fake tool is called by name and answers; the end event's
    // telemetry: 308 schemas seen from the start, the catalog by source,
    // no search, the call of mcp:fake:fake_tool_042 (not nested).
    insta::assert_json_snapshot!("tool_search_direct_log", log(&mut r, &shown));
    life.stop();

    // Tool Search, by the CLI, on the same state directory.
    plan.set("tools.toolSearch", "true");
    let life = plan.start();
    let (searched, search_events) = life.run(input("search"));
    assert_eq!(searched["status"], "completed", "{searched}");
    let requests = plan.requests();
    assert_eq!(requests.len(), 4);
    let search_request = &requests[2];
    // 4. Only the compact bridge, and the direct-only tool (the app's: a
    // bridge cannot wait for an app), whole.
    insta::assert_json_snapshot!(
        "tool_search_offered",
        json!(request_tool_list(search_request))
    );
    // Every request of the run offered the same.
    assert_eq!(
        request_tool_list(&requests[3]),
        request_tool_list(search_request)
    );
    // 2. The same fake tool is called, through the bridge: search,
    // describe and call (its call `call_1/3` nested under the model's
    // `tool_search_code` call); 6. the end event's telemetry: one schema
    // seen from the start (and the app's tool), one search, one describe,
    // one bridge call, one code run, and the fake tool called, nested,
    // with its source.
    insta::assert_json_snapshot!("tool_search_log", log(&mut r, &search_events));
    // 5. With the large catalog the Tool Search request is much smaller,
    // as the mock received it and as the telemetry counts it.
    let (direct_bytes, search_bytes) = (
        direct_request.to_string().len(),
        search_request.to_string().len(),
    );
    assert!(
        search_bytes * 20 < direct_bytes,
        "direct {direct_bytes} B, Tool Search {search_bytes} B"
    );
    let (direct_t, search_t) = (telemetry(&direct_events), telemetry(&search_events));
    // The telemetry counts the tools as the provider sent them.
    assert_eq!(
        (&direct_t["toolBytes"], &search_t["toolBytes"]),
        (
            &json!(direct_request["tools"].to_string().len()),
            &json!(search_request["tools"].to_string().len())
        )
    );
    for key in ["toolBytes", "bytesSent"] {
        let (d, s) = (
            direct_t[key].as_u64().unwrap(),
            search_t[key].as_u64().unwrap(),
        );
        assert!(s * 20 < d, "{key}: direct {d}, Tool Search {s}");
    }
    // The session log answers the seed's questions side by side.
    let questions = |t: &Value| {
        json!({
            "schemasSeenFromTheStart": t["visibleTools"],
            "searches": t["searches"],
            "describes": t["describes"],
            "bridgeCalls": t["bridgeCalls"],
            "calledAndSource": t["called"],
            "catalogBySource": t["catalogBySource"],
        })
    };
    insta::assert_json_snapshot!(
        "tool_search_compared",
        json!({"direct": questions(&direct_t), "toolSearch": questions(&search_t)})
    );
    // Each run's trajectory (the direct one from before the restart)
    // holds the same end event.
    for (result, events) in [(&direct, &direct_events), (&searched, &search_events)] {
        let trajectory = trajectory_events(&life.trajectory(result));
        let ended = trajectory.iter().rfind(|e| e["type"] == "run.completed");
        assert_eq!(ended.unwrap()["data"]["telemetry"], telemetry(events));
    }
    life.stop();
}

#[test]
fn seed_004_tool_search_plan_through_the_gateway_over_chat_completions() {
    tool_search_plan(Wire::OpenAi);
}

#[test]
fn seed_004_tool_search_plan_through_the_gateway_over_anthropic_messages() {
    tool_search_plan(Wire::Anthropic);
}
