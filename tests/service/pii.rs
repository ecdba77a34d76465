//! The OpenMed-compatible routes with the real rule recognizers: response shapes, offsets,
//! every method, streams.

use serde_json::{json, Value};

use crate::support::TestServer;

const NOTE: &str = "Zoë Zed (MRN: 88412345) was seen 03/14/2021. Call 617-555-0142 or zoe.zed@example.org. SSN 123-45-6789.";

fn py_slice(text: &str, start: usize, end: usize) -> String {
    text.chars().skip(start).take(end - start).collect()
}

async fn rules_server() -> TestServer {
    TestServer::start(&[
        ("PHIGUARD_DEFAULT_MODEL", "rules"),
        ("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "0"),
    ])
    .await
}

#[tokio::test]
async fn extract_offsets_are_code_points_into_the_submitted_text() {
    let t = rules_server().await;
    let body: Value = t
        .post("/pii/extract", json!({"text": format!("  {NOTE}  ")}))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(body["text"], NOTE, "text is stripped as OpenMed does");
    let ents = body["entities"].as_array().expect("entities");
    let labels: Vec<&str> = ents.iter().filter_map(|e| e["label"].as_str()).collect();
    for want in [
        "date",
        "phone_number",
        "email",
        "ssn",
        "medical_record_number",
    ] {
        assert!(labels.contains(&want), "{want} missing from {labels:?}");
    }
    for e in ents {
        let (s, en) = (
            e["start"].as_u64().expect("start") as usize,
            e["end"].as_u64().expect("end") as usize,
        );
        assert_eq!(py_slice(NOTE, s, en), e["text"].as_str().expect("text"));
    }
    t.shutdown().await;
}

#[tokio::test]
async fn every_method_transforms_the_note() {
    let t = rules_server().await;
    let mask: Value = t
        .post("/pii/deidentify", json!({"text": NOTE}))
        .await
        .json()
        .await
        .expect("json");
    let out = mask["deidentified_text"].as_str().expect("text");
    for secret in [
        "03/14/2021",
        "617-555-0142",
        "zoe.zed@example.org",
        "123-45-6789",
        "88412345",
    ] {
        assert!(!out.contains(secret), "{secret} left in {out}");
    }
    assert!(
        out.contains("[date]") && out.contains("[phone_number]"),
        "{out}"
    );
    assert_eq!(mask["method"], "mask");

    let hash1: Value = t
        .post("/pii/deidentify", json!({"text": NOTE, "method": "hash"}))
        .await
        .json()
        .await
        .expect("json");
    let hash2: Value = t
        .post("/pii/deidentify", json!({"text": NOTE, "method": "hash"}))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        hash1["deidentified_text"], hash2["deidentified_text"],
        "keyed hash is stable per install"
    );
    assert!(hash1["deidentified_text"]
        .as_str()
        .unwrap_or("")
        .contains("ssn_"));

    let shifted: Value = t
        .post(
            "/pii/deidentify",
            json!({"text": NOTE, "method": "shift_dates", "date_shift_days": 10}),
        )
        .await
        .json()
        .await
        .expect("json");
    assert!(
        shifted["deidentified_text"]
            .as_str()
            .unwrap_or("")
            .contains("03/24/2021"),
        "{shifted}"
    );

    let replaced: Value = t
        .post("/pii/deidentify", json!({"text": format!("{NOTE} Again 617-555-0142."), "method": "replace", "keep_mapping": true}))
        .await
        .json()
        .await
        .expect("json");
    let ents = replaced["pii_entities"].as_array().expect("entities");
    let phones: Vec<&Value> = ents
        .iter()
        .filter(|e| e["text"] == "617-555-0142")
        .collect();
    assert_eq!(phones.len(), 2);
    assert_eq!(
        phones[0]["redacted_text"], phones[1]["redacted_text"],
        "same source, same surrogate"
    );
    assert_ne!(phones[0]["redacted_text"], "617-555-0142");
    assert!(replaced["mapping"].is_object());

    let removed: Value = t
        .post("/pii/deidentify", json!({"text": NOTE, "method": "remove"}))
        .await
        .json()
        .await
        .expect("json");
    assert!(!removed["deidentified_text"]
        .as_str()
        .unwrap_or("")
        .contains("617-555-0142"));

    let safe: Value = t
        .post(
            "/pii/deidentify",
            json!({"text": NOTE, "policy": "hipaa_safe_harbor"}),
        )
        .await
        .json()
        .await
        .expect("json");
    assert!(
        safe["deidentified_text"]
            .as_str()
            .unwrap_or("")
            .contains("2021"),
        "{safe}"
    );
    assert_eq!(safe["metadata"]["policy"]["name"], "hipaa_safe_harbor");
    t.shutdown().await;
}

#[tokio::test]
async fn deidentify_stream_chunks_join_to_the_single_shot_text() {
    let t = rules_server().await;
    let long = std::iter::repeat_n(NOTE, 6).collect::<Vec<_>>().join("\n");
    let single: Value = t
        .post("/pii/deidentify", json!({"text": long, "method": "hash"}))
        .await
        .json()
        .await
        .expect("json");
    for chunk in [1, 7, 64, 5000] {
        let r = t
            .post(
                "/pii/deidentify/stream",
                json!({"text": long, "method": "hash", "chunk_size": chunk}),
            )
            .await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-type"], "application/x-ndjson");
        let text = r.text().await.expect("body");
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("json line"))
            .collect();
        let last = lines.last().expect("final");
        assert_eq!(last["type"], "final");
        let joined: String = lines
            .iter()
            .filter(|l| l["type"] == "chunk")
            .map(|l| l["redacted_text"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(
            joined,
            single["deidentified_text"].as_str().unwrap_or(""),
            "chunk_size {chunk}"
        );
    }
    t.shutdown().await;
}

#[tokio::test]
async fn extract_stream_emits_each_entity_once_with_byte_offsets() {
    let t = rules_server().await;
    let r = t
        .post(
            "/pii/extract/stream",
            json!({"text": NOTE, "chunk_size": 3}),
        )
        .await;
    let text = r.text().await.expect("body");
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let emits: Vec<&Value> = events.iter().filter(|e| e["type"] == "emit").collect();
    assert!(emits.len() >= 4, "{text}");
    for e in &emits {
        let span = &e["span"];
        let (bs, be) = (
            span["byte_start"].as_u64().expect("b") as usize,
            span["byte_end"].as_u64().expect("b") as usize,
        );
        assert_eq!(&NOTE[bs..be], span["text"].as_str().expect("text"));
        assert!(e["audit"]["span"]["text_hash"]
            .as_str()
            .unwrap_or("")
            .starts_with("hmac-sha256:"));
        assert!(e["audit"]["span"].get("text").is_none());
    }
    assert_eq!(events.last().expect("final")["type"], "final");
    t.shutdown().await;
}

#[tokio::test]
async fn models_loaded_and_unload() {
    let t = rules_server().await;
    t.post("/pii/extract", json!({"text": NOTE})).await;
    let loaded: Value = t
        .http
        .get(t.url("/models/loaded"))
        .bearer_auth(crate::support::CLIENT)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert!(loaded["models"]["rules"].is_object(), "{loaded}");
    let r = t
        .post("/models/unload", json!({"model_name": "rules"}))
        .await;
    assert_eq!(r.status(), 200);
    let r = t.post("/models/unload", json!({})).await;
    assert_eq!(r.status(), 422);
    let doc: Value = t
        .http
        .get(t.url("/openapi.json"))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert!(doc["openapi"].as_str().unwrap_or("").starts_with("3.1"));
    assert!(doc["paths"]["/pii/deidentify"].is_object());
    t.shutdown().await;
}

/// Identifiers typed with fullwidth digits (CJK input methods), non-breaking and soft
/// hyphens or zero-width spaces (word processors, web pages) are found like their plain
/// forms, and the offsets still index the text as it was sent.
#[tokio::test]
async fn identifiers_in_lookalike_characters_are_found_at_submitted_offsets() {
    let t = rules_server().await;
    let note = "ＳＳＮ １２３\u{2011}４５\u{2011}６７８９, tel 617\u{00AD}-555\u{200B}-0142, DOB ０３/１４/２０２１.";
    let body: Value = t
        .post("/pii/extract", json!({"text": note}))
        .await
        .json()
        .await
        .expect("json");
    let ents = body["entities"].as_array().expect("entities");
    let found: Vec<(String, String)> = ents
        .iter()
        .map(|e| {
            let (s, en) = (
                e["start"].as_u64().expect("start") as usize,
                e["end"].as_u64().expect("end") as usize,
            );
            assert_eq!(py_slice(note, s, en), e["text"].as_str().expect("text"));
            (
                e["label"].as_str().unwrap_or("").to_owned(),
                py_slice(note, s, en),
            )
        })
        .collect();
    for (label, text) in [
        ("ssn", "１２３\u{2011}４５\u{2011}６７８９"),
        ("phone_number", "617\u{00AD}-555\u{200B}-0142"),
        ("date", "０３/１４/２０２１"),
    ] {
        assert!(
            found.iter().any(|(l, t)| l == label && t == text),
            "{label} {text:?} not in {found:?}"
        );
    }
    let masked: Value = t
        .post("/pii/deidentify", json!({"text": note}))
        .await
        .json()
        .await
        .expect("json");
    let out = masked["deidentified_text"].as_str().expect("text");
    assert!(!out.chars().any(|c| c.is_numeric()), "digits left in {out}");
    t.shutdown().await;
}

/// Safe Harbor: an age over 89 and every date element that reveals it are aggregated, so
/// the birth year goes with the age while other dates keep theirs.
#[tokio::test]
async fn safe_harbor_removes_the_birth_year_of_a_patient_over_89() {
    let t = rules_server().await;
    let note = "DOB: 02/03/1950. Admitted 04/05/2024; she is 93 years old.";
    let body: Value = t
        .post(
            "/pii/deidentify",
            json!({"text": note, "policy": "hipaa_safe_harbor"}),
        )
        .await
        .json()
        .await
        .expect("json");
    let out = body["deidentified_text"].as_str().expect("text");
    assert!(!out.contains("1950") && !out.contains("93"), "{out}");
    assert!(out.contains("2024") && out.contains("90+"), "{out}");
    t.shutdown().await;
}

#[tokio::test]
async fn a_subject_keeps_surrogates_and_date_offsets_across_requests() {
    let t = rules_server().await;
    let note =
        "Patient Zoë Zed, MRN: 88412345, seen 03/14/2021 and again 04/02/2021. Call 617-555-0142.";
    let ask = |method: &str, subject: Option<&str>| {
        let mut body = json!({"text": note, "method": method});
        if let Some(s) = subject {
            body["subject"] = json!(s);
        }
        let t = &t;
        async move {
            let resp = t.post("/pii/deidentify", body).await;
            assert_eq!(resp.status(), 200);
            let raw = resp.text().await.expect("body");
            assert!(
                !raw.contains("Subject Canary"),
                "the subject is echoed: {raw}"
            );
            serde_json::from_str::<Value>(&raw).expect("json")
        }
    };
    let text = |v: &Value| v["deidentified_text"].as_str().unwrap_or("").to_string();
    let a = ask("replace", Some("Subject Canary 1")).await;
    let b = ask("replace", Some("Subject Canary 1")).await;
    assert_eq!(text(&a), text(&b), "same subject, same surrogates");
    let c = ask("replace", Some("Subject Canary 2")).await;
    assert_ne!(text(&a), text(&c), "another subject");
    let free: std::collections::HashSet<String> = [
        ask("replace", None).await,
        ask("replace", None).await,
        ask("replace", None).await,
    ]
    .iter()
    .map(text)
    .collect();
    assert!(
        free.len() > 1,
        "without a subject surrogates are drawn per call"
    );

    // One offset per subject, so the interval between a patient's dates survives.
    let d1 = ask("shift_dates", Some("Subject Canary 1")).await;
    let d2 = ask("shift_dates", Some("Subject Canary 1")).await;
    let days = &d1["metadata"]["date_shift_days"];
    assert!(days.as_i64().is_some_and(|d| d != 0), "{d1}");
    assert_eq!(days, &d2["metadata"]["date_shift_days"]);
    assert_eq!(text(&d1), text(&d2));

    // The stream takes it too, and a bad subject is refused without being repeated.
    let resp = t
        .post(
            "/pii/deidentify/stream",
            json!({"text": note, "method": "replace", "subject": "Subject Canary 1"}),
        )
        .await;
    let lines = resp.text().await.expect("stream");
    let joined: String = lines
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "chunk")
        .filter_map(|v| v["redacted_text"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        joined,
        text(&a),
        "the stream gives the subject's surrogates"
    );
    let long = format!("Subject Canary {}", "x".repeat(300));
    let resp = t
        .post("/pii/deidentify", json!({"text": note, "subject": long}))
        .await;
    assert_eq!(resp.status(), 422);
    let raw = resp.text().await.expect("body");
    assert!(
        raw.contains("body.subject") && !raw.contains("Canary"),
        "{raw}"
    );
    t.shutdown().await;
}

#[tokio::test]
async fn allow_and_deny_lists_from_settings_and_the_request() {
    let t = TestServer::start(&[
        ("PHIGUARD_DEFAULT_MODEL", "rules"),
        ("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "0"),
        ("PHIGUARD_DENY_TERMS", "Oakridge Site"),
    ])
    .await;
    let note = "Seen at Oakridge Site by the Maple team, MRN: 88412345. Call 617-555-0142.";
    let deid = |body: Value| {
        let t = &t;
        async move {
            let resp = t.post("/pii/deidentify", body).await;
            let status = resp.status().as_u16();
            (status, resp.json::<Value>().await.expect("json"))
        }
    };
    // The configured deny term is masked; a request adds its own.
    let (status, v) = deid(json!({"text": note, "deny": ["maple team"]})).await;
    assert_eq!(status, 200, "{v}");
    let out = v["deidentified_text"].as_str().unwrap_or("");
    assert!(!out.contains("Oakridge") && !out.contains("Maple"), "{out}");
    assert!(
        !out.contains("88412345") && !out.contains("617-555-0142"),
        "{out}"
    );
    // An allowed term stays, whatever the detectors say; a regex works too.
    let (_, v) = deid(json!({"text": note, "allow": ["/617-555-\\d{4}/"]})).await;
    let out = v["deidentified_text"].as_str().unwrap_or("");
    assert!(
        out.contains("617-555-0142") && !out.contains("88412345"),
        "{out}"
    );
    // Deny wins over allow.
    let (_, v) = deid(json!({"text": note, "allow": ["Oakridge Site"]})).await;
    assert!(
        !v["deidentified_text"]
            .as_str()
            .unwrap_or("")
            .contains("Oakridge"),
        "{v}"
    );
    // A bad term is named by list and position, never repeated.
    let (status, v) = deid(json!({"text": note, "deny": ["ok", "/Canary(/"]})).await;
    assert_eq!(status, 422);
    assert_eq!(v["error"]["details"][0]["field"], "body.deny", "{v}");
    assert!(
        v.to_string().contains("deny[1]") && !v.to_string().contains("Canary"),
        "{v}"
    );
    let many: Vec<String> = (0..300).map(|i| format!("t{i}")).collect();
    let (status, _) = deid(json!({"text": note, "allow": many})).await;
    assert_eq!(status, 422);

    // /pii/extract finds what the lists say; /analyze (any entity model) ignores the
    // configured lists.
    let found = |path: &'static str, body: Value| {
        let t = &t;
        async move {
            let v: Value = t.post(path, body).await.json().await.expect("json");
            v["entities"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|e| e["text"].as_str().map(str::to_string))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        }
    };
    let e = found(
        "/pii/extract",
        json!({"text": note, "deny": ["Maple team"]}),
    )
    .await;
    assert!(
        e.iter().any(|x| x == "Oakridge Site") && e.iter().any(|x| x == "Maple team"),
        "{e:?}"
    );
    let a = found("/analyze", json!({"text": note})).await;
    assert!(!a.iter().any(|x| x == "Oakridge Site"), "{a:?}");
    t.shutdown().await;
}

#[tokio::test]
async fn a_sealed_mapping_restores_the_note_for_an_admin_and_for_nobody_else() {
    let t = rules_server().await;
    for method in ["mask", "replace", "hash"] {
        let res = t
            .post(
                "/pii/deidentify",
                json!({"text": NOTE, "method": method, "seal_mapping": true}),
            )
            .await;
        assert_eq!(res.status(), 200);
        let body: Value = res.json().await.expect("json");
        assert!(
            body.get("mapping").is_none(),
            "{method}: no mapping in clear"
        );
        let sealed = body["sealed_mapping"].as_str().expect("sealed_mapping");
        assert!(sealed.starts_with("phiguard-sealed-v1:"));
        for piece in ["Zoë", "88412345", "617-555-0142", "123-45-6789"] {
            assert!(!sealed.contains(piece), "{method}: the seal shows {piece}");
        }
        let deid = body["deidentified_text"].as_str().expect("text");

        // The exact text comes back whole, even with repeated mask placeholders.
        let back = t
            .admin_post(
                "/admin/reidentify",
                json!({"text": deid, "sealed_mapping": sealed}),
            )
            .await;
        assert_eq!(back.status(), 200);
        let back: Value = back.json().await.expect("json");
        assert_eq!(back["text"], NOTE, "{method}");
        assert_eq!(back["exact"], true);
        assert_eq!(back["unresolved"], 0);

        // A client token may not open it.
        let refused = t
            .post(
                "/admin/reidentify",
                json!({"text": deid, "sealed_mapping": sealed}),
            )
            .await;
        assert_eq!(refused.status(), 403, "{method}");
    }

    // An edited replace text is restored by value.
    let body: Value = t
        .post(
            "/pii/deidentify",
            json!({"text": NOTE, "method": "replace", "seal_mapping": true}),
        )
        .await
        .json()
        .await
        .expect("json");
    let deid = body["deidentified_text"].as_str().expect("text");
    let edited = format!("Summary. {deid}");
    let back: Value = t
        .admin_post(
            "/admin/reidentify",
            json!({"text": edited, "sealed_mapping": body["sealed_mapping"]}),
        )
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(back["text"], format!("Summary. {NOTE}"));
    assert_eq!(back["exact"], false);

    // A changed seal is refused without echoing it.
    let sealed = body["sealed_mapping"].as_str().expect("sealed");
    let forged = format!("{}A", &sealed[..sealed.len() - 1]);
    let forged = if forged == sealed {
        format!("{}B", &sealed[..sealed.len() - 1])
    } else {
        forged
    };
    let res = t
        .admin_post(
            "/admin/reidentify",
            json!({"text": deid, "sealed_mapping": forged}),
        )
        .await;
    assert_eq!(res.status(), 422);
    let err = res.text().await.expect("text");
    assert!(err.contains("sealed_mapping") && !err.contains(&forged) && !err.contains("Zoë"));

    // The stream has no seal: the field is unknown there.
    let res = t
        .post(
            "/pii/deidentify/stream",
            json!({"text": NOTE, "seal_mapping": true}),
        )
        .await;
    assert_eq!(res.status(), 422);

    // Audited, without the text.
    let audit = t
        .admin_get("/admin/audit")
        .await
        .text()
        .await
        .expect("audit");
    assert!(audit.contains("mapping.reidentify"));
    for piece in ["Zoë", "88412345", "phiguard-sealed-v1"] {
        assert!(!audit.contains(piece), "the audit log holds {piece}");
    }
    t.shutdown().await;
}

async fn answer(t: &TestServer, body: Value) -> Value {
    t.post("/pii/deidentify", body)
        .await
        .json()
        .await
        .expect("json")
}

#[tokio::test]
async fn replicas_that_share_the_keys_agree_on_hashes_subjects_and_seals() {
    const HASH: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
    const SEAL: &str = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90";
    let env = [
        ("PHIGUARD_DEFAULT_MODEL", "rules"),
        ("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "0"),
        ("PHIGUARD_HASH_KEY", HASH),
        ("PHIGUARD_MAPPING_KEY", SEAL),
    ];
    // Two servers, each with its own home (and so its own keychain entries).
    let a = TestServer::start(&env).await;
    let b = TestServer::start(&env).await;
    let hashed = json!({"text": NOTE, "method": "hash"});
    assert_eq!(
        answer(&a, hashed.clone()).await["deidentified_text"],
        answer(&b, hashed).await["deidentified_text"]
    );
    let subject = json!({"text": NOTE, "method": "replace", "subject": "study-1/p7"});
    assert_eq!(
        answer(&a, subject.clone()).await["deidentified_text"],
        answer(&b, subject).await["deidentified_text"]
    );
    let sealed = answer(
        &a,
        json!({"text": NOTE, "method": "replace", "seal_mapping": true}),
    )
    .await;
    let back: Value = b
        .admin_post(
            "/admin/reidentify",
            json!({"text": sealed["deidentified_text"], "sealed_mapping": sealed["sealed_mapping"]}),
        )
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        back["text"], NOTE,
        "a seal made on one replica opens on the other"
    );
    a.shutdown().await;
    b.shutdown().await;

    // A server with other keys agrees on neither.
    let c = TestServer::start(&[
        ("PHIGUARD_DEFAULT_MODEL", "rules"),
        ("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "0"),
    ])
    .await;
    let res = c
        .admin_post(
            "/admin/reidentify",
            json!({"text": sealed["deidentified_text"], "sealed_mapping": sealed["sealed_mapping"]}),
        )
        .await;
    assert_eq!(res.status(), 422);
    c.shutdown().await;
}

/// A name found near the end of a long note is masked near its start too (the sweep), in
/// the streams as in the single-shot routes: the streams read the whole text before their
/// first line. Before, they read it window by window and had sent the early `Bishop`.
#[tokio::test]
async fn the_streams_mask_early_what_is_found_late_in_a_long_note() {
    let t = rules_server().await;
    let filler = "Lungs clear to auscultation bilaterally, no fever. ".repeat(120);
    let text = format!("Bishop called back. {filler}Patient name: Mary Bishop, seen 03/14/2021.");
    let single: Value = t
        .post("/pii/deidentify", json!({"text": text}))
        .await
        .json()
        .await
        .expect("json");
    let single = single["deidentified_text"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(!single.contains("Bishop"), "the sweep masks both: {single}");
    let r = t
        .post("/pii/deidentify/stream", json!({"text": text}))
        .await;
    assert_eq!(r.status(), 200);
    let body = r.text().await.expect("body");
    let lines: Vec<Value> = body
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let chunks: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "chunk")
        .map(|l| l["redacted_text"].as_str().unwrap_or(""))
        .collect();
    assert!(chunks.len() > 1, "a long note is sent in several lines");
    assert_eq!(chunks.concat(), single);
    let extract: Value = t
        .post("/pii/extract", json!({"text": text}))
        .await
        .json()
        .await
        .expect("json");
    let starts = |spans: &Value| -> Vec<u64> {
        spans
            .as_array()
            .map(|a| a.iter().filter_map(|s| s["start"].as_u64()).collect())
            .unwrap_or_default()
    };
    let body = t
        .post("/pii/extract/stream", json!({"text": text}))
        .await
        .text()
        .await
        .expect("body");
    let last: Value = serde_json::from_str(body.lines().last().unwrap_or("")).expect("final");
    assert_eq!(starts(&last["final_spans"]), starts(&extract["entities"]));
    assert!(starts(&last["final_spans"]).contains(&0), "{last}");
    t.shutdown().await;
}

/// `/admin/reidentify` reads the de-identified text as sent: not trimmed (a `remove` at the
/// start of a note leaves a leading space the seal counts) and not held to the text limits
/// (a mask is longer than what it replaces, so a note the service accepted may come back
/// longer than the limit). Before, both were refused or restored nothing.
#[tokio::test]
async fn reidentify_takes_the_deidentified_text_as_it_came_back() {
    let t = TestServer::start(&[
        ("PHIGUARD_DEFAULT_MODEL", "rules"),
        ("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "0"),
        ("PHIGUARD_MAX_TEXT_LENGTH", "60"),
    ])
    .await;
    for (text, method) in [
        ("03/04/2021 seen, call 617-555-0142", "remove"),
        ("MRN: 4455667, MRN: 4455668, seen 03/04/2021.", "mask"),
    ] {
        let body: Value = t
            .post(
                "/pii/deidentify",
                json!({"text": text, "method": method, "seal_mapping": true}),
            )
            .await
            .json()
            .await
            .expect("json");
        let deid = body["deidentified_text"].as_str().expect("text");
        if method == "remove" {
            assert!(deid.starts_with(' ') && !deid.contains("0142"), "{deid:?}");
        } else {
            assert!(deid.chars().count() > 60, "{deid:?}");
        }
        let back = t
            .admin_post(
                "/admin/reidentify",
                json!({"text": deid, "sealed_mapping": body["sealed_mapping"]}),
            )
            .await;
        assert_eq!(back.status(), 200, "{method}");
        let back: Value = back.json().await.expect("json");
        assert_eq!(back["text"], text, "{method}");
        assert_eq!(back["exact"], true, "{method}");
    }
    // The field must still be sent.
    let r = t
        .admin_post("/admin/reidentify", json!({"sealed_mapping": "x"}))
        .await;
    assert_eq!(r.status(), 422);
    t.shutdown().await;
}
