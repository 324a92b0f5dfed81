//! `usage.summary`: the tokens and cost of the runs a caller may read, by
//! UTC day of their creation, agent and model, over a window of at most
//! [`MAX_WINDOW_DAYS`] days. The window's defaults and checks and the
//! grouping ([`UsageTally`]) are here once: the gateway feeds its store's
//! rows to the tally, the fake gateway its runs.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounded::AgentId;
use super::error::ApiError;
use super::resources::Usage;

/// A day in epoch milliseconds.
pub const DAY_MS: u64 = 86_400_000;
/// The window when `createdAfter` is absent: this many days before its end.
pub const DEFAULT_WINDOW_DAYS: u64 = super::caps::USAGE_DEFAULT_DAYS;
/// The longest window answered.
pub const MAX_WINDOW_DAYS: u64 = super::caps::USAGE_MAX_DAYS;

/// `usage.summary`: every filter given must hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UsageSummaryParams {
    /// Runs created at or after this time (epoch milliseconds; by default
    /// 30 days before the window's end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_after: Option<u64>,
    /// Runs created before this time (epoch milliseconds; by default now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_before: Option<u64>,
    /// Only this agent's runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
}

/// `usage.summary`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageSummary {
    /// The window answered: runs created at or after this time.
    pub created_after: u64,
    /// The window answered: runs created before this time.
    pub created_before: u64,
    /// How many runs the window holds.
    pub runs: u64,
    /// Their tokens and cost together.
    pub usage: Usage,
    /// By day (newest first), then agent, then model.
    pub rows: Vec<UsageRow>,
}

/// The runs of one agent on one model, created on one UTC day.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageRow {
    /// The day's start, UTC midnight (epoch milliseconds).
    pub day: u64,
    /// The agent.
    pub agent_id: AgentId,
    /// The model, `provider/model` (absent for runs that never started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// How many runs.
    pub runs: u64,
    /// Their tokens and cost together.
    pub usage: Usage,
}

impl UsageSummaryParams {
    /// The window `[after, before)` this asks for at `now`, or
    /// `invalid_request` naming the field when it is empty or longer than
    /// [`MAX_WINDOW_DAYS`].
    pub fn window(&self, now: u64) -> Result<(u64, u64), ApiError> {
        let before = self.created_before.unwrap_or(now.saturating_add(1));
        let after = self
            .created_after
            .unwrap_or(before.saturating_sub(DEFAULT_WINDOW_DAYS * DAY_MS));
        if after >= before {
            return Err(crate::gateway::refuse::empty_time_window(after, before));
        }
        let days = (before - after).div_ceil(DAY_MS);
        if days > MAX_WINDOW_DAYS {
            return Err(crate::gateway::refuse::usage_window_too_long(
                days,
                MAX_WINDOW_DAYS,
            ));
        }
        Ok((after, before))
    }
}

impl Usage {
    /// Adds `other`'s figures to these (a figure either side lacks is
    /// taken from the other; absent on both stays absent).
    pub fn add(&mut self, other: &Usage) {
        fn sum(a: &mut Option<u64>, b: Option<u64>) {
            if let Some(b) = b {
                *a = Some(a.unwrap_or(0).saturating_add(b));
            }
        }
        sum(&mut self.input_tokens, other.input_tokens);
        sum(&mut self.output_tokens, other.output_tokens);
        sum(&mut self.total_tokens, other.total_tokens);
        sum(&mut self.cache_read_tokens, other.cache_read_tokens);
        sum(&mut self.cache_write_tokens, other.cache_write_tokens);
        if let Some(b) = other.cost_usd {
            self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + b);
        }
    }
}

/// A row's key, in the rows' order: the day (newest first), the agent,
/// the model.
type Group = (Reverse<u64>, String, Option<String>);

/// Runs added one at a time, grouped as [`UsageSummary::rows`] says.
#[derive(Debug, Default)]
pub struct UsageTally {
    /// Each group's runs and their usage summed.
    groups: BTreeMap<Group, (u64, Usage)>,
}

impl UsageTally {
    /// Counts one run, created at `created_at`, with its usage so far.
    pub fn add(
        &mut self,
        created_at: u64,
        agent_id: &str,
        model: Option<&str>,
        usage: Option<&Usage>,
    ) {
        let day = created_at - created_at % DAY_MS;
        let key = (Reverse(day), agent_id.to_owned(), model.map(str::to_owned));
        let (runs, sum) = self.groups.entry(key).or_default();
        *runs += 1;
        if let Some(usage) = usage {
            sum.add(usage);
        }
    }

    /// The answer for the window `[after, before)`.
    pub fn finish(self, (created_after, created_before): (u64, u64)) -> UsageSummary {
        let mut runs = 0;
        let mut usage = Usage::default();
        let rows = self
            .groups
            .into_iter()
            .map(|((Reverse(day), agent_id, model), (count, sum))| {
                runs += count;
                usage.add(&sum);
                UsageRow {
                    day,
                    agent_id: AgentId::new(agent_id),
                    model,
                    runs: count,
                    usage: sum,
                }
            })
            .collect();
        UsageSummary {
            created_after,
            created_before,
            runs,
            usage,
            rows,
        }
    }
}
