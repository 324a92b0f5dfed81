//! Scheduling a cell's nested calls: what Code Mode tells the shared cell
//! driver ([`talon_sandbox::CellEngine::drive`]) about its VMs (host
//! functions, limits, the guest API's installation) and how it answers
//! each guest request: a refusal at once, a `yield_control`, or a nested
//! call started as a task whose result also goes into the store, so a
//! suspended cell finds it even in another process.

use serde_json::{Value, json};
use talon_protocol::CellId;
use talon_protocol::ConsoleOutput;
use talon_sandbox::{
    Answer, CallFuture, CallResult, CellHost, HostFunctions, Limits, PendingCall, VmOptions,
};

use crate::bridge::{Nested, Request};
use crate::runtime::{CodeModeRun, PRELUDE_NAME};

/// The guest function Code Mode's prelude defines for the prologue of a
/// fresh cell: it installs the run's plugin namespace globals and removes
/// itself.
pub const SETUP_FN: &str = "__openclaw_setup";

/// Guest-side cap on unsettled host calls of one cell; calls beyond
/// `maxPendingToolCalls` queue on the host until a slot frees.
pub(crate) const MAX_OUTSTANDING: usize = 1024;

/// What the host keeps about a nested call the cell waits for.
#[derive(Debug, Clone)]
pub(crate) struct InFlight {
    /// The nested call's id (`<exec call id>/<n>`).
    pub call_id: String,
    /// The call.
    pub nested: Nested,
}

/// What the host keeps with a stored cell besides its pending calls.
#[derive(Debug, Clone, Default)]
pub(crate) struct Meta {
    /// The `exec` call that started the cell (parent of its nested calls).
    pub parent: String,
    /// Nested calls numbered so far.
    pub next_nested: u64,
    /// The host call of a pending `yield_control`.
    pub yield_call: Option<u64>,
}

impl Meta {
    pub fn from_json(value: &Value) -> Self {
        Self {
            parent: value["parent"].as_str().unwrap_or("exec").to_owned(),
            next_nested: value["nextNested"].as_u64().unwrap_or(0),
            yield_call: value["yieldCall"].as_u64(),
        }
    }

    pub fn to_json(&self) -> Value {
        json!({"parent": self.parent, "nextNested": self.next_nested, "yieldCall": self.yield_call})
    }
}

/// Code Mode's side of one drive.
pub(crate) struct NestedHost<'a> {
    pub run: &'a CodeModeRun,
    pub cell_id: &'a CellId,
    pub meta: &'a mut Meta,
}

impl CellHost for NestedHost<'_> {
    type Tag = InFlight;

    fn functions(&self) -> HostFunctions {
        self.run.bridge.functions()
    }

    fn vm_options(&self, remaining: std::time::Duration) -> VmOptions {
        let config = &self.run.config;
        VmOptions {
            limits: Limits {
                timeout: remaining,
                memory_limit_bytes: config.memory_limit_bytes,
                max_output_bytes: config.max_output_bytes,
                max_snapshot_bytes: config.max_snapshot_bytes,
                max_pending_calls: MAX_OUTSTANDING,
                ..Limits::default()
            }
            .clamped(),
            prelude: Some(PRELUDE_NAME.to_owned()),
            ..VmOptions::default()
        }
    }

    fn prologue(&self) -> Option<String> {
        let globals: Vec<&str> = self
            .run
            .bridge
            .namespaces
            .visible
            .iter()
            .map(|ns| ns.registration.global_name.as_str())
            .collect();
        Some(format!("{SETUP_FN}({});", json!(globals)))
    }

    fn deliver(&self, result: CallResult) -> CallResult {
        // Values cross as JSON text; the prelude parses it.
        result.map(crate::bridge::json_text)
    }

    /// Console output goes out as the `exec` call's deltas as each step
    /// ends (`{stream: "console", text}`), besides the cell's result.
    fn printed(&mut self, output: &[ConsoleOutput]) {
        for item in output {
            self.run.ctx.updates.update(
                &self.meta.parent,
                json!({"stream": "console", "text": item.text}),
            );
        }
    }

    fn accept(&mut self, call: PendingCall) -> Answer<InFlight> {
        match self.run.bridge.request(&call.name, &call.args) {
            Request::Ready(result) => Answer::Now(result),
            Request::Yield(reason) => {
                if self.run.shared.debug {
                    tracing::info!(target: "talon::code_mode", cell_id = %self.cell_id, ?reason, "bridge: yield_control");
                }
                Answer::Yield
            }
            Request::Call(nested) => {
                self.meta.next_nested += 1;
                let call_id = format!("{}/{}", self.meta.parent, self.meta.next_nested);
                self.run.bridge.telemetry.nested_call(&nested.tool_id);
                let flight = InFlight { call_id, nested };
                if super::app::answered_by_app(&flight.nested.tool_id) {
                    // The app answers it, after this run.
                    return Answer::Outside { tag: flight };
                }
                Answer::Start {
                    call: self
                        .run
                        .nested_call(self.cell_id, &self.meta.parent, call.id, &flight),
                    tag: flight,
                }
            }
        }
    }
}

impl CodeModeRun {
    /// A nested call's work: run it through the runner, then record its
    /// result in the store (it lands there if the cell is suspended by
    /// then, and is ignored otherwise).
    pub(crate) fn nested_call(
        &self,
        cell_id: &CellId,
        parent: &str,
        host_id: u64,
        flight: &InFlight,
    ) -> CallFuture {
        let bridge = self.bridge.clone();
        let ctx = self.ctx.clone();
        let parent = parent.to_owned();
        let store = self.shared.store.clone();
        let cell_id = cell_id.clone();
        let call_id = flight.call_id.clone();
        let nested = flight.nested.clone();
        Box::pin(async move {
            let result = bridge.run(&ctx, &parent, call_id, &nested).await;
            let (id, settled) = (cell_id.clone(), result.clone());
            let recorded =
                crate::store::off_thread(&store, move |s| s.settle(&id, host_id, settled)).await;
            if let Err(error) = recorded {
                tracing::warn!(%error, cell_id = %cell_id, "recording a nested call's result");
            }
            result
        })
    }
}
