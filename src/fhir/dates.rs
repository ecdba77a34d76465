//! FHIR's `date`, `dateTime` and `instant` strings: recognising them, moving them by a
//! number of days at the precision they were written in, cutting them to a year.
//!
//! Written here rather than through the free-text date parser because FHIR's forms are
//! exact (`YYYY`, `YYYY-MM`, `YYYY-MM-DD`, then `Thh:mm:ss[.fff]` and a zone) and the time
//! and zone must come back untouched.

use std::sync::OnceLock;

use chrono::{Duration, NaiveDate};
use regex::Regex;

/// FHIR's dateTime grammar with at least a month (a bare year is kept as Safe Harbor
/// allows, and four digits alone are as often a code as a year).
fn pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        #[allow(clippy::expect_used)]
        Regex::new(
            r"^(\d{4})-(0[1-9]|1[0-2])(?:-(0[1-9]|[12]\d|3[01])(T(?:[01]\d|2[0-3]):[0-5]\d:(?:[0-5]\d|60)(?:\.\d{1,9})?(?:Z|[+-](?:0\d|1[0-4]):[0-5]\d)?)?)?$",
        )
        .expect("FHIR date pattern compiles")
    })
}

/// True when `s` is a FHIR date or dateTime with at least a month.
pub(super) fn is_date(s: &str) -> bool {
    pattern().is_match(s)
}

/// The year of a FHIR date (`1950`, `1950-03`, `1950-03-02T…`).
pub(super) fn year_of(s: &str) -> Option<i32> {
    let y = s.get(..4)?;
    let rest = &s[4..];
    if !y.bytes().all(|b| b.is_ascii_digit()) || !(rest.is_empty() || rest.starts_with('-')) {
        return None;
    }
    y.parse().ok()
}

/// `s` moved by `days`, written at its own precision; a year alone is kept (it has no
/// day to move). `None` when `s` is not a FHIR date.
pub(super) fn shift(s: &str, days: i64) -> Option<String> {
    if s.len() == 4 && s.bytes().all(|b| b.is_ascii_digit()) {
        return Some(s.to_owned());
    }
    let caps = pattern().captures(s)?;
    let year: i32 = caps.get(1)?.as_str().parse().ok()?;
    let month: u32 = caps.get(2)?.as_str().parse().ok()?;
    match caps.get(3) {
        None => {
            // Month precision: move the middle of the month.
            let mid = NaiveDate::from_ymd_opt(year, month, 15)? + Duration::days(days);
            Some(mid.format("%Y-%m").to_string())
        }
        Some(day) => {
            let date = NaiveDate::from_ymd_opt(year, month, day.as_str().parse().ok()?)?
                + Duration::days(days);
            let time = caps.get(4).map_or("", |t| t.as_str());
            Some(format!("{}{time}", date.format("%Y-%m-%d")))
        }
    }
}

/// The date part of a FHIR date or dateTime (`2020`, `2020-03`, `2020-03-02`).
fn date_part(s: &str) -> Option<&str> {
    let year = s.len() == 4 && s.bytes().all(|b| b.is_ascii_digit());
    if !(year || is_date(s)) {
        return None;
    }
    Some(&s[..s.len().min(10)])
}

/// Puts a period back in order after its dates were moved: a start or end written to a
/// coarser precision (a year, a month) is not moved when the other is (a year has no day
/// to move; a month moves by its middle), so the two can cross (`start: "2020"`,
/// `end: "2020-01-05"` moved back ten days). Compared at the coarser precision, the
/// coarser one takes the other's value at that precision. Anything that is not a period
/// of two dates is left alone, and so is a crossing of two dates of one precision, which
/// one offset cannot cause.
pub(super) fn order_period(start: &mut String, end: &mut String) {
    let (Some(s), Some(e)) = (date_part(start), date_part(end)) else {
        return;
    };
    let p = s.len().min(e.len());
    if s[..p] <= e[..p] || s.len() == e.len() {
        return;
    }
    if s.len() == p {
        *start = e[..p].to_owned();
    } else {
        *end = s[..p].to_owned();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossed_periods_are_put_back_in_order_at_the_coarser_precision() {
        let order = |s: &str, e: &str| {
            let (mut s, mut e) = (s.to_owned(), e.to_owned());
            order_period(&mut s, &mut e);
            (s, e)
        };
        let pair = |s: &str, e: &str| (s.to_owned(), e.to_owned());
        // A year-only start kept while its end moved back across the new year.
        assert_eq!(order("2020", "2019-12-26"), pair("2019", "2019-12-26"));
        // A month-only start moved forward past its end's month.
        assert_eq!(
            order("2020-02", "2020-01-22T10:00:00Z"),
            pair("2020-01", "2020-01-22T10:00:00Z")
        );
        // A year-only end before its start's year.
        assert_eq!(order("2021-01-09", "2020"), pair("2021-01-09", "2021"));
        // In order, one precision, or not dates: untouched.
        assert_eq!(order("2019", "2019-12-26"), pair("2019", "2019-12-26"));
        assert_eq!(
            order("2020-01-05", "2020-01-02"),
            pair("2020-01-05", "2020-01-02")
        );
        assert_eq!(order("soon", "2019"), pair("soon", "2019"));
    }

    #[test]
    fn shifts_keep_precision_time_and_zone() {
        assert_eq!(shift("2020-01-30", 3).as_deref(), Some("2020-02-02"));
        assert_eq!(shift("2020-03", -20).as_deref(), Some("2020-02"));
        assert_eq!(shift("1987", 400).as_deref(), Some("1987"));
        assert_eq!(
            shift("2013-04-02T09:30:10.123+01:00", -2).as_deref(),
            Some("2013-03-31T09:30:10.123+01:00")
        );
        assert_eq!(
            shift("2013-04-02T09:30:10Z", 1).as_deref(),
            Some("2013-04-03T09:30:10Z")
        );
        assert_eq!(shift("2020-02-30", 1), None);
        assert_eq!(shift("not a date", 1), None);
    }

    #[test]
    fn recognises_dates_with_a_month_only() {
        assert!(is_date("2020-01"));
        assert!(is_date("2020-01-30T10:00:00Z"));
        assert!(!is_date("2020"));
        assert!(!is_date("8867-4"));
        assert!(!is_date("2020-13"));
        assert_eq!(year_of("1931-02-03"), Some(1931));
        assert_eq!(year_of("19310"), None);
    }

    proptest::proptest! {
        #[test]
        fn shifting_there_and_back_is_the_identity(y in 1900i32..2100, m in 1u32..=12, d in 1u32..=28, days in -3650i64..3650) {
            let s = format!("{y:04}-{m:02}-{d:02}T08:15:00Z");
            let there = shift(&s, days).expect("valid date shifts");
            proptest::prop_assert_eq!(shift(&there, -days), Some(s));
        }
    }
}
