//! FHIR R4 de-identification: a resource, a `Bundle` or NDJSON of resources in, the same
//! shape out, with structured elements handled by a [`Profile`] and free text through the
//! engine.
//!
//! # Why both halves in one pass
//!
//! Tools that apply rules to structured elements only redact free text whole (a note becomes
//! nothing), and wrappers that de-identify free text leave identifiers, references and dates
//! as they are. A record needs both, and they must agree: one [`Deidentifier`] per patient
//! handles that patient's structured values and free text alike, so `birthDate`,
//! `effectiveDateTime` and the dates in the narrative move by one offset (intervals survive),
//! and a pseudonymised family name reads the same in `Patient.name` and in a note.
//!
//! # Flow
//!
//! 1. [`Document::parse`] reads the body within [`Limits`] (resources, nesting depth).
//! 2. [`Document::texts`] lists the free text (strings such as `valueString`,
//!    `Annotation.text`, `CodeableConcept.text`, `Reference.display`; the text nodes of
//!    `Narrative.div`; `Attachment.data` of text types; strings under a key that is no R4
//!    element), in a fixed order.
//! 3. The caller finds the PHI in them (the engine, behind the guard).
//! 4. [`Document::deidentify`] writes the de-identified text back, applies the profile to
//!    `HumanName`, `ContactPoint`, `Address`, `Identifier`, `birthDate`, every other date,
//!    attachments and photos, re-points resource ids and references, and prunes what the
//!    profile emptied (FHIR forbids empty objects, arrays and strings).
//!
//! # Whose patient a resource is
//!
//! A `Patient` is its own; another resource is the patient its `subject`, `patient` or
//! `beneficiary` reference points to (through the Bundle's `fullUrl`s); anything else in a
//! document with one patient is that patient's. With a caller's subject every resource is
//! the subject's. A patient's [`SubjectKey`] is derived from its resource id under the
//! per-install key, so the same patient's dates move by the same offset, and the same
//! names get the same surrogates, in every request.
//!
//! # Why one id key for several documents
//!
//! A FHIR Bulk Data export is a folder of NDJSON files, one per resource type, and
//! `Observation.subject` in one names a `Patient` of another. Ids re-pointed under a key
//! drawn per document would leave every such reference dangling, so the documents of one
//! export (the files of one `phiguard deid` run) share one [`IdKey`] through
//! [`Options::id_key`]. A request of the server is a document, with a key of its own.
//!
//! Nothing here logs, and no error carries a value from the document.

mod dates;
mod ids;
mod narrative;
mod profile;
mod walk;

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::deid::{DeidOptions, Deidentifier, HashKey, SubjectKey};
use crate::detect::Span;

pub use profile::{ElementAction, Profile, ProfileError};
use walk::{Site, TextKind};

/// Errors reading a FHIR document. Messages name a position or a rule, never a value.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FhirError {
    /// Returned when a body (or an NDJSON line) is not JSON: where the reader stopped.
    #[error("not valid JSON at line {line}, column {column}")]
    NotJson {
        /// 1-based line of the body.
        line: usize,
        /// 1-based column of that line.
        column: usize,
    },
    /// Returned when a value is not a FHIR resource (an object with a `resourceType`).
    #[error("line {line} is not a FHIR resource: a JSON object with a resourceType string")]
    NotAResource {
        /// 1-based line of the body (NDJSON) or 1.
        line: usize,
    },
    /// Returned when the body holds more resources than the limit.
    #[error("the body holds more than {max} resources")]
    TooManyResources {
        /// The limit.
        max: usize,
    },
    /// Returned when elements nest deeper than the limit.
    #[error("elements nest deeper than {max} levels")]
    TooDeep {
        /// The limit.
        max: usize,
    },
    /// Returned when there is nothing to de-identify.
    #[error("the body holds no resource")]
    Empty,
}

/// Bounds on one document.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Most resources (Bundle entries and contained resources count, NDJSON lines count).
    pub max_resources: usize,
    /// Deepest nesting of JSON objects and arrays.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_resources: 10_000,
            max_depth: 64,
        }
    }
}

/// How the document was written: one JSON value, or one resource per line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One resource or Bundle.
    Json,
    /// Newline-delimited resources (FHIR bulk data).
    Ndjson,
}

/// A parsed document.
#[derive(Clone, Debug)]
pub struct Document {
    format: Format,
    values: Vec<Value>,
}

/// One piece of free text to run detection on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Text {
    /// The text the engine reads (for a narrative, its text nodes joined by spaces).
    pub text: String,
    /// A concept's label of a few words (`CodeableConcept.text`: `Hives`, `Widowed`): read
    /// by the rules alone, and a name found elsewhere in the document is still swept into
    /// it. A word alone gives the model no context: it called `Hives` a country, and
    /// `pseudonymize` wrote `Vietnam` there.
    pub label: bool,
}

/// What de-identifying a document did, for the response's metadata.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Resources read.
    pub resources: usize,
    /// Free-text values run through the engine.
    pub texts: usize,
    /// Entities found in free text and transformed.
    pub text_entities: usize,
    /// Structured elements changed or removed.
    pub elements: usize,
    /// Patients (date offsets) in the document.
    pub patients: usize,
}

/// Options of one de-identification.
#[derive(Clone, Debug)]
pub struct Options {
    /// What to do with each kind of element.
    pub profile: Profile,
    /// The caller's subject: every resource is this subject's (ids re-pointed the same way
    /// in every request with it).
    pub subject: Option<SubjectKey>,
    /// A fixed date offset for every patient.
    pub date_shift_days: Option<i64>,
    /// The year ages are counted to (`None`: this year).
    pub reference_year: Option<i32>,
    /// The key ids are re-pointed under when there is no subject: documents given the same
    /// key are one export (the files of one `phiguard deid` run), so a reference in one
    /// resolves to a resource re-pointed in another. `None`: a key drawn for this document
    /// alone (a request is a document).
    pub id_key: Option<IdKey>,
}

/// A key resource ids are re-pointed under, shared by the documents of one export: drawn
/// at random, held in memory for the run and never written, so nothing maps the new ids
/// back. `Debug` never prints it.
#[derive(Clone)]
pub struct IdKey([u8; 32]);

impl IdKey {
    /// A fresh key from the thread's cryptographic generator (seeded by the operating
    /// system).
    pub fn random() -> IdKey {
        use rand::Rng;
        let mut k = [0u8; 32];
        rand::rng().fill(&mut k);
        IdKey(k)
    }
}

impl std::fmt::Debug for IdKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IdKey(..)")
    }
}

impl Document {
    /// Reads a body: one resource or Bundle (`Format::Json`), or one resource per
    /// non-blank line (`Format::Ndjson`).
    ///
    /// # Errors
    /// [`FhirError`] naming the line and the rule broken.
    pub fn parse(body: &str, format: Format, limits: Limits) -> Result<Document, FhirError> {
        let mut values = Vec::new();
        match format {
            Format::Json => values.push(read_resource(body, 1, limits.max_depth)?),
            Format::Ndjson => {
                for (i, line) in body.lines().enumerate() {
                    if !line.trim().is_empty() {
                        values.push(read_resource(line, i + 1, limits.max_depth)?);
                    }
                }
            }
        }
        if values.is_empty() {
            return Err(FhirError::Empty);
        }
        let mut resources = 0;
        for v in &values {
            check_shape(v, 0, limits.max_depth, &mut resources)?;
        }
        if resources > limits.max_resources {
            return Err(FhirError::TooManyResources {
                max: limits.max_resources,
            });
        }
        for v in &mut values {
            ids::resolve_conditionals(v);
        }
        Ok(Document { format, values })
    }

    /// The format the document was read in (and is written back in).
    pub fn format(&self) -> Format {
        self.format
    }

    /// The free text to run detection on under `profile`, in the order
    /// [`Document::deidentify`] expects their spans.
    pub fn texts(&self, profile: &Profile) -> Vec<Text> {
        let mut copy = self.values.clone();
        let patients = walk::Patients::of(&copy);
        let mut out = Vec::new();
        for v in &mut copy {
            walk::walk(v, &patients, &mut |site, node, _, path| {
                // An element with an action of its own is not read as free text.
                if profile.path_action(path).is_some() {
                    return false;
                }
                match site {
                    Some(Site::Text(kind)) => {
                        if let Some(text) = walk::text_of(kind, node) {
                            let label = kind == TextKind::Label;
                            out.push(Text { text, label });
                        }
                        true
                    }
                    // A photo is removed whole: nothing inside it is read (as in
                    // `deidentify`, which must meet the same texts).
                    Some(Site::Photo) => false,
                    _ => true,
                }
            });
        }
        out
    }

    /// De-identifies the document in place: `spans[i]` are the entities found in
    /// `texts(&opts.profile)[i]` (code-point offsets).
    ///
    /// `texts` are what [`Document::texts`] listed: each text met again is checked against
    /// its entry, and one that differs (a bug, never expected) is not trusted with another
    /// text's entities: it is removed (a narrative keeps a `[redacted]` body).
    pub fn deidentify(
        &mut self,
        texts: &[Text],
        spans: &[Vec<Span>],
        key: &HashKey,
        opts: &Options,
    ) -> Stats {
        let patients = walk::Patients::of(&self.values);
        let id_key = match (&opts.subject, &opts.id_key) {
            (Some(s), _) => s.derived_key("fhir-ids"),
            (None, Some(k)) => k.0,
            (None, None) => IdKey::random().0,
        };
        // Every name of the document, structured and found in its texts: no surrogate may
        // be one of them.
        let mut names = Vec::new();
        self.values.iter().for_each(|v| human_names(v, &mut names));
        for (text, found) in texts.iter().zip(spans) {
            let idx = crate::detect::CharIndex::new(&text.text);
            names.extend(
                found
                    .iter()
                    .filter(|s| crate::detect::protected::is_name_label(s.label))
                    .filter(|s| s.end <= idx.char_len())
                    .map(|s| idx.slice(&text.text, s.start, s.end).to_owned()),
            );
        }
        let mut state = State {
            key,
            opts,
            names,
            ids: ids::IdMap::new(id_key),
            deids: HashMap::new(),
            stats: Stats {
                resources: patients.resources,
                ..Stats::default()
            },
            path: String::new(),
        };
        let mut next_text = 0usize;
        for v in &mut self.values {
            state.stats.elements += cap_answered_ages(v);
            walk::walk(v, &patients, &mut |site, node, patient, path| {
                if let Some(action) = opts.profile.path_action(path) {
                    state.by_path(action, node, patient);
                    return false;
                }
                match site {
                    Some(Site::Text(kind)) => {
                        if walk::text_of(kind, node).is_none() {
                            // Data declared as text that is not UTF-8 cannot be read: removed.
                            *node = Value::Null;
                            return false;
                        }
                        let listed = texts.get(next_text).map(|t| t.text.as_str());
                        let empty = Vec::new();
                        let found = spans.get(next_text).unwrap_or(&empty);
                        next_text += 1;
                        if walk::text_of(kind, node).as_deref() == listed {
                            state.text(kind, node, found, patient);
                        } else {
                            *node = match kind {
                                TextKind::Xhtml => Value::String(
                                    "<div xmlns=\"http://www.w3.org/1999/xhtml\">[redacted]</div>"
                                        .into(),
                                ),
                                _ => Value::Null,
                            };
                        }
                    }
                    Some(site) => {
                        state.path.clear();
                        state.path.push_str(path);
                        state.element(site, node, patient);
                    }
                    None => {}
                }
                true
            });
            order_periods(v);
            prune(v);
        }
        state.stats.patients = state.deids.len();
        state.stats
    }

    /// The document written back in its format (NDJSON: one resource per line, each line
    /// ending in a newline).
    pub fn write(&self) -> String {
        match self.format {
            Format::Json => self
                .values
                .first()
                .map(Value::to_string)
                .unwrap_or_default(),
            Format::Ndjson => {
                let mut out = String::new();
                for v in &self.values {
                    out.push_str(&v.to_string());
                    out.push('\n');
                }
                out
            }
        }
    }

    /// The resources (a Bundle is one), for tests and callers that keep working on them.
    pub fn values(&self) -> &[Value] {
        &self.values
    }
}

/// One resource from `text`, which starts at `line` of the body. JSON nested deeper than
/// the reader's own bound (128) is too deep, not malformed; the reader's message is not
/// passed on (only its position), so no value of the body is.
fn read_resource(text: &str, line: usize, max_depth: usize) -> Result<Value, FhirError> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        if e.to_string().starts_with("recursion limit exceeded") {
            FhirError::TooDeep { max: max_depth }
        } else {
            FhirError::NotJson {
                line: line + e.line().max(1) - 1,
                column: e.column(),
            }
        }
    })?;
    if v.get("resourceType").and_then(Value::as_str).is_none() {
        return Err(FhirError::NotAResource { line });
    }
    Ok(v)
}

/// Checks the nesting depth and counts resources (objects with a `resourceType`).
fn check_shape(
    v: &Value,
    depth: usize,
    max: usize,
    resources: &mut usize,
) -> Result<(), FhirError> {
    if depth > max {
        return Err(FhirError::TooDeep { max });
    }
    match v {
        Value::Object(m) => {
            if m.get("resourceType").is_some_and(Value::is_string) {
                *resources += 1;
            }
            m.values()
                .try_for_each(|c| check_shape(c, depth + 1, max, resources))
        }
        Value::Array(a) => a
            .iter()
            .try_for_each(|c| check_shape(c, depth + 1, max, resources)),
        _ => Ok(()),
    }
}

/// Every `{start, end}` of `v` back in order after its dates were moved
/// ([`dates::order_period`]).
fn order_periods(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let (Some(Value::String(s)), Some(Value::String(e))) = (m.get("start"), m.get("end"))
            {
                let (mut s, mut e) = (s.clone(), e.clone());
                dates::order_period(&mut s, &mut e);
                m.insert("start".into(), Value::String(s));
                m.insert("end".into(), Value::String(e));
            }
            m.values_mut().for_each(order_periods);
        }
        Value::Array(a) => a.iter_mut().for_each(order_periods),
        _ => {}
    }
}

/// Answers to a question about age (a `QuestionnaireResponse` item whose `linkId` or
/// `text` says age) that are a number over 89: 90, as an `Age` element is capped. The
/// number carries no unit, so the question is the only evidence that it is an age; one
/// that does not say so is left. Returns how many were capped.
fn cap_answered_ages(v: &mut Value) -> usize {
    match v {
        Value::Object(m) => {
            let about_age = ["linkId", "text"].iter().any(|k| {
                m.get(*k)
                    .and_then(Value::as_str)
                    .is_some_and(is_age_question)
            });
            let mut capped = 0;
            if about_age {
                if let Some(Value::Array(answers)) = m.get_mut("answer") {
                    for a in answers.iter_mut().filter_map(Value::as_object_mut) {
                        for key in ["valueInteger", "valueDecimal"] {
                            if a.get(key)
                                .and_then(Value::as_f64)
                                .is_some_and(|n| n >= 90.0)
                            {
                                a.insert(key.into(), Value::from(90));
                                capped += 1;
                            }
                        }
                    }
                }
            }
            capped + m.values_mut().map(cap_answered_ages).sum::<usize>()
        }
        Value::Array(a) => a.iter_mut().map(cap_answered_ages).sum(),
        _ => 0,
    }
}

/// Whether a question asks an age in years: the word `age` (`Age`, `age-at-visit`, `What
/// is your age?`, `Age at diagnosis`; not `page`, `stage`, `dosage`) and no smaller unit
/// (`Age in months` of 100 is eight years). An age at some event over 89 tells the patient
/// is over 89 as well, so it counts.
fn is_age_question(s: &str) -> bool {
    let words: Vec<String> = s
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let smaller = [
        "months", "month", "mo", "mos", "weeks", "week", "wk", "wks", "days", "day", "hours",
    ];
    words.iter().any(|w| w == "age") && !words.iter().any(|w| smaller.contains(&w.as_str()))
}

/// Removes empty strings, arrays and objects left by the profile, bottom up (FHIR's
/// `ele-1`: every element has a value or children).
fn prune(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for c in m.values_mut() {
                prune(c);
            }
            m.retain(|_, c| !is_empty(c));
        }
        Value::Array(a) => {
            for c in a.iter_mut() {
                prune(c);
            }
            a.retain(|c| !is_empty(c));
        }
        _ => {}
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

/// Whether a quantity of time says more than 89 years; `None` when it has no number or no
/// unit of time.
fn over_89(m: &Map<String, Value>) -> Option<bool> {
    let v = m.get("value").and_then(Value::as_f64)?;
    let per_year = walk::units_per_year(m)?;
    Some(v >= 90.0 * per_year)
}

/// 90 years in a quantity's own unit.
fn cap_value(per_year: f64) -> Value {
    #[allow(clippy::cast_possible_truncation)]
    Value::from((90.0 * per_year).round() as i64)
}

/// The strings of every `HumanName` in `v` (its `family`, `given`, `text`).
fn human_names(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if m.contains_key("family") || m.contains_key("given") {
                for key in ["family", "given", "text"] {
                    match m.get(key) {
                        Some(Value::String(s)) => out.push(s.clone()),
                        Some(Value::Array(a)) => {
                            out.extend(a.iter().filter_map(Value::as_str).map(str::to_owned));
                        }
                        _ => {}
                    }
                }
            }
            m.values().for_each(|c| human_names(c, out));
        }
        Value::Array(a) => a.iter().for_each(|c| human_names(c, out)),
        _ => {}
    }
}

/// An `Age` over 89 (Safe Harbor's aggregated ages, as free text's `90+`): the value 90 in
/// its own unit, with the comparator `>=`. An age with no unit is read as years.
fn age_cap(node: &mut Value) -> bool {
    let Value::Object(m) = node else { return false };
    let Some(v) = m.get("value").and_then(Value::as_f64) else {
        return false;
    };
    let has_unit = m.contains_key("code") || m.contains_key("unit");
    let per_year = match walk::units_per_year(m) {
        Some(p) => p,
        None if !has_unit => 1.0,
        None => return false,
    };
    if v < 90.0 * per_year {
        return false;
    }
    m.insert("value".into(), cap_value(per_year));
    m.insert("comparator".into(), Value::String(">=".into()));
    true
}

/// The working state of one [`Document::deidentify`].
struct State<'a> {
    key: &'a HashKey,
    opts: &'a Options,
    ids: ids::IdMap,
    /// One transformer per patient (`None`: resources of no patient).
    deids: HashMap<Option<String>, Deidentifier<rand::rngs::StdRng>>,
    /// The document's names ([`Deidentifier::know_names`]).
    names: Vec<String>,
    stats: Stats,
    /// The path of the element being handled, so a field with an action of its own (by
    /// path) is left to that action.
    path: String,
}

impl State<'_> {
    fn deid(&mut self, patient: Option<&str>) -> &mut Deidentifier<rand::rngs::StdRng> {
        let (key, opts, names) = (self.key, self.opts, &self.names);
        self.deids
            .entry(patient.map(str::to_owned))
            .or_insert_with(|| {
                use rand::SeedableRng;
                let subject = opts.subject.clone().or_else(|| match patient {
                    Some(p) => Some(key.subject(&format!("phiguard-fhir-patient\0{p}"))),
                    // Resources of no patient (a Practitioner, an Organization) share one
                    // offset and one set of surrogates across the documents of an export,
                    // under its run-wide key; another run draws others.
                    None => opts.id_key.as_ref().map(|k| {
                        let run: String = k.0.iter().map(|b| format!("{b:02x}")).collect();
                        key.subject(&format!("phiguard-fhir-run\0{run}"))
                    }),
                });
                let dopts = DeidOptions {
                    policy: Some(opts.profile.text_policy()),
                    subject,
                    date_shift_days: opts.date_shift_days,
                    reference_year: opts.reference_year,
                    dates: Some(opts.profile.text_dates()),
                    ..DeidOptions::default()
                };
                let mut d = Deidentifier::new(dopts, key, rand::rngs::StdRng::from_os_rng());
                d.know_names(names.iter().map(String::as_str));
                d
            })
    }

    fn text(&mut self, kind: TextKind, node: &mut Value, spans: &[Span], patient: Option<&str>) {
        let Value::String(s) = &*node else {
            return;
        };
        let source = s.clone();
        self.stats.texts += 1;
        let deid = self.deid(patient);
        let (written, n) = match kind {
            TextKind::Plain | TextKind::Label => {
                let out = deid.apply(&source, spans);
                (Some(out.text), out.replacements.len())
            }
            TextKind::Xhtml => {
                let (text, n) = narrative::deidentify(&source, spans, deid);
                (Some(text), n)
            }
            TextKind::Base64 => match walk::decode_text(&source) {
                Some(plain) => {
                    let out = deid.apply(&plain, spans);
                    (Some(walk::encode_text(&out.text)), out.replacements.len())
                }
                None => (None, 0),
            },
        };
        self.stats.text_entities += n;
        *node = written.map_or(Value::Null, Value::String);
    }

    fn element(&mut self, site: Site, node: &mut Value, patient: Option<&str>) {
        let changed = match site {
            Site::Text(_) => false,
            Site::Name => self.name(node, patient),
            Site::Telecom => self.telecom(node, patient),
            Site::Address => self.address(node, patient),
            Site::Identifier => self.identifier(node, patient),
            Site::IdentifierString => self.identifier_string(node, patient),
            Site::BirthDate => self.birth_date(node, patient),
            Site::Date(instant) => self.date(node, instant, patient),
            Site::AttachmentUrl | Site::Photo | Site::BinaryData => {
                *node = Value::Null;
                true
            }
            Site::ResourceId(ref ty) => self.ids.resource_id(ty, node),
            Site::FullUrl => self.ids.full_url(node),
            Site::Reference => self.ids.reference(node),
            Site::Url => self.ids.url(node),
            Site::Removed => {
                *node = Value::Null;
                true
            }
            Site::NameString => self.name_string(node, patient),
            Site::Age => age_cap(node),
            Site::AgeRange => self.age_range(node),
            Site::Position => {
                // Coordinates locate what the address's cut city and street located.
                if self.opts.profile.city == ElementAction::Keep {
                    false
                } else {
                    *node = Value::Null;
                    true
                }
            }
        };
        if changed {
            self.stats.elements += 1;
        }
    }

    /// An element with an action of its own (`fhir.actions` by path): kept, removed, a
    /// keyed hash of a string, or a date shifted or cut to its year (anything else that
    /// such an action meets is removed).
    fn by_path(&mut self, action: ElementAction, node: &mut Value, patient: Option<&str>) {
        let text = node.as_str().map(str::to_owned);
        let new = match (action, text) {
            (ElementAction::Keep, _) => return,
            // A hashed date is no date (the element would break the resource): removed.
            (ElementAction::Hash, Some(t)) if dates::is_date(&t) => None,
            (ElementAction::Hash, Some(t)) => {
                let tag = self.key.audit_hash(&format!("phiguard-fhir-path\0{t}"));
                Some(format!("hash_{}", &tag[tag.len() - 16..]))
            }
            (ElementAction::DateShift, Some(t)) => {
                let days = self.deid(patient).shift_days();
                dates::shift(&t, days)
            }
            (ElementAction::Generalize, Some(t)) => dates::year_of(&t).map(|y| format!("{y:04}")),
            _ => None,
        };
        *node = new.map_or(Value::Null, Value::String);
        self.stats.elements += 1;
    }

    /// Applies `action` to a string with the transformer's `label` handling: the same
    /// surrogate, hash or offset as the same value gets in free text.
    fn value(
        &mut self,
        action: ElementAction,
        label: crate::detect::Label,
        value: &str,
        patient: Option<&str>,
    ) -> Option<String> {
        match action {
            ElementAction::Keep => Some(value.to_owned()),
            ElementAction::Redact => None,
            ElementAction::Pseudonymize | ElementAction::Hash => {
                if value.is_empty() {
                    return Some(String::new());
                }
                let method = if action == ElementAction::Hash {
                    crate::deid::Action::Hash
                } else {
                    crate::deid::Action::Replace
                };
                Some(self.deid(patient).element_value(label, value, method))
            }
            ElementAction::Generalize | ElementAction::DateShift => Some(value.to_owned()),
        }
    }

    /// True when `field` of the element being handled has an action of its own by path.
    fn by_own_path(&self, field: &str) -> bool {
        self.opts
            .profile
            .path_action(&format!("{}.{field}", self.path))
            .is_some()
    }

    fn set(
        &mut self,
        obj: &mut Map<String, Value>,
        field: &str,
        action: ElementAction,
        label: crate::detect::Label,
        patient: Option<&str>,
    ) -> bool {
        if action == ElementAction::Keep || self.by_own_path(field) {
            return false;
        }
        let Some(v) = obj.get_mut(field) else {
            return false;
        };
        let new = match v {
            Value::String(s) => {
                let s = s.clone();
                self.value(action, label, &s, patient)
                    .map_or(Value::Null, Value::String)
            }
            Value::Array(items) => {
                let items = items.clone();
                Value::Array(
                    items
                        .iter()
                        .filter_map(|i| i.as_str())
                        .filter_map(|s| self.value(action, label, s, patient))
                        .map(Value::String)
                        .collect(),
                )
            }
            _ => return false,
        };
        obj.insert(field.to_owned(), new);
        true
    }

    fn name(&mut self, node: &mut Value, patient: Option<&str>) -> bool {
        use crate::detect::Label;
        let Value::Object(obj) = node else {
            return false;
        };
        let action = self.opts.profile.names;
        let mut changed = self.set(obj, "family", action, Label::LastName, patient);
        changed |= self.set(obj, "given", action, Label::FirstName, patient);
        if obj.contains_key("text") && action != ElementAction::Keep && !self.by_own_path("text") {
            // The full name again: rebuilt from what the parts became, or removed.
            let parts: Vec<String> = obj
                .get("given")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .chain(obj.get("family"))
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            let text = if action == ElementAction::Redact || parts.is_empty() {
                Value::Null
            } else {
                Value::String(parts.join(" "))
            };
            obj.insert("text".into(), text);
            changed = true;
        }
        changed
    }

    /// A name written as one string: the names action on the whole.
    fn name_string(&mut self, node: &mut Value, patient: Option<&str>) -> bool {
        let action = self.opts.profile.names;
        let Value::String(s) = node else { return false };
        if action == ElementAction::Keep {
            return false;
        }
        let s = s.clone();
        // Word by word, as a `HumanName` and a note's names are (the given names first, the
        // family name last), so the surrogate reads the same as the one a note gets for
        // the same relative; as one string it matched none (found by an outside FHIR
        // user: `Cornelius Pemberton-Lusk` was `Deepika Hansen` here, `Obinna Nguyen` in
        // the note).
        let words: Vec<&str> = s.split_whitespace().collect();
        if action != ElementAction::Pseudonymize || words.len() < 2 {
            *node = self
                .value(action, crate::detect::Label::Person, &s, patient)
                .map_or(Value::Null, Value::String);
            return true;
        }
        let last = words.len() - 1;
        let mut out = Vec::with_capacity(words.len());
        for (i, w) in words.iter().enumerate() {
            let label = if i == last {
                crate::detect::Label::LastName
            } else {
                crate::detect::Label::FirstName
            };
            match self.value(action, label, w, patient) {
                Some(v) => out.push(v),
                None => {
                    *node = Value::Null;
                    return true;
                }
            }
        }
        *node = Value::String(out.join(" "));
        true
    }

    /// A `Range` of ages: a low bound over 89 becomes 90, a high bound over 89 is removed
    /// (the range reads "90 and over"); a `Range` not in units of time is left.
    fn age_range(&mut self, node: &mut Value) -> bool {
        let Value::Object(obj) = node else {
            return false;
        };
        let mut changed = false;
        if let Some(Value::Object(high)) = obj.get("high") {
            if over_89(high).unwrap_or(false) {
                obj.remove("high");
                changed = true;
            }
        }
        if let Some(Value::Object(low)) = obj.get_mut("low") {
            if let (Some(true), Some(per_year)) = (over_89(low), walk::units_per_year(low)) {
                low.insert("value".into(), cap_value(per_year));
                changed = true;
            }
        }
        changed
    }

    fn telecom(&mut self, node: &mut Value, patient: Option<&str>) -> bool {
        use crate::detect::Label;
        let Value::Object(obj) = node else {
            return false;
        };
        let label = match obj.get("system").and_then(Value::as_str) {
            Some("email") => Label::Email,
            Some("fax") => Label::Fax,
            Some("url") => Label::Url,
            Some("phone" | "sms" | "pager") | None => Label::Phone,
            Some(_) => Label::Other,
        };
        let action = self.opts.profile.telecom;
        self.set(obj, "value", action, label, patient)
    }

    fn address(&mut self, node: &mut Value, patient: Option<&str>) -> bool {
        use crate::detect::Label;
        let Value::Object(obj) = node else {
            return false;
        };
        let p = self.opts.profile.clone();
        let mut changed = self.set(obj, "line", p.address_lines, Label::StreetAddress, patient);
        changed |= self.set(obj, "text", p.address_lines, Label::StreetAddress, patient);
        changed |= self.set(obj, "city", p.city, Label::City, patient);
        changed |= self.set(obj, "district", p.city, Label::Location, patient);
        changed |= self.set(obj, "state", p.state, Label::State, patient);
        changed |= self.set(obj, "country", p.country, Label::Country, patient);
        if let Some(Value::String(zip)) = obj
            .get("postalCode")
            .filter(|_| !self.by_own_path("postalCode"))
        {
            let zip = zip.clone();
            let new = match p.postal_code {
                ElementAction::Generalize => {
                    let us = obj
                        .get("country")
                        .and_then(Value::as_str)
                        .is_none_or(profile::is_us);
                    if us {
                        profile::zip3(&zip)
                    } else {
                        None
                    }
                }
                a => self.value(a, Label::Zipcode, &zip, patient),
            };
            if new.as_deref() != Some(zip.as_str()) {
                obj.insert("postalCode".into(), new.map_or(Value::Null, Value::String));
                changed = true;
            }
        }
        changed
    }

    fn identifier(&mut self, node: &mut Value, patient: Option<&str>) -> bool {
        use crate::detect::Label;
        let Value::Object(obj) = node else {
            return false;
        };
        let action = self.opts.profile.identifiers;
        self.set(obj, "value", action, Label::IdNum, patient)
    }

    /// A string that is an identifier by its element's definition: the identifier action
    /// on the string itself.
    fn identifier_string(&mut self, node: &mut Value, patient: Option<&str>) -> bool {
        let action = self.opts.profile.identifiers;
        let Value::String(s) = node else { return false };
        if action == ElementAction::Keep {
            return false;
        }
        let s = s.clone();
        *node = self
            .value(action, crate::detect::Label::IdNum, &s, patient)
            .map_or(Value::Null, Value::String);
        true
    }

    fn birth_date(&mut self, node: &mut Value, patient: Option<&str>) -> bool {
        let Value::String(d) = node else { return false };
        let reference = self
            .opts
            .reference_year
            .unwrap_or_else(|| chrono::Datelike::year(&chrono::Utc::now()));
        let new = match self.opts.profile.birth_date {
            ElementAction::Keep => return false,
            ElementAction::Generalize => dates::year_of(d)
                .filter(|y| reference - y <= 89)
                .map(|y| format!("{y:04}")),
            ElementAction::DateShift => {
                let days = self.deid(patient).shift_days();
                dates::shift(d, days)
            }
            _ => None,
        };
        *node = new.map_or(Value::Null, Value::String);
        true
    }

    fn date(&mut self, node: &mut Value, instant: bool, patient: Option<&str>) -> bool {
        let Value::String(d) = node else { return false };
        let new = match self.opts.profile.dates {
            ElementAction::Keep => return false,
            ElementAction::DateShift => {
                let days = self.deid(patient).shift_days();
                dates::shift(d, days)
            }
            // A year is a valid date and dateTime; an instant is removed instead.
            ElementAction::Generalize => dates::year_of(d)
                .filter(|_| !instant)
                .map(|y| format!("{y:04}")),
            _ => None,
        };
        *node = new.map_or(Value::Null, Value::String);
        true
    }
}

#[cfg(test)]
mod tests;
