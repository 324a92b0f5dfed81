//! The TypeScript SDK's generated layer must be what the gateway schema
//! renders. Regenerate with
//! `UPDATE_GENERATED=1 cargo nextest run -p talon-protocol generated`.

use std::path::PathBuf;

use talon_protocol::codegen::typescript::{GENERATED_DIR, typescript_files};

#[test]
fn generated_typescript_matches_the_method_table() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(GENERATED_DIR);
    let files = typescript_files();
    if std::env::var_os("UPDATE_GENERATED").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for file in &files {
            std::fs::write(dir.join(file.name), &file.source).unwrap();
        }
    }
    let mut stale = Vec::new();
    for file in &files {
        let committed = std::fs::read_to_string(dir.join(file.name)).unwrap_or_default();
        if committed != file.source {
            stale.push(file.name);
        }
    }
    // Nothing else lives in the directory: a file the table no longer
    // renders is stale too.
    let mut present: Vec<String> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    present.sort();
    let mut expected: Vec<String> = files.iter().map(|f| f.name.to_owned()).collect();
    expected.sort();
    assert!(
        stale.is_empty() && present == expected,
        "{GENERATED_DIR} is stale ({stale:?}; present {present:?}): run \
         UPDATE_GENERATED=1 cargo nextest run -p talon-protocol generated"
    );
}

#[test]
fn every_method_has_a_client_function_and_a_row() {
    let files = typescript_files();
    let client = &files.iter().find(|f| f.name == "client.ts").unwrap().source;
    let methods = &files
        .iter()
        .find(|f| f.name == "methods.ts")
        .unwrap()
        .source;
    for method in talon_protocol::gateway::Method::ALL {
        let name = method.name();
        assert!(
            client.contains(&format!("caller.call(\"{name}\"")),
            "{name}"
        );
        assert!(methods.contains(&format!("  \"{name}\": {{\n")), "{name}");
    }
    // The seed's shapes: an id first where the namespace has one.
    for signature in [
        "  events(runId: T.RunsEventsParams[\"runId\"], params?: Omit<T.RunsEventsParams, \"runId\">, options?: CallOptions): Promise<T.RunsEventsResult>;",
        "  get(agentId: T.AgentRef[\"agentId\"], options?: CallOptions): Promise<T.Agent>;",
        "  respond(approvalId: T.ApprovalsRespondParams[\"approvalId\"], params: Omit<T.ApprovalsRespondParams, \"approvalId\">, options?: CallOptions): Promise<T.Approval>;",
        "  invoke(tool: T.ToolsInvokeParams[\"tool\"], params: Omit<T.ToolsInvokeParams, \"tool\">, options?: CallOptions): Promise<T.ToolsInvokeResult>;",
        // A list: awaited, its first page; iterated, every item.
        "  list(params?: T.AgentsListParams, options?: CallOptions): PagePromise<T.AgentsListResult, T.AgentsListResult[\"agents\"][number]>;",
        "  status(options?: CallOptions): Promise<T.ModelsStatusResult>;",
        "  create(params: T.RunsCreateParams, options?: CallOptions): Promise<T.RunAccepted>;",
        "  list(params?: T.RunsListParams, options?: CallOptions): PagePromise<T.RunsListResult, T.RunsListResult[\"runs\"][number]>;",
    ] {
        assert!(client.contains(signature), "{signature}");
    }
}
