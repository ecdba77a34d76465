//! The one traversal of a FHIR document: which element is what ([`Site`]), and whose
//! patient each resource is ([`Patients`]).
//!
//! Listing the free text and de-identifying it are two calls of [`walk`] over the same
//! document, so they meet the same texts in the same order. Elements are recognised by
//! their key and their shape (a `name` object with `family` or `given` is a `HumanName`,
//! an object with `contentType` is an `Attachment`), which holds for every resource type
//! and for extensions without a schema per type.
//!
//! # Why a key that is no R4 element is free text
//!
//! Exports carry local, non-conformant fields (`nickname`, `localNotes`), and nothing says
//! what their strings hold. Passing them through would leak whatever PHI they carry, so a
//! string under a key that is not an R4 element ([`is_r4_element`]) is read as free text:
//! the names, phones and dates in it are found and transformed like a note's, and a code
//! with nothing in it comes back as it was. Numbers and booleans there stay.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use base64::Engine as _;
use serde_json::{Map, Value};

use super::{dates, narrative};

/// How a free-text value is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TextKind {
    /// A plain string.
    Plain,
    /// A plain string that is a concept's label: a `CodeableConcept.text` of a few words
    /// (`Hives`, `Widowed`, `English`). Written as [`TextKind::Plain`]; read without the
    /// model's spans (see [`Text::label`](super::Text::label)).
    Label,
    /// `Narrative.div` XHTML.
    Xhtml,
    /// `Attachment.data` of a text type (base64).
    Base64,
}

/// What an element is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Site {
    /// Free text for the engine.
    Text(TextKind),
    /// A `HumanName` object.
    Name,
    /// A `ContactPoint` object.
    Telecom,
    /// An `Address` object.
    Address,
    /// An `Identifier` object.
    Identifier,
    /// A string element that is an identifier by its definition
    /// ([`IDENTIFIER_STRING_KEYS`]): a member id, a serial number.
    IdentifierString,
    /// A `birthDate` string.
    BirthDate,
    /// Any other date, dateTime or instant string; `true` for an instant (which FHIR
    /// requires to the second, so it cannot be cut to a year).
    Date(bool),
    /// `Attachment.url`.
    AttachmentUrl,
    /// A `photo` element.
    Photo,
    /// `Attachment.data` that is not text.
    BinaryData,
    /// `Resource.id` of a resource of this type.
    ResourceId(String),
    /// `Bundle.entry.fullUrl`.
    FullUrl,
    /// `Reference.reference`, and `Bundle.entry.response.location`.
    Reference,
    /// A URL of a Bundle's plumbing (`Bundle.link.url`, `entry.link.url`,
    /// `entry.request.url`): its query (a search's values) cut, a resource's address
    /// re-pointed as references are.
    Url,
    /// A string removed under every profile: a conditional request's query
    /// (`entry.request.ifNoneExist`), `meta.source` (the source system's address).
    Removed,
    /// A person's name written as one string (`FamilyMemberHistory.name`).
    NameString,
    /// An `Age` (`onsetAge`, `ageAge`, …, or a `valueQuantity` in years).
    Age,
    /// A `Range` of ages (`ageRange`, `onsetRange`, `abatementRange`).
    AgeRange,
    /// `Location.position`: latitude and longitude.
    Position,
}

/// String keys holding free text.
const TEXT_KEYS: &[&str] = &[
    "text",
    "valueString",
    "valueMarkdown",
    "contentString",
    "description",
    "comment",
    "conclusion",
    "summary",
    "patientInstruction",
    "title",
    "note",
    "display",
    "authorString",
    // A name written as one string (`Location.name`, `Organization.name`, `Group.name`,
    // `HealthcareService.name`) and its aliases: a patient's home, a relative's employer, a
    // household. Read as text, what the engine finds there is transformed and a
    // provider's or a definition's name comes back as it was.
    "name",
    "alias",
    // Primitive values of extensions (and of `Parameters`) have no schema here: an SSN
    // written as a `valueCode`, an e-mail as a `valueUri`. The engine reads them as text, so
    // whatever PHI they hold is found there; a code such as `F` comes back as it was.
    "valueCode",
    "valueUri",
    "valueUrl",
    "valueId",
    "valueOid",
    "valueUuid",
    "valueCanonical",
];

/// String elements of FHIR R4 that are identifiers by their definition, not `Identifier`
/// objects: the insurer's member id, a device's serial, lot and UDI numbers, prior
/// authorisation and contract references. Safe Harbor's identifier categories (health plan
/// beneficiary, account, device serial numbers) cover them; they get the identifier action
/// (redacted under `hipaa_safe_harbor`, a keyed hash under `pseudonymize`).
const IDENTIFIER_STRING_KEYS: &[&str] = &[
    "subscriberId",
    "serialNumber",
    "lotNumber",
    "distinctIdentifier",
    "deviceIdentifier",
    "carrierHRF",
    "carrierAIDC",
    "preAuthRef",
    "businessArrangement",
];

/// Keys whose dates are FHIR `instant`s.
const INSTANT_KEYS: &[&str] = &[
    "issued",
    "lastUpdated",
    "timestamp",
    "recorded",
    "effectiveInstant",
    "valueInstant",
    "instant",
];

/// The most words a `CodeableConcept.text` read as a label ([`TextKind::Label`]) has;
/// a longer one is a sentence, where the model has context.
const LABEL_WORDS: usize = 3;

/// String keys that are codes or addresses, never dates or text, whatever they look like.
const CODE_KEYS: &[&str] = &["code", "system", "version", "value", "id", "url", "unit"];

/// String elements removed whatever the profile, by path: a conditional request's query
/// and the source system's address carry the values they search or name.
const REMOVED_PATHS: &[&str] = &["Bundle.entry.request.ifNoneExist"];

/// URLs of a Bundle's plumbing, by path ([`Site::Url`]).
const URL_PATHS: &[&str] = &[
    "Bundle.link.url",
    "Bundle.entry.link.url",
    "Bundle.entry.request.url",
];

/// The JSON property names of FHIR R4's resources and datatypes, one a line, from HL7's R4
/// JSON schema (`tools/fhir_r4_elements.py` writes the file).
static R4_ELEMENTS: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| include_str!("r4_elements.txt").lines().collect());

/// True when `key` is an R4 element, or a primitive's `_key` sibling (its `id` and
/// extensions). `fhir_comments` (DSTU2's comments) is not: it is read as text.
pub(super) fn is_r4_element(key: &str) -> bool {
    let name = key.strip_prefix('_').unwrap_or(key);
    R4_ELEMENTS.contains(name)
}

/// Keys of R4 `Range`s that are ranges of ages.
const AGE_RANGE_KEYS: &[&str] = &["ageRange", "onsetRange", "abatementRange"];

/// How many of a quantity's units make a year, read from its UCUM `code` or its `unit`;
/// `None` for a unit that is not a time, or no unit at all.
pub(super) fn units_per_year(m: &Map<String, Value>) -> Option<f64> {
    let unit = m
        .get("code")
        .or_else(|| m.get("unit"))
        .and_then(Value::as_str)?;
    Some(match unit.trim().to_ascii_lowercase().as_str() {
        "a" | "y" | "yr" | "yrs" | "year" | "years" => 1.0,
        "mo" | "month" | "months" => 12.0,
        "wk" | "week" | "weeks" => 52.0,
        "d" | "day" | "days" => 365.0,
        _ => return None,
    })
}

/// Whose patient each resource is.
#[derive(Debug, Default)]
pub(super) struct Patients {
    /// `fullUrl` → `Type/id` of every Bundle entry.
    by_url: HashMap<String, String>,
    /// The document's one patient, when it has exactly one.
    only: Option<String>,
    /// `Type/id` → patient of the resources that name no patient themselves but point to
    /// resources of exactly one (an `Observation` whose `encounter` is a patient's, a
    /// `Provenance` whose `target` is).
    through: HashMap<String, String>,
    /// Resources in the document.
    pub(super) resources: usize,
}

impl Patients {
    pub(super) fn of(values: &[Value]) -> Patients {
        let mut p = Patients::default();
        let mut patients = HashSet::new();
        for v in values {
            p.scan(v, &mut patients);
        }
        // References may name a patient that is not in the document.
        let mut refs = HashSet::new();
        for v in values {
            p.referenced(v, &mut refs);
        }
        patients.extend(refs);
        if patients.len() == 1 {
            p.only = patients.into_iter().next();
        }
        p.through = p.through_references(values);
        p
    }

    /// The patients of resources that name none themselves, through the resources they
    /// reference, to a fixed point (`Observation` → `Encounter` → `Patient`). A resource
    /// whose references lead to two patients (a `Group`) is nobody's. Without this, in a
    /// document of several patients, an observation linked by its encounter only drew an
    /// offset of its own, and its dates no longer matched the encounter's.
    fn through_references(&self, values: &[Value]) -> HashMap<String, String> {
        // (`Type/id`, its direct patient, the `Type/id`s it references).
        let mut nodes: Vec<(String, Option<String>, Vec<String>)> = Vec::new();
        for v in values {
            self.resources_of(v, &mut nodes);
        }
        let mut known: HashMap<String, String> = nodes
            .iter()
            .filter_map(|(id, p, _)| Some((id.clone(), p.clone()?)))
            .collect();
        let mut through = HashMap::new();
        loop {
            let mut changed = false;
            for (id, direct, refs) in &nodes {
                if direct.is_some() || known.contains_key(id) {
                    continue;
                }
                let found: HashSet<&String> = refs.iter().filter_map(|r| known.get(r)).collect();
                if found.len() == 1 {
                    let p = (*found.iter().next().expect("one")).clone();
                    known.insert(id.clone(), p.clone());
                    through.insert(id.clone(), p);
                    changed = true;
                }
            }
            if !changed {
                return through;
            }
        }
    }

    /// Every resource below `v` (contained ones excepted: they are their container's) with
    /// its `Type/id`, direct patient and references.
    fn resources_of(&self, v: &Value, out: &mut Vec<(String, Option<String>, Vec<String>)>) {
        match v {
            Value::Object(m) => {
                if let (Some(ty), Some(id)) = (
                    m.get("resourceType").and_then(Value::as_str),
                    m.get("id").and_then(Value::as_str),
                ) {
                    let mut refs = Vec::new();
                    for (k, c) in m {
                        if k != "contained" {
                            self.references_in(c, &mut refs);
                        }
                    }
                    out.push((format!("{ty}/{id}"), self.own(m), refs));
                }
                for (k, c) in m {
                    if k != "contained" {
                        self.resources_of(c, out);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|c| self.resources_of(c, out)),
            _ => {}
        }
    }

    /// The `Type/id`s of the references below `v`, not descending into resources of
    /// their own (a Bundle's entries).
    fn references_in(&self, v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) if m.contains_key("resourceType") => {}
            Value::Object(m) => {
                if let Some(r) = m.get("reference").and_then(Value::as_str) {
                    if let Some(t) = self.target(r) {
                        out.push(t);
                    }
                }
                m.values().for_each(|c| self.references_in(c, out));
            }
            Value::Array(a) => a.iter().for_each(|c| self.references_in(c, out)),
            _ => {}
        }
    }

    /// `Type/id` of what `reference` points to (a `fullUrl`, a relative or an absolute
    /// reference, with or without a version).
    fn target(&self, reference: &str) -> Option<String> {
        let target = self
            .by_url
            .get(reference)
            .cloned()
            .unwrap_or_else(|| reference.to_owned());
        let path = target.split("/_history/").next().unwrap_or("");
        let mut parts = path.rsplit('/');
        let id = parts.next()?;
        let ty = parts.next()?;
        (!id.is_empty() && ty.starts_with(|c: char| c.is_ascii_uppercase()))
            .then(|| format!("{ty}/{id}"))
    }

    fn scan(&mut self, v: &Value, patients: &mut HashSet<String>) {
        match v {
            Value::Object(m) => {
                if let Some(ty) = m.get("resourceType").and_then(Value::as_str) {
                    self.resources += 1;
                    if ty == "Patient" {
                        patients.insert(patient_id(m));
                    }
                }
                if let (Some(url), Some(Value::Object(r))) =
                    (m.get("fullUrl").and_then(Value::as_str), m.get("resource"))
                {
                    if let (Some(ty), Some(id)) = (
                        r.get("resourceType").and_then(Value::as_str),
                        r.get("id").and_then(Value::as_str),
                    ) {
                        self.by_url.insert(url.to_owned(), format!("{ty}/{id}"));
                    } else if r.get("resourceType").and_then(Value::as_str) == Some("Patient") {
                        self.by_url.insert(url.to_owned(), patient_id(r));
                    }
                }
                m.values().for_each(|c| self.scan(c, patients));
            }
            Value::Array(a) => a.iter().for_each(|c| self.scan(c, patients)),
            _ => {}
        }
    }

    fn referenced(&self, v: &Value, out: &mut HashSet<String>) {
        match v {
            Value::Object(m) => {
                if m.contains_key("resourceType") {
                    if let Some(p) = self.own(m) {
                        out.insert(p);
                    }
                }
                m.values().for_each(|c| self.referenced(c, out));
            }
            Value::Array(a) => a.iter().for_each(|c| self.referenced(c, out)),
            _ => {}
        }
    }

    /// The patient a resource names: itself, or its subject, patient or beneficiary.
    fn own(&self, m: &Map<String, Value>) -> Option<String> {
        if m.get("resourceType").and_then(Value::as_str) == Some("Patient") {
            return Some(patient_id(m));
        }
        ["subject", "patient", "beneficiary"].iter().find_map(|k| {
            let r = m.get(*k)?.get("reference")?.as_str()?;
            self.resolve(r)
        })
    }

    /// The patient of a resource: its own ([`own`](Self::own)), else the one its
    /// references lead to.
    fn of_resource(&self, m: &Map<String, Value>) -> Option<String> {
        self.own(m).or_else(|| {
            let ty = m.get("resourceType")?.as_str()?;
            let id = m.get("id")?.as_str()?;
            self.through.get(&format!("{ty}/{id}")).cloned()
        })
    }

    /// `Patient/<id>` when `reference` points to a patient.
    fn resolve(&self, reference: &str) -> Option<String> {
        self.target(reference).filter(|t| t.starts_with("Patient/"))
    }
}

fn patient_id(m: &Map<String, Value>) -> String {
    format!(
        "Patient/{}",
        m.get("id").and_then(Value::as_str).unwrap_or("")
    )
}

/// What the keys of one object need to know about the object.
struct Shape {
    /// A `HumanName` or an `Address`: its `text` is the element's, not free text.
    structured: bool,
    /// A `Coding`: its `display` is a code's name.
    coding: bool,
    /// An `Attachment`'s content type.
    content_type: Option<String>,
    /// Data with no content type that is not `SampledData`: an `Attachment` (or a
    /// `Signature`) whose data cannot be read.
    unknown_data: bool,
    /// Keys of a `CodeableConcept` only (`coding`, `text`, `id`, `extension`).
    concept: bool,
}

impl Shape {
    fn of(m: &Map<String, Value>) -> Shape {
        let has = |k: &str| m.contains_key(k);
        Shape {
            structured: is_name(m) || is_address(m),
            coding: has("code") || has("system"),
            content_type: m
                .get("contentType")
                .and_then(Value::as_str)
                .map(str::to_ascii_lowercase),
            unknown_data: !has("contentType")
                && has("data")
                && !has("dimensions")
                && !has("origin"),
            concept: m
                .keys()
                .all(|k| matches!(k.as_str(), "coding" | "text" | "id" | "extension")),
        }
    }
}

fn is_name(m: &Map<String, Value>) -> bool {
    m.contains_key("family") || m.contains_key("given")
}

fn is_address(m: &Map<String, Value>) -> bool {
    ["line", "city", "district", "postalCode"]
        .iter()
        .any(|k| m.contains_key(*k))
}

/// A content type whose data is text the engine can read.
fn is_text_type(ct: &str) -> bool {
    let essence = ct.split(';').next().unwrap_or("").trim();
    essence.starts_with("text/")
        || matches!(
            essence,
            "application/json"
                | "application/xml"
                | "application/fhir+json"
                | "application/fhir+xml"
        )
}

fn object_site(key: &str, m: &Map<String, Value>) -> Option<Site> {
    // An extension's value of a structured type is that type (`valueAddress` of the
    // birth place, `valueHumanName` of a mother's maiden name).
    match key {
        "photo" => Some(Site::Photo),
        "name" | "valueHumanName" if is_name(m) => Some(Site::Name),
        "telecom" | "valueContactPoint" if m.contains_key("value") || m.contains_key("system") => {
            Some(Site::Telecom)
        }
        // `address`, and every element of type `Address` named for what it locates
        // (`valueAddress`, `Claim.accident.locationAddress`).
        k if (k == "address" || k.ends_with("Address"))
            && (is_address(m) || m.contains_key("text")) =>
        {
            Some(Site::Address)
        }
        "position" if m.contains_key("latitude") || m.contains_key("longitude") => {
            Some(Site::Position)
        }
        // An `Age` (`onsetAge`, `ageAge`, `deceasedAge`, `valueAge`), or a quantity in
        // years that is a value (an observed age).
        k if k.ends_with("Age") && m.get("value").is_some_and(Value::is_number) => Some(Site::Age),
        "valueQuantity"
            if m.get("value").is_some_and(Value::is_number) && units_per_year(m) == Some(1.0) =>
        {
            Some(Site::Age)
        }
        k if AGE_RANGE_KEYS.contains(&k) => Some(Site::AgeRange),
        // `identifier`, `valueIdentifier`, and the elements of type `Identifier` named for
        // what they identify (`Specimen.accessionIdentifier`,
        // `DocumentReference.masterIdentifier`).
        k if (k == "identifier" || k.ends_with("Identifier")) && m.contains_key("value") => {
            Some(Site::Identifier)
        }
        _ => None,
    }
}

fn string_site(key: &str, s: &str, shape: &Shape, path: &str) -> Option<Site> {
    if URL_PATHS.contains(&path) {
        return Some(Site::Url);
    }
    if REMOVED_PATHS.contains(&path) || path.ends_with(".meta.source") {
        return Some(Site::Removed);
    }
    match path {
        "Bundle.entry.response.location" => return Some(Site::Reference),
        "FamilyMemberHistory.name" => return Some(Site::NameString),
        // A dependent's number and a plan's group or class value: health plan numbers.
        "Coverage.dependent" | "Coverage.class.value" => return Some(Site::IdentifierString),
        _ => {}
    }
    match key {
        "fullUrl" => return Some(Site::FullUrl),
        "reference" => return Some(Site::Reference),
        // A relative's birth date (`FamilyMemberHistory.bornDate`) is a birth date too.
        "birthDate" | "bornDate" => return Some(Site::BirthDate),
        "div" if s.trim_start().starts_with('<') => return Some(Site::Text(TextKind::Xhtml)),
        "data" if shape.content_type.is_some() => {
            let text = shape.content_type.as_deref().is_some_and(is_text_type);
            return Some(if text {
                Site::Text(TextKind::Base64)
            } else {
                Site::BinaryData
            });
        }
        // Data of no declared type cannot be told from text: removed, not passed through.
        "data" if shape.unknown_data => return Some(Site::BinaryData),
        "url" if shape.content_type.is_some() || shape.unknown_data => {
            return Some(Site::AttachmentUrl)
        }
        k if IDENTIFIER_STRING_KEYS.contains(&k) => return Some(Site::IdentifierString),
        _ => {}
    }
    // A choice element's string or markdown form (`onsetString`, `performedString`,
    // `occurrenceString`, `bornString`) is written by a person, like `valueString`.
    let choice_text = key.len() > "String".len()
        && (key.ends_with("String") || key.ends_with("Markdown"))
        && key.starts_with(|c: char| c.is_ascii_lowercase());
    let text = (TEXT_KEYS.contains(&key) || choice_text)
        && !(key == "text" && shape.structured)
        && !(key == "display" && shape.coding);
    if text {
        // A concept's label of a few words, not an annotation's or a dosage's text (which
        // may hold only `text` too): the model reads a word alone out of any context, and
        // called `Hives` a country and `Widowed` a first name.
        let parent = path.rsplit('.').nth(1).unwrap_or("");
        let label = key == "text"
            && shape.concept
            && !matches!(parent, "note" | "dosageInstruction" | "dosage")
            && s.split_whitespace().count() <= LABEL_WORDS;
        return Some(Site::Text(if label {
            TextKind::Label
        } else {
            TextKind::Plain
        }));
    }
    if !CODE_KEYS.contains(&key) && dates::is_date(s) {
        return Some(Site::Date(INSTANT_KEYS.contains(&key)));
    }
    // An element of a complex type written as a string (`"identifier": "SSN …"`,
    // `"telecom": "617-…"`, `"resource": "…"`) is no FHIR, but it is what the client sent:
    // an identifier is taken as one, anything else read as free text. Both came back
    // verbatim with a `200`.
    if key == "identifier" || key.ends_with("Identifier") {
        return Some(Site::IdentifierString);
    }
    if COMPLEX_KEYS.contains(&key) {
        return Some(Site::Text(TextKind::Plain));
    }
    // A key R4 does not define: nothing says what it holds, so the engine reads it.
    (!is_r4_element(key)).then_some(Site::Text(TextKind::Plain))
}

/// Elements R4 defines as objects (or arrays of them) that hold a person's details or a
/// whole resource: a string there is read as free text ([`string_site`]).
const COMPLEX_KEYS: &[&str] = &[
    "telecom",
    "address",
    "contact",
    "photo",
    "resource",
    "entry",
    "contained",
    "extension",
    "modifierExtension",
    "link",
    "generalPractitioner",
    "managingOrganization",
    "subject",
    "patient",
    "performer",
    "author",
    "participant",
    "individual",
    "qualification",
    "attachment",
    "content",
    "valueHumanName",
    "valueAddress",
    "valueContactPoint",
    "valueAttachment",
    "valueReference",
    // references and backbone elements that name people, places and organisations
    "location",
    "serviceProvider",
    "hospitalization",
    "requester",
    "recorder",
    "asserter",
    "informant",
    "source",
    "sender",
    "recipient",
    "custodian",
    "attester",
    "organization",
    "practitioner",
    "insurer",
    "provider",
    "payor",
    "beneficiary",
    "subscriber",
    "policyHolder",
    "guarantor",
    "careTeam",
    "partOf",
    "encounter",
    "context",
    "agent",
    "entity",
    "who",
    "onBehalfOf",
    "enterer",
    "referral",
    "facility",
    "supportingInfo",
    "accident",
    "payee",
    "team",
    "member",
    "managingEntity",
    "responsible",
    "actor",
    "receiver",
    "collector",
    "operator",
    "owner",
];

/// The visitor: the site (`None` for any other string or object), the element, the patient
/// whose it is, and the element's path (`Patient.name.family`: the resource type, then the
/// keys, array positions left out). For an object it answers whether to visit its children.
pub(super) type Visit<'a> = dyn FnMut(Option<Site>, &mut Value, Option<&str>, &str) -> bool + 'a;

/// Visits every element of `v`, parents before children.
pub(super) fn walk(v: &mut Value, patients: &Patients, f: &mut Visit<'_>) {
    if let Value::Object(_) = v {
        object(v, None, "", false, false, patients, f);
    }
}

/// Visits one object at `path`; `birth` is true inside `_birthDate` (the birth date's
/// extensions, such as the birth time, are the birth date too); `contained` is true for a
/// contained resource, whose id is local to its container and kept (its `#id` references
/// must still resolve).
#[allow(clippy::too_many_arguments)]
fn object(
    v: &mut Value,
    inherited: Option<&str>,
    path: &str,
    birth: bool,
    contained: bool,
    patients: &Patients,
    f: &mut Visit<'_>,
) {
    let Value::Object(m) = v else { return };
    let mut patient = inherited.map(str::to_owned);
    let mut path = path.to_owned();
    if let Some(ty) = m
        .get("resourceType")
        .and_then(Value::as_str)
        .map(str::to_owned)
    {
        patient = patients
            .of_resource(m)
            .or(patient)
            .or_else(|| patients.only.clone());
        path.clone_from(&ty);
        if let Some(id) = m.get_mut("id").filter(|_| !contained) {
            if id.is_string() {
                f(
                    Some(Site::ResourceId(ty.clone())),
                    id,
                    patient.as_deref(),
                    &format!("{ty}.id"),
                );
            }
        }
    }
    let shape = Shape::of(m);
    let keys: Vec<String> = m.keys().cloned().collect();
    for key in keys {
        if key == "resourceType" || key == "id" {
            continue;
        }
        let birth = birth || key == "_birthDate";
        let child_path = format!("{path}.{key}");
        if let Some(child) = m.get_mut(&key) {
            child_of(
                &key,
                child,
                &shape,
                patient.as_deref(),
                &child_path,
                birth,
                patients,
                f,
            );
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn child_of(
    key: &str,
    child: &mut Value,
    shape: &Shape,
    patient: Option<&str>,
    path: &str,
    birth: bool,
    patients: &Patients,
    f: &mut Visit<'_>,
) {
    match child {
        Value::String(s) => {
            let site = match string_site(key, s, shape, path) {
                Some(Site::Date(_)) if birth => Some(Site::BirthDate),
                other => other,
            };
            f(site, child, patient, path);
        }
        Value::Object(m) => {
            let site = object_site(key, m);
            if f(site, child, patient, path) {
                let contained = key == "contained";
                object(child, patient, path, birth, contained, patients, f);
            }
        }
        Value::Array(items) => {
            for item in items.iter_mut() {
                child_of(key, item, shape, patient, path, birth, patients, f);
            }
        }
        _ => {}
    }
}

/// The text the engine reads for a free-text element; `None` for data that is not UTF-8.
pub(super) fn text_of(kind: TextKind, node: &Value) -> Option<String> {
    let s = node.as_str()?;
    match kind {
        TextKind::Plain | TextKind::Label => Some(s.to_owned()),
        TextKind::Xhtml => Some(narrative::plain(s)),
        TextKind::Base64 => decode_text(s),
    }
}

/// Base64 data as UTF-8 text.
pub(super) fn decode_text(data: &str) -> Option<String> {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .ok()?;
    String::from_utf8(raw).ok()
}

/// UTF-8 text as base64 data.
pub(super) fn encode_text(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text.as_bytes())
}
