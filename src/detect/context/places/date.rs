//! Dates written with a month name: `November 4`, `September tenth`, `4th March`, `the
//! fifth of August, 2017`.
//!
//! Numeric dates (`11/04/2023`, `2023-11-04`) and ISO shapes belong to the rule table in
//! `detect::rules`, which validates them; what it cannot see is a date spelled in words,
//! which notes and letters use as often as digits.

use super::super::{STRONG, WEAK};
use super::cues::Cue;
use crate::detect::Label;

/// `{MONTHS}`: month names and their abbreviations.
pub(super) const MONTHS: &str = "January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec";

/// `{ORDINALS}`: the days of a month as ordinal words.
pub(super) const ORDINALS: &str = "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|twenty-first|twenty-second|twenty-third|twenty-fourth|twenty-fifth|twenty-sixth|twenty-seventh|twenty-eighth|twenty-ninth|thirtieth|thirty-first";

/// The date shapes; group 1 is the date.
pub(super) const CUES: &[Cue] = &[
    // November 4, September tenth, Nov. 4th, 2021
    Cue::new(
        r"\b((?:{MONTHS})\.?[ \t]+(?:\d{1,2}(?:st|nd|rd|th)?|{ORDINALS})\b(?:,?[ \t]+\d{4}\b)?)",
        Label::Date,
        STRONG,
    ),
    // the fifth of August, 2017; 3rd day of May
    Cue::new(
        r"(?i)\b((?:the[ \t]+)?(?:{ORDINALS}|\d{1,2}(?:st|nd|rd|th))[ \t]+(?:day[ \t]+)?of[ \t]+(?:{MONTHS}),?(?:[ \t]+\d{4})?)\b",
        Label::Date,
        STRONG,
    ),
    // the weekday written before a date (`Tuesday, March 5th`, `Tue 12/03/2024`): with the
    // date it narrows the day, so it is part of it
    Cue::new(
        r"\b((?:Mon|Tues?|Wed(?:nes)?|Thu(?:rs)?|Fri|Sat(?:ur)?|Sun)(?:day)?\.?),?[ \t]+(?:(?:{MONTHS})\.?[ \t]+\d|\d{1,2}(?:st|nd|rd|th)?[ \t]+(?:{MONTHS})|\d{1,4}[/.-]\d{1,2}[/.-]\d{1,4}|(?:the[ \t]+)?(?:{ORDINALS})[ \t]+of)",
        Label::Date,
        STRONG,
    ),
    // 4 March, 21st Sept
    Cue::new(
        r"\b(\d{1,2}(?:st|nd|rd|th)?[ \t]+(?:{MONTHS}))\b",
        Label::Date,
        WEAK,
    ),
    // A birth year on its own (`born 1931`, `b. 1931`, `year of birth: 1931`, `YOB 1931`):
    // a year alone is no date to mask, but a birth year tells an age, so Safe Harbor must
    // see it (`deid` masks it when it reveals an age over 89).
    Cue::new(
        r"(?i)(?:\bborn|\bb\.|\byear[ \t]+of[ \t]+birth|\bbirth[ \t]*year|\byob)[ \t]*(?:in[ \t]+)?:?[ \t]*((?:18|19|20)\d{2})\b",
        Label::DateOfBirth,
        STRONG,
    ),
];

#[cfg(test)]
mod tests {
    use crate::detect::context::tests::rows;
    use crate::detect::Label;

    rows! {
        month_day: "on November 4 with", "November 4" => Some(Label::Date);
        month_ordinal: "on September tenth.", "September tenth" => Some(Label::Date);
        day_of_month: "signed on the fifth of August, 2017 at", "the fifth of August, 2017" => Some(Label::Date);
        weekday_before_month: "seen on Tuesday, March 5th for", "Tuesday" => Some(Label::Date);
        weekday_before_numeric: "clinic Thu 12/03/2024 at", "Thu" => Some(Label::Date);
        weekday_alone_is_not_a_date: "seen every Tuesday, as before", "Tuesday" => None;
        weekday_before_a_count_is_not_a_date: "from Monday 3 times a day", "Monday" => None;
        birth_year: "93-year-old woman, born 1931, lives alone", "1931" => Some(Label::DateOfBirth);
        birth_year_in: "She was born in 1931 in Leeds", "1931" => Some(Label::DateOfBirth);
        year_of_birth: "Year of birth: 1931\n", "1931" => Some(Label::DateOfBirth);
        a_year_alone_is_not_a_birth_year: "since 1931 the clinic", "1931" => None;
    }
}
