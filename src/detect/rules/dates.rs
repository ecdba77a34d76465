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

/// A language whose month names a date may carry besides English.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lang {
    French,
    Spanish,
    Portuguese,
    Italian,
    German,
    Dutch,
    /// In the genitive a date takes (`5 stycznia 2001`).
    Polish,
    Romanian,
    /// In the genitive a date takes (`5 марта 2020`).
    Russian,
    Hungarian,
    /// In the genitive a date takes (`16 Νοεμβρίου 1975`).
    Greek,
}

/// The languages of [`Lang`] as bits of one set, in the order of [`OTHER_MONTHS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Langs(u16);

impl Langs {
    fn of(lang: Lang) -> Langs {
        let i = OTHER_MONTHS
            .iter()
            .position(|(l, _)| *l == lang)
            .unwrap_or(0);
        Langs(1 << i)
    }

    fn has(self, lang: Lang) -> bool {
        self.0 & Langs::of(lang).0 != 0
    }

    /// `self ∩ others`, unless that is empty (a marker of languages the word is in none of
    /// says nothing).
    fn narrowed(self, others: &[Lang]) -> Langs {
        let mask = others.iter().fold(0, |m, l| m | Langs::of(*l).0);
        match self.0 & mask {
            0 => self,
            both => Langs(both),
        }
    }

    /// `self` without `lang`, unless that leaves none.
    fn without(self, lang: Lang) -> Langs {
        match self.0 & !Langs::of(lang).0 {
            0 => self,
            rest => Langs(rest),
        }
    }

    /// The name of `month` (0-based) in each language of the set, when they all agree.
    fn month_name(self, month: usize) -> Option<&'static str> {
        let mut names = OTHER_MONTHS
            .iter()
            .enumerate()
            .filter(|(i, _)| self.0 & (1 << i) != 0)
            .map(|(_, (_, names))| names[month]);
        let first = names.next()?;
        names.all(|n| n == first).then_some(first)
    }
}

/// The month names of the other languages, index 0 = January, in the form a date writes
/// them. A moved date keeps its language: `4. Mai 2019` moved by a month is `3. Juni 2019`,
/// not the French `juin`. `patterns::OTHER_MONTH` and `patterns::HU_MONTH` are these as
/// regexes (a test below holds them together).
const OTHER_MONTHS: [(Lang, [&str; 12]); 11] = [
    (Lang::French, FRENCH_MONTHS),
    (
        Lang::Spanish,
        [
            "enero",
            "febrero",
            "marzo",
            "abril",
            "mayo",
            "junio",
            "julio",
            "agosto",
            "septiembre",
            "octubre",
            "noviembre",
            "diciembre",
        ],
    ),
    (
        Lang::Portuguese,
        [
            "janeiro",
            "fevereiro",
            "março",
            "abril",
            "maio",
            "junho",
            "julho",
            "agosto",
            "setembro",
            "outubro",
            "novembro",
            "dezembro",
        ],
    ),
    (
        Lang::Italian,
        [
            "gennaio",
            "febbraio",
            "marzo",
            "aprile",
            "maggio",
            "giugno",
            "luglio",
            "agosto",
            "settembre",
            "ottobre",
            "novembre",
            "dicembre",
        ],
    ),
    (
        Lang::German,
        [
            "januar",
            "februar",
            "märz",
            "april",
            "mai",
            "juni",
            "juli",
            "august",
            "september",
            "oktober",
            "november",
            "dezember",
        ],
    ),
    (
        Lang::Dutch,
        [
            "januari",
            "februari",
            "maart",
            "april",
            "mei",
            "juni",
            "juli",
            "augustus",
            "september",
            "oktober",
            "november",
            "december",
        ],
    ),
    (
        Lang::Polish,
        [
            "stycznia",
            "lutego",
            "marca",
            "kwietnia",
            "maja",
            "czerwca",
            "lipca",
            "sierpnia",
            "września",
            "października",
            "listopada",
            "grudnia",
        ],
    ),
    (
        Lang::Romanian,
        [
            "ianuarie",
            "februarie",
            "martie",
            "aprilie",
            "mai",
            "iunie",
            "iulie",
            "august",
            "septembrie",
            "octombrie",
            "noiembrie",
            "decembrie",
        ],
    ),
    (
        Lang::Russian,
        [
            "января",
            "февраля",
            "марта",
            "апреля",
            "мая",
            "июня",
            "июля",
            "августа",
            "сентября",
            "октября",
            "ноября",
            "декабря",
        ],
    ),
    (
        Lang::Hungarian,
        [
            "január",
            "február",
            "március",
            "április",
            "május",
            "június",
            "július",
            "augusztus",
            "szeptember",
            "október",
            "november",
            "december",
        ],
    ),
    (
        Lang::Greek,
        [
            "ιανουαρίου",
            "φεβρουαρίου",
            "μαρτίου",
            "απριλίου",
            "μαΐου",
            "ιουνίου",
            "ιουλίου",
            "αυγούστου",
            "σεπτεμβρίου",
            "οκτωβρίου",
            "νοεμβρίου",
            "δεκεμβρίου",
        ],
    ),
];

/// Other spellings a date may use for a month: the Spanish `setiembre`, the Austrian
/// `Jänner`.
const MONTH_VARIANTS: [(&str, Lang, u32); 2] =
    [("setiembre", Lang::Spanish, 9), ("jänner", Lang::German, 1)];

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
    /// A month's full name in one of these languages; written back only where they agree
    /// on the moved month's name.
    Named(Langs),
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

/// The zero of each block of ten decimal digits a note may be written in besides ASCII:
/// Arabic-Indic, its Persian/Urdu form, Devanagari, Bengali, Gurmukhi, Gujarati, Oriya,
/// Tamil, Telugu, Kannada, Malayalam, Thai, Lao, Myanmar, Khmer and full-width. Written out
/// because the standard library reads ASCII digits only, and no kept crate gives a digit's
/// value; Unicode lays each script's ten digits out in order from its zero.
const DIGIT_ZEROS: [u32; 16] = [
    0x0660, 0x06F0, 0x0966, 0x09E6, 0x0A66, 0x0AE6, 0x0B66, 0x0BE6, 0x0C66, 0x0CE6, 0x0D66, 0x0E50,
    0x0ED0, 0x1040, 0x17E0, 0xFF10,
];

/// The value of `c` when it is a digit of a script of [`DIGIT_ZEROS`], with that script's
/// zero.
fn native_digit(c: char) -> Option<(u32, char)> {
    let code = u32::from(c);
    let zero = DIGIT_ZEROS
        .iter()
        .find(|z| (**z..**z + 10).contains(&code))?;
    Some((code - zero, char::from_u32(*zero)?))
}

/// True when `c` is a decimal digit, ASCII or of a script of [`DIGIT_ZEROS`].
pub(crate) fn is_decimal_digit(c: char) -> bool {
    c.is_ascii_digit() || native_digit(c).is_some()
}

/// `s` with its digits in any script of [`DIGIT_ZEROS`] written as ASCII digits, and the
/// zero of that script when there was one (of the last, if `s` mixes scripts).
pub(crate) fn ascii_digits(s: &str) -> (String, Option<char>) {
    let mut native = None;
    let out = s
        .chars()
        .map(|c| match native_digit(c) {
            Some((value, zero)) => {
                native = Some(zero);
                char::from_digit(value, 10).unwrap_or(c)
            }
            None => c,
        })
        .collect();
    (out, native)
}

/// `s` with its ASCII digits written in the script whose zero is `zero`.
fn native_digits(s: &str, zero: char) -> String {
    s.chars()
        .map(|c| {
            // `to_digit` reads ASCII digits only.
            c.to_digit(10)
                .and_then(|d| char::from_u32(u32::from(zero) + d))
                .unwrap_or(c)
        })
        .collect()
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
    /// The zero of the script its digits are written in, when not ASCII (`১৪/০১/২০২৬`):
    /// a moved date is written back in the same digits.
    zero: Option<char>,
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
        let (month, langs) = other_month_word(word)?;
        Some((month, NameStyle::Named(langs)))
    })
}

/// True when `word` names a month only in Spanish or Portuguese (`mayo`, `junho`), which
/// write `de` between a date's day and month (`3 de mayo`): without it, `3 mayo packets` is
/// a condiment, not a date.
pub(crate) fn iberian_month_word(word: &str) -> bool {
    let iberian = Langs::of(Lang::Spanish).0 | Langs::of(Lang::Portuguese).0;
    other_month_word(word).is_some_and(|(_, langs)| langs.0 & !iberian == 0)
}

/// The month (1–12) a word names in the other languages, and the languages it is that
/// month's name in (`mai`: French, German and Romanian). Written with its accents or
/// without them (`fevrier`, `aout`, `wrzesnia`).
fn other_month_word(word: &str) -> Option<(u32, Langs)> {
    let lower = word.to_lowercase();
    let mut found: Option<(u32, Langs)> = None;
    let add = |found: &mut Option<(u32, Langs)>, month: u32, lang: Lang| match found {
        None => *found = Some((month, Langs::of(lang))),
        Some((m, langs)) if *m == month => langs.0 |= Langs::of(lang).0,
        Some(_) => {}
    };
    // Spelled as written first: `oktober` is German and Dutch, not the Hungarian `október`
    // without its accent.
    for exact in [true, false] {
        let same = |name: &str| {
            if exact {
                name == lower
            } else {
                same_without_accents(name, &lower)
            }
        };
        for (lang, names) in OTHER_MONTHS {
            for (i, name) in names.iter().enumerate() {
                if same(name) {
                    add(&mut found, u32::try_from(i + 1).unwrap_or(1), lang);
                }
            }
        }
        for (variant, lang, month) in MONTH_VARIANTS {
            if same(variant) {
                add(&mut found, month, lang);
            }
        }
        if found.is_some() {
            break;
        }
    }
    found
}

/// Words a detected date may start with, kept as they are (`el 3 de mayo de 1950`, `on
/// 03/04/2021`, `am 4. Mai 2019`): a model's span took the word before the date with it,
/// which left a date that could not be moved, and so was masked.
const LEADING_WORDS: [&str; 14] = [
    "on", "the", "el", "del", "em", "il", "lo", "le", "du", "am", "der", "den", "dem", "vom",
];

/// Whether the last token that is not a space is a number (`2020 г.`).
fn after_num_and_space(nums: &[(usize, String)], tokens: &[Tok]) -> bool {
    nums.last().is_some_and(|(i, _)| {
        tokens[i + 1..]
            .iter()
            .all(|t| matches!(t, Tok::Lit(l) if l.trim().is_empty()))
    })
}

/// The role a unit word gives a number, and whether the number comes after the word: the
/// Korean, Chinese and Japanese year, month and day after theirs (`1994년 3월 15일`,
/// `1994年3月15日`), the Vietnamese before (`ngày 8 tháng 12 năm 1970`).
fn unit_word(lower: &str) -> Option<(Role, bool)> {
    match lower {
        "년" | "年" => Some((Role::Year, false)),
        "월" | "月" => Some((Role::Month, false)),
        "일" | "日" => Some((Role::Day, false)),
        "năm" => Some((Role::Year, true)),
        "tháng" => Some((Role::Month, true)),
        "ngày" => Some((Role::Day, true)),
        _ => None,
    }
}

/// A letter of a month's name with its diacritic dropped (`é` → `e`, `ś` → `s`), as notes
/// typed without them write it.
fn plain_letter(c: char) -> char {
    match c {
        'é' | 'è' | 'ê' | 'ę' => 'e',
        'û' | 'ù' | 'ú' | 'ü' | 'ű' => 'u',
        'á' | 'ä' | 'ą' | 'ă' | 'â' => 'a',
        'ó' | 'ö' | 'ő' => 'o',
        'í' | 'î' => 'i',
        'ç' => 'c',
        'ś' | 'ș' | 'ş' => 's',
        'ź' | 'ż' => 'z',
        'ł' => 'l',
        'ń' => 'n',
        other => other,
    }
}

/// Whether two words are the same once their diacritics are dropped (`février`, `fevrier`),
/// compared letter by letter without building either.
fn same_without_accents(a: &str, b: &str) -> bool {
    a.chars().map(plain_letter).eq(b.chars().map(plain_letter))
}

/// A month's name with its diacritics dropped (`février` → `fevrier`).
#[cfg(test)]
fn without_accents(word: &str) -> String {
    word.chars().map(plain_letter).collect()
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
        NameStyle::Full | NameStyle::Named(_) => full,
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
/// rules' own), and the word after it for the dose check. Compiled with the rule table
/// (`patterns::all`).
pub(crate) const LISTED_MONTH_DAY: &str = r"(?i-u)^(?:[ \t]*[,;](?:[ \t]*(?:&|and[ \t]|or[ \t]))?|[ \t]*&|[ \t]+(?:and|or)[ \t])[ \t]*(\d{1,2}/\d{1,2}(?:/\d+)?)\b(?:[ \t]+[A-Za-z%]+)?";

/// The month/day dates listed after a cued one (`Seen 3/4 and 12/25`, `on 1/2, 2/3 & 3/4`),
/// as byte ranges, `end` being where the cued date ends: the cue that made the first a date
/// covers the list. The list ends at anything else, and at an item that is not a month and
/// day or has a unit or dose after it (`on 3/4 and 1/2 NS`): the same check as the cued
/// date's. An item with a year is passed over, left to the whole-date rules. `item` is
/// [`LISTED_MONTH_DAY`], compiled.
pub(crate) fn listed_month_days(item: &Regex, text: &str, end: usize) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut at = end;
    while let Some(caps) = text.get(at..).and_then(|rest| item.captures(rest)) {
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
        // Most dates are ASCII: read them as they are, without a copy.
        if s.is_ascii() {
            return Self::parse_ascii(s);
        }
        // Another script's digits are read as ASCII ones, where they stand alone: a date
        // mixing them with ASCII digits is no one script's.
        let (ascii, zero) = ascii_digits(s);
        if zero.is_some() && s.bytes().any(|b| b.is_ascii_digit()) {
            return None;
        }
        let mut parts = Self::parse_ascii(&ascii)?;
        parts.zero = zero;
        Some(parts)
    }

    /// [`DateParts::parse`] of a date in ASCII digits.
    fn parse_ascii(s: &str) -> Option<DateParts> {
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
            zero: None,
        })
    }

    /// A date without a time of day.
    fn parse_date(s: &str) -> Option<DateParts> {
        let lexemes = lex(s);
        let mut tokens: Vec<Tok> = Vec::new();
        let mut nums: Vec<(usize, String)> = Vec::new();
        let mut month_name: Option<u32> = None;
        // Where the month's name stands, and the word `de` (`3 de marzo de 2020`), which
        // says Spanish or Portuguese.
        let mut month_at = 0;
        let mut month_text = String::new();
        let mut de = false;
        let mut weekday = false;
        // The role each number's unit word gives it (`1994년 3월 15일`, `ngày 8 tháng 12
        // năm 1970`), and a role waiting for the number after its word.
        let mut marked: Vec<Option<Role>> = Vec::new();
        let mut pending: Option<Role> = None;
        for lx in lexemes {
            match lx {
                Lexeme::Num(n) => {
                    if n.len() > 4 {
                        return None;
                    }
                    marked.push(pending.take());
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
                        month_at = tokens.len();
                        month_text = w.clone();
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
                    } else if lower == "of"
                        || (lower == "г" && after_num_and_space(&nums, &tokens))
                        || (LEADING_WORDS.contains(&lower.as_str())
                            && nums.is_empty()
                            && month_name.is_none()
                            && !weekday)
                    {
                        // `г.` after a Russian year (`5 марта 2020 г.`) is `год`, "year"; a
                        // leading word stays as it was written.
                        tokens.push(Tok::Lit(w));
                    } else if let Some((role, before)) = unit_word(&lower) {
                        if before {
                            pending = Some(role);
                        } else if let Some(last) = marked.last_mut().filter(|_| after_num) {
                            *last = Some(role);
                        } else {
                            return None;
                        }
                        tokens.push(Tok::Lit(w));
                    } else if w == "de" {
                        de = true;
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
        let roles = if marked.iter().any(Option::is_some) {
            // Every number named by its unit, each unit once, and no month's name besides.
            let roles: Vec<Role> = marked.into_iter().collect::<Option<_>>()?;
            let once = [Role::Year, Role::Month, Role::Day]
                .iter()
                .all(|r| roles.iter().filter(|x| *x == r).count() <= 1);
            if !once || month_name.is_some() || pending.is_some() {
                return None;
            }
            roles
        } else {
            assign_roles(&nums, month_name.is_some(), &tokens)?
        };
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
        // A day with a full stop after it (`4. Mai`) says German.
        let day_dot = nums.iter().zip(&roles).any(|((i, _), r)| {
            *r == Role::Day && matches!(tokens.get(i + 1), Some(Tok::Lit(l)) if l == ".")
        });
        if let Some(Tok::MonthName {
            style: NameStyle::Named(langs),
            ..
        }) = tokens.get_mut(month_at)
        {
            // French, the first language read here, keeps a name no marker settles (`5 mai
            // 2024`); any other name shared by languages that name the moved month apart
            // (`3 marzo 2020`: Spanish `abril`, Italian `aprile`) is masked, not moved.
            // Spanish and Portuguese write `de` between a date's parts, and only they do.
            *langs = if de {
                langs.narrowed(&[Lang::Spanish, Lang::Portuguese])
            } else {
                langs.narrowed(&[
                    Lang::French,
                    Lang::Italian,
                    Lang::German,
                    Lang::Dutch,
                    Lang::Polish,
                    Lang::Romanian,
                    Lang::Russian,
                    Lang::Hungarian,
                    Lang::Greek,
                ])
            };
            // German writes a stop after the day (`4. Mai`) and capitalises the month
            // (`Oktober 2020`); Dutch does neither (`1 oktober`, `oktober 2020`).
            let german = day_dot || (day.is_none() && Case::of(&month_text) == Case::Title);
            if german {
                *langs = langs.narrowed(&[Lang::German]);
            } else if langs.has(Lang::German) {
                *langs = langs.without(Lang::German);
            }
            if langs.has(Lang::French) && !(de || day_dot) {
                *langs = Langs::of(Lang::French);
            }
        } else if de {
            return None;
        } else if let Some(Tok::MonthName { style, .. }) = tokens.get_mut(month_at) {
            // An English name that is German too, after a day with a stop (`3. April`).
            let german = other_month_word(&month_text).is_some_and(|(_, l)| l.has(Lang::German));
            if day_dot && *style == NameStyle::Full && german {
                *style = NameStyle::Named(Langs::of(Lang::German));
            }
        }
        Some(DateParts {
            year,
            month,
            day,
            tokens,
            zero: None,
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
    /// `None` where the date cannot be written back: out of range, or a month's name whose
    /// language is not known and whose languages name the moved month apart.
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
        self.render(y, m, d)
    }

    /// The four-digit year alone (`01/02/80` → `1980`), when the date has a year.
    pub(crate) fn year_only(&self) -> Option<String> {
        self.year.map(|y| self.in_its_digits(format!("{y:04}")))
    }

    /// The four-digit year of the date moved by `days`, when the date has a year and a day
    /// (a month alone moves by whole days only from an anchor, which would be a guess).
    pub(crate) fn shifted_year(&self, days: i64) -> Option<String> {
        self.year?;
        self.day?;
        let moved = self
            .anchor()?
            .checked_add_signed(Duration::try_days(days)?)?;
        Some(self.in_its_digits(format!("{:04}", moved.year())))
    }

    /// `s`, written in ASCII digits, in the date's own.
    fn in_its_digits(&self, s: String) -> String {
        match self.zero {
            Some(zero) => native_digits(&s, zero),
            None => s,
        }
    }

    fn render(&self, year: i32, month: u32, day: u32) -> Option<String> {
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
                        NameStyle::Named(langs) => langs.month_name(idx)?,
                    };
                    out.push_str(&case.apply(word));
                }
                Tok::Weekday { style, case } => {
                    let n = NaiveDate::from_ymd_opt(year, month, day)
                        .map_or(0, |d| d.weekday().num_days_from_monday());
                    let full = WEEKDAYS[usize::try_from(n).unwrap_or(0).min(6)];
                    let word = match style {
                        NameStyle::Full | NameStyle::Named(_) => full,
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
        Some(self.in_its_digits(out))
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

    /// The rules' regexes of other languages' months (`patterns::OTHER_MONTH`,
    /// `patterns::HU_MONTH`, with the English and French ones of `patterns::MONTH`) take every
    /// name of [`OTHER_MONTHS`], and every name they take is read as its month.
    #[test]
    fn the_other_month_regexes_are_the_month_tables() {
        use super::super::patterns::{HU_MONTH, MONTH, OTHER_MONTH};
        let whole = |re: &str| Regex::new(&format!("(?i)^(?:{re})$")).expect("valid regex");
        let any = whole(&format!("{OTHER_MONTH}|{HU_MONTH}|{MONTH}"));
        let tables = OTHER_MONTHS
            .iter()
            .flat_map(|(_, names)| names.iter().enumerate());
        let variants = MONTH_VARIANTS.iter().map(|(v, _, m)| (*m as usize - 1, v));
        for (i, name) in tables.chain(variants) {
            assert!(any.is_match(name), "{name}");
            assert_eq!(
                month_word(name).map(|(m, _)| m as usize),
                Some(i + 1),
                "{name}"
            );
        }
        for re in [OTHER_MONTH, HU_MONTH] {
            let names = re
                .trim_start_matches("(?:")
                .trim_end_matches(')')
                .split('|');
            for alternative in names {
                // `wrze[sś]nia`: each spelling the class allows.
                let forms: Vec<String> = match alternative.split_once('[') {
                    Some((head, rest)) => {
                        let (class, tail) = rest.split_once(']').expect("a class");
                        class.chars().map(|c| format!("{head}{c}{tail}")).collect()
                    }
                    None => vec![alternative.to_string()],
                };
                for form in forms {
                    assert!(other_month_word(&form).is_some(), "{form}");
                }
            }
        }
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
        french_mai_stays_french: "5 mai 2024", 30, false => Some("4 juin 2024");
        german_day_with_a_stop: "4. Mai 2019", 30, false => Some("3. Juni 2019");
        german_april_is_not_english: "3. April 2020", 30, false => Some("3. Mai 2020");
        german_without_year: "15. März", 1, false => Some("16. März");
        german_austrian_january: "3. Jänner 2020", 31, false => Some("3. Februar 2020");
        spanish_de: "3 de marzo de 2020", 30, false => Some("2 de abril de 2020");
        spanish_month_year: "marzo de 2020", 31, false => Some("abril de 2020");
        spanish_setiembre: "3 de setiembre de 2020", 30, false => Some("3 de octubre de 2020");
        italian_without_de: "3 marzo 2020", 30, false => Some("2 aprile 2020");
        portuguese: "5 de junho de 2018", 30, false => Some("5 de julho de 2018");
        spanish_or_portuguese_apart_is_masked: "3 de agosto de 2020", 30, false => None;
        spanish_or_portuguese_agree: "3 de agosto de 2020", 1, false => Some("4 de agosto de 2020");
        dutch: "12 mei 2020", 30, false => Some("11 juni 2020");
        polish_genitive: "5 stycznia 2001", 31, false => Some("5 lutego 2001");
        polish_unaccented: "5 wrzesnia 2001", 30, false => Some("5 października 2001");
        romanian: "12 martie 1985", 30, false => Some("11 aprilie 1985");
        russian_genitive: "5 марта 2020", 30, false => Some("4 апреля 2020");
        greek_genitive: "16 Νοεμβρίου 1975", 30, false => Some("16 Δεκεμβρίου 1975");
        greek_diaeresis: "3 μαΐου 2001", 30, false => Some("2 ιουνίου 2001");
        spanish_with_the_word_before: "el 3 de mayo de 1950", 30, false => Some("el 2 de junio de 1950");
        english_with_the_word_before: "on 03/04/2021", 1, false => Some("on 03/05/2021");
        german_with_the_word_before: "am 4. Mai 2019", 30, false => Some("am 3. Juni 2019");
        english_ordinal_with_the: "the 3rd of March 2020", 30, false => Some("the 2nd of April 2020");
        other_word_before: "foo 03/04/2021", 1, false => None;
        leading_word_after_the_date: "03/04/2021 el", 1, false => None;
        russian_with_its_year_word: "5 марта 2020 г.", 30, false => Some("4 апреля 2020 г.");
        hungarian_year_first: "1985. május 5.", 30, false => Some("1985. június 4.");
        de_with_an_english_month: "3 de March 2020", 1, false => None;
        korean: "1994년 3월 15일", 30, false => Some("1994년 4월 14일");
        chinese: "1994年3月15日", 30, false => Some("1994年4月14日");
        korean_month_year: "1994년 3월", 31, false => Some("1994년 4월");
        vietnamese: "ngày 8 tháng 12 năm 1970", 30, false => Some("ngày 7 tháng 1 năm 1971");
        bengali_digits: "১৪/০১/২০২৬", 1, false => Some("১৫/০১/২০২৬");
        devanagari_digits_dotted: "१२.०३.२०२०", 30, false => Some("११.०४.२०२०");
        arabic_indic_digits: "١٥/٠٣/٢٠٢٠", -15, false => Some("٢٩/٠٢/٢٠٢٠");
        digits_of_two_scripts: "১৪/01/2026", 1, false => None;
        korean_bad_month: "1994년 13월 1일", 1, false => None;
        korean_unit_twice: "1994년 3월 4월", 1, false => None;
        korean_number_without_unit: "1994년 3 15일", 1, false => None;
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

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// A date in each language, moved, reads back as the moved day; only a name two
        /// languages share that names the moved month apart (`3 de agosto`) is refused.
        #[test]
        fn named_dates_move_and_read_back(m in 1u32..=12, d in 1u32..=28, y in 1900i32..2100, days in -800i64..800) {
            use chrono::Datelike;
            let want = NaiveDate::from_ymd_opt(y, m, d)
                .and_then(|x| x.checked_add_signed(Duration::days(days)));
            for (lang, names) in OTHER_MONTHS {
                let name = names[m as usize - 1];
                let src = match lang {
                    Lang::Spanish | Lang::Portuguese => format!("{d} de {name} de {y}"),
                    Lang::German => format!("{d}. {name} {y}"),
                    Lang::Hungarian => format!("{y}. {name} {d}."),
                    _ => format!("{d} {name} {y}"),
                };
                let parsed = DateParts::parse(&src);
                proptest::prop_assert!(parsed.is_some(), "{}", src);
                let moved = parsed.and_then(|p| p.shifted(days, false));
                let shared = matches!(lang, Lang::Spanish | Lang::Portuguese);
                proptest::prop_assert!(moved.is_some() || shared, "{} by {}", src, days);
                if let Some(moved) = moved {
                    let back = DateParts::parse(&moved);
                    proptest::prop_assert_eq!(
                        back.map(|b| (b.year, b.month, b.day)),
                        want.map(|w| (Some(w.year()), w.month(), Some(w.day()))),
                        "{} by {}: {}", src, days, moved
                    );
                }
            }
        }
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
