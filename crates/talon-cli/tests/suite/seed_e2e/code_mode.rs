//! Seed 000's Code Mode plan ("E2E 테스트 계획") through a real gateway.

use super::*;

/// The first cell of seed 000's plan (steps 7-11): the catalog it sees,
/// a search, describe and call of a core tool, a `tools.<name>` shortcut,
/// the MCP declarations, an MCP call, and calls by guessed ids of a
/// denied tool and of an MCP tool (reachable through `MCP.*` only).
const FIRST_CELL: &str = r##"
  const ids = ALL_TOOLS.map(t => t.id);
  const hits = await tools.search("read a file in the workspace");
  const read = await tools.describe(hits[0].id);
  const readme = await tools.call(read.id, {path: "README.md"});
  const listed = await tools.list({path: "."});
  const files = (await API.list("mcp")).map(f => f.path);
  const dts = await API.read("mcp/fx.d.ts");
  const echoed = await MCP.fx.echo({message: "hi"});
  const failure = async (f) => { try { await f(); return "called"; } catch (e) { return e.code; } };
  return {
    ids, hits: hits.map(h => h.id), described: {id: read.id, parameters: Object.keys(read.parameters.properties)},
    readme: readme.content, listed: listed.paths, files,
    declares: ["echo", "slowLookup", "forbidden"].filter(f => dts.includes(`function ${f}`)),
    echoed: echoed.structuredContent,
    deniedById: await failure(() => tools.call("openclaw:core:edit", {path: "README.md", oldText: "#", newText: "!"})),
    deniedShortcut: typeof tools.edit,
    mcpById: await failure(() => tools.call("mcp:fx:echo", {message: "hi"})),
    mcpShortcut: typeof tools.echo,
    deniedMcp: typeof MCP.fx.forbidden_tool,
  };"##;

/// A cell whose MCP call outlives the step (`exec` answers `waiting`).
const SLOW_CELL: &str = "text('before'); const r = await MCP.fx.slow_lookup({query: 'x'}); \
                         text('after resume'); return r.structuredContent.input.query;";

/// Seed 000, "E2E 테스트 계획": the gateway with Code Mode disabled, then
/// (stopped, `talon config set tools.codeMode.enabled true`, started
/// again) enabled, with core, MCP and client test tools.
fn code_mode_plan(wire: Wire) {
    let client_cell =
        "const c = await tools.pick_color({palette: 'warm'}); text('picked ' + c); return c;";
    let mut plan = Plan::new(
        wire,
        json!([
            // Code Mode disabled.
            {"toolCalls": [{"name": "read", "arguments": {"path": "README.md"}}]},
            {"text": "direct"},
            // Enabled: the plan's run.
            {"toolCalls": [{"name": "exec", "arguments": {"code": FIRST_CELL}}]},
            {"toolCalls": [{"name": "exec", "arguments": {"code": SLOW_CELL}}]},
            {"toolCalls": [{"name": "wait", "arguments": {"runId": "$lastTool:/runId"}}]},
            {"toolCalls": [{"name": "exec", "arguments": {"code": "while (true) {}"}}]},
            {"text": "The README is a title; the lookup gave x."},
            // A cell calls the app's tool; the app's next run answers.
            {"toolCalls": [{"name": "exec", "arguments": {"code": client_cell}}]},
            {"text": "Teal it is."},
            // A cell waits on its call, and the run is cancelled.
            {"toolCalls": [{"name": "exec", "arguments": {"code": SLOW_CELL}}]},
            {"delayMs": 60000, "text": "never"},
        ]),
        // `slow_lookup` answers 2.5 s after it is called: after its cell's
        // 2 s step (so `exec` answers `waiting`), well before the 2 s of
        // the `wait` that follows are up.
        json!({"fx": {"command": "node", "args": [fixture(), "small", "2500"]}}),
        // An object without `enabled: true` leaves Code Mode off.
        r#"deny: ["edit", "mcp:fx:forbidden_tool"], codeMode: { enabled: false, timeoutMs: 2000 }"#,
    );
    let mut r = Redactor::new().with(plan.home().to_str().unwrap(), "<home>");

    // 1. The gateway with tools.codeMode.enabled: false.
    let life = plan.start();
    // 2. A turn with a small direct tool set (the core tools but the
    // denied `edit`, `ask_user`, the MCP server's but the denied one, the
    // app's).
    let (direct, direct_events) = life
        .run(json!({"input": "Read the README.", "sessionKey": "direct", "tools": [pick_color()]}));
    assert_eq!(direct["status"], "completed", "{direct}");
    // 3. The model sees them unchanged, by name; the log's surface is
    // `direct` and `read` is called by name.
    for request in plan.requests() {
        assert_eq!(
            request_tools(&request),
            [
                "echo",
                "slow_lookup",
                "exec",
                "grep",
                "list",
                "read",
                "write",
                "ask_user",
                "pick_color"
            ]
        );
    }
    insta::assert_json_snapshot!("code_mode_disabled_log", log(&mut r, &direct_events));
    life.stop();

    // 4. Restarted with tools.codeMode.enabled: true.
    plan.set("tools.codeMode.enabled", "true");
    let life = plan.start();
    // 5. A turn with core, MCP and client test tools.
    let (result, events) =
        life.run(json!({"input": "Use the tools.", "sessionKey": "plan", "tools": [pick_color()]}));
    assert_eq!(result["status"], "completed", "{result}");
    let requests = plan.requests();
    assert_eq!(requests.len(), 7);
    // 6. Every request of the run offers exactly exec and wait.
    for request in &requests[2..7] {
        assert_eq!(request_tools(request), ["exec", "wait"]);
    }
    // 7-11. The first cell's answer, as the model received it: ALL_TOOLS
    // has the core, runtime and client tools but not the denied `edit`
    // nor any MCP entry; the search finds `read`, which answers; the MCP
    // declarations describe the visible MCP tools (not the denied one) and
    // `MCP.fx.echo` answers; the denied tool and the MCP entry fail by id,
    // and neither has a shortcut.
    insta::assert_json_snapshot!(
        "code_mode_first_cell",
        stable(&mut r, &last_tool_result(&requests[3]))
    );
    // 12. The second cell waits on its MCP call, which resolves after exec
    // returned `waiting`.
    insta::assert_json_snapshot!(
        "code_mode_second_cell",
        stable(&mut r, &last_tool_result(&requests[4]))
    );
    // 13-14. `wait` resumes the stored cell; the restored VM gets the
    // call's result and prints after the resume.
    insta::assert_json_snapshot!(
        "code_mode_resumed_cell",
        stable(&mut r, &last_tool_result(&requests[5]))
    );
    // 15. An endless cell times out.
    insta::assert_json_snapshot!(
        "code_mode_timed_out_cell",
        stable(&mut r, &last_tool_result(&requests[6]))
    );
    // The session log: every call, the nested ones under their exec, and
    // the end event's telemetry (3 execs, 1 wait, 1 search, 1 describe,
    // the nested calls in the order they ended, the timeout counted).
    insta::assert_json_snapshot!("code_mode_log", log(&mut r, &events));
    // 15. Nothing is left of the cells: the resumed one was deleted, the
    // timed-out one never stored.
    assert_eq!(stored_cells(plan.home()), 0);
    // 16. The trajectory shows the nested calls under their parent exec
    // calls.
    let trajectory = trajectory_events(&life.trajectory(&result));
    let nested: Vec<Value> = trajectory
        .iter()
        .filter(|e| e["type"] == "tool.call.started")
        .map(|e| json!({"callId": e["data"]["callId"], "parentId": e["data"]["parentId"], "name": e["data"]["name"]}))
        .collect();
    insta::assert_json_snapshot!("code_mode_trajectory_calls", nested);

    // 8. A client tool from a cell: the cell waits for the app, the run
    // completes with the call pending; the app's next run answers it and
    // the cell goes on.
    let (asked, asked_events) =
        life.run(json!({"input": "Pick a colour.", "sessionKey": "app", "tools": [pick_color()]}));
    let pending = asked_events.last().unwrap()["data"]["pendingToolCalls"].clone();
    let call_id = pending[0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{pending}"))
        .to_owned();
    let (answered, answered_events) = life
        .run(json!({"sessionKey": "app", "tools": [pick_color()],
        "input": [{"role": "tool", "toolCallId": call_id, "content": "teal"}]}));
    let requests = plan.requests();
    insta::assert_json_snapshot!(
        "code_mode_client_tool",
        json!({
            "asked": stable(&mut r, &asked),
            "log": log(&mut r, &asked_events),
            "answered": stable(&mut r, &answered),
            "answeredLog": log(&mut r, &answered_events),
            "cell": stable(&mut r, &last_tool_result(&requests[8])),
        })
    );

    // 15. A run cancelled while its cell waits on a call: the call is
    // aborted and the cell deleted.
    let aborted = life.create(json!({"input": "Look it up, then hang.", "sessionKey": "abort"}));
    wait::until(
        "the model to be asked again after the cell suspended",
        wait::DEADLINE,
        || plan.requests().len() == 11,
    );
    assert_eq!(stored_cells(plan.home()), 1);
    life.call("runs.cancel", json!({"runId": aborted}));
    let cancelled = life.wait(&aborted);
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let abort_events = life.events(&aborted);
    // The log up to the cell's `waiting` answer, and the end event.
    let waiting = abort_events
        .iter()
        .position(|e| e["type"] == "tool.call.completed" && e["data"]["name"] == "exec")
        .unwrap();
    let (before, after) = abort_events.split_at(waiting + 1);
    let (end, between) = after.split_last().unwrap();
    assert_eq!(end["type"], "run.cancelled", "{end}");
    // The aborted MCP call's `tool.call.failed` comes before the end, and
    // the end event's `called` lists it.
    assert_eq!(between.len(), 1, "{between:?}");
    let failed = &between[0];
    assert_eq!(
        (
            &failed["type"],
            &failed["data"]["status"],
            &failed["data"]["name"]
        ),
        (
            &json!("tool.call.failed"),
            &json!("aborted"),
            &json!("mcp:fx:slow_lookup")
        ),
        "{failed}"
    );
    let mut end = end.clone();
    let called = end["data"]["telemetry"]
        .as_object_mut()
        .unwrap()
        .remove("called")
        .unwrap();
    assert_eq!(
        called,
        json!([{"id": "mcp:fx:slow_lookup", "nested": true, "source": "mcp", "status": "aborted"}])
    );
    insta::assert_json_snapshot!(
        "code_mode_cancelled_log",
        log(&mut r, &[before, &[end]].concat())
    );
    // Nothing is left of the cell.
    assert_eq!(stored_cells(plan.home()), 0);
    life.stop();
}

/// The suspended cells in the gateway's store (its database, read-only).
fn stored_cells(home: &Path) -> i64 {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(home.join("state/talon.db"))
            .read_only(true);
        let db = sqlx::SqlitePool::connect_with(options).await.unwrap();
        let n = sqlx::query_scalar("SELECT COUNT(*) FROM cells")
            .fetch_one(&db)
            .await
            .unwrap();
        db.close().await;
        n
    })
}

#[test]
fn seed_000_code_mode_plan_through_the_gateway_over_chat_completions() {
    code_mode_plan(Wire::OpenAi);
}

#[test]
fn seed_000_code_mode_plan_through_the_gateway_over_anthropic_messages() {
    code_mode_plan(Wire::Anthropic);
}
