//! Date parsing that remembers how the date was written.
//!
//! The rule recognizer uses [`DateParts::parse`] to validate candidates (month 1–12, a day
//! that exists in that month), and `deid` uses the same parse to shift or generalise a date
//! and write it back in the *same* format: same order, separators, zero padding, month name
//! or abbreviation, letter case, ordinal suffix and year width. One parser for both sides
//! means a date the detector accepts is a date the transform can rewrite.
//!
//! A date is lexed into digit runs, letter runs and literal characters; the digit runs are
//! then assigned roles (year, month, day). Numeric dates are read as year-first when the
//! first field has four digits (`1980-01-02`), day-first when separated by dots
//! (`02.01.1980`) or when the first field cannot be a month (`25/12/1980`), and month-first
//! otherwise (US clinical notes: `01/02/1980` is January 2nd). Two-digit years pivot at 30
//! (`80` → 1980, `19` → 2019).
//!
//! Around those fields a date may carry what exports and notes add to it: a weekday
//! (`Thu 03/04/2021`, `Thursday, March 4, 2021`), rewritten as the weekday of the moved
//! date; a time of day (`2021-03-04T09:30:00Z`, `2021-03-04 14:30`, `+02:00`), kept as it
//! is (a shift moves whole days); and the compact form `20210304`.

use std::sync::LazyLock;

use chrono::{Datelike, Duration, NaiveDate};
use regex::Regex;

/// Full month names, index 0 = January.
const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// French month names, index 0 = janvier: a note written in French (`le 5 mars 2024`) dates
/// its visits as surely as an English one, and a moved date keeps its language. Full names
/// only (the abbreviations `mar`, `sept`, `oct` are the English ones' or ambiguous).
const FRENCH_MONTHS: [&str; 12] = [
    "janvier",
    "février",
    "mars",
    "avril",
    "mai",
    "juin",
    "juillet",
    "août",
    "septembre",
    "octobre",
    "novembre",
    "décembre",
];

/// Weekday names, index 0 = Monday (chrono's `num_days_from_monday`).
const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// A time of day at the end of a date: ISO (`T09`, `T09:30:00.5`, `T093000`) or after a
/// space (`14:30`, `at 9:30 pm`), with an optional zone (`Z`, `+02:00`, `UTC`).
static TIME_SUFFIX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:T\d{2}(?::?\d{2}(?::?\d{2}(?:[.,]\d+)?)?)?|,?\s+(?:at\s+)?\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:\s*[ap]\.?m\.?)?)(?:\s*(?:Z|UTC|GMT|[+-]\d{2}(?::?\d{2})?))?$",
    )
    .expect("the time pattern is valid")
});

/// Splits `s` into the date and a time of day after it (empty when there is none).
fn split_time(s: &str) -> (&str, &str) {
    match TIME_SUFFIX.find(s) {
        Some(m) if m.start() > 0 => s.split_at(m.start()),
        _ => (s, ""),
    }
}

/// Two-digit years below this pivot are read as 20yy, others as 19yy.
const TWO_DIGIT_PIVOT: i32 = 30;

/// Anchor day used to shift a month-year date (`March 2019`) so that a shift moves it to
/// the month that contains the shifted middle of the month.
const MONTH_YEAR_ANCHOR_DAY: u32 = 15;

/// Leap year used for arithmetic on dates written without a year (`Jan 2`).
const YEARLESS_ANCHOR_YEAR: i32 = 2000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NameStyle {
    Full,
    Abbrev,
    /// A French month's full name.
    French,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Case {
    Title,
    Upper,
    Lower,
}

impl Case {
    fn of(word: &str) -> Case {
        if word.chars().all(char::is_uppercase) && word.chars().count() > 1 {
            Case::Upper
        } else if word.chars().all(char::is_lowercase) {
            Case::Lower
        } else {
            Case::Title
        }
    }

    fn apply(self, word: &str) -> String {
        match self {
            Case::Upper => word.to_uppercase(),
            Case::Lower => word.to_lowercase(),
            Case::Title => {
                let mut out = String::with_capacity(word.len());
                for (i, c) in word.chars().enumerate() {
                    if i == 0 {
                        out.extend(c.to_uppercase());
                    } else {
                        out.extend(c.to_lowercase());
                    }
                }
                out
            }
        }
    }
}

/// One token of the source format.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Lit(String),
    Year {
        digits: usize,
    },
    MonthNum {
        pad: bool,
    },
    MonthName {
        style: NameStyle,
        case: Case,
    },
    Weekday {
        style: NameStyle,
        case: Case,
    },
    Day {
        pad: bool,
    },
    Ordinal {
        upper: bool,
    },
    /// French `1er` (`1ᵉʳ`): written back only on the first of a month.
    Premier {
        upper: bool,
    },
}

/// A parsed date and the format it was written in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DateParts {
    /// Full year (two-digit years expanded), when the date has one.
    pub(crate) year: Option<i32>,
    /// Month, 1–12.
    pub(crate) month: u32,
    /// Day of month, when the date has one.
    pub(crate) day: Option<u32>,
    tokens: Vec<Tok>,
}

enum Lexeme {
    Num(String),
    Word(String),
    Other(char),
}

fn lex(s: &str) -> Vec<Lexeme> {
    let mut out: Vec<Lexeme> = Vec::new();
    for c in s.chars() {
        match (out.last_mut(), c) {
            (Some(Lexeme::Num(n)), d) if d.is_ascii_digit() => n.push(d),
            (Some(Lexeme::Word(w)), a) if a.is_alphabetic() => w.push(a),
            (_, d) if d.is_ascii_digit() => out.push(Lexeme::Num(d.to_string())),
            (_, a) if a.is_alphabetic() => out.push(Lexeme::Word(a.to_string())),
            (_, o) => out.push(Lexeme::Other(o)),
        }
    }
    out
}

/// Month index (1–12) and style of a month word (`Jan`, `january`, `Sept`, `février`).
fn month_word(word: &str) -> Option<(u32, NameStyle)> {
    english_month_word(word).or_else(|| {
        let lower = word.to_lowercase();
        // Written with its accents or without them (`fevrier`, `aout`).
        let i = FRENCH_MONTHS
            .iter()
            .position(|m| *m == lower || without_accents(m) == lower)?;
        Some((u32::try_from(i + 1).ok()?, NameStyle::French))
    })
}

/// A French month's name with its accents dropped (`février` → `fevrier`, `août` → `aout`).
fn without_accents(word: &str) -> String {
    word.chars()
        .map(|c| match c {
            'é' | 'è' | 'ê' => 'e',
            'û' | 'ù' => 'u',
            other => other,
        })
        .collect()
}

/// [`month_word`] for the English names.
fn english_month_word(word: &str) -> Option<(u32, NameStyle)> {
    let lower = word.to_ascii_lowercase();
    for (i, full) in MONTHS.iter().enumerate() {
        let n = u32::try_from(i + 1).ok()?;
        if lower == *full {
            return Some((n, NameStyle::Full));
        }
        if lower.len() >= 3 && full.starts_with(&lower) && lower.len() <= 4 {
            return Some((n, NameStyle::Abbrev));
        }
    }
    None
}

/// Style of a weekday word (`Thu`, `Thurs`, `thursday`).
fn weekday_word(word: &str) -> Option<NameStyle> {
    let lower = word.to_ascii_lowercase();
    WEEKDAYS.iter().find_map(|full| {
        if lower == *full {
            Some(NameStyle::Full)
        } else if (3..=5).contains(&lower.len()) && full.starts_with(&lower) {
            Some(NameStyle::Abbrev)
        } else {
            None
        }
    })
}

/// True for an English month's or weekday's name or abbreviation (lower case). Not the
/// French months: `Mai` is a given name too.
pub(crate) fn is_month_or_weekday(lower: &str) -> bool {
    weekday_word(lower).is_some() || english_month_word(lower).is_some()
}

/// A weekday alone (`Thursday`, `thu`), moved by `days` in its own style and case: a
/// weekday beside a moved date told the offset modulo 7 when it stayed.
pub(crate) fn shifted_weekday(word: &str, days: i64) -> Option<String> {
    let word = word.trim();
    let style = weekday_word(word)?;
    let lower = word.to_ascii_lowercase();
    let n = WEEKDAYS.iter().position(|full| full.starts_with(&lower))?;
    let moved = (i64::try_from(n).ok()? + days).rem_euclid(7);
    let full = WEEKDAYS[usize::try_from(moved).ok()?];
    let moved = match style {
        NameStyle::Full | NameStyle::French => full,
        NameStyle::Abbrev => &full[..3],
    };
    Some(Case::of(word).apply(moved))
}

/// A year alone (`1925`), moved as the middle of that year is by `days`.
pub(crate) fn shifted_bare_year(value: &str, days: i64) -> Option<String> {
    let v = value.trim();
    if v.len() != 4 || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let year: i32 = v.parse().ok()?;
    let moved =
        NaiveDate::from_ymd_opt(year, 7, 2)?.checked_add_signed(Duration::try_days(days)?)?;
    Some(format!("{:04}", moved.year()))
}

fn expand_year(text: &str) -> Option<i32> {
    let v: i32 = text.parse().ok()?;
    match text.len() {
        4 => Some(v),
        2 if v < TWO_DIGIT_PIVOT => Some(2000 + v),
        2 => Some(1900 + v),
        _ => None,
    }
}

/// One more item of a list of month/day dates, at the start of the rest of a text: a
/// separator (`,`, `;`, `&`, `and`, `or`, `, and`), the month and day (with a year, the date
/// rules' own), and the word after it for the dose check.
static LISTED_MONTH_DAY: LazyLock<Regex> = LazyLock::new(|| {
    #[allow(clippy::expect_used)]
    Regex::new(
        r"(?i-u)^(?:[ \t]*[,;](?:[ \t]*(?:&|and[ \t]|or[ \t]))?|[ \t]*&|[ \t]+(?:and|or)[ \t])[ \t]*(\d{1,2}/\d{1,2}(?:/\d+)?)\b(?:[ \t]+[A-Za-z%]+)?",
    )
    .expect("built-in pattern compiles")
});

/// The month/day dates listed after a cued one (`Seen 3/4 and 12/25`, `on 1/2, 2/3 & 3/4`),
/// as byte ranges, `end` being where the cued date ends: the cue that made the first a date
/// covers the list. The list ends at anything else, and at an item that is not a month and
/// day or has a unit or dose after it (`on 3/4 and 1/2 NS`): the same check as the cued
/// date's. An item with a year is passed over, left to the whole-date rules.
pub(crate) fn listed_month_days(text: &str, end: usize) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut at = end;
    while let Some(caps) = text
        .get(at..)
        .and_then(|rest| LISTED_MONTH_DAY.captures(rest))
    {
        let (Some(item), Some(whole)) = (caps.get(1), caps.get(0)) else {
            break;
        };
        let (start, stop) = (at + item.start(), at + item.end());
        if item.as_str().matches('/').count() == 1 {
            if !super::checks::cued_month_day(&text[start..at + whole.end()]) {
                break;
            }
            found.push((start, stop));
        }
        at = stop;
    }
    found
}

/// Days in `month` of `year` (leap years honoured).
pub(crate) fn days_in_month(year: i32, month: u32) -> Option<u32> {
    let first = NaiveDate::from_ymd_opt(year, month, 1)?;
    let next = if month == 12 {
        NaiveDate::from_ymd_opt(year + 1, 1, 1)?
    } else {
        NaiveDate::from_ymd_opt(year, month + 1, 1)?
    };
    u32::try_from((next - first).num_days()).ok()
}

fn ordinal_suffix(day: u32) -> &'static str {
    match (day % 10, day % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

/// Role a numeric field plays.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Year,
    Month,
    Day,
}

impl DateParts {
    /// Parses a date written in one of the supported formats; `None` when the text is not
    /// a valid calendar date (bad month, day past the end of the month, stray words).
    pub(crate) fn parse(s: &str) -> Option<DateParts> {
        // A two-digit year after an apostrophe (`Jan '19`) would be read as a day and moved
        // as one (`Jan '29`): such a date is not parsed, so it is masked.
        if s.contains(['\'', '’']) {
            return None;
        }
        let (date, time) = split_time(s.trim());
        let mut parts = match Self::compact(date) {
            Some(p) => p,
            None => Self::parse_date(date)?,
        };
        if !time.is_empty() {
            parts.tokens.push(Tok::Lit(time.to_owned()));
        }
        Some(parts)
    }

    /// `20210304`: eight digits, year first.
    fn compact(s: &str) -> Option<DateParts> {
        if s.len() != 8 || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let year: i32 = s[..4].parse().ok()?;
        let month: u32 = s[4..6].parse().ok()?;
        let day: u32 = s[6..].parse().ok()?;
        if year < 1000 || !(1..=12).contains(&month) || day == 0 {
            return None;
        }
        if day > days_in_month(year, month)? {
            return None;
        }
        Some(DateParts {
            year: Some(year),
            month,
            day: Some(day),
            tokens: vec![
                Tok::Year { digits: 4 },
                Tok::MonthNum { pad: true },
                Tok::Day { pad: true },
            ],
        })
    }

    /// A date without a time of day.
    fn parse_date(s: &str) -> Option<DateParts> {
        let lexemes = lex(s);
        let mut tokens: Vec<Tok> = Vec::new();
        let mut nums: Vec<(usize, String)> = Vec::new();
        let mut month_name: Option<u32> = None;
        let mut weekday = false;
        for lx in lexemes {
            match lx {
                Lexeme::Num(n) => {
                    if n.len() > 4 {
                        return None;
                    }
                    nums.push((tokens.len(), n));
                    // Placeholder, resolved once roles are known.
                    tokens.push(Tok::Lit(String::new()));
                }
                Lexeme::Word(w) => {
                    let lower = w.to_ascii_lowercase();
                    let after_num = nums.last().is_some_and(|(i, _)| i + 1 == tokens.len());
                    if let Some((m, style)) = month_word(&w) {
                        if month_name.is_some() {
                            return None;
                        }
                        month_name = Some(m);
                        tokens.push(Tok::MonthName {
                            style,
                            case: Case::of(&w),
                        });
                    } else if after_num && matches!(lower.as_str(), "er" | "ᵉʳ") {
                        tokens.push(Tok::Premier {
                            upper: w.chars().all(char::is_uppercase),
                        });
                    } else if after_num && matches!(lower.as_str(), "st" | "nd" | "rd" | "th") {
                        tokens.push(Tok::Ordinal {
                            upper: w.chars().all(|c| c.is_ascii_uppercase()),
                        });
                    } else if lower == "of" {
                        tokens.push(Tok::Lit(w));
                    } else if let Some(style) = weekday_word(&w).filter(|_| !weekday) {
                        weekday = true;
                        tokens.push(Tok::Weekday {
                            style,
                            case: Case::of(&w),
                        });
                    } else {
                        return None;
                    }
                }
                Lexeme::Other(c) => tokens.push(Tok::Lit(c.to_string())),
            }
        }
        let roles = assign_roles(&nums, month_name.is_some(), &tokens)?;
        let mut year = None;
        let mut month = month_name;
        let mut day = None;
        for ((_, text), role) in nums.iter().zip(&roles) {
            let v: u32 = text.parse().ok()?;
            match role {
                Role::Year => year = Some(expand_year(text)?),
                Role::Month => month = Some(v),
                Role::Day => day = Some(v),
            }
        }
        let month = month?;
        if !(1..=12).contains(&month) {
            return None;
        }
        if let Some(d) = day {
            let max = days_in_month(year.unwrap_or(YEARLESS_ANCHOR_YEAR), month)?;
            if d == 0 || d > max {
                return None;
            }
        }
        if year.is_none() && day.is_none() {
            return None;
        }
        // A weekday is written back as the moved date's: it needs a whole date.
        if weekday && (year.is_none() || day.is_none()) {
            return None;
        }
        // Padding: a one-digit field means "no padding"; a two-digit field below 10 means
        // padding; a two-digit field of 10 or more follows the other field, else pads.
        let pad_of = |role: Role| -> Option<bool> {
            nums.iter()
                .zip(&roles)
                .find(|(_, r)| **r == role)
                .and_then(|((_, t), _)| {
                    let v: u32 = t.parse().ok()?;
                    match (t.len(), v) {
                        (1, _) => Some(false),
                        (_, v) if v < 10 => Some(true),
                        _ => None,
                    }
                })
        };
        let (pm, pd) = (pad_of(Role::Month), pad_of(Role::Day));
        // Numeric dates default to padding (`12/25` style); with a month name, `30` reads
        // as unpadded (`Oct 1, 2019`).
        let default_pad = month_name.is_none();
        let pad_month = pm.or(pd).unwrap_or(default_pad);
        let pad_day = pd.or(pm).unwrap_or(default_pad);
        for ((idx, text), role) in nums.iter().zip(&roles) {
            tokens[*idx] = match role {
                Role::Year => Tok::Year { digits: text.len() },
                Role::Month => Tok::MonthNum { pad: pad_month },
                Role::Day => Tok::Day { pad: pad_day },
            };
        }
        Some(DateParts {
            year,
            month,
            day,
            tokens,
        })
    }

    /// The date as a calendar date (anchoring a missing day or year), for arithmetic.
    fn anchor(&self) -> Option<NaiveDate> {
        NaiveDate::from_ymd_opt(
            self.year.unwrap_or(YEARLESS_ANCHOR_YEAR),
            self.month,
            self.day.unwrap_or(MONTH_YEAR_ANCHOR_DAY),
        )
    }

    /// The date moved by `days`, written in the source format. With `keep_year` the
    /// source year is kept (a shifted February 29th in a non-leap year becomes the 28th).
    pub(crate) fn shifted(&self, days: i64, keep_year: bool) -> Option<String> {
        let moved = self
            .anchor()?
            .checked_add_signed(Duration::try_days(days)?)?;
        let (mut y, m, mut d) = (moved.year(), moved.month(), moved.day());
        if keep_year {
            if let Some(src) = self.year {
                y = src;
                d = d.min(days_in_month(y, m)?);
            }
        }
        if !(1000..=9999).contains(&y) {
            return None;
        }
        Some(self.render(y, m, d))
    }

    /// The four-digit year alone (`01/02/80` → `1980`), when the date has a year.
    pub(crate) fn year_only(&self) -> Option<String> {
        self.year.map(|y| format!("{y:04}"))
    }

    /// The four-digit year of the date moved by `days`, when the date has a year and a day
    /// (a month alone moves by whole days only from an anchor, which would be a guess).
    pub(crate) fn shifted_year(&self, days: i64) -> Option<String> {
        self.year?;
        self.day?;
        let moved = self
            .anchor()?
            .checked_add_signed(Duration::try_days(days)?)?;
        Some(format!("{:04}", moved.year()))
    }

    fn render(&self, year: i32, month: u32, day: u32) -> String {
        let mut out = String::new();
        for tok in &self.tokens {
            match tok {
                Tok::Lit(s) => out.push_str(s),
                Tok::Year { digits: 2 } => out.push_str(&format!("{:02}", year.rem_euclid(100))),
                Tok::Year { .. } => out.push_str(&format!("{year:04}")),
                Tok::MonthNum { pad } => out.push_str(&pad_num(month, *pad)),
                Tok::Day { pad } => out.push_str(&pad_num(day, *pad)),
                Tok::MonthName { style, case } => {
                    let idx = usize::try_from(month.saturating_sub(1))
                        .unwrap_or(0)
                        .min(11);
                    let full = MONTHS[idx];
                    let word = match style {
                        NameStyle::Full => full,
                        NameStyle::Abbrev => &full[..3],
                        NameStyle::French => FRENCH_MONTHS[idx],
                    };
                    out.push_str(&case.apply(word));
                }
                Tok::Weekday { style, case } => {
                    let n = NaiveDate::from_ymd_opt(year, month, day)
                        .map_or(0, |d| d.weekday().num_days_from_monday());
                    let full = WEEKDAYS[usize::try_from(n).unwrap_or(0).min(6)];
                    let word = match style {
                        NameStyle::Full | NameStyle::French => full,
                        NameStyle::Abbrev => &full[..3],
                    };
                    out.push_str(&case.apply(word));
                }
                Tok::Premier { upper } => {
                    if day == 1 {
                        out.push_str(if *upper { "ER" } else { "er" });
                    }
                }
                Tok::Ordinal { upper } => {
                    let suffix = ordinal_suffix(day);
                    if *upper {
                        out.push_str(&suffix.to_ascii_uppercase());
                    } else {
                        out.push_str(suffix);
                    }
                }
            }
        }
        out
    }
}

fn pad_num(v: u32, pad: bool) -> String {
    if pad {
        format!("{v:02}")
    } else {
        v.to_string()
    }
}

/// Assigns year/month/day roles to the numeric fields.
fn assign_roles(
    nums: &[(usize, String)],
    has_month_name: bool,
    tokens: &[Tok],
) -> Option<Vec<Role>> {
    let lens: Vec<usize> = nums.iter().map(|(_, t)| t.len()).collect();
    if has_month_name {
        return match lens.as_slice() {
            [4] => Some(vec![Role::Year]),
            [1 | 2] => Some(vec![Role::Day]),
            [1 | 2, 4] => Some(vec![Role::Day, Role::Year]),
            [4, 1 | 2] => Some(vec![Role::Year, Role::Day]),
            [1 | 2, 2] => Some(vec![Role::Day, Role::Year]),
            _ => None,
        };
    }
    // The separator between the fields (not the space or comma after a weekday).
    let first_sep = tokens.iter().find_map(|t| match t {
        Tok::Lit(s) if !s.trim().is_empty() && s != "," => s.chars().next(),
        _ => None,
    });
    let value = |i: usize| -> Option<u32> { nums.get(i)?.1.parse().ok() };
    match lens.as_slice() {
        [4, 1 | 2, 1 | 2] => Some(vec![Role::Year, Role::Month, Role::Day]),
        [1 | 2, 1 | 2, 2 | 4] => {
            if first_sep == Some('.') || (value(0)? > 12 && value(1)? <= 12) {
                Some(vec![Role::Day, Role::Month, Role::Year])
            } else {
                Some(vec![Role::Month, Role::Day, Role::Year])
            }
        }
        [1 | 2, 4] => Some(vec![Role::Month, Role::Year]),
        [4, 1 | 2] => Some(vec![Role::Year, Role::Month]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rules' regex of French months (`patterns::FR_MONTH`) takes exactly the names
    /// [`month_word`] reads, with and without accents, in either case.
    #[test]
    fn the_french_month_regex_is_the_french_month_list() {
        let whole = Regex::new(&format!("(?i)^{}$", super::super::patterns::FR_MONTH))
            .expect("valid regex");
        for (i, m) in FRENCH_MONTHS.iter().enumerate() {
            for form in [m.to_string(), without_accents(m), m.to_uppercase()] {
                assert!(whole.is_match(&form), "{form}");
                let month = month_word(&form).map(|(n, _)| n);
                assert_eq!(month, u32::try_from(i + 1).ok(), "{form}");
            }
        }
        let alternatives = super::super::patterns::FR_MONTH
            .trim_start_matches("(?:")
            .trim_end_matches(')')
            .split('|')
            .count();
        assert_eq!(alternatives, FRENCH_MONTHS.len());
    }

    macro_rules! shift_rows {
        ($($name:ident: $src:expr, $days:expr, $keep:expr => $want:expr;)*) => {$(
            #[test]
            fn $name() {
                let parts = DateParts::parse($src);
                let got = parts.and_then(|p| p.shifted($days, $keep));
                assert_eq!(got.as_deref(), $want, "source {:?}", $src);
            }
        )*};
    }

    shift_rows! {
        us_padded: "01/02/1980", 10, false => Some("01/12/1980");
        french_month: "5 mars 2024", 30, false => Some("4 avril 2024");
        french_month_accented: "28 février 2023", 1, false => Some("1 mars 2023");
        french_month_into_an_accent: "31 juillet 2024", 1, false => Some("1 août 2024");
        french_month_unaccented: "15 aout 2024", 0, false => Some("15 août 2024");
        french_month_upper: "5 FÉVRIER 2024", 30, false => Some("6 MARS 2024");
        french_month_year: "décembre 2023", 31, false => Some("janvier 2024");
        french_premier: "1er avril 2024", 30, false => Some("1er mai 2024");
        french_premier_moved_off_the_first: "1er mars 2024", 3, false => Some("4 mars 2024");
        french_onto_the_first: "28 février 2023", 1, false => Some("1 mars 2023");
        french_premier_upper: "1ER MARS 2024", 31, false => Some("1ER AVRIL 2024");
        french_premier_superscript: "1ᵉʳ mars 2024", 31, false => Some("1er avril 2024");
        french_day_month: "5 mars", 1, false => Some("6 mars");
        french_two_digit_year: "15 mars 24", 1, false => Some("16 mars 24");
        short_dotted_day_first: "3.5.24", 1, false => Some("4.5.24");
        us_unpadded_two_digit_year: "1/2/80", 31, false => Some("2/2/80");
        iso: "1980-01-02", -3, false => Some("1979-12-30");
        dotted_day_first: "02.01.1980", 1, false => Some("03.01.1980");
        month_abbrev: "Jan 2, 1980", 40, false => Some("Feb 11, 1980");
        month_abbrev_dot: "Sept. 30, 2019", 1, false => Some("Oct. 1, 2019");
        day_month_full: "2 January 1980", 366, false => Some("2 January 1981");
        ordinal: "January 2nd, 1980", 1, false => Some("January 3rd, 1980");
        ordinal_teens: "January 9th, 1980", 2, false => Some("January 11th, 1980");
        month_year: "March 2019", 30, false => Some("April 2019");
        numeric_month_year: "3/2019", -20, false => Some("2/2019");
        upper_case_month: "02-JAN-1980", 31, false => Some("02-FEB-1980");
        keep_year: "12/30/1980", 5, true => Some("01/04/1980");
        keep_year_leap: "02/28/1980", 366, true => Some("02/28/1980");
        inherit_padding: "1/25/1980", 10, false => Some("2/4/1980");
        bad_month: "13/13/1980", 1, false => None;
        day_first_by_value: "13/02/1980", 1, false => Some("14/02/1980");
        bad_day: "02/30/1980", 1, false => None;
        stray_word: "Jan foo 1980", 1, false => None;
        year_alone: "1980", 1, false => None;
        iso_timestamp_zulu: "2021-04-01T09:00:00Z", 10, false => Some("2021-04-11T09:00:00Z");
        iso_timestamp_offset: "2021-03-20T14:30:00+02:00", 10, false => Some("2021-03-30T14:30:00+02:00");
        iso_timestamp_fraction: "2021-03-04T09:30:00.123", 1, false => Some("2021-03-05T09:30:00.123");
        iso_timestamp_hour_only: "2021-04-01T09", 1, false => Some("2021-04-02T09");
        date_space_time: "2021-03-20 14:30", -20, false => Some("2021-02-28 14:30");
        us_date_time_pm: "03/04/2021 at 9:30 pm", 1, false => Some("03/05/2021 at 9:30 pm");
        compact: "20210304", 10, false => Some("20210314");
        compact_timestamp: "20210304T093000Z", 1, false => Some("20210305T093000Z");
        compact_bad_month: "20211304", 1, false => None;
        weekday_abbrev: "Thu 03/04/2021", 10, false => Some("Sun 03/14/2021");
        weekday_full_comma: "Thursday, March 4, 2021", 10, false => Some("Sunday, March 14, 2021");
        weekday_day_first: "Friday 5 March 2021", 10, false => Some("Monday 15 March 2021");
        weekday_dotted: "Thu, 04.03.2021", 1, false => Some("Fri, 05.03.2021");
        weekday_upper: "THU 03/04/2021", 1, false => Some("FRI 03/05/2021");
        weekday_without_year: "Thu March 4", 1, false => None;
        two_weekdays: "Thu Fri 03/04/2021", 1, false => None;
        time_alone: "09:30", 1, false => None;
    }

    #[test]
    fn year_only_expands_two_digit_years() {
        let p = DateParts::parse("1/2/80");
        assert_eq!(p.and_then(|p| p.year_only()).as_deref(), Some("1980"));
        let p = DateParts::parse("1/2/19");
        assert_eq!(p.and_then(|p| p.year_only()).as_deref(), Some("2019"));
    }

    #[test]
    fn day_first_when_first_field_cannot_be_a_month() {
        let p = DateParts::parse("25/12/1980");
        assert_eq!(p.map(|p| (p.month, p.day)), Some((12, Some(25))));
    }
}
