//! Go's `time.ParseDuration`, which kube uses for its duration flags (`--request-timeout=1m0s`)
//! and the `timeout` query parameter client-go sends (`?timeout=30s`): the same grammar and the
//! same error messages, so a bad value is refused in the words kube would use; and
//! apimachinery's `duration.HumanDuration`, the ages kube's printers show.

use std::time::Duration;

/// Parses `[-+]?([0-9]*(\.[0-9]*)?(ns|us|µs|μs|ms|s|m|h))+` or `0`. A negative duration comes
/// out as zero: every caller treats "none or less" alike.
pub fn parse(text: &str) -> Result<Duration, String> {
    let invalid = || format!("time: invalid duration {}", quote(text));
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let (number, tail) = rest.split_at(digits);
        // Go accepts "1.", ".5" but not "." alone, and one dot at most.
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(invalid());
        }
        let value: f64 = number.parse().map_err(|_| invalid())?;
        let unit_len = tail.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        let seconds = match unit {
            "" => return Err(format!("time: missing unit in duration {}", quote(text))),
            "ns" => 1e-9,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            other => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    quote(other),
                    quote(text)
                ))
            }
        };
        total += value * seconds;
        rest = tail;
    }
    // Go's limit is i64 nanoseconds (about 292 years).
    if total > i64::MAX as f64 / 1e9 {
        return Err(invalid());
    }
    Ok(if negative { Duration::ZERO } else { Duration::from_secs_f64(total) })
}

/// Go's `quote` of the error messages: a double-quoted string.
fn quote(s: &str) -> String {
    format!("{s:?}")
}

/// kube's `duration.HumanDuration` of `secs` seconds: `5s`, `3m2s`, `2d`; up to 1 s in the future
/// counts as now (clock skew).
pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    if secs < 0 {
        return "0s".into();
    }
    if secs < 120 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        return match secs % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = secs / 3600;
    if hours < 8 {
        return match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return match hours % 24 {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return match (hours / 24) % 365 {
            0 => format!("{}y", hours / 24 / 365),
            d => format!("{}y{d}d", hours / 24 / 365),
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_go_parses() {
        let ms = Duration::from_millis;
        for (text, want) in [
            ("0", ms(0)),
            ("1m0s", ms(60_000)),
            ("30s", ms(30_000)),
            ("1.5s", ms(1_500)),
            ("500ms", ms(500)),
            ("1h2m3s", ms(3_723_000)),
            (".5s", ms(500)),
            ("1.s", ms(1_000)),
            ("+2s", ms(2_000)),
            ("-5s", ms(0)),
            ("1000us", ms(1)),
            ("1000µs", ms(1)),
            ("1000000ns", ms(1)),
        ] {
            assert_eq!(parse(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn refuses_in_go_words() {
        assert_eq!(parse("abc"), Err(r#"time: invalid duration "abc""#.into()));
        assert_eq!(parse(""), Err(r#"time: invalid duration """#.into()));
        assert_eq!(parse("."), Err(r#"time: invalid duration ".""#.into()));
        assert_eq!(parse("30"), Err(r#"time: missing unit in duration "30""#.into()));
        assert_eq!(parse("3d"), Err(r#"time: unknown unit "d" in duration "3d""#.into()));
        assert_eq!(parse("9999999999h"), Err(r#"time: invalid duration "9999999999h""#.into()));
    }

    #[test]
    fn human_durations_match_kube() {
        let cases = [
            (-2, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (5, "5s"),
            (119, "119s"),
            (120, "2m"),
            (182, "3m2s"),
            (600, "10m"),
            (179 * 60 + 59, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 25 * 60, "3h25m"),
            (8 * 3600, "8h"),
            (47 * 3600, "47h"),
            (48 * 3600, "2d"),
            (50 * 3600, "2d2h"),
            (8 * 86400, "8d"),
            (729 * 86400, "729d"),
            (730 * 86400, "2y"),
            (731 * 86400, "2y1d"),
            (8 * 365 * 86400, "8y"),
        ];
        for (secs, want) in cases {
            assert_eq!(human_duration(secs), want, "{secs}s");
        }
    }
}
