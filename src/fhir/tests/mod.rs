//! Documents de-identified end to end with the real rule recognizers finding the free
//! text's entities (the engine's model is the black-box tests' part).

use serde_json::{json, Value};

use super::*;
use std::sync::Arc;

use crate::detect::{ContextRecognizer, Layered, Recognizer, RuleRecognizer};

mod elements;

fn key() -> HashKey {
    HashKey::from_bytes([3; 32])
}

fn opts(profile: Profile) -> Options {
    Options {
        profile,
        subject: None,
        date_shift_days: None,
        reference_year: Some(2026),
        id_key: None,
    }
}

/// Parses, detects with the rules plus the given names, de-identifies.
fn run(body: &str, format: Format, names: &[&str], o: &Options) -> (Document, Stats) {
    let mut doc = Document::parse(body, format, Limits::default()).expect("test body parses");
    let texts = doc.texts(&o.profile);
    let rules = Layered(vec![
        Arc::new(RuleRecognizer::new()),
        Arc::new(ContextRecognizer::new()),
    ]);
    let spans: Vec<Vec<Span>> = texts
        .iter()
        .map(|t| {
            let mut found = rules
                .detect_batch(&[t.text.as_str()])
                .expect("rules do not fail")
                .remove(0);
            let idx = crate::detect::CharIndex::new(&t.text);
            for n in names {
                for (b, _) in t.text.match_indices(n) {
                    let start = idx.char_at_byte(b);
                    let end = start + n.chars().count();
                    found.push(Span::new(
                        start,
                        end,
                        crate::detect::Label::Person,
                        0.9,
                        crate::detect::Source::Model,
                    ));
                }
            }
            found
        })
        .collect();
    let stats = doc.deidentify(&texts, &spans, &key(), o);
    (doc, stats)
}

fn patient() -> Value {
    json!({
        "resourceType": "Patient",
        "id": "pat-1",
        "text": {"status": "generated", "div": "<div xmlns=\"http://www.w3.org/1999/xhtml\"><p>Peter <b>Chalmers</b>, MRN 4471-2290, seen 2012-06-03</p></div>"},
        "identifier": [{"use": "usual", "system": "urn:oid:1.2.36.146.595.217.0.1", "value": "4471-2290"}],
        "name": [{"use": "official", "family": "Chalmers", "given": ["Peter", "James"], "text": "Peter James Chalmers"}],
        "telecom": [{"system": "phone", "value": "(03) 5555 6473", "use": "work"}, {"system": "email", "value": "peter@example.org"}],
        "gender": "male",
        "birthDate": "1974-12-25",
        "address": [{"use": "home", "line": ["534 Erewhon St"], "city": "PleasantVille", "district": "Rainbow", "state": "VT", "postalCode": "05401", "country": "US"}],
        "photo": [{"contentType": "image/jpeg", "data": "/9j/4AAQSkZJRg=="}],
        "contact": [{"name": {"family": "du Marché", "given": ["Bénédicte"]}, "telecom": [{"system": "phone", "value": "+33 (237) 998327"}]}]
    })
}

/// Every string in `v`, recursively.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|c| strings(c, out)),
        Value::Object(m) => m.values().for_each(|c| strings(c, out)),
        _ => {}
    }
}

fn leaks(v: &Value, phi: &[&str]) -> Vec<String> {
    let mut all = Vec::new();
    strings(v, &mut all);
    phi.iter()
        .filter(|p| all.iter().any(|s| s.contains(*p)))
        .map(|p| (*p).to_owned())
        .collect()
}

const PATIENT_PHI: &[&str] = &[
    "pat-1",
    "Chalmers",
    "Peter",
    "James",
    "4471-2290",
    "5555 6473",
    "peter@example.org",
    "1974-12",
    "534 Erewhon",
    "PleasantVille",
    "Rainbow",
    "05401",
    "/9j/",
    "du Marché",
    "Bénédicte",
    "998327",
    "2012-06-03",
];

#[test]
fn safe_harbor_leaves_no_phi_in_a_patient_and_keeps_its_shape() {
    let (doc, stats) = run(
        &patient().to_string(),
        Format::Json,
        &["Peter", "Chalmers"],
        &opts(Profile::safe_harbor()),
    );
    let out = &doc.values()[0];
    assert_eq!(leaks(out, PATIENT_PHI), Vec::<String>::new(), "{out}");
    assert_eq!(out["resourceType"], "Patient");
    assert_eq!(out["gender"], "male");
    assert_eq!(out["birthDate"], "1974");
    assert_eq!(out["address"][0]["state"], "VT");
    assert_eq!(out["address"][0]["postalCode"], "054");
    assert_eq!(out["address"][0]["country"], "US");
    assert_eq!(
        out["identifier"][0]["system"],
        "urn:oid:1.2.36.146.595.217.0.1"
    );
    assert_eq!(out["telecom"][0]["system"], "phone");
    assert!(out.get("photo").is_none());
    let div = out["text"]["div"].as_str().unwrap_or("");
    assert!(
        div.starts_with("<div xmlns=\"http://www.w3.org/1999/xhtml\"><p>")
            && div.ends_with("</p></div>"),
        "{div}"
    );
    assert_eq!(stats.patients, 1);
    assert!(stats.text_entities >= 3, "{stats:?}");
}

#[test]
fn a_birth_date_that_reveals_an_age_over_89_is_removed() {
    let mut p = patient();
    p["birthDate"] = json!("1931-02-03");
    let (doc, _) = run(
        &p.to_string(),
        Format::Json,
        &[],
        &opts(Profile::safe_harbor()),
    );
    assert!(doc.values()[0].get("birthDate").is_none());
}

fn bundle() -> Value {
    let note =
        crate::fhir::walk::encode_text("Discharge note for Peter Chalmers, seen 2012-06-03.");
    json!({
        "resourceType": "Bundle",
        "type": "transaction",
        "entry": [
            {"fullUrl": "urn:uuid:8a4e2a4c-67b5-4b0d-a5d4-2f1e3c9d0a11", "resource": patient(), "request": {"method": "POST", "url": "Patient"}},
            {"fullUrl": "urn:uuid:0c3151bd-1cbf-4d64-b04d-cd9187a4c6e0", "resource": {
                "resourceType": "Encounter", "id": "enc-1", "status": "finished",
                "class": {"system": "http://terminology.hl7.org/CodeSystem/v3-ActCode", "code": "IMP"},
                "subject": {"reference": "urn:uuid:8a4e2a4c-67b5-4b0d-a5d4-2f1e3c9d0a11", "display": "Peter Chalmers"},
                "period": {"start": "2012-06-01T10:00:00Z", "end": "2012-06-03T16:30:00Z"}
            }, "request": {"method": "POST", "url": "Encounter"}},
            {"fullUrl": "urn:uuid:5b0d3e38-0f25-4e7b-9c3a-4a1a3c1e2b77", "resource": {
                "resourceType": "Observation", "id": "obs-1", "status": "final",
                "code": {"coding": [{"system": "http://loinc.org", "code": "8867-4", "display": "Heart rate"}], "text": "Heart rate"},
                "subject": {"reference": "urn:uuid:8a4e2a4c-67b5-4b0d-a5d4-2f1e3c9d0a11"},
                "encounter": {"reference": "urn:uuid:0c3151bd-1cbf-4d64-b04d-cd9187a4c6e0"},
                "effectiveDateTime": "2012-06-02T08:15:00Z",
                "valueQuantity": {"value": 72, "unit": "beats/minute", "system": "http://unitsofmeasure.org", "code": "/min"},
                "note": [{"text": "Measured by Peter's wife at 534 Erewhon St."}]
            }, "request": {"method": "POST", "url": "Observation"}},
            {"fullUrl": "urn:uuid:1d7a4b9e-3f0c-4b8e-9a57-0e6b3b1f9c22", "resource": {
                "resourceType": "DocumentReference", "id": "doc-1", "status": "current",
                "subject": {"reference": "urn:uuid:8a4e2a4c-67b5-4b0d-a5d4-2f1e3c9d0a11"},
                "date": "2012-06-03T17:00:00Z",
                "content": [{"attachment": {"contentType": "text/plain", "data": note, "url": "http://example.org/docs/chalmers.txt"}}]
            }, "request": {"method": "POST", "url": "DocumentReference"}}
        ]
    })
}

fn days_between(a: &str, b: &str) -> i64 {
    let d = |s: &str| chrono::NaiveDate::parse_from_str(&s[..10], "%Y-%m-%d").expect("date");
    (d(b) - d(a)).num_days()
}

#[test]
fn a_bundle_keeps_references_resolving_and_intervals_whole() {
    let (doc, _) = run(
        &bundle().to_string(),
        Format::Json,
        &["Peter", "Chalmers"],
        &opts(Profile::safe_harbor()),
    );
    let out = &doc.values()[0];
    let mut phi = PATIENT_PHI.to_vec();
    phi.extend([
        "8a4e2a4c",
        "enc-1",
        "obs-1",
        "doc-1",
        "chalmers.txt",
        "2012-06-01",
        "2012-06-02",
    ]);
    assert_eq!(leaks(out, &phi), Vec::<String>::new(), "{out}");
    let entries = out["entry"].as_array().expect("entries");
    let patient_url = entries[0]["fullUrl"].as_str().expect("fullUrl");
    for e in &entries[1..] {
        assert_eq!(e["resource"]["subject"]["reference"], patient_url);
    }
    assert_eq!(
        entries[2]["resource"]["encounter"]["reference"],
        entries[1]["fullUrl"]
    );
    let enc = &entries[1]["resource"]["period"];
    let obs = entries[2]["resource"]["effectiveDateTime"]
        .as_str()
        .expect("effective");
    assert_eq!(days_between(enc["start"].as_str().unwrap_or(""), obs), 1);
    assert_eq!(days_between(obs, enc["end"].as_str().unwrap_or("")), 1);
    assert!(enc["start"].as_str().unwrap_or("").ends_with("T10:00:00Z"));
    // The coded parts are kept.
    assert_eq!(
        entries[2]["resource"]["code"]["coding"][0]["code"],
        "8867-4"
    );
    assert_eq!(entries[2]["resource"]["valueQuantity"]["value"], 72);
    // The note in the attachment is text, de-identified and still base64.
    let data = entries[3]["resource"]["content"][0]["attachment"]["data"]
        .as_str()
        .expect("data");
    let text = crate::fhir::walk::decode_text(data).expect("utf-8");
    assert!(
        text.starts_with("Discharge note for ") && !text.contains("Chalmers"),
        "{text}"
    );
}

#[test]
fn pseudonyms_agree_between_structured_name_and_free_text() {
    let (doc, _) = run(
        &bundle().to_string(),
        Format::Json,
        &["Chalmers"],
        &opts(Profile::pseudonymize()),
    );
    let out = &doc.values()[0];
    let family = out["entry"][0]["resource"]["name"][0]["family"]
        .as_str()
        .expect("a surrogate family name");
    assert_ne!(family, "Chalmers");
    let display = out["entry"][1]["resource"]["subject"]["display"]
        .as_str()
        .unwrap_or("");
    assert!(display.contains(family), "{display} / {family}");
}

#[test]
fn ndjson_comes_back_one_resource_per_line() {
    let mut obs = bundle()["entry"][2]["resource"].clone();
    obs["subject"]["reference"] = json!("Patient/pat-1");
    let body = format!("{}\n\n{}\n", patient(), obs);
    let (doc, stats) = run(
        &body,
        Format::Ndjson,
        &["Peter"],
        &opts(Profile::safe_harbor()),
    );
    let text = doc.write();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    let p: Value = serde_json::from_str(lines[0]).expect("line 1");
    let o: Value = serde_json::from_str(lines[1]).expect("line 2");
    assert_eq!(
        o["subject"]["reference"],
        format!("Patient/{}", p["id"].as_str().unwrap_or(""))
    );
    assert_eq!(stats.resources, 2);
    assert_eq!(stats.patients, 1);
}

#[test]
fn a_subject_gives_the_same_ids_and_offsets_in_every_request() {
    let mut o = opts(Profile::safe_harbor());
    o.subject = Some(key().subject("study-17"));
    let (a, _) = run(&bundle().to_string(), Format::Json, &[], &o);
    let (b, _) = run(&bundle().to_string(), Format::Json, &[], &o);
    assert_eq!(
        a.values()[0]["entry"][0]["fullUrl"],
        b.values()[0]["entry"][0]["fullUrl"]
    );
    assert_eq!(
        a.values()[0]["entry"][2]["resource"]["effectiveDateTime"],
        b.values()[0]["entry"][2]["resource"]["effectiveDateTime"]
    );
}

/// A bulk export's files, one per resource type, de-identified one at a time with the run's
/// id key: references resolve across them, and a patient's offset and surrogates are the
/// same in both. Before, each document drew its own key, so `Observation.subject` pointed to
/// an id no patient of the other file had; and a given name in `Patient.name` was drawn
/// with no gender cue while the note's was drawn with the name's, so the two differed
/// (`Jin-ho` against `Obinna`) where no memo of one document joined them.
#[test]
fn documents_with_one_id_key_are_one_export() {
    let patients = [
        json!({"resourceType": "Patient", "id": "pat-1", "birthDate": "1974-12-25",
            "name": [{"family": "Chalmers", "given": ["Peter"]}]}),
        json!({"resourceType": "Patient", "id": "pat-2", "birthDate": "1981-03-14",
            "name": [{"family": "Quibblesworth", "given": ["Arthur"]}]}),
    ];
    let observations = [
        json!({"resourceType": "Observation", "id": "obs-1", "status": "final",
            "code": {"text": "Heart rate"}, "subject": {"reference": "Patient/pat-1"},
            "effectiveDateTime": "2012-06-02T08:15:00Z",
            "note": [{"text": "Seen with Mr. Peter Chalmers today."}]}),
        json!({"resourceType": "Observation", "id": "obs-2", "status": "final",
            "code": {"text": "Heart rate"}, "subject": {"reference": "Patient/pat-2"},
            "effectiveDateTime": "2015-01-20",
            "note": [{"text": "Seen with Mr. Arthur Quibblesworth today."}]}),
    ];
    let ndjson = |vs: &[Value]| vs.iter().map(|v| format!("{v}\n")).collect::<String>();
    let o = Options {
        id_key: Some(IdKey::random()),
        ..opts(Profile::pseudonymize())
    };
    let (p, _) = run(&ndjson(&patients), Format::Ndjson, &[], &o);
    let (obs, _) = run(&ndjson(&observations), Format::Ndjson, &[], &o);
    for i in 0..2 {
        let (pin, pout) = (&patients[i], &p.values()[i]);
        let (oin, oout) = (&observations[i], &obs.values()[i]);
        let id = pout["id"].as_str().expect("id");
        assert_eq!(oout["subject"]["reference"], format!("Patient/{id}"));
        // The patient's offset, read from each file against its input.
        let moved =
            |a: &Value, b: &Value| days_between(a.as_str().unwrap_or(""), b.as_str().unwrap_or(""));
        assert_eq!(
            moved(&pin["birthDate"], &pout["birthDate"]),
            moved(&oin["effectiveDateTime"], &oout["effectiveDateTime"]),
        );
        // The surrogate name of Patient.ndjson is the one the note got.
        let family = pout["name"][0]["family"].as_str().expect("family");
        let given = pout["name"][0]["given"][0].as_str().expect("given");
        let note = oout["note"][0]["text"].as_str().expect("note");
        assert_eq!(note, format!("Seen with Mr. {given} {family} today."));
    }
    // A resource of no patient (a Practitioner) gets the same offset and surrogates in
    // every document of the export.
    let practitioner = |id: &str| {
        json!({"resourceType": "Practitioner", "id": id, "birthDate": "1960-02-03",
            "name": [{"family": "Hawthorne-Pike", "given": ["Imogen"]}]})
    };
    let (a, _) = run(&ndjson(&[practitioner("pr-1")]), Format::Ndjson, &[], &o);
    let (b, _) = run(&ndjson(&[practitioner("pr-2")]), Format::Ndjson, &[], &o);
    assert_eq!(a.values()[0]["name"], b.values()[0]["name"]);
    assert_eq!(a.values()[0]["birthDate"], b.values()[0]["birthDate"]);
    // Without a key each document draws its own: the reference leads nowhere.
    let alone = opts(Profile::pseudonymize());
    let (p2, _) = run(&ndjson(&patients), Format::Ndjson, &[], &alone);
    let (o2, _) = run(&ndjson(&observations), Format::Ndjson, &[], &alone);
    let id = p2.values()[0]["id"].as_str().expect("id");
    assert_ne!(
        o2.values()[0]["subject"]["reference"],
        format!("Patient/{id}")
    );
}

#[test]
fn bad_bodies_name_the_line_and_the_rule() {
    let l = Limits::default();
    assert_eq!(
        Document::parse("{", Format::Json, l).err(),
        Some(FhirError::NotJson { line: 1, column: 1 })
    );
    // See: the outside tester's finding 16 (a trailing comma on line 4 reported as line 1).
    let pretty = "{\n \"resourceType\": \"Patient\",\n \"id\": \"x\",\n \"name\": [{\"family\": \"Roe\",]\n}";
    let e = Document::parse(pretty, Format::Json, l).err();
    assert_eq!(
        e,
        Some(FhirError::NotJson {
            line: 4,
            column: 28
        })
    );
    assert!(!e.map(|e| e.to_string()).unwrap_or_default().contains("Roe"));
    assert_eq!(
        Document::parse(
            "{\"resourceType\":\"Patient\"}\n{\"resourceType\": x}",
            Format::Ndjson,
            l
        )
        .err(),
        Some(FhirError::NotJson {
            line: 2,
            column: 18
        })
    );
    let very_deep = format!(
        "{{\"resourceType\":\"Basic\",\"x\":{}1{}}}",
        "[".repeat(200),
        "]".repeat(200)
    );
    assert_eq!(
        Document::parse(&very_deep, Format::Json, l).err(),
        Some(FhirError::TooDeep { max: 64 })
    );
    assert_eq!(
        Document::parse("{\"resourceType\":\"Patient\"}\n[1]", Format::Ndjson, l).err(),
        Some(FhirError::NotAResource { line: 2 })
    );
    assert_eq!(
        Document::parse("\n\n", Format::Ndjson, l).err(),
        Some(FhirError::Empty)
    );
    let deep = format!(
        "{{\"resourceType\":\"Basic\",\"x\":{}1{}}}",
        "[".repeat(80),
        "]".repeat(80)
    );
    assert_eq!(
        Document::parse(&deep, Format::Json, l).err(),
        Some(FhirError::TooDeep { max: 64 })
    );
    let small = Limits {
        max_resources: 1,
        max_depth: 64,
    };
    assert_eq!(
        Document::parse(&bundle().to_string(), Format::Json, small).err(),
        Some(FhirError::TooManyResources { max: 1 })
    );
    for e in [
        FhirError::NotJson { line: 3, column: 4 },
        FhirError::TooDeep { max: 64 },
    ] {
        assert!(!e.to_string().contains('{'));
    }
}

#[test]
fn extensions_of_structured_types_and_message_payloads_are_handled() {
    let p = json!({
        "resourceType": "Patient",
        "id": "p9",
        "extension": [
            {"url": "http://hl7.org/fhir/StructureDefinition/patient-birthPlace",
             "valueAddress": {"city": "Springfield", "state": "IL", "country": "US"}},
            {"url": "http://hl7.org/fhir/StructureDefinition/patient-mothersMaidenName",
             "valueHumanName": {"family": "Okafor"}}
        ]
    });
    let c = json!({
        "resourceType": "Communication", "id": "c1", "status": "completed",
        "subject": {"reference": "Patient/p9"},
        "payload": [{"contentString": "Please call Dr. Reyes at 617-555-0142."}]
    });
    let body = format!("{p}\n{c}\n");
    let (doc, _) = run(&body, Format::Ndjson, &[], &opts(Profile::safe_harbor()));
    let out = Value::Array(doc.values().to_vec());
    assert_eq!(
        leaks(&out, &["Springfield", "Okafor", "Reyes", "617-555-0142"]),
        Vec::<String>::new(),
        "{out}"
    );
    assert_eq!(
        doc.values()[0]["extension"][0]["valueAddress"]["state"],
        "IL"
    );
}

/// Identifiers that are not `Identifier` objects under the key `identifier`: an
/// `Identifier` named for what it identifies, identifier strings of R4 resources, and PHI
/// in the primitive values of extensions.
fn identifiers_elsewhere() -> Value {
    serde_json::from_str(include_str!(
        "../../../tests/fixtures/fhir/identifiers-elsewhere.json"
    ))
    .expect("the fixture is JSON")
}

/// The identifying values in that fixture, one a line.
const IDENTIFIERS_ELSEWHERE: &str =
    include_str!("../../../tests/fixtures/fhir/identifiers-elsewhere.phi.txt");

#[test]
fn identifiers_outside_identifier_elements_are_removed_or_hashed() {
    let body = identifiers_elsewhere().to_string();
    let (doc, _) = run(&body, Format::Json, &[], &opts(Profile::safe_harbor()));
    let out = Value::Array(doc.values().to_vec());
    assert_eq!(
        leaks(&out, &IDENTIFIERS_ELSEWHERE.lines().collect::<Vec<_>>()),
        Vec::<String>::new(),
        "{out}"
    );
    let entry = |i: usize| &doc.values()[0]["entry"][i]["resource"];
    // A code that is no PHI stays; the element keeps its place and its system.
    assert_eq!(entry(0)["extension"][2]["valueCode"], "F", "{out}");
    assert_eq!(
        entry(2)["accessionIdentifier"]["system"],
        "urn:acc",
        "{out}"
    );
    assert_eq!(entry(1)["status"], "active", "{out}");

    // Pseudonymized: the same member id hashes to the same value in every run.
    let pseudonymized = || {
        let (doc, _) = run(&body, Format::Json, &[], &opts(Profile::pseudonymize()));
        doc.values()[0]["entry"][1]["resource"]["subscriberId"].clone()
    };
    let first = pseudonymized();
    let out = first.as_str().unwrap_or_default().to_owned();
    assert!(!out.is_empty() && !out.contains("XQZ99887766"), "{out}");
    assert_eq!(pseudonymized(), first);
}

#[test]
fn actions_by_path_come_before_everything_else() {
    let mut o = opts(Profile::safe_harbor());
    o.profile = Profile::safe_harbor()
        .with_actions(&[
            "Patient.gender=redact",
            "*.note.text=keep",
            "Patient.identifier.value=hash",
            "Encounter.period=keep",
        ])
        .expect("valid");
    let (doc, _) = run(&bundle().to_string(), Format::Json, &["Peter"], &o);
    let e = &doc.values()[0]["entry"];
    assert!(e[0]["resource"].get("gender").is_none());
    assert!(e[0]["resource"]["identifier"][0]["value"]
        .as_str()
        .unwrap_or("")
        .starts_with("hash_"));
    assert_eq!(
        e[2]["resource"]["note"][0]["text"],
        "Measured by Peter's wife at 534 Erewhon St."
    );
    assert_eq!(e[1]["resource"]["period"]["start"], "2012-06-01T10:00:00Z");
}

#[test]
fn a_photo_with_a_text_type_does_not_shift_the_texts_after_it() {
    let p = json!({
        "resourceType": "Patient",
        "id": "p3",
        "photo": [{"contentType": "text/plain", "data": crate::fhir::walk::encode_text("Photo of Ann")}],
        "text": {"status": "generated", "div": "<div>Seen by Dr. Reyes</div>"}
    });
    let doc = Document::parse(&p.to_string(), Format::Json, Limits::default()).expect("parses");
    let texts = doc.texts(&Profile::safe_harbor());
    assert_eq!(texts.len(), 1, "{texts:?}");
    let (out, _) = run(
        &p.to_string(),
        Format::Json,
        &[],
        &opts(Profile::safe_harbor()),
    );
    assert_eq!(
        leaks(&out.values()[0], &["Reyes", "Ann"]),
        Vec::<String>::new()
    );
}

#[test]
fn a_text_that_is_not_the_one_listed_is_removed_not_trusted() {
    let mut doc =
        Document::parse(&bundle().to_string(), Format::Json, Limits::default()).expect("parses");
    let listed = doc.texts(&Profile::safe_harbor());
    // Entities found in other texts than these: each text is checked and dropped.
    let wrong: Vec<Text> = listed
        .iter()
        .map(|t| Text {
            text: format!("{} ", t.text),
            label: t.label,
        })
        .collect();
    let none = vec![Vec::new(); wrong.len()];
    doc.deidentify(&wrong, &none, &key(), &opts(Profile::safe_harbor()));
    let out = &doc.values()[0];
    assert_eq!(
        leaks(out, &["Peter", "Chalmers", "Erewhon"]),
        Vec::<String>::new(),
        "{out}"
    );
    assert_eq!(
        out["entry"][0]["resource"]["text"]["div"],
        "<div xmlns=\"http://www.w3.org/1999/xhtml\">[redacted]</div>"
    );
}

/// Strings under keys that R4 does not define (an export's local fields): before, each
/// came out as it went in; now the engine reads them like a note. Codes, numbers and
/// booleans stay.
#[test]
fn strings_under_keys_that_are_no_r4_element_are_read_as_free_text() {
    let doc = json!({
        "resourceType": "Observation", "id": "o1", "status": "final",
        "code": {"coding": [{"system": "http://loinc.org", "code": "8867-4", "display": "Heart rate"}]},
        "subject": {"reference": "Patient/p1"},
        "nickname": "Jimmy Chalmers",
        "localNotes": ["called his wife at 617-555-0142 on 2019-03-14"],
        "localContact": {"callback": "617-555-0142", "attempts": 3, "reached": true},
        "localCode": "WARD-7B"
    });
    let (out, _) = run(
        &doc.to_string(),
        Format::Json,
        &["Jimmy", "Chalmers"],
        &opts(Profile::safe_harbor()),
    );
    let out = &out.values()[0];
    assert_eq!(
        leaks(out, &["Jimmy", "Chalmers", "617-555-0142", "2019-03-14"]),
        Vec::<String>::new(),
        "{out}"
    );
    let notes = out["localNotes"][0].as_str().unwrap_or_default();
    assert!(notes.starts_with("called his wife at "), "{out}");
    assert_eq!(out["status"], "final");
    assert_eq!(out["code"]["coding"][0]["code"], "8867-4");
    assert_eq!(out["code"]["coding"][0]["display"], "Heart rate");
    assert_eq!(out["localContact"]["attempts"], 3);
    assert_eq!(out["localContact"]["reached"], true);
    assert_eq!(out["localCode"], "WARD-7B");
}

#[test]
fn the_r4_element_list_knows_elements_and_their_primitive_siblings() {
    for known in [
        "resourceType",
        "div",
        "valueString",
        "class",
        "_birthDate",
        "_given",
    ] {
        assert!(walk::is_r4_element(known), "{known}");
    }
    for unknown in ["nickname", "localNotes", "_nickname", "fhir_comments", ""] {
        assert!(!walk::is_r4_element(unknown), "{unknown}");
    }
}
