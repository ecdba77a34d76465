//! R4 elements the walker once missed: a Bundle's URLs, contained resources, a name as one
//! string, addresses and ages under other keys, data of no type, coordinates.

use serde_json::{json, Value};

use super::{leaks, opts, run};
use crate::fhir::{Format, Profile};

fn safe_harbor(doc: &Value) -> Value {
    let (out, _) = run(
        &doc.to_string(),
        Format::Json,
        &[],
        &opts(Profile::safe_harbor()),
    );
    out.values()[0].clone()
}

#[test]
fn bundle_urls_lose_their_queries_and_follow_the_new_ids() {
    let doc = json!({
        "resourceType": "Bundle", "type": "transaction",
        "meta": {"source": "http://hospital.example.org/Quibblesworth"},
        "link": [{"relation": "self", "url": "http://h.example.org/fhir/Patient?name=Quibblesworth&birthdate=1930-02-02"}],
        "entry": [
            {"fullUrl": "http://h.example.org/fhir/Patient/p-42",
             "resource": {"resourceType": "Patient", "id": "p-42", "meta": {"source": "#Quibblesworth"}},
             "request": {"method": "PUT", "url": "Patient/p-42"},
             "response": {"status": "200", "location": "Patient/p-42/_history/1"}},
            {"resource": {"resourceType": "Observation", "id": "o1", "status": "final", "code": {"text": "x"}},
             "request": {"method": "POST", "url": "Observation", "ifNoneExist": "identifier=http://h.example.org/mrn|4455667"}},
            {"request": {"method": "GET", "url": "Patient?name=Quibblesworth&birthdate=1930-02-02"}}
        ]
    });
    let out = safe_harbor(&doc);
    assert_eq!(
        leaks(&out, &["Quibblesworth", "1930-02-02", "4455667", "p-42"]),
        Vec::<String>::new(),
        "{out}"
    );
    let e = &out["entry"];
    let id = e[0]["resource"]["id"].as_str().unwrap_or_default();
    assert_eq!(e[0]["request"]["url"], format!("Patient/{id}"));
    assert_eq!(e[0]["response"]["location"], format!("Patient/{id}"));
    assert_eq!(e[1]["request"]["url"], "Observation");
    assert_eq!(e[2]["request"]["url"], "Patient");
    assert_eq!(out["link"][0]["url"], "http://h.example.org/fhir/Patient");
    assert!(out.get("meta").is_none(), "{out}");
}

#[test]
fn a_contained_resource_keeps_its_id_and_its_references_resolve() {
    let doc = json!({
        "resourceType": "Observation", "id": "o1", "status": "final", "code": {"text": "glucose"},
        "contained": [{"resourceType": "Practitioner", "id": "pr1", "name": [{"family": "Plumbottom"}]}],
        "subject": {"reference": "Patient/p1"},
        "performer": [{"reference": "#pr1"}]
    });
    let out = safe_harbor(&doc);
    assert_eq!(out["performer"][0]["reference"], "#pr1");
    assert_eq!(out["contained"][0]["id"], "pr1");
    assert_ne!(out["id"], "o1");
    assert_eq!(leaks(&out, &["Plumbottom"]), Vec::<String>::new());
}

#[test]
fn a_relatives_name_as_one_string_is_a_name() {
    let doc = json!({
        "resourceType": "FamilyMemberHistory", "id": "f1", "status": "completed",
        "patient": {"reference": "Patient/p1"}, "relationship": {"text": "mother"},
        "name": "Henrietta Quibblesworth"
    });
    let out = safe_harbor(&doc);
    assert!(out.get("name").is_none(), "{out}");
    let (p, _) = run(
        &doc.to_string(),
        Format::Json,
        &[],
        &opts(Profile::pseudonymize()),
    );
    let name = p.values()[0]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        !name.is_empty() && !name.contains("Quibblesworth"),
        "{name}"
    );
}

#[test]
fn an_address_under_any_key_is_an_address() {
    let doc = json!({
        "resourceType": "Claim", "id": "c", "status": "active",
        "patient": {"reference": "Patient/1"},
        "accident": {"date": "2020-12-30", "locationAddress": {
            "line": ["12 Quibblesworth Lane"], "city": "Springfield", "postalCode": "62704"}}
    });
    let out = safe_harbor(&doc);
    assert_eq!(
        out["accident"]["locationAddress"],
        json!({"postalCode": "627"}),
        "{out}"
    );
}

#[test]
fn structured_ages_over_89_are_aggregated() {
    let doc = json!({
        "resourceType": "Bundle", "type": "collection", "entry": [
            {"resource": {"resourceType": "Condition", "id": "c1", "subject": {"reference": "Patient/p1"},
                "onsetAge": {"value": 93, "unit": "years", "system": "http://unitsofmeasure.org", "code": "a"},
                "abatementAge": {"value": 45, "unit": "a"}}},
            {"resource": {"resourceType": "Observation", "id": "o1", "status": "final", "code": {"text": "age"},
                "valueQuantity": {"value": 94, "unit": "yr", "system": "http://unitsofmeasure.org", "code": "a"}}},
            {"resource": {"resourceType": "Observation", "id": "o2", "status": "final", "code": {"text": "weight"},
                "valueQuantity": {"value": 95, "unit": "kg", "code": "kg"}}},
            {"resource": {"resourceType": "FamilyMemberHistory", "id": "f1", "status": "completed",
                "patient": {"reference": "Patient/p1"}, "relationship": {"text": "mother"},
                "ageAge": {"value": 101, "unit": "a"}, "deceasedAge": {"value": 1236, "code": "mo"},
                "ageRange": {"low": {"value": 92, "unit": "a"}, "high": {"value": 96, "unit": "a"}}}}
        ]
    });
    let out = safe_harbor(&doc);
    let r = |i: usize| &out["entry"][i]["resource"];
    let cap = json!({"value": 90, "unit": "years", "system": "http://unitsofmeasure.org", "code": "a", "comparator": ">="});
    assert_eq!(r(0)["onsetAge"], cap);
    assert_eq!(r(0)["abatementAge"], json!({"value": 45, "unit": "a"}));
    assert_eq!(r(1)["valueQuantity"]["value"], 90);
    assert_eq!(r(1)["valueQuantity"]["comparator"], ">=");
    assert_eq!(r(2)["valueQuantity"]["value"], 95);
    assert_eq!(
        r(3)["ageAge"],
        json!({"value": 90, "unit": "a", "comparator": ">="})
    );
    assert_eq!(r(3)["deceasedAge"]["value"], 1080);
    assert_eq!(r(3)["ageRange"], json!({"low": {"value": 90, "unit": "a"}}));
}

#[test]
fn data_of_no_declared_type_is_removed_not_passed_through() {
    let data = crate::fhir::walk::encode_text("Arthur Quibblesworth, MRN 4455667");
    let doc = json!({
        "resourceType": "DocumentReference", "id": "d1", "status": "current",
        "content": [{"attachment": {"data": data, "url": "http://h.example.org/q.txt", "title": "note"}}]
    });
    let out = safe_harbor(&doc);
    assert_eq!(
        out["content"][0]["attachment"],
        json!({"title": "note"}),
        "{out}"
    );
    // SampledData's data is numbers, kept.
    let obs = json!({"resourceType": "Observation", "id": "o", "status": "final", "code": {"text": "ecg"},
        "valueSampledData": {"origin": {"value": 0}, "period": 10, "dimensions": 1, "data": "1 2 3"}});
    assert_eq!(safe_harbor(&obs)["valueSampledData"]["data"], "1 2 3");
}

#[test]
fn coordinates_go_with_the_address_they_locate() {
    let doc = json!({
        "resourceType": "Location", "id": "home-1", "name": "Patient home",
        "address": {"line": ["12 Elm Street"], "city": "Springfield", "postalCode": "62704"},
        "position": {"longitude": -89.6501, "latitude": 39.7817}
    });
    let out = safe_harbor(&doc);
    assert!(out.get("position").is_none(), "{out}");
    let kept = Profile::safe_harbor()
        .with_actions(&["city=keep"])
        .expect("valid");
    let (k, _) = run(&doc.to_string(), Format::Json, &[], &opts(kept));
    assert_eq!(k.values()[0]["position"]["latitude"], 39.7817);
}

#[test]
fn a_period_stays_in_order_when_only_one_end_can_move() {
    // A year-only start has no day to move; its end moves back across the new year.
    let enc = json!({"resourceType": "Encounter", "id": "e", "status": "finished",
        "class": {"code": "IMP"}, "subject": {"reference": "Patient/p"},
        "period": {"start": "2020", "end": "2020-01-05T10:00:00Z"}});
    let o = super::Options {
        date_shift_days: Some(-10),
        ..opts(Profile::safe_harbor())
    };
    let (out, _) = run(&enc.to_string(), Format::Json, &[], &o);
    let period = &out.values()[0]["period"];
    assert_eq!(period["end"], "2019-12-26T10:00:00Z", "{period}");
    assert_eq!(period["start"], "2019", "{period}");
}

#[test]
fn a_relatives_birth_date_is_a_birth_date() {
    let fmh = json!({"resourceType": "FamilyMemberHistory", "id": "f", "status": "completed",
        "patient": {"reference": "Patient/p"}, "relationship": {"text": "mother"},
        "bornDate": "1931-04-02"});
    // Over 89 at the reference year (2026): removed, as Patient.birthDate is.
    assert!(safe_harbor(&fmh).get("bornDate").is_none());
    let young = json!({"resourceType": "FamilyMemberHistory", "id": "f", "status": "completed",
        "patient": {"reference": "Patient/p"}, "relationship": {"text": "mother"},
        "bornDate": "1961-04-02"});
    assert_eq!(safe_harbor(&young)["bornDate"], "1961");
}

#[test]
fn dates_in_notes_follow_the_profiles_date_actions() {
    let obs = |text: &str| {
        json!({"resourceType": "Observation", "id": "o", "status": "final",
            "code": {"text": "note"}, "effectiveDateTime": "2021-03-04",
            "note": [{"text": text}]})
    };
    let note = |profile: &Profile, text: &str| {
        let o = super::Options {
            date_shift_days: Some(10),
            ..opts(profile.clone())
        };
        let (out, _) = run(&obs(text).to_string(), Format::Json, &[], &o);
        let v = out.values()[0].clone();
        (
            v["note"][0]["text"].as_str().unwrap_or_default().to_owned(),
            v,
        )
    };
    // dates=keep keeps the note's dates as it keeps effectiveDateTime.
    let keep = Profile::safe_harbor()
        .with_actions(&["dates=keep"])
        .expect("valid");
    let (text, v) = note(&keep, "Seen on 03/04/2021 for follow-up.");
    assert_eq!(v["effectiveDateTime"], "2021-03-04");
    assert!(text.contains("03/04/2021"), "{text}");
    // By default a note's date moves with the elements; a birth date becomes its year, as
    // birthDate does, and one that tells an age over 89 is masked.
    let (text, v) = note(
        &Profile::safe_harbor(),
        "Seen on 03/04/2021. DOB: 05/06/1970.",
    );
    assert_eq!(v["effectiveDateTime"], "2021-03-14");
    assert!(text.contains("03/14/2021"), "{text}");
    assert!(
        text.contains("1970") && !text.contains("05/06/1970") && !text.contains("05/16/1970"),
        "{text}"
    );
    let (text, _) = note(&Profile::safe_harbor(), "DOB: 05/06/1931.");
    assert!(!text.contains("1931") && !text.contains("1932"), "{text}");
    // Pseudonymize shifts birth dates too, but not one that tells an age over 89.
    let (text, _) = note(
        &Profile::pseudonymize(),
        "DOB: 05/06/1970. Mother DOB: 05/06/1931.",
    );
    assert!(text.contains("05/16/1970"), "{text}");
    assert!(!text.contains("1931"), "{text}");
}

#[test]
fn a_name_written_as_one_string_is_read_as_text() {
    let loc = json!({"resourceType": "Location", "id": "l", "status": "active",
        "name": "Home of Quibblesworth, tel 617-555-0143", "alias": ["Quibblesworth residence"],
        "mode": "instance"});
    let (out, _) = run(
        &loc.to_string(),
        Format::Json,
        &["Quibblesworth"],
        &opts(Profile::safe_harbor()),
    );
    let out = out.values()[0].clone();
    assert!(
        leaks(&out, &["Quibblesworth", "555-0143"]).is_empty(),
        "{out}"
    );
    assert_eq!(out["mode"], "instance");
    assert!(
        out["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("Home of")),
        "{out}"
    );
}

#[test]
fn an_answered_age_over_89_is_capped() {
    let qr = json!({"resourceType": "QuestionnaireResponse", "id": "q", "status": "completed",
    "subject": {"reference": "Patient/p"},
    "item": [
        {"linkId": "1", "text": "What is your age?", "answer": [{"valueInteger": 93}]},
        {"linkId": "age-at-diagnosis", "answer": [{"valueDecimal": 91.5}]},
        {"linkId": "2", "text": "Age in months", "answer": [{"valueInteger": 100}]},
        {"linkId": "3", "text": "Number of pages read", "answer": [{"valueInteger": 120}]},
        {"linkId": "4", "text": "Age", "answer": [{"valueInteger": 45}]}
    ]});
    let out = safe_harbor(&qr);
    let answer = |i: usize| out["item"][i]["answer"][0].clone();
    assert_eq!(answer(0)["valueInteger"], 90, "{out}");
    assert_eq!(answer(1)["valueDecimal"], 90, "{out}");
    assert_eq!(answer(2)["valueInteger"], 100, "{out}");
    assert_eq!(answer(3)["valueInteger"], 120, "{out}");
    assert_eq!(answer(4)["valueInteger"], 45, "{out}");
}

/// The string forms of choice elements (`onsetString`, `performedString`,
/// `occurrenceString`, `bornString`, …) are free text, and a coverage's dependent number
/// and class value are health plan numbers. Before, all of them came out as they went in
/// (found by an outside FHIR user).
#[test]
fn string_forms_of_choice_elements_are_free_text() {
    let phi = "Eleanor Quixadale 617-555-0142 on 2019-03-01";
    let doc = json!({
        "resourceType": "Bundle", "type": "collection", "entry": [
            {"resource": {"resourceType": "Condition", "id": "c1",
                "subject": {"reference": "Patient/p1"},
                "onsetString": phi, "abatementString": "2005-06-14"}},
            {"resource": {"resourceType": "Procedure", "id": "pr1", "status": "completed",
                "subject": {"reference": "Patient/p1"}, "performedString": phi}},
            {"resource": {"resourceType": "Immunization", "id": "i1", "status": "completed",
                "patient": {"reference": "Patient/p1"}, "occurrenceString": phi,
                "vaccineCode": {"text": "flu"}, "doseNumberString": "2"}},
            {"resource": {"resourceType": "FamilyMemberHistory", "id": "f1",
                "status": "completed", "patient": {"reference": "Patient/p1"},
                "relationship": {"text": "father"}, "bornString": phi,
                "deceasedString": phi}},
            {"resource": {"resourceType": "Coverage", "id": "cv1", "status": "active",
                "beneficiary": {"reference": "Patient/p1"}, "payor": [{"display": "x"}],
                "dependent": "0044719", "class": [{"type": {"text": "group"},
                "value": "GRP-5512309"}]}}
        ]
    });
    let (out, _) = run(
        &doc.to_string(),
        Format::Json,
        &["Eleanor", "Quixadale"],
        &opts(Profile::safe_harbor()),
    );
    let out = &out.values()[0];
    assert_eq!(
        leaks(
            out,
            &[
                "Eleanor",
                "Quixadale",
                "617-555-0142",
                "2019-03-01",
                "2005-06-14",
                "0044719",
                "GRP-5512309"
            ]
        ),
        Vec::<String>::new(),
        "{out}"
    );
    assert_eq!(out["entry"][2]["resource"]["doseNumberString"], "2");
}

/// A resource that names no patient but points to a patient's resource (an observation
/// by its encounter, a provenance by its target) is that patient's: its dates move with
/// the encounter's. Before, in a document of two patients, each drew an offset of its own
/// (found by an outside FHIR user).
#[test]
fn resources_linked_to_a_patient_through_other_resources_share_its_offset() {
    let body = [
        json!({"resourceType": "Patient", "id": "p1"}),
        json!({"resourceType": "Patient", "id": "p2"}),
        json!({"resourceType": "Encounter", "id": "e1", "status": "finished",
            "class": {"code": "AMB"}, "subject": {"reference": "Patient/p1"},
            "period": {"start": "2021-03-04T09:00:00Z", "end": "2021-03-04T10:00:00Z"}}),
        json!({"resourceType": "Observation", "id": "o1", "status": "final",
            "code": {"text": "x"}, "encounter": {"reference": "Encounter/e1"},
            "effectiveDateTime": "2021-03-04T09:30:00Z"}),
        json!({"resourceType": "Provenance", "id": "v1",
            "target": [{"reference": "Observation/o1"}], "recorded": "2021-03-04T10:05:00Z",
            "agent": [{"who": {"display": "x"}}]}),
        json!({"resourceType": "Group", "id": "g1", "type": "person", "actual": true,
            "member": [{"entity": {"reference": "Patient/p1"}},
                       {"entity": {"reference": "Patient/p2"}}]}),
    ]
    .iter()
    .map(Value::to_string)
    .collect::<Vec<_>>()
    .join("\n");
    let (out, _) = run(&body, Format::Ndjson, &[], &opts(Profile::safe_harbor()));
    let v = out.values();
    let start = v[2]["period"]["start"].as_str().expect("start");
    let moved = super::days_between("2021-03-04", &start[..10]);
    assert_ne!(moved, 0);
    assert_eq!(
        v[3]["effectiveDateTime"],
        format!("{}T09:30:00Z", &start[..10])
    );
    assert_eq!(v[4]["recorded"], format!("{}T10:05:00Z", &start[..10]));
}

/// A transaction's conditional operations: a search reference to the entry a conditional
/// update writes points to that entry, the update is of the resource (a create when it has
/// no id), and a conditional delete goes whole. Before, the reference was removed (R4
/// requires `MedicationRequest.subject`), `PUT Patient` named no resource, and the delete
/// became `DELETE Observation`, every observation (found by an outside FHIR user).
#[test]
fn conditional_operations_keep_what_they_point_to_without_their_searches() {
    let doc = json!({"resourceType": "Bundle", "type": "transaction", "entry": [
        {"fullUrl": "urn:uuid:0a1b2c3d-0000-4000-8000-000000000001",
         "resource": {"resourceType": "Patient", "name": [{"family": "Quixadale"}]},
         "request": {"method": "PUT", "url": "Patient?identifier=http://h.example.org/mrn|88442211"}},
        {"fullUrl": "urn:uuid:0a1b2c3d-0000-4000-8000-000000000002",
         "resource": {"resourceType": "MedicationRequest", "status": "active", "intent": "order",
            "medicationCodeableConcept": {"text": "x"},
            "subject": {"reference": "Patient?identifier=http://h.example.org/mrn|88442211"}},
         "request": {"method": "POST", "url": "MedicationRequest"}},
        {"fullUrl": "urn:uuid:0a1b2c3d-0000-4000-8000-000000000003",
         "request": {"method": "DELETE", "url": "Observation?subject=Patient/p1&date=2021-03-04"}},
        {"fullUrl": "urn:uuid:0a1b2c3d-0000-4000-8000-000000000004",
         "resource": {"resourceType": "Encounter", "id": "e9", "status": "finished",
            "class": {"code": "AMB"},
            "subject": {"reference": "Patient?identifier=http://h.example.org/mrn|88442211"}},
         "request": {"method": "PUT", "url": "Encounter?identifier=http://h.example.org/enc|77"}},
        {"fullUrl": "urn:uuid:0a1b2c3d-0000-4000-8000-000000000005",
         "resource": {"resourceType": "Organization", "name": "x"},
         "request": {"method": "POST", "url": "Organization",
            "ifNoneExist": "identifier=http://h.example.org/org|5"}},
        {"fullUrl": "urn:uuid:0a1b2c3d-0000-4000-8000-000000000006",
         "resource": {"resourceType": "Location", "status": "active",
            "managingOrganization": {"reference": "Organization?identifier=http://h.example.org/org|5"}},
         "request": {"method": "POST", "url": "Location"}}
    ]});
    let out = safe_harbor(&doc);
    let e = out["entry"].as_array().expect("entries");
    assert_eq!(e.len(), 5, "the conditional delete is gone: {out}");
    let patient_url = e[0]["fullUrl"].as_str().expect("fullUrl");
    assert_eq!(e[0]["request"], json!({"method": "POST", "url": "Patient"}));
    assert_eq!(e[1]["resource"]["subject"]["reference"], patient_url);
    assert_eq!(e[2]["resource"]["subject"]["reference"], patient_url);
    let enc_id = e[2]["resource"]["id"].as_str().expect("id");
    assert_eq!(e[2]["request"]["url"], format!("Encounter/{enc_id}"));
    assert_eq!(e[2]["request"]["method"], "PUT");
    assert_eq!(
        e[4]["resource"]["managingOrganization"]["reference"],
        e[3]["fullUrl"]
    );
    assert_eq!(
        leaks(
            &out,
            &["88442211", "2021-03-04", "h.example.org", "Quixadale"]
        ),
        Vec::<String>::new(),
        "{out}"
    );
}
