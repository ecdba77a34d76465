//! De-identification transforms: mask, remove, replace (surrogates), keyed hash and date
//! shifting; policies ([`policy`]); the cutting of a result into stream lines ([`stream`]).
//!
//! # Why one stateful `Deidentifier` per request
//!
//! Two transforms need memory across entities: `replace` must give the same source string
//! the same surrogate everywhere in a request (a note that says "Smith" twice must not turn
//! into two different people), and `shift_dates` must move every date by the same offset
//! so intervals survive. A [`Deidentifier`] holds that per-request state (surrogate memo,
//! the date offset, the mapping) and is fed either the whole text ([`Deidentifier::apply`])
//! or, when streaming, fragment after fragment ([`Deidentifier::apply_at`]); both give the
//! same result.
//!
//! # Why Safe Harbor looks at birth dates as a whole
//!
//! 45 CFR 164.514(b)(2)(i)(C) removes ages over 89 *and all elements of dates, including the
//! year, indicative of such age*. Keeping the year of every date is therefore wrong for a
//! birth date: `DOB 02/03/1931` → `1931` says the patient is over 89 as plainly as the age
//! would. Under a `year_only` action a birth date (labelled `DATE_OF_BIRTH`, or a date after
//! a birth cue such as `DOB`, `born` or `date of birth` on its line) is masked instead when
//! the text states an age over 89 anywhere (earlier fragments of a stream included) or
//! when its year is 90 or more years before the reference year ([`DeidOptions::reference_year`],
//! this year by default). A birth year written alone (`born 1931`, `YOB 1931`) is a
//! `DATE_OF_BIRTH` span of the context rules and follows the same test. A stream only knows
//! what it has seen: a birth date committed
//! before a later fragment states an age over 89 keeps its year if that year is recent
//! enough on its own.
//!
//! # Why a keyed hash
//!
//! OpenMed's `hash` is an unkeyed SHA-256 prefix, which anyone can reverse for a short name
//! or a date by hashing candidates. Ours is HMAC-SHA256 under a per-install secret
//! ([`HashKey`]): stable across requests of one install (so records can be linked), useless
//! to someone without the key.

mod gender;
pub mod policy;
pub mod seal;
pub mod stream;
mod surrogate;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::LazyLock;

use hmac::{Hmac, Mac};
use rand::Rng;
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::detect::rules::dates::DateParts;
use crate::detect::{merge, CharIndex, Label, Span};
use gender::Gender;

pub use policy::{Policy, PolicyError};
pub use seal::{Restored, SealError, SealKey, SealedSpan};
pub use stream::{fragments, Commit, StreamConfig};

/// Errors of this module. Messages never contain request text.
#[derive(Debug, thiserror::Error)]
pub enum DeidError {
    /// Returned when a hash key is not 64 hexadecimal characters.
    #[error("hash key must be 64 hexadecimal characters")]
    BadHashKey,
}

/// Result alias of this module.
pub type Result<T> = std::result::Result<T, DeidError>;

/// The de-identification method of a request (OpenMed's five REST methods).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// `[label]`.
    #[default]
    Mask,
    /// The empty string.
    Remove,
    /// A realistic, shape-aware surrogate.
    Replace,
    /// `label_` + 16 hex of HMAC-SHA256(key, text).
    Hash,
    /// Dates shifted in their own format; everything else masked.
    ShiftDates,
}

impl Method {
    /// Every method's wire name, in declaration order.
    pub const NAMES: [&'static str; 5] = ["mask", "remove", "replace", "hash", "shift_dates"];

    /// The wire name (`mask`, `shift_dates`, …).
    pub fn wire(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// Parses a wire name (`mask`, `shift_dates`, …); `None` for anything else.
    pub fn from_wire(name: &str) -> Option<Method> {
        Some(match name {
            "mask" => Method::Mask,
            "remove" => Method::Remove,
            "replace" => Method::Replace,
            "hash" => Method::Hash,
            "shift_dates" => Method::ShiftDates,
            _ => return None,
        })
    }
}

/// What was done to one entity: the methods, plus the generalisations policies use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Replaced by `[label]`.
    Mask,
    /// Replaced by the empty string.
    Remove,
    /// Replaced by a surrogate.
    Replace,
    /// Replaced by a keyed hash.
    Hash,
    /// A date moved by the request's offset.
    ShiftDates,
    /// A date reduced to its year (Safe Harbor keeps years).
    YearOnly,
    /// An age over 89 written as `90+`; younger ages kept.
    AgeCap,
    /// Left in the text.
    Keep,
}

impl Action {
    /// The wire name (`mask`, `shift_dates`, `year_only`, …).
    pub fn wire(self) -> &'static str {
        match self {
            Action::Mask => "mask",
            Action::Remove => "remove",
            Action::Replace => "replace",
            Action::Hash => "hash",
            Action::ShiftDates => "shift_dates",
            Action::YearOnly => "year_only",
            Action::AgeCap => "age_cap",
            Action::Keep => "keep",
        }
    }
}

impl From<Method> for Action {
    fn from(m: Method) -> Action {
        match m {
            Method::Mask => Action::Mask,
            Method::Remove => Action::Remove,
            Method::Replace => Action::Replace,
            Method::Hash => Action::Hash,
            Method::ShiftDates => Action::ShiftDates,
        }
    }
}

/// The largest fixed date offset a caller may choose, in days (a century either way).
pub const MAX_SHIFT_DAYS: i64 = 36_500;

/// Whether `days` may be a caller's fixed date offset where phiguard sets the rules (the CLI,
/// `/fhir/deidentify`): not zero, which would leave every date as it was, and within
/// [`MAX_SHIFT_DAYS`]. `/pii/deidentify` takes any integer, as OpenMed's contract does.
pub fn usable_shift_days(days: i64) -> bool {
    // A range rather than `abs()`, which overflows at `i64::MIN` (a request's query can
    // carry it: found by the contract check).
    days != 0 && (-MAX_SHIFT_DAYS..=MAX_SHIFT_DAYS).contains(&days)
}

/// Options of one de-identification request.
#[derive(Clone, Debug, Default)]
pub struct DeidOptions {
    /// The method; ignored for labels a policy decides.
    pub method: Method,
    /// Fixed date offset in days; `None` draws one non-zero offset in [-365, 365].
    pub date_shift_days: Option<i64>,
    /// Keep the source year when shifting dates.
    pub keep_year: bool,
    /// Fill [`DeidOutput::mapping`].
    pub keep_mapping: bool,
    /// A policy deciding the action per label (and possibly `keep_mapping`).
    pub policy: Option<Policy>,
    /// The year ages are counted to when a policy keeps only years (see the module docs);
    /// `None` is the current year.
    pub reference_year: Option<i32>,
    /// The patient or study subject the text belongs to: with one, `replace` gives the same
    /// surrogate for the same value in every request and the date offset is the subject's
    /// (unless `date_shift_days` is set).
    pub subject: Option<SubjectKey>,
    /// What dates in the text become, over the policy or method: a FHIR profile's date
    /// actions (`fhir.actions` `dates=keep`, `birth_date=generalize`), so a note inside a
    /// resource treats its dates as the resource's own elements are treated.
    pub dates: Option<DateActions>,
    /// A date cut to its year (not a birth date) is cut to the year of the date moved by
    /// the offset: a table whose `date` column is shifted must not show the original year
    /// beside it, or the two together tell the offset (a year that flips between two
    /// shifted days pins it to the day).
    pub shifted_years: bool,
}

/// The actions for dates in a text (see [`DeidOptions::dates`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DateActions {
    /// A date that is not a birth date.
    pub dates: Action,
    /// A birth date (a `date_of_birth` entity, or a date after a birth cue such as `DOB`).
    pub birth_dates: Action,
}

/// A subject as a key: derived from the caller's subject string and the per-install secret
/// ([`HashKey::subject`]), so the string itself is never kept. Surrogates and the date
/// offset derive from it with HMAC, so nothing is stored, and replicas sharing the secret
/// agree. `Debug` never prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct SubjectKey([u8; 32]);

impl fmt::Debug for SubjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SubjectKey(..)")
    }
}

impl SubjectKey {
    fn derive(&self, purpose: &str, parts: &[&str]) -> [u8; 32] {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC accepts any key length");
        mac.update(purpose.as_bytes());
        for p in parts {
            mac.update(&[0]);
            mac.update(p.as_bytes());
        }
        mac.finalize().into_bytes().into()
    }

    /// A 32-byte key for `purpose`, derived from the subject (FHIR uses one to re-point a
    /// subject's resource ids the same way in every request).
    pub(crate) fn derived_key(&self, purpose: &str) -> [u8; 32] {
        self.derive(purpose, &[])
    }

    /// The subject's date offset: non-zero, in [-365, 365], as a drawn one would be.
    pub fn date_shift_days(&self) -> i64 {
        let d = self.derive("date-shift", &[]);
        let days = i64::from(u16::from_le_bytes([d[0], d[1]]) % 365) + 1;
        if d[2] & 1 == 0 {
            days
        } else {
            -days
        }
    }

    /// The generator the surrogate of `value` (a `label`) is drawn from: the same for the
    /// same normalised value under this subject, in every request.
    fn rng_for(&self, label: Label, value: &str) -> rand_chacha::ChaCha12Rng {
        use rand::SeedableRng;
        rand_chacha::ChaCha12Rng::from_seed(self.derive("surrogate", &[label.canonical(), value]))
    }
}

/// A value split into a leading title (`Dr. `) and the rest with its spacing collapsed:
/// the spelling a subject's surrogate is drawn from, so `Dr. John  Smith` and `JOHN SMITH`
/// draw the same names.
/// Titles a name may start with (lowercase, without the dot).
const TITLES: &[&str] = &["dr", "mr", "mrs", "ms", "miss", "mx", "prof", "sir"];

fn split_title(value: &str) -> (Option<&str>, String) {
    let mut words = value.split_whitespace();
    let first = words.next().unwrap_or("");
    let rest: Vec<&str> = words.collect();
    let titled =
        !rest.is_empty() && TITLES.contains(&first.trim_end_matches('.').to_lowercase().as_str());
    if titled {
        (Some(first), rest.join(" "))
    } else {
        (None, value.split_whitespace().collect::<Vec<_>>().join(" "))
    }
}

/// A value as a subject's surrogates key it: case-folded, spacing collapsed, a leading title
/// dropped (`Dr. John  Smith` and `john smith` are one person).
fn subject_value(value: &str) -> String {
    split_title(value).1.to_lowercase()
}

/// The per-install secret of the keyed hash: 32 bytes. `Debug` never prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct HashKey([u8; 32]);

impl HashKey {
    /// Wraps raw key bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> HashKey {
        HashKey(bytes)
    }

    /// Draws a fresh key (at first start; persist it with [`HashKey::to_hex`]).
    pub fn generate<R: Rng + ?Sized>(rng: &mut R) -> HashKey {
        let mut bytes = [0u8; 32];
        rng.fill(&mut bytes);
        HashKey(bytes)
    }

    /// Parses the 64-hex-character form.
    ///
    /// # Errors
    /// [`DeidError::BadHashKey`] when the text is not 64 hex characters.
    pub fn from_hex(text: &str) -> Result<HashKey> {
        let raw = hex::decode(text.trim()).map_err(|_| DeidError::BadHashKey)?;
        let bytes: [u8; 32] = raw.try_into().map_err(|_| DeidError::BadHashKey)?;
        Ok(HashKey(bytes))
    }

    /// The key of `subject` (any string the caller uses for one patient or study subject).
    pub fn subject(&self, subject: &str) -> SubjectKey {
        SubjectKey(self.mac(&format!("phiguard-subject\0{subject}")))
    }

    /// HMAC-SHA256(key, text) as `hmac-sha256:<64 hex>`: the stream routes' audit hashes
    /// (`text_hash`, the document id), which identify a value across one install without
    /// revealing it; the same key's short form is [`Method::Hash`]'s tag.
    pub fn audit_hash(&self, text: &str) -> String {
        format!("hmac-sha256:{}", hex::encode(self.mac(text)))
    }

    fn mac(&self, text: &str) -> [u8; 32] {
        // HMAC-SHA256 takes a key of any length: `new_from_slice` cannot fail on 32 bytes.
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC accepts any key length");
        mac.update(text.as_bytes());
        mac.finalize().into_bytes().into()
    }

    /// The 64-hex-character form, for persistence.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// First 16 hex characters (64 bits) of HMAC-SHA256(key, text). OpenMed's unkeyed
    /// tag has 8; at 32 bits two of 77,000 MRNs share a tag with even odds, and a
    /// release's records would be merged.
    fn tag(&self, text: &str) -> String {
        hex::encode(&self.mac(text)[..8])
    }
}

impl fmt::Debug for HashKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HashKey(<redacted>)")
    }
}

/// One entity as it was transformed.
#[derive(Clone, Debug, PartialEq)]
pub struct Replacement {
    /// The entity, in code-point offsets of the original text.
    pub span: Span,
    /// The entity text.
    pub original: String,
    /// What it became (empty for `remove`).
    pub replacement: String,
    /// What was done (a masked non-date under `shift_dates` reports `Mask`).
    pub action: Action,
}

/// The result of a de-identification.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeidOutput {
    /// The de-identified text.
    pub text: String,
    /// The transformed entities, in text order.
    pub replacements: Vec<Replacement>,
    /// `(replacement, original)` pairs in text order, without repeats; empty unless
    /// mapping was requested (option or policy). With `mask` one replacement can map to
    /// several originals.
    pub mapping: Vec<(String, String)>,
}

impl DeidOutput {
    /// Each replacement with its offsets in the de-identified text (code points), for a
    /// sealed mapping ([`SealKey::seal`]).
    pub fn sealed_spans(&self) -> Vec<SealedSpan> {
        let mut shift: isize = 0;
        self.replacements
            .iter()
            .map(|r| {
                let start = (r.span.start as isize + shift).max(0) as usize;
                let len = r.replacement.chars().count();
                shift += len as isize - (r.span.end - r.span.start) as isize;
                SealedSpan {
                    start,
                    end: start + len,
                    replacement: r.replacement.clone(),
                    original: r.original.clone(),
                }
            })
            .collect()
    }
}

/// Per-request transformer. See the module docs for why it is stateful.
pub struct Deidentifier<R: Rng> {
    opts: DeidOptions,
    key: HashKey,
    rng: R,
    shift_days: i64,
    /// Source string → surrogate, and the surrogates already handed out with the value
    /// (group) each stands for.
    memo: HashMap<String, String>,
    used: HashMap<String, String>,
    /// Every word of every name in the text so far, lowercased: a name surrogate never
    /// uses one, so a replacement cannot read as another person of the same note.
    note_names: HashSet<String>,
    /// Every mapping pair handed out so far (for the final line of a stream).
    mapping: Vec<(String, String)>,
    mapping_seen: HashSet<(String, String)>,
    /// An age over 89 has been seen in this request (Safe Harbor, see the module docs).
    over_89_seen: bool,
    /// The year ages are counted to: the option, or this year, read once per request.
    reference_year: i32,
}

impl<R: Rng> Deidentifier<R> {
    /// Starts a request. The date offset is drawn here (when not fixed), so every date of
    /// the request moves by the same amount.
    pub fn new(opts: DeidOptions, key: &HashKey, mut rng: R) -> Self {
        let subject_days = opts.subject.as_ref().map(SubjectKey::date_shift_days);
        let shift_days = match opts.date_shift_days.or(subject_days) {
            Some(d) => d,
            None => {
                let d = rng.random_range(1..=365i64);
                if rng.random::<bool>() {
                    d
                } else {
                    -d
                }
            }
        };
        let opts_reference_year = opts
            .reference_year
            .unwrap_or_else(|| chrono::Datelike::year(&chrono::Utc::now()));
        Deidentifier {
            opts,
            key: key.clone(),
            rng,
            shift_days,
            memo: HashMap::new(),
            used: HashMap::new(),
            note_names: HashSet::new(),
            mapping: Vec::new(),
            mapping_seen: HashSet::new(),
            over_89_seen: false,
            reference_year: opts_reference_year,
        }
    }

    /// The date offset of this request, in days.
    pub fn shift_days(&self) -> i64 {
        self.shift_days
    }

    /// True when mapping pairs are kept (option or policy).
    pub fn keeps_mapping(&self) -> bool {
        self.opts.keep_mapping || self.opts.policy.as_ref().is_some_and(Policy::keep_mapping)
    }

    /// Every `(replacement, original)` pair handed out by this request so far (empty
    /// unless mapping is kept).
    pub fn mapping(&self) -> &[(String, String)] {
        &self.mapping
    }

    /// Names of the same record met elsewhere (a FHIR document's other names): no name
    /// surrogate may be one of them, as none may be a name of the same note. Without this,
    /// a patient's `Peter` could become `Jim`, the nickname the same resource gives later.
    pub fn know_names<'n>(&mut self, names: impl IntoIterator<Item = &'n str>) {
        for name in names {
            self.note_names.extend(name_words(name));
        }
    }

    /// De-identifies `text` given spans in its code-point offsets. Spans are resolved
    /// first (overlaps fused), and spans past the end of the text are dropped.
    pub fn apply(&mut self, text: &str, spans: &[Span]) -> DeidOutput {
        self.apply_at(text, 0, spans)
    }

    /// De-identifies a fragment that starts at code point `offset` of a larger text;
    /// `spans` and the reported replacements use the larger text's offsets. Spans outside
    /// the fragment are dropped.
    pub fn apply_at(&mut self, fragment: &str, offset: usize, spans: &[Span]) -> DeidOutput {
        let idx = CharIndex::new(fragment);
        let len = idx.char_len();
        let local: Vec<Span> = spans
            .iter()
            .filter(|s| s.start >= offset && s.end <= offset + len && s.start < s.end)
            .map(|s| {
                let mut l = s.clone();
                l.start -= offset;
                l.end -= offset;
                l
            })
            .collect();
        let mut out = DeidOutput {
            text: String::with_capacity(fragment.len()),
            ..DeidOutput::default()
        };
        let keep_mapping = self.keeps_mapping();
        let resolved = whole_timestamps(fragment, &idx, merge::resolve(local));
        self.over_89_seen |= resolved
            .iter()
            .any(|s| s.label == Label::Age && age_over_89(idx.slice(fragment, s.start, s.end)));
        // Only surrogates read the note's names and the gender cues.
        let replaces = |d: &Self, l: Label| d.action_for(l) == Action::Replace;
        if NAME_LABELS.iter().any(|l| replaces(self, *l)) {
            for s in resolved.iter().filter(|s| is_name_label(s.label)) {
                let name = idx.slice(fragment, s.start, s.end);
                self.note_names.extend(name_words(name));
            }
        }
        let mut pos = 0;
        let mut prev_end = 0;
        for s in resolved {
            let original = idx.slice(fragment, s.start, s.end);
            let before = idx.slice(fragment, prev_end, s.start);
            prev_end = s.end;
            let birth =
                s.label == Label::DateOfBirth || (s.label == Label::Date && has_birth_cue(before));
            let cue =
                if matches!(s.label, Label::FirstName | Label::Person) && replaces(self, s.label) {
                    let (title, rest) = split_title(original);
                    let first = rest.split_whitespace().next().unwrap_or("");
                    let before = format!(
                        "{}{}",
                        idx.slice(fragment, s.start.saturating_sub(40), s.start),
                        title.unwrap_or("")
                    );
                    let after = idx.slice(fragment, s.end, (s.end + 160).min(len));
                    gender::cue(first, &before, after)
                } else {
                    Gender::Unknown
                };
            let Some((replacement, action)) = self.transform(s.label, original, birth, cue) else {
                continue;
            };
            out.text.push_str(idx.slice(fragment, pos, s.start));
            out.text.push_str(&replacement);
            pos = s.end;
            if keep_mapping {
                let pair = (replacement.clone(), original.to_owned());
                if self.mapping_seen.insert(pair.clone()) {
                    self.mapping.push(pair.clone());
                    out.mapping.push(pair);
                }
            }
            let mut span = s;
            span.start += offset;
            span.end += offset;
            out.replacements.push(Replacement {
                span,
                original: original.to_owned(),
                replacement,
                action,
            });
        }
        out.text.push_str(idx.slice(fragment, pos, len));
        out
    }

    /// What a structured element holding `original` (a `label`) becomes under `Hash` or
    /// `Replace` (any other action is read as `Replace`): the same tag or surrogate the
    /// value gets in free text of this request, so a FHIR record and its notes agree.
    pub fn element_value(&mut self, label: Label, original: &str, action: Action) -> String {
        match action {
            Action::Hash => format!("{}_{}", label.wire(), self.key.tag(original)),
            _ => self.surrogate(label, original, Gender::Unknown),
        }
    }

    /// `date` (any form the date rules read, with a weekday, a time of day or as
    /// `20210304`) moved by this request's offset in its own format; `None` when it is not a
    /// date.
    pub fn shift_date(&self, date: &str) -> Option<String> {
        DateParts::parse(date.trim())?.shifted(self.shift_days, self.opts.keep_year)
    }

    /// The action for a label under the options.
    fn action_for(&self, label: Label) -> Action {
        match &self.opts.policy {
            Some(p) => p.action_for(label),
            None => match self.opts.method {
                Method::ShiftDates if !label.is_date() => Action::Mask,
                m => Action::from(m),
            },
        }
    }

    /// The replacement and the action actually taken; `None` keeps the entity.
    fn transform(
        &mut self,
        label: Label,
        original: &str,
        birth: bool,
        cue: Gender,
    ) -> Option<(String, Action)> {
        let mask = || (format!("[{}]", label.wire()), Action::Mask);
        let action = match self.opts.dates {
            Some(d) if label.is_date() && birth => d.birth_dates,
            Some(d) if label.is_date() => d.dates,
            _ => self.action_for(label),
        };
        Some(match action {
            Action::Keep => return None,
            Action::Mask => mask(),
            Action::Remove => (String::new(), Action::Remove),
            // A name or an email address in any case is one value: one hash (`Whitfield`
            // and `WHITFIELD` were two people).
            Action::Hash => {
                let value = if is_name_label(label) || label == Label::Email {
                    original.to_lowercase()
                } else {
                    original.to_owned()
                };
                (
                    format!("{}_{}", label.wire(), self.key.tag(&value)),
                    Action::Hash,
                )
            }
            // A surrogate that came out as the original (a value no generator could vary)
            // is no surrogate: masked rather than sent back.
            Action::Replace => match self.surrogate(label, original, cue) {
                s if s.trim() == original.trim() && !original.trim().is_empty() => mask(),
                s => (s, Action::Replace),
            },
            // Under a policy or a profile that caps ages, a birth date that tells an age over
            // 89 tells it still when moved by a year: masked. (The bare `shift_dates`
            // method moves every date, as OpenMed's does.)
            Action::ShiftDates => match DateParts::parse(original)
                .filter(|_| label.is_date())
                .filter(|d| !(birth && self.caps_ages() && self.reveals_over_89(d.year)))
                .and_then(|d| d.shifted(self.shift_days, self.opts.keep_year))
                .or_else(|| {
                    crate::detect::rules::dates::shifted_weekday(original, self.shift_days)
                        .filter(|_| label.is_date())
                }) {
                Some(s) => (s, Action::ShiftDates),
                None => mask(),
            },
            // A year alone (`born 1931`) is already all Safe Harbor may keep of a date, unless
            // it is a birth year that tells an age over 89.
            Action::YearOnly if label.is_date() && bare_year(original).is_some() => {
                let year = bare_year(original);
                if (birth || self.ninety_years_back(year)) && self.reveals_over_89(year) {
                    mask()
                } else {
                    (original.trim().to_owned(), Action::YearOnly)
                }
            }
            Action::YearOnly => match DateParts::parse(original)
                .filter(|_| label.is_date())
                .filter(|d| {
                    !((birth || self.ninety_years_back(d.year)) && self.reveals_over_89(d.year))
                })
                .and_then(|d| {
                    if self.opts.shifted_years && !birth {
                        d.shifted_year(self.shift_days)
                    } else {
                        d.year_only()
                    }
                }) {
                Some(y) => (y, Action::YearOnly),
                None => mask(),
            },
            Action::AgeCap => {
                if label != Label::Age {
                    mask()
                } else {
                    match surrogate::cap_age(original) {
                        Some(capped) => (capped, Action::AgeCap),
                        None if surrogate::age_value(original).is_some() => return None,
                        None => mask(),
                    }
                }
            }
        })
    }

    /// True when ages over 89 are aggregated here: a policy that caps them, or a FHIR
    /// profile's date actions.
    fn caps_ages(&self) -> bool {
        self.opts.dates.is_some() || self.action_for(Label::Age) == Action::AgeCap
    }

    /// True when keeping the year of a birth date (`year`) would tell an age over 89.
    /// True for a year more than 89 years back: a date then is most often a birth date
    /// with no cue the rules could read (a table row's `1/1/1931`), so its year is not
    /// kept under a policy that cuts dates to years.
    fn ninety_years_back(&self, year: Option<i32>) -> bool {
        year.is_some_and(|y| y >= 1000 && self.reference_year - y > 89)
    }

    fn reveals_over_89(&self, year: Option<i32>) -> bool {
        if self.over_89_seen {
            return true;
        }
        let reference = self.reference_year;
        // A date without a year keeps nothing to reveal; a two-digit year is ambiguous
        // about its century and is masked.
        match year {
            Some(y) if y >= 100 => reference - y > 89,
            Some(_) => true,
            None => false,
        }
    }

    /// The memoised surrogate of `original`: the same string always gets the same
    /// surrogate in this request, and two strings never share one.
    ///
    /// With a subject the surrogate is drawn from a generator seeded by the subject and the
    /// normalised value, so it is the same in every request; without one, from the request's
    /// generator. A value whose first draws collide with another's surrogate in the same
    /// request moves on to its next draws (still the same sequence for that value).
    ///
    /// With a subject a name's gender cue is the name's own ([`gender::of_name`]), never
    /// its context: the context differs from request to request (`Mrs.` in one note,
    /// nothing in `Patient.name`, nothing in another file of the same export), and the
    /// surrogate must not.
    fn surrogate(&mut self, label: Label, original: &str, cue: Gender) -> String {
        // One name in any case (`Whitfield`, `WHITFIELD`) is one person: one surrogate,
        // written in the case of each occurrence.
        let is_name = is_name_label(label);
        let memo_key = if is_name {
            original.to_lowercase()
        } else {
            original.to_owned()
        };
        if let Some(s) = self.memo.get(&memo_key) {
            return in_case_of(original, s);
        }
        let cue = match &self.opts.subject {
            Some(_) if matches!(label, Label::FirstName | Label::Person) => {
                let (_, rest) = split_title(original);
                gender::of_name(rest.split_whitespace().next().unwrap_or(""))
            }
            _ => cue,
        };
        let group = match &self.opts.subject {
            Some(_) if is_name => format!("{}\0{}", label.canonical(), subject_value(original)),
            // One number in any format (`(253) 555-0187`, `253-555-0187`, `2535550187`):
            // the same digits drawn, each written in its own format.
            Some(_) if matches!(label, Label::Phone | Label::Fax | Label::Ssn) => {
                let digits: String = original.chars().filter(char::is_ascii_digit).collect();
                format!("{}\0{digits}", label.canonical())
            }
            Some(_) => format!("{}\0{}", label.canonical(), original.to_lowercase()),
            None => original.to_owned(),
        };
        let mut seeded = self.opts.subject.as_ref().map(|k| k.rng_for(label, &group));
        let mut candidate = String::new();
        for _ in 0..16 {
            candidate = match seeded.as_mut() {
                Some(rng) if is_name => {
                    // Drawn from the spelling without a title, which is put back in front.
                    let (title, rest) = split_title(original);
                    let drawn = surrogate::generate(label, &rest, self.shift_days, cue, rng);
                    match title {
                        Some(t) => format!("{t} {drawn}"),
                        None => drawn,
                    }
                }
                Some(rng) => surrogate::generate(label, original, self.shift_days, cue, rng),
                None => surrogate::generate(label, original, self.shift_days, cue, &mut self.rng),
            };
            // Checked with a subject too: a surrogate that reads as another person of the
            // same note is worse than one that differs from the patient's other notes (the
            // rare case where the drawn name is a real name in this one).
            let reads_as_another = is_name
                && name_words(&candidate)
                    .any(|w| w.chars().count() > 1 && self.note_names.contains(&w));
            if candidate != original
                && !reads_as_another
                && self.used.get(&candidate).is_none_or(|g| *g == group)
            {
                break;
            }
        }
        self.used.insert(candidate.clone(), group);
        self.memo.insert(memo_key, candidate.clone());
        in_case_of(original, &candidate)
    }
}

/// `surrogate` in capitals where `original` is all capitals (`WHITFIELD`), in lower case
/// where it is all lower case, as drawn otherwise.
fn in_case_of(original: &str, surrogate: &str) -> String {
    let letters = || original.chars().filter(|c| c.is_alphabetic());
    if letters().count() < 2 {
        surrogate.to_owned()
    } else if letters().all(char::is_uppercase) {
        surrogate.to_uppercase()
    } else if letters().all(char::is_lowercase) {
        surrogate.to_lowercase()
    } else {
        surrogate.to_owned()
    }
}

/// The labels of people's names.
const NAME_LABELS: [Label; 4] = [
    Label::Person,
    Label::FirstName,
    Label::LastName,
    Label::MiddleName,
];

fn is_name_label(label: Label) -> bool {
    NAME_LABELS.contains(&label)
}

/// The words of a name, lowercased, without punctuation and without titles.
fn name_words(name: &str) -> impl Iterator<Item = String> + '_ {
    name.split(|c: char| c.is_whitespace() || c == ',')
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
                .to_lowercase()
        })
        .filter(|w| !w.is_empty() && !TITLES.contains(&w.as_str()))
}

/// True for an age over 89, in digits (`92`, `92-year-old`) or words (`ninety-two`,
/// `a hundred and one`).
fn age_over_89(text: &str) -> bool {
    match surrogate::age_value(text) {
        Some(v) => v > 89,
        None => {
            let lower = text.to_lowercase();
            lower.contains("ninety") || lower.contains("hundred")
        }
    }
}

/// The year of a value that is a four-digit year and nothing else (`1931`).
fn bare_year(value: &str) -> Option<i32> {
    let v = value.trim();
    (v.len() == 4 && v.bytes().all(|b| b.is_ascii_digit()))
        .then(|| v.parse().ok())
        .flatten()
}

/// True when the text just before a date (back to the previous entity, on the same line)
/// says it is a birth date: `DOB`, `D.O.B.`, `born`, `birth`, `Geburtsdatum`, `né(e)`.
fn has_birth_cue(before: &str) -> bool {
    let line = before.rsplit('\n').next().unwrap_or(before);
    line.split(|c: char| c.is_whitespace() || c == ':' || c == ',')
        .any(crate::detect::protected::is_birth_cue_word)
}

/// An ISO 8601 timestamp from its first character: `2021-04-01T09:00:00Z`,
/// `2021-03-20T14:30:00.5+02:00`, `20210401T0900Z`.
static TIMESTAMP: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"^(?:\d{4}-\d{2}-\d{2}|\d{8})T\d{2}(?::?\d{2}(?::?\d{2}(?:[.,]\d+)?)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?",
    )
    .expect("the timestamp pattern is valid")
});

/// A date span that begins an ISO timestamp is widened to the whole timestamp, and the
/// spans inside it are absorbed. A detector reads `2021-04-01T09:00:00Z` as word pieces
/// (`2021-04-01T09`, then `00Z`): each was handled alone, so `shift_dates` wrote
/// `[date]:00:[date]`; as one date it is moved whole, its time and zone kept.
pub(super) fn whole_timestamps(fragment: &str, idx: &CharIndex, spans: Vec<Span>) -> Vec<Span> {
    let len = idx.char_len();
    let mut out: Vec<Span> = Vec::with_capacity(spans.len());
    let mut covered = 0usize;
    for mut s in spans {
        if s.start < covered {
            if s.end <= covered {
                continue;
            }
            s.start = covered;
        }
        if s.label.is_date() {
            if let Some(m) = TIMESTAMP.find(idx.slice(fragment, s.start, len)) {
                let end = s.start + m.as_str().chars().count();
                if end > s.end {
                    s.end = end;
                    covered = end;
                }
            }
        }
        out.push(s);
    }
    out
}

#[cfg(test)]
mod tests;
