//! A run's one-line summary, the `text` filter's folding and
//! `usage.summary`'s window and grouping.

use talon_protocol::gateway::usage::DAY_MS;
use talon_protocol::gateway::{
    InputMessage, InputRole, RunInput, Usage, UsageRow, UsageSummary, UsageSummaryParams,
    UsageTally,
};

fn message(role: InputRole, content: &str) -> InputMessage {
    InputMessage {
        role,
        content: content.into(),
        tool_call_id: None,
    }
}

#[test]
fn a_summary_is_the_first_line_with_text_cut_at_its_cap() {
    let long = "ж".repeat(RunInput::SUMMARY_CHARS + 5);
    let cases = [
        (
            RunInput::from("\n   Fix the build  \nthen test"),
            Some("Fix the build".to_owned()),
        ),
        (RunInput::from(" \n\t\n"), None),
        (
            RunInput::from(long.as_str()),
            Some(format!("{}…", "ж".repeat(RunInput::SUMMARY_CHARS - 1))),
        ),
        (
            RunInput::from(vec![
                message(InputRole::User, "first ask"),
                message(InputRole::Assistant, "an answer"),
                message(InputRole::User, "second ask\nmore"),
                message(InputRole::System, "be brief"),
            ]),
            Some("second ask".to_owned()),
        ),
        (
            RunInput::from(vec![message(InputRole::Tool, "42")]),
            Some("42".to_owned()),
        ),
        (RunInput::from(Vec::new()), None),
    ];
    let got: Vec<Option<String>> = cases.iter().map(|(input, _)| input.summary()).collect();
    let want: Vec<Option<String>> = cases.into_iter().map(|(_, want)| want).collect();
    assert_eq!(got, want);
    let exact = "x".repeat(RunInput::SUMMARY_CHARS);
    assert_eq!(RunInput::from(exact.as_str()).summary(), Some(exact));
}

#[test]
fn the_window_defaults_to_thirty_days_and_refuses_empty_or_long_ones() {
    let now = 100 * DAY_MS;
    let params = |after: Option<u64>, before: Option<u64>| UsageSummaryParams {
        created_after: after,
        created_before: before,
        agent_id: None,
    };
    assert_eq!(
        params(None, None).window(now),
        Ok((70 * DAY_MS + 1, now + 1))
    );
    assert_eq!(params(Some(5), None).window(now), Ok((5, now + 1)));
    assert_eq!(params(None, Some(DAY_MS)).window(now), Ok((0, DAY_MS)));
    let codes: Vec<String> = [
        params(Some(9), Some(9)),
        params(Some(0), Some(366 * DAY_MS + 1)),
    ]
    .iter()
    .map(|p| p.window(now).unwrap_err().message)
    .collect();
    assert_eq!(
        codes,
        [
            "createdAfter (9) must be before createdBefore (9)",
            "createdAfter: a window of 367 days, longer than the 366 days usage.summary answers",
        ]
    );
    assert!(params(Some(0), Some(366 * DAY_MS)).window(now).is_ok());
}

#[test]
fn runs_are_grouped_by_day_agent_and_model_newest_day_first() {
    let tokens = |input: u64, cost: Option<f64>| Usage {
        input_tokens: Some(input),
        output_tokens: Some(1),
        cost_usd: cost,
        ..Usage::default()
    };
    let mut tally = UsageTally::default();
    tally.add(
        DAY_MS + 5,
        "main",
        Some("openai/a"),
        Some(&tokens(10, Some(0.5))),
    );
    tally.add(
        2 * DAY_MS - 1,
        "main",
        Some("openai/a"),
        Some(&tokens(20, None)),
    );
    tally.add(
        2 * DAY_MS,
        "main",
        Some("openai/a"),
        Some(&tokens(1, Some(0.25))),
    );
    tally.add(DAY_MS, "helper", None, None);
    let summary = tally.finish((0, 3 * DAY_MS));
    let row = |day: u64, agent: &str, model: Option<&str>, runs: u64, usage: Usage| UsageRow {
        day,
        agent_id: talon_protocol::gateway::bounded::AgentId::new(agent),
        model: model.map(str::to_owned),
        runs,
        usage,
    };
    assert_eq!(
        summary,
        UsageSummary {
            created_after: 0,
            created_before: 3 * DAY_MS,
            runs: 4,
            usage: Usage {
                input_tokens: Some(31),
                output_tokens: Some(3),
                cost_usd: Some(0.75),
                ..Usage::default()
            },
            rows: vec![
                row(
                    2 * DAY_MS,
                    "main",
                    Some("openai/a"),
                    1,
                    tokens(1, Some(0.25))
                ),
                row(DAY_MS, "helper", None, 1, Usage::default()),
                row(
                    DAY_MS,
                    "main",
                    Some("openai/a"),
                    2,
                    Usage {
                        input_tokens: Some(30),
                        output_tokens: Some(2),
                        cost_usd: Some(0.5),
                        ..Usage::default()
                    }
                ),
            ],
        }
    );
}
