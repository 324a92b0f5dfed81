//! When a schedule fires: its `schedule` checked once when it is made or
//! changed ([`check`], each refusal saying what is wrong), and its next
//! slot strictly after a time ([`next_after`]). Cron expressions are
//! croner's (5 fields, or 6 with seconds first; `@daily` and the other
//! nicknames; day-of-month and day-of-week OR-ed as Vixie cron does),
//! evaluated in the schedule's IANA time zone (chrono-tz's bundled
//! database): a local time skipped by a daylight-saving change fires when
//! the clocks have jumped (02:30 at 03:00), one repeated fires once, as
//! croner does in OpenClaw.

use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use croner::Cron;
use croner::parser::{CronParser, Seconds};
use talon_protocol::gateway::schedules::{EVERY_MAX_MS, EVERY_MIN_MS, ScheduleSpec};

/// A schedule's spec, parsed.
#[derive(Debug)]
pub(crate) enum Slots {
    /// Once, at this epoch millisecond.
    At(u64),
    /// Every `every` ms from `anchor`.
    Every { every: u64, anchor: u64 },
    /// A cron expression in a zone.
    Cron { cron: Box<Cron>, tz: chrono_tz::Tz },
}

/// How far ahead a cron expression is searched for its next slot (an
/// expression that names no time within it, such as `0 0 30 2 *`, is
/// refused).
const CRON_HORIZON_MS: u64 = 5 * 366 * 24 * 3_600 * 1_000;

/// Parses `spec`, saying in words what is wrong; `now` fills an `every`
/// schedule's missing anchor.
pub(crate) fn check(spec: &ScheduleSpec, now: u64) -> Result<Slots, String> {
    match spec {
        ScheduleSpec::At { at } => Ok(Slots::At(parse_at(at.as_str())?)),
        ScheduleSpec::Every {
            every_ms,
            anchor_ms,
        } => {
            if !(EVERY_MIN_MS..=EVERY_MAX_MS).contains(every_ms) {
                return Err(format!(
                    "everyMs must be from {EVERY_MIN_MS} (a second) to {EVERY_MAX_MS} (a year), not {every_ms}"
                ));
            }
            Ok(Slots::Every {
                every: *every_ms,
                anchor: anchor_ms.unwrap_or(now),
            })
        }
        ScheduleSpec::Cron { expr, tz } => {
            let tz: chrono_tz::Tz = match tz {
                None => chrono_tz::Tz::UTC,
                Some(name) => name.as_str().parse().map_err(|_| {
                    format!(
                        "tz {:?} is not an IANA time zone (such as Europe/Berlin)",
                        name.as_str()
                    )
                })?,
            };
            let cron = CronParser::builder()
                .seconds(Seconds::Optional)
                .build()
                .parse(expr.as_str())
                .map_err(|e| format!("expr {:?} is not a cron expression: {e}", expr.as_str()))?;
            let slots = Slots::Cron {
                cron: Box::new(cron),
                tz,
            };
            if slots.next_after(now).is_none() {
                return Err(format!(
                    "expr {:?} names no time in the next five years",
                    expr.as_str()
                ));
            }
            Ok(slots)
        }
    }
}

/// An RFC 3339 time, or one without an offset read as UTC, to epoch ms.
fn parse_at(at: &str) -> Result<u64, String> {
    let parsed = DateTime::parse_from_rfc3339(at)
        .map(|t| t.with_timezone(&Utc))
        .or_else(|_| {
            [
                "%Y-%m-%dT%H:%M:%S%.f",
                "%Y-%m-%dT%H:%M",
                "%Y-%m-%d %H:%M:%S%.f",
            ]
            .iter()
            .find_map(|format| NaiveDateTime::parse_from_str(at, format).ok())
            .map(|naive| Utc.from_utc_datetime(&naive))
            .ok_or(())
        })
        .map_err(|()| {
            format!("at {at:?} is not a time: give RFC 3339, such as 2026-12-24T18:00:00+01:00")
        })?;
    u64::try_from(parsed.timestamp_millis()).map_err(|_| format!("at {at:?} is before 1970"))
}

impl Slots {
    /// The first slot strictly after `t` (epoch ms), if any.
    pub(crate) fn next_after(&self, t: u64) -> Option<u64> {
        match self {
            Self::At(at) => (*at > t).then_some(*at),
            Self::Every { every, anchor } => {
                if t < *anchor {
                    return Some(*anchor);
                }
                let periods = (t - anchor) / every + 1;
                anchor.checked_add(periods.checked_mul(*every)?)
            }
            Self::Cron { cron, tz } => {
                let after = tz.timestamp_millis_opt(i64::try_from(t).ok()?).single()?;
                let next = cron.find_next_occurrence(&after, false).ok()?;
                let next = u64::try_from(next.timestamp_millis()).ok()?;
                (next <= t.saturating_add(CRON_HORIZON_MS)).then_some(next)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use talon_protocol::gateway::bounded::Text;

    fn cron(expr: &str, tz: Option<&str>) -> ScheduleSpec {
        ScheduleSpec::Cron {
            expr: Text::from(expr),
            tz: tz.map(Text::from),
        }
    }

    fn ms(rfc3339: &str) -> u64 {
        parse_at(rfc3339).unwrap()
    }

    #[test]
    fn cron_slots_follow_the_zone_across_daylight_saving() {
        let nightly = check(&cron("30 2 * * *", Some("Europe/Berlin")), 0).unwrap();
        // 2026-03-29: 02:00 CET jumps to 03:00 CEST, so 02:30 does not
        // exist that night: it fires at the jump, 03:00 CEST.
        assert_eq!(
            nightly.next_after(ms("2026-03-28T12:00:00Z")),
            Some(ms("2026-03-29T01:00:00Z"))
        );
        assert_eq!(
            nightly.next_after(ms("2026-03-29T01:00:00Z")),
            Some(ms("2026-03-30T00:30:00Z"))
        );
        // 2026-10-25: 03:00 CEST falls back to 02:00 CET, so 02:30 comes
        // twice; it fires once.
        assert_eq!(
            nightly.next_after(ms("2026-10-24T23:00:00Z")),
            Some(ms("2026-10-25T00:30:00Z"))
        );
        assert_eq!(
            nightly.next_after(ms("2026-10-25T00:30:00Z")),
            Some(ms("2026-10-26T01:30:00Z"))
        );
        assert_eq!(
            nightly.next_after(ms("2026-01-10T00:00:00Z")),
            Some(ms("2026-01-10T01:30:00Z"))
        );
        let seconds = check(&cron("*/10 * * * * *", None), 0).unwrap();
        assert_eq!(
            seconds.next_after(ms("2026-01-01T00:00:05Z")),
            Some(ms("2026-01-01T00:00:10Z"))
        );
        assert_eq!(
            seconds.next_after(ms("2026-01-01T00:00:10Z")),
            Some(ms("2026-01-01T00:00:20Z"))
        );
    }

    #[test]
    fn every_and_at_slots() {
        let every = check(
            &ScheduleSpec::Every {
                every_ms: 1_000,
                anchor_ms: Some(10_500),
            },
            0,
        )
        .unwrap();
        assert_eq!(every.next_after(0), Some(10_500));
        assert_eq!(every.next_after(10_500), Some(11_500));
        assert_eq!(every.next_after(99_999), Some(100_500));
        let at = check(
            &ScheduleSpec::At {
                at: Text::from("2026-12-24T18:00:00+01:00"),
            },
            0,
        )
        .unwrap();
        assert_eq!(at.next_after(0), Some(ms("2026-12-24T17:00:00Z")));
        assert_eq!(at.next_after(ms("2026-12-24T17:00:00Z")), None);
        assert_eq!(ms("2026-12-24T17:00:00"), ms("2026-12-24T17:00:00Z"));
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        let errors: Vec<String> = [
            cron("61 * * * *", None),
            cron("0 3 * * *", Some("Mars/Olympus")),
            cron("0 0 30 2 *", None),
            ScheduleSpec::Every {
                every_ms: 999,
                anchor_ms: None,
            },
            ScheduleSpec::At {
                at: Text::from("tomorrow"),
            },
        ]
        .iter()
        .map(|spec| check(spec, 0).unwrap_err())
        .collect();
        assert!(
            errors[0].starts_with("expr \"61 * * * *\" is not a cron expression"),
            "{errors:?}"
        );
        assert_eq!(
            errors[1..],
            [
                "tz \"Mars/Olympus\" is not an IANA time zone (such as Europe/Berlin)".to_owned(),
                "expr \"0 0 30 2 *\" names no time in the next five years".to_owned(),
                "everyMs must be from 1000 (a second) to 31622400000 (a year), not 999".to_owned(),
                "at \"tomorrow\" is not a time: give RFC 3339, such as 2026-12-24T18:00:00+01:00"
                    .to_owned(),
            ]
        );
    }
}
