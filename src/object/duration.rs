//! Go's `time.ParseDuration`, which kube uses for its duration flags (`--request-timeout=1m0s`)
//! and the `timeout` query parameter client-go sends (`?timeout=30s`): the same grammar and the
//! same error messages, so a bad value is refused in the words kube would use.

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
}
