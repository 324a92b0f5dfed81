//! The figures benchmarks print of their samples (milliseconds as `f64`):
//! nearest-rank percentiles, the median, and one JSON summary line; and
//! this process's memory from `/proc/self/status`.

use serde_json::{Value, json};

/// `x` rounded to three decimals (what a printed figure carries).
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Nearest-rank percentile `p` (0 to 100) of `sorted` samples.
///
/// # Panics
/// When `sorted` is empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// The median of `values` (in any order; the mean of the middle two of
/// an even count).
///
/// # Panics
/// When `values` is empty.
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        f64::midpoint(v[n / 2 - 1], v[n / 2])
    }
}

/// `{runs, p50, p90, p99, mean, min, max}` of `samples`, rounded.
///
/// # Panics
/// When `samples` is empty.
pub fn summary(samples: &[f64]) -> Value {
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    json!({
        "runs": s.len(),
        "p50": round3(median(&s)),
        "p90": round3(percentile(&s, 90.0)),
        "p99": round3(percentile(&s, 99.0)),
        "mean": round3(s.iter().sum::<f64>() / s.len() as f64),
        "min": round3(s[0]),
        "max": round3(s[s.len() - 1]),
    })
}

/// A field of this process's `/proc/self/status` in KiB (`VmRSS`,
/// `VmHWM`, `RssAnon`), 0 when it cannot be read.
pub fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix(field)?
                    .strip_prefix(':')?
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse()
                    .ok()
            })
        })
        .unwrap_or(0)
}

/// This process's resident memory in MiB.
pub fn rss_mib() -> f64 {
    status_kib("VmRSS") as f64 / 1024.0
}

#[cfg(test)]
mod tests {
    #[test]
    fn status_fields_are_read_in_kib() {
        use super::status_kib;
        assert!(status_kib("VmRSS") > 0);
        assert_eq!(status_kib("NoSuchField"), 0);
        assert_eq!(
            status_kib("VmRS"),
            0,
            "a prefix of a field is not the field"
        );
    }

    #[test]
    fn the_figures_of_a_small_sample() {
        assert_eq!(super::median(&[3.0, 1.0, 2.0, 10.0]), 2.5);
        assert_eq!(
            super::summary(&[4.0, 1.0, 3.0, 2.0, 5.0]),
            serde_json::json!({"runs": 5, "p50": 3.0, "p90": 5.0, "p99": 5.0,
                               "mean": 3.0, "min": 1.0, "max": 5.0})
        );
    }
}
