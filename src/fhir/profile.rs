//! Profiles: what happens to each kind of structured element, and which policy the free
//! text follows.
//!
//! | element | `hipaa_safe_harbor` (default) | `pseudonymize` |
//! |---|---|---|
//! | `HumanName` family, given, text | redact | pseudonymize (the surrogate free text gets) |
//! | `ContactPoint.value` | redact | pseudonymize |
//! | `Address` line, text | redact | pseudonymize |
//! | `Address` city, district | redact | pseudonymize |
//! | `Address.state`, `Address.country` | keep | keep |
//! | `Address.postalCode` | generalize (US: three digits, `000` where the area is small) | pseudonymize |
//! | `Identifier.value` (`identifier`, `accessionIdentifier`, …), and identifier strings (`Coverage.subscriberId`, `Device.serialNumber`, `lotNumber`, UDI numbers, `preAuthRef`, `businessArrangement`) | redact | hash (keyed, stable per install) |
//! | primitive values of extensions (`valueCode`, `valueUri`, …) | free text | free text |
//! | strings under a key that is no R4 element (`nickname`, `localNotes`) | free text | free text |
//! | `birthDate` | generalize (year; removed when it reveals an age over 89) | date_shift |
//! | every other date, dateTime, instant | date_shift (one offset per patient) | date_shift |
//! | `Attachment.url`, `photo`, non-text or untyped `Attachment.data` | redact | redact |
//! | `FamilyMemberHistory.name` (one string) | redact | pseudonymize |
//! | an `Age` (or a `Range` of ages) over 89 | 90, comparator `>=` | 90, comparator `>=` |
//! | a `QuestionnaireResponse` answer over 89 to a question about age (`linkId` or `text` says `age`, no unit smaller than a year) | 90 | 90 |
//! | `Location.position` | redact (kept only when `city` is kept) | redact |
//! | resource ids, `fullUrl`, references | re-pointed (same target, new id); a contained resource's id kept | re-pointed |
//! | `Bundle.link.url`, `entry.request.url`, `entry.response.location` | query cut, re-pointed | query cut, re-pointed |
//! | `entry.request.ifNoneExist`, `meta.source` | redact | redact |
//! | free text | `hipaa_expert_review_assist`: PHI masked, dates as the date elements (shifted by the patient's offset), birth dates as `birthDate` (a year; masked when it tells an age over 89), ages over 89 as `90+` | `clinical_preserve`: surrogates, dates and birth dates shifted (a birth date that tells an age over 89 masked), ages over 89 as `90+` |
//!
//! The settings choose the default profile (`fhir.profile`) and change single element kinds
//! or single paths over it (`fhir.actions`, [`Profile::with_actions`]: `names=pseudonymize`,
//! `Patient.birthDate=keep`, `*.note.text=redact`); a request or `--fhir-profile` names
//! another profile.
//!
//! # Why Safe Harbor shifts dates here
//!
//! A record whose dates are cut to years loses every interval (length of stay, time to
//! treatment) that makes it useful, and the issue this serves asks for dates shifted per
//! patient with a birth date kept to its year. The offset is secret (derived under the
//! per-install key) and the same for all of a patient's dates. Where a strict reading of
//! 45 CFR 164.514(b)(2) is needed, send free text through `/pii/deidentify` with
//! `hipaa_safe_harbor` instead.
//!
//! # Why these three-digit ZIP codes become `000`
//!
//! Safe Harbor keeps the first three digits of a ZIP code only where the area they cover
//! holds more than 20,000 people; HHS's de-identification guidance lists the seventeen
//! prefixes that did not in the 2000 census ([`SMALL_ZIP3`]).

use crate::deid::{Action, DateActions, Policy};

/// What to do with one kind of element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElementAction {
    /// Leave it.
    Keep,
    /// Remove it (the element disappears; emptied parents are pruned).
    Redact,
    /// A realistic surrogate, the same one free text gets for the same value.
    Pseudonymize,
    /// Move a date by the patient's offset.
    DateShift,
    /// Keep less of it: a year of a date, three digits of a ZIP code.
    Generalize,
    /// A keyed hash (HMAC under the per-install key).
    Hash,
}

impl ElementAction {
    /// Every action's wire name.
    pub const NAMES: [&'static str; 6] = [
        "keep",
        "redact",
        "pseudonymize",
        "date_shift",
        "generalize",
        "hash",
    ];
}

/// A profile: one action per element kind, and the free text's policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// The profile's name.
    pub name: &'static str,
    /// `HumanName.family`, `.given`, `.text`.
    pub names: ElementAction,
    /// `ContactPoint.value`.
    pub telecom: ElementAction,
    /// `Address.line`, `Address.text`.
    pub address_lines: ElementAction,
    /// `Address.city`, `Address.district`.
    pub city: ElementAction,
    /// `Address.state`.
    pub state: ElementAction,
    /// `Address.country`.
    pub country: ElementAction,
    /// `Address.postalCode`.
    pub postal_code: ElementAction,
    /// `Identifier.value`, and the string elements that are identifiers.
    pub identifiers: ElementAction,
    /// `Patient.birthDate` and other `birthDate` elements.
    pub birth_date: ElementAction,
    /// Every other date, dateTime and instant.
    pub dates: ElementAction,
    text_policy: &'static str,
    /// Actions by path (`Patient.birthDate`, `*.note.text`), over everything above; the
    /// last entry for a path wins.
    paths: Vec<(String, ElementAction)>,
}

impl Profile {
    /// Every profile's name.
    pub const NAMES: [&'static str; 2] = ["hipaa_safe_harbor", "pseudonymize"];

    /// The default profile.
    pub fn safe_harbor() -> Profile {
        use ElementAction::*;
        Profile {
            name: "hipaa_safe_harbor",
            names: Redact,
            telecom: Redact,
            address_lines: Redact,
            city: Redact,
            state: Keep,
            country: Keep,
            postal_code: Generalize,
            identifiers: Redact,
            birth_date: Generalize,
            dates: DateShift,
            text_policy: "hipaa_expert_review_assist",
            paths: Vec::new(),
        }
    }

    /// Surrogates for names and places, keyed hashes for identifiers, shifted dates.
    pub fn pseudonymize() -> Profile {
        use ElementAction::*;
        Profile {
            name: "pseudonymize",
            names: Pseudonymize,
            telecom: Pseudonymize,
            address_lines: Pseudonymize,
            city: Pseudonymize,
            state: Keep,
            country: Keep,
            postal_code: Pseudonymize,
            identifiers: Hash,
            birth_date: DateShift,
            dates: DateShift,
            text_policy: "clinical_preserve",
            paths: Vec::new(),
        }
    }

    /// The profile called `name` (case-insensitive, `-` read as `_`).
    pub fn parse(name: &str) -> Option<Profile> {
        match name.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "hipaa_safe_harbor" | "safe_harbor" => Some(Profile::safe_harbor()),
            "pseudonymize" | "pseudonymise" => Some(Profile::pseudonymize()),
            _ => None,
        }
    }

    /// What dates in free text become: what the profile does to date elements, so that
    /// `dates=keep` keeps a note's dates too and a birth date cut to its year in
    /// `birthDate` is cut to its year in a note (a year that tells an age over 89 is
    /// masked, as `birthDate` is removed).
    pub fn text_dates(&self) -> DateActions {
        let text = |a: ElementAction| match a {
            ElementAction::Keep => Action::Keep,
            ElementAction::DateShift => Action::ShiftDates,
            ElementAction::Generalize => Action::YearOnly,
            // A removed element leaves its place marked in text.
            _ => Action::Mask,
        };
        DateActions {
            dates: text(self.dates),
            birth_dates: text(self.birth_date),
        }
    }

    /// The policy free text follows under this profile.
    pub fn text_policy(&self) -> Policy {
        #[allow(clippy::expect_used)]
        Policy::parse(self.text_policy).expect("built-in policy names parse")
    }
}

/// Why an actions list (`fhir.actions`) was refused; names the entry by position.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProfileError {
    /// Returned when an entry is not `ELEMENT=ACTION` with a known element and action.
    #[error("entry {0} is not ELEMENT=ACTION (elements: {elements}; actions: {actions})", elements = Profile::ELEMENTS.join(", "), actions = ElementAction::NAMES.join(", "))]
    Shape(usize),
    /// Returned when the action cannot apply to the element (a name cannot be date-shifted).
    #[error("entry {0}: that action does not apply to that element")]
    Mismatch(usize),
    /// Returned when an element or path is given an action twice (the second would win
    /// in silence).
    #[error("entry {0} names an element or path an earlier entry names")]
    Repeated(usize),
}

impl ElementAction {
    fn parse(name: &str) -> Option<ElementAction> {
        use ElementAction::*;
        Some(match name {
            "keep" => Keep,
            "redact" => Redact,
            "pseudonymize" | "pseudonymise" => Pseudonymize,
            "date_shift" => DateShift,
            "generalize" | "generalise" => Generalize,
            "hash" => Hash,
            _ => return None,
        })
    }
}

impl Profile {
    /// The element kinds an actions list may name.
    pub const ELEMENTS: [&'static str; 10] = [
        "names",
        "telecom",
        "address_lines",
        "city",
        "state",
        "country",
        "postal_code",
        "identifiers",
        "birth_date",
        "dates",
    ];

    /// This profile with `ELEMENT=ACTION` entries applied over it (the settings'
    /// `fhir.actions`). Dates take keep, redact, date_shift or generalize (to a year); a
    /// ZIP code generalizes to three digits; the other elements take keep, redact,
    /// pseudonymize or hash. An ELEMENT with a dot is a path (`Patient.birthDate`,
    /// `*.note.text`): the element there gets keep, redact, hash (keyed), date_shift or
    /// generalize whatever kind it is, before anything else looks at it.
    ///
    /// # Errors
    /// [`ProfileError`] naming the first bad entry (1-based).
    pub fn with_actions<S: AsRef<str>>(mut self, entries: &[S]) -> Result<Profile, ProfileError> {
        use ElementAction::*;
        let mut seen = std::collections::HashSet::new();
        for (i, entry) in entries.iter().enumerate() {
            let entry = entry.as_ref().trim();
            if entry.is_empty() {
                continue;
            }
            let (element, action) = entry.split_once('=').ok_or(ProfileError::Shape(i + 1))?;
            let action = ElementAction::parse(action.trim().to_ascii_lowercase().as_str())
                .ok_or(ProfileError::Shape(i + 1))?;
            let key = if element.contains('.') {
                element.trim().to_owned()
            } else {
                element.trim().to_ascii_lowercase()
            };
            if !seen.insert(key) {
                return Err(ProfileError::Repeated(i + 1));
            }
            if element.contains('.') {
                let path = element.trim();
                if !is_path(path) {
                    return Err(ProfileError::Shape(i + 1));
                }
                // What the path's last key says the element is: a date takes no hash (the
                // element would no longer be a date), a name, contact, address or
                // identifier object no date action.
                let last = path.rsplit('.').next().unwrap_or("");
                let fits = match action {
                    Pseudonymize => false,
                    Hash => !is_date_key(last),
                    DateShift | Generalize => !is_structure_key(last),
                    Keep | Redact => true,
                };
                if !fits {
                    return Err(ProfileError::Mismatch(i + 1));
                }
                self.paths.push((path.to_owned(), action));
                continue;
            }
            let element = element.trim().to_ascii_lowercase();
            let dated = matches!(element.as_str(), "birth_date" | "dates");
            let fits = match action {
                Keep | Redact => true,
                DateShift => dated,
                Generalize => dated || element == "postal_code",
                Pseudonymize | Hash => !dated,
            };
            let slot = match element.as_str() {
                "names" => &mut self.names,
                "telecom" => &mut self.telecom,
                "address_lines" => &mut self.address_lines,
                "city" => &mut self.city,
                "state" => &mut self.state,
                "country" => &mut self.country,
                "postal_code" => &mut self.postal_code,
                "identifiers" => &mut self.identifiers,
                "birth_date" => &mut self.birth_date,
                "dates" => &mut self.dates,
                _ => return Err(ProfileError::Shape(i + 1)),
            };
            if !fits {
                return Err(ProfileError::Mismatch(i + 1));
            }
            *slot = action;
        }
        Ok(self)
    }
}

impl Profile {
    /// The action for the element at `path` (`Patient.name.family`), when an entry names it:
    /// exactly, or as `*.rest` for any resource type.
    pub fn path_action(&self, path: &str) -> Option<ElementAction> {
        if self.paths.is_empty() {
            return None;
        }
        let rest = path.split_once('.').map_or("", |(_, r)| r);
        self.paths.iter().rev().find_map(|(p, a)| {
            let hit = match p.strip_prefix("*.") {
                Some(r) => r == rest,
                None => p == path,
            };
            hit.then_some(*a)
        })
    }
}

/// `Type.key.key` or `*.key…`: a resource type (or `*`) and one or more element names.
/// R4 keys whose value is a date, dateTime or instant: `birthDate`, `*Date`, `*DateTime`,
/// `*Instant`, a `Period`'s ends and the instants of provenance and metadata.
fn is_date_key(key: &str) -> bool {
    key.ends_with("Date")
        || key.ends_with("DateTime")
        || key.ends_with("Instant")
        || matches!(
            key,
            "date"
                | "start"
                | "end"
                | "issued"
                | "recorded"
                | "lastUpdated"
                | "timestamp"
                | "authoredOn"
                | "instant"
                | "created"
                | "occurrenceDateTime"
        )
}

/// R4 keys whose value is a name, contact, address or identifier object.
fn is_structure_key(key: &str) -> bool {
    matches!(
        key,
        "name" | "telecom" | "address" | "identifier" | "contact" | "photo"
    )
}

fn is_path(path: &str) -> bool {
    let mut parts = path.split('.');
    let first = parts.next().unwrap_or("");
    let head = first == "*"
        || (first.starts_with(|c: char| c.is_ascii_uppercase())
            && first.chars().all(|c| c.is_ascii_alphabetic()));
    let rest: Vec<&str> = parts.collect();
    head && !rest.is_empty()
        && rest
            .iter()
            .all(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

impl Default for Profile {
    fn default() -> Self {
        Profile::safe_harbor()
    }
}

/// Three-digit ZIP prefixes whose areas held 20,000 people or fewer in the 2000 census
/// (HHS, "Guidance Regarding Methods for De-identification of Protected Health
/// Information", the Safe Harbor ZIP code question).
pub(super) const SMALL_ZIP3: [&str; 17] = [
    "036", "059", "063", "102", "203", "556", "692", "790", "821", "823", "830", "831", "878",
    "879", "884", "890", "893",
];

/// A US ZIP code (`12345`, `12345-6789`) cut to its first three digits, `000` for the
/// small areas; `None` (redact) for anything else.
pub(super) fn zip3(zip: &str) -> Option<String> {
    let z = zip.trim();
    let five = z
        .get(..5)
        .filter(|d| d.bytes().all(|b| b.is_ascii_digit()))?;
    let rest = &z[5..];
    let plus4 = rest.is_empty()
        || (rest.len() == 5
            && rest.starts_with('-')
            && rest[1..].bytes().all(|b| b.is_ascii_digit()));
    if !plus4 {
        return None;
    }
    let prefix = &five[..3];
    Some(if SMALL_ZIP3.contains(&prefix) {
        "000".to_owned()
    } else {
        prefix.to_owned()
    })
}

/// True for the ways FHIR addresses write the United States.
pub(super) fn is_us(country: &str) -> bool {
    matches!(
        country.trim().to_ascii_lowercase().as_str(),
        "us" | "usa" | "u.s." | "u.s.a." | "united states" | "united states of america"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zip_codes_keep_three_digits_except_small_areas() {
        assert_eq!(zip3("02139").as_deref(), Some("021"));
        assert_eq!(zip3("02139-4307").as_deref(), Some("021"));
        assert_eq!(zip3("03601").as_deref(), Some("000"));
        assert_eq!(zip3("SW1A 1AA"), None);
        assert_eq!(zip3("1234"), None);
        assert_eq!(zip3("123456"), None);
    }

    #[test]
    fn actions_override_the_profile_and_bad_entries_are_named() {
        let p = Profile::safe_harbor()
            .with_actions(&["names=pseudonymize", " postal_code = redact ", ""])
            .expect("valid");
        assert_eq!(p.names, ElementAction::Pseudonymize);
        assert_eq!(p.postal_code, ElementAction::Redact);
        assert_eq!(p.dates, ElementAction::DateShift);
        let bad = |e: &str| Profile::safe_harbor().with_actions(&[e]).err();
        assert_eq!(bad("names"), Some(ProfileError::Shape(1)));
        assert_eq!(bad("nose=keep"), Some(ProfileError::Shape(1)));
        assert_eq!(bad("names=shred"), Some(ProfileError::Shape(1)));
        assert_eq!(bad("names=date_shift"), Some(ProfileError::Mismatch(1)));
        assert_eq!(bad("dates=hash"), Some(ProfileError::Mismatch(1)));
        assert!(!format!("{}", ProfileError::Shape(2)).is_empty());
    }

    #[test]
    fn paths_take_their_own_actions_that_fit_them_once() {
        let p = Profile::safe_harbor()
            .with_actions(&["*.note.text=redact", "Patient.birthDate=generalize"])
            .expect("valid");
        assert_eq!(
            p.path_action("Patient.birthDate"),
            Some(ElementAction::Generalize)
        );
        assert_eq!(
            p.path_action("Observation.note.text"),
            Some(ElementAction::Redact)
        );
        assert_eq!(p.path_action("Observation.note"), None);
        assert_eq!(p.path_action("Patient.gender"), None);
        let bad = |e: &str| Profile::safe_harbor().with_actions(&[e]).err();
        assert_eq!(bad("patient.birthDate=keep"), Some(ProfileError::Shape(1)));
        assert_eq!(bad("Patient.=keep"), Some(ProfileError::Shape(1)));
        assert_eq!(
            bad("Patient.name=pseudonymize"),
            Some(ProfileError::Mismatch(1))
        );
        // A hashed date is no date; a name is no date (found by an outside FHIR user:
        // `Patient.birthDate=hash` wrote `hash_…` where R4 needs a date).
        for e in [
            "Patient.birthDate=hash",
            "Encounter.period.start=hash",
            "Observation.effectiveDateTime=hash",
            "Patient.name=date_shift",
            "Patient.address=generalize",
        ] {
            assert_eq!(bad(e), Some(ProfileError::Mismatch(1)), "{e}");
        }
        // An element or path named twice: the second would win in silence.
        let twice = |a: &str, b: &str| Profile::safe_harbor().with_actions(&[a, b]).err();
        assert_eq!(
            twice("names=keep", "Names=redact"),
            Some(ProfileError::Repeated(2))
        );
        assert_eq!(
            twice("Patient.birthDate=keep", "Patient.birthDate=generalize"),
            Some(ProfileError::Repeated(2))
        );
    }

    #[test]
    fn profiles_parse_and_their_text_policies_exist() {
        for name in Profile::NAMES {
            let p = Profile::parse(name).expect("listed profile parses");
            let _ = p.text_policy();
        }
        assert_eq!(
            Profile::parse("HIPAA-Safe-Harbor"),
            Some(Profile::safe_harbor())
        );
        assert_eq!(Profile::parse("nope"), None);
    }
}
