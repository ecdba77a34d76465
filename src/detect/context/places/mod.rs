//! Every context heuristic that is not a person's name, one module per label family:
//!
//! - [`organization`]: hospitals, practices, insurers, employers, letterheads;
//! - [`address`]: streets, cities, regions, postcodes, countries;
//! - [`age`]: every age tied to an age phrase;
//! - [`date`]: dates written with a month name;
//! - [`contact`]: phone and fax numbers, bare web addresses, usernames;
//! - [`identifier`]: record, account, licence, plan, device and vehicle numbers after
//!   their field names, and identifiers by their shape alone.
//!
//! Each family lists its regex heuristics as [`Cue`] tables, which [`cues::run`] applies;
//! what needs more than a match (region names from `lists/places.txt`, a phone's digit
//! count, the letterhead's case) is a small pass in the family's module.
//!
//! # Why the families are interleaved in [`RUN`]
//!
//! [`merge::resolve`](crate::detect::merge::resolve) sorts spans with a stable sort and
//! keeps the first of two spans with the same extent, score and kind of label. The order
//! the heuristics push their spans in is therefore behaviour, not style:
//! `Insurance: Sixty  years old` is an organisation because the insurer cue runs before
//! the ages, `Plan: Forty years old` an age because the ages run before the field-name
//! cues, and a role line's institution above a UK postcode is a city because the cities
//! run before the slot cues. [`RUN`] and [`Places::find`] keep the order in which these
//! heuristics were written and tuned; the tests at the end pin the cases above.

mod address;
mod age;
mod contact;
mod cues;
mod date;
mod identifier;
mod organization;

use super::ByteSpan;
use cues::{Compiled, Cue};

/// The `{NAME}` placeholders of cue patterns and what they stand for.
const FRAGMENTS: &[(&str, &str)] = &[
    ("{CAP}", organization::CAP),
    ("{ORG_TAIL}", organization::ORG_TAIL),
    ("{ORG_HEAD}", organization::ORG_HEAD),
    ("{ORG_NAME}", organization::ORG_NAME),
    ("{MONTHS}", date::MONTHS),
    ("{ORDINALS}", date::ORDINALS),
    ("{NUMBER_WORDS}", age::NUMBER_WORDS),
];

/// The cue tables, in the order they run (see the module documentation).
const RUN: &[&[Cue]] = &[
    organization::NAMED,
    age::CUES,
    date::CUES,
    contact::USERNAME,
    address::POSTCODES,
    address::STREETS,
    address::CITIES,
    organization::FIELDS,
    organization::SLOTS,
    contact::INTL_PHONE,
    address::BEFORE_TOWN,
    contact::PAREN_PHONE,
    address::UNITS,
    identifier::AFTER_HASH,
    address::ZIP_BEFORE_TOWN,
];

/// The compiled organisation, place, age, date, contact and identifier heuristics.
#[derive(Debug)]
pub(crate) struct Places {
    /// Every row of [`RUN`], compiled, in order.
    cues: Vec<Compiled>,
    institution: organization::Institution,
    identifiers: identifier::Identifiers,
    named: address::Named,
    contact: contact::Contact,
}

impl Places {
    pub(crate) fn new() -> Self {
        Places {
            cues: RUN
                .iter()
                .flat_map(|table| table.iter())
                .map(|cue| cues::compile(cue, FRAGMENTS))
                .collect(),
            institution: organization::Institution::new(),
            identifiers: identifier::Identifiers::new(),
            named: address::Named::new(),
            contact: contact::Contact::new(),
        }
    }

    pub(crate) fn find(&self, text: &str, out: &mut Vec<ByteSpan>) {
        cues::run(&self.cues, &self.institution, text, out);
        self.identifiers.find(text, out);
        self.identifiers.by_shape(text, out);
        self.named.find(text, out);
        self.contact.phones_after_word(text, out);
        self.institution.letterhead(text, out);
        self.contact.bare_urls(text, out);
    }
}

#[cfg(test)]
mod tests {
    use super::cues::SpanRule;
    use super::*;
    use crate::detect::context::tests::rows;
    use crate::detect::Label;

    #[test]
    fn every_cue_fills_compiles_and_has_its_group() {
        // `{NAME}` with two or more capitals; `\p{L}` and `\p{M}` are Unicode classes.
        let placeholder = crate::detect::context::re(r"\{[A-Z][A-Z_]+\}");
        for cue in RUN.iter().flat_map(|t| t.iter()) {
            let c = cues::compile(cue, FRAGMENTS);
            assert!(
                !placeholder.is_match(c.rx.as_str()),
                "unfilled placeholder in {:?}",
                cue.pattern
            );
            assert!(
                c.rx.captures_len() > cue.group,
                "no group {} in {:?}",
                cue.group,
                cue.pattern
            );
        }
    }

    #[test]
    fn organisations_and_only_they_take_the_institution_rule() {
        for cue in RUN.iter().flat_map(|t| t.iter()) {
            assert_eq!(
                cue.rule == SpanRule::Institution,
                cue.label == Label::Organization,
                "{:?}",
                cue.pattern
            );
        }
    }

    // Same extent, same score, two labels: the cue that runs first names the span.
    rows! {
        run_order_insurer_before_age: "Insurance: Sixty  years old", "Sixty" => Some(Label::Organization);
        run_order_age_before_field_name: "Plan: Forty years old", "Forty" => Some(Label::Age);
        run_order_age_before_identifier: "lic 100 years old", "100" => Some(Label::Age);
        run_order_city_before_role_line: "Yours sincerely,\n\nC. Mwangi\nFamily Physician, Sulode Neustadt\nNR2 3PH\n", "Sulode Neustadt" => Some(Label::City);
        run_order_field_name_before_unit: "Facility: Unit #12", "Unit #12" => Some(Label::Organization);
    }
}
