//! Ages: every number tied to an age phrase (`54-yo`, `Age: 29`, `turning 21`, `forty-two
//! years old`).
//!
//! HIPAA Safe Harbor only requires ages over 89 to be removed, but the corpus convention
//! and many policies mask all ages, so every age phrase is a span here; a threshold or
//! policy can drop the young ones. A bare number never is: the phrase is the evidence
//! (`aspirin 81 mg` stays).

use super::super::STRONG;
use super::cues::Cue;
use crate::detect::Label;

/// `{NUMBER_WORDS}`: an age written in words, one to one hundred and something.
pub(super) const NUMBER_WORDS: &str = r"(?:(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:-(?:one|two|three|four|five|six|seven|eight|nine))?|one hundred(?: and \w+)?|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|one|two|three|four|five|six|seven|eight|nine)";

/// The age phrases; group 1 is the age.
pub(super) const CUES: &[Cue] = &[
    Cue::new(
        r"(?i)\b(\d{1,3})[ \t-]*(?:years?|yrs?|yo)[ \t-]*old\b",
        Label::Age,
        STRONG,
    ),
    Cue::new(
        r"(?i)\b(\d{1,3})[ \t]*-?[ \t]*(?:y/o|y\.o\.|yo\b)",
        Label::Age,
        STRONG,
    ),
    Cue::new(
        r"(?i)\b(?:age|aged|turning|turned|turns)[ \t]*:?[ \t]*(\d{1,3})\b",
        Label::Age,
        STRONG,
    ),
    Cue::new(
        r"(?i)\b(?:at[ \t]+the[ \t]+)?age[ \t]+of[ \t]+(\d{1,3})\b",
        Label::Age,
        STRONG,
    ),
    Cue::new(
        r"(?i)\b(\d{1,3})[ \t]+(?:years?|yrs?)[ \t]+of[ \t]+age\b",
        Label::Age,
        STRONG,
    ),
    Cue::new(
        r"(?i)\b({NUMBER_WORDS})[ \t-]+years?[ \t-]+old\b",
        Label::Age,
        STRONG,
    ),
    Cue::new(
        r"(?i)\b(?:aged|turning|turned)[ \t]+({NUMBER_WORDS})\b",
        Label::Age,
        STRONG,
    ),
    // `I'll turn 43`, `will turn 90`: the future needs its auxiliary, so that an instruction
    // (`asked to turn 90 degrees`) is not an age.
    Cue::new(
        r"(?i)(?:\bwill|'ll|’ll)[ \t]+turn[ \t]+(\d{1,3})\b",
        Label::Age,
        STRONG,
    ),
    // `when he was 41`, `since she was 12`: a person's past, told by their age.
    Cue::new(
        r"(?i)\b(?:when|since|until|till|before|after)[ \t]+(?:he|she|they|i|we)[ \t]+(?:was|were)[ \t]+(\d{1,3})\b",
        Label::Age,
        STRONG,
    ),
];

#[cfg(test)]
mod tests {
    use crate::detect::context::tests::rows;
    use crate::detect::Label;

    rows! {
        age_of: "My father retired at the age of 84", "84" => Some(Label::Age);
        years_of_age: "a woman 47 years of age presented", "47" => Some(Label::Age);
        age_yo: "S: 54-yo woman reports", "54" => Some(Label::Age);
        age_field: "Age: 29   Sex: M", "29" => Some(Label::Age);
        dose_is_not_age: "aspirin 81 mg daily", "81" => None;
        future_birthday: "My birthday is on Sunday. I'll turn 43.", "43" => Some(Label::Age);
        future_birthday_will: "She will turn 90 in May", "90" => Some(Label::Age);
        an_instruction_to_turn_is_not_an_age: "asked to turn 90 degrees", "90" => None;
        told_by_age: "diagnosed when she was 12, stable since", "12" => Some(Label::Age);
        a_score_is_not_an_age: "pain was 7 when he was seen", "7" => None;
    }
}
