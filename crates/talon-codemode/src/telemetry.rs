//! Code Mode's counters for one run: the seed's telemetry list. Names,
//! ids and counts only; never tool input, values or secrets.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use talon_protocol::{
    CodeModeErrorCode, CodeModeLimitFailures, CodeModeSnapshotEvent, CodeModeTelemetry,
    ToolTelemetry,
};
use talon_tools::Catalog;

/// Most nested tool ids kept (the count goes on).
const MAX_IDS: usize = 1000;

/// The counters of one run, shared by its steps and host functions.
#[derive(Debug, Default)]
pub struct RunTelemetry {
    visible_tools: Vec<String>,
    catalog_size: u64,
    catalog_by_source: BTreeMap<String, u64>,
    pub(crate) execs: AtomicU64,
    pub(crate) waits: AtomicU64,
    pub(crate) searches: AtomicU64,
    pub(crate) describes: AtomicU64,
    pub(crate) nested: AtomicU64,
    ids: Mutex<Vec<String>>,
    limits: Mutex<CodeModeLimitFailures>,
}

impl RunTelemetry {
    /// Counters for a run with these visible tools over `catalog`.
    pub fn new(visible_tools: Vec<String>, catalog: &Catalog) -> Self {
        Self {
            visible_tools,
            catalog_size: catalog.len() as u64,
            catalog_by_source: catalog
                .size_by_source()
                .into_iter()
                .map(|(source, n)| (source.as_str().to_owned(), n as u64))
                .collect(),
            ..Self::default()
        }
    }

    /// A nested call to `id` started.
    pub fn nested_call(&self, id: &str) {
        self.nested.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut ids) = self.ids.lock()
            && ids.len() < MAX_IDS
        {
            ids.push(id.to_owned());
        }
    }

    /// A step failed with `code`: counts limit failures.
    pub fn failure(&self, code: Option<CodeModeErrorCode>) {
        let Ok(mut limits) = self.limits.lock() else {
            return;
        };
        match code {
            Some(CodeModeErrorCode::Timeout) => limits.timeout += 1,
            Some(CodeModeErrorCode::MemoryLimitExceeded) => limits.memory += 1,
            Some(CodeModeErrorCode::SnapshotLimitExceeded) => limits.snapshot += 1,
            Some(CodeModeErrorCode::OutputLimitExceeded) => limits.output += 1,
            _ => {}
        }
    }

    /// The run's counters in the run's telemetry (`exec`s, `wait`s,
    /// searches, describes, limit failures).
    pub fn fill(&self, telemetry: &mut ToolTelemetry) {
        telemetry.execs = self.execs.load(Ordering::Relaxed);
        telemetry.waits = self.waits.load(Ordering::Relaxed);
        telemetry.searches = self.searches.load(Ordering::Relaxed);
        telemetry.describes = self.describes.load(Ordering::Relaxed);
        telemetry.limit_failures = Some(self.limits.lock().map(|l| l.clone()).unwrap_or_default());
    }

    /// The report for a step that started at `started`.
    pub fn report(
        &self,
        started: Instant,
        events: Vec<CodeModeSnapshotEvent>,
    ) -> CodeModeTelemetry {
        CodeModeTelemetry {
            visible_tools: self.visible_tools.clone(),
            catalog_size: self.catalog_size,
            catalog_by_source: self.catalog_by_source.clone(),
            exec_count: self.execs.load(Ordering::Relaxed),
            wait_count: self.waits.load(Ordering::Relaxed),
            search_count: self.searches.load(Ordering::Relaxed),
            describe_count: self.describes.load(Ordering::Relaxed),
            nested_call_count: self.nested.load(Ordering::Relaxed),
            nested_tool_ids: self.ids.lock().map(|ids| ids.clone()).unwrap_or_default(),
            limit_failures: self.limits.lock().map(|l| l.clone()).unwrap_or_default(),
            snapshot_events: events,
            duration_ms: started.elapsed().as_millis() as u64,
        }
    }
}
