//! Unit and property tests of the transforms.

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::SeedableRng;

use super::*;
use crate::detect::{Label, Source, Span};

fn key() -> HashKey {
    HashKey::from_bytes([7u8; 32])
}

fn sp(start: usize, end: usize, label: Label) -> Span {
    Span::new(start, end, label, 0.9, Source::Model)
}

fn run(opts: DeidOptions, text: &str, spans: &[Span]) -> DeidOutput {
    Deidentifier::new(opts, &key(), StdRng::seed_from_u64(42)).apply(text, spans)
}

fn method(m: Method) -> DeidOptions {
    DeidOptions {
        method: m,
        ..DeidOptions::default()
    }
}

const TEXT: &str = "John Smith born 01/02/1980 email john@x.com";

fn spans() -> Vec<Span> {
    vec![
        sp(0, 4, Label::FirstName),
        sp(5, 10, Label::LastName),
        sp(16, 26, Label::Date),
        sp(33, 43, Label::Email),
    ]
}

#[test]
fn mask_uses_wire_labels() {
    let out = run(method(Method::Mask), TEXT, &spans());
    assert_eq!(
        out.text,
        "[first_name] [last_name] born [date] email [email]"
    );
    assert_eq!(out.replacements.len(), 4);
    assert!(out.mapping.is_empty());
    assert_eq!(out.replacements[2].original, "01/02/1980");
    assert_eq!(out.replacements[2].action, Action::Mask);
}

#[test]
fn remove_keeps_surrounding_whitespace() {
    let out = run(method(Method::Remove), TEXT, &spans());
    assert_eq!(out.text, "  born  email ");
}

/// One name in two cases is one person under `hash` and under `replace`, the surrogate
/// written in each occurrence's case (`Whitfield … WHITFIELD` were two people).
#[test]
fn a_name_in_another_case_gets_the_same_hash_and_surrogate() {
    let text = "Rosalind Whitfield seen. WHITFIELD, ROSALIND signed.";
    let spans = [
        sp(0, 8, Label::FirstName),
        sp(9, 18, Label::LastName),
        sp(25, 34, Label::LastName),
        sp(36, 44, Label::FirstName),
    ];
    let hashed = run(method(Method::Hash), text, &spans);
    let r = &hashed.replacements;
    assert_eq!(r[1].replacement, r[2].replacement);
    assert_eq!(r[0].replacement, r[3].replacement);
    let replaced = run(method(Method::Replace), text, &spans);
    let r = &replaced.replacements;
    assert_eq!(r[1].replacement.to_uppercase(), r[2].replacement);
    assert_eq!(r[0].replacement.to_uppercase(), r[3].replacement);
    assert_ne!(r[2].replacement, "WHITFIELD");
}

#[test]
fn hash_is_keyed_and_stable() {
    let a = run(method(Method::Hash), TEXT, &spans());
    let b = run(method(Method::Hash), TEXT, &spans());
    assert_eq!(a.text, b.text);
    let first = &a.replacements[0].replacement;
    // 64 bits: at 32, two of 77,000 MRNs shared a tag with even odds.
    assert!(first.starts_with("first_name_") && first.len() == "first_name_".len() + 16);
    let other = Deidentifier::new(
        method(Method::Hash),
        &HashKey::from_bytes([8u8; 32]),
        StdRng::seed_from_u64(1),
    )
    .apply(TEXT, &spans());
    assert_ne!(other.text, a.text, "a different key gives different hashes");
    // Not the unkeyed SHA-256 prefix OpenMed uses.
    use sha2::Digest;
    let unkeyed = hex::encode(&Sha256::digest(b"John")[..4]);
    assert!(!first.ends_with(&unkeyed));
}

#[test]
fn replace_is_consistent_within_a_request() {
    let text = "Smith saw Smith and Jones";
    let s = [
        sp(0, 5, Label::LastName),
        sp(10, 15, Label::LastName),
        sp(20, 25, Label::LastName),
    ];
    let out = run(method(Method::Replace), text, &s);
    let r: Vec<&str> = out
        .replacements
        .iter()
        .map(|r| r.replacement.as_str())
        .collect();
    assert_eq!(r[0], r[1]);
    assert_ne!(r[0], r[2]);
    assert_ne!(r[0], "Smith");
}

#[test]
fn shift_dates_keeps_format_and_masks_the_rest() {
    let opts = DeidOptions {
        method: Method::ShiftDates,
        date_shift_days: Some(10),
        ..DeidOptions::default()
    };
    let out = run(opts, TEXT, &spans());
    assert_eq!(
        out.text,
        "[first_name] [last_name] born 01/12/1980 email [email]"
    );
    assert_eq!(out.replacements[2].action, Action::ShiftDates);
    assert_eq!(out.replacements[0].action, Action::Mask);
}

#[test]
fn shift_dates_keep_year_and_unparseable() {
    let opts = DeidOptions {
        method: Method::ShiftDates,
        date_shift_days: Some(5),
        keep_year: true,
        ..DeidOptions::default()
    };
    let text = "on 12/30/1980 and yesterday";
    let out = run(
        opts,
        text,
        &[sp(3, 13, Label::Date), sp(18, 27, Label::Date)],
    );
    assert_eq!(out.text, "on 01/04/1980 and [date]");
}

/// An ISO timestamp that a detector found in word pieces (`2021-04-01T09`, then `00Z`)
/// is moved whole, its time and zone kept; under mask it is one entity. Before,
/// `shift_dates` gave `[date]:00:[date]` and mask `[date]:00:[date]`.
#[test]
fn an_iso_timestamp_in_pieces_is_shifted_whole() {
    let text = "Follow-up 2021-04-01T09:00:00Z and 2021-03-20T14:30:00+02:00.";
    let pieces = [
        sp(10, 23, Label::Date),
        sp(27, 30, Label::Date),
        sp(35, 45, Label::Date),
    ];
    let opts = DeidOptions {
        method: Method::ShiftDates,
        date_shift_days: Some(10),
        ..DeidOptions::default()
    };
    let out = run(opts, text, &pieces);
    assert_eq!(
        out.text,
        "Follow-up 2021-04-11T09:00:00Z and 2021-03-30T14:30:00+02:00."
    );
    assert!(out
        .replacements
        .iter()
        .all(|r| r.action == Action::ShiftDates));
    let out = run(method(Method::Mask), text, &pieces);
    assert_eq!(out.text, "Follow-up [date] and [date].");
}

#[test]
fn random_shift_is_nonzero_and_shared() {
    for seed in 0..50 {
        let d = Deidentifier::new(
            method(Method::ShiftDates),
            &key(),
            StdRng::seed_from_u64(seed),
        );
        assert!(d.shift_days() != 0 && d.shift_days().abs() <= 365);
    }
    let text = "01/01/2000 and 01/11/2000";
    let out = Deidentifier::new(method(Method::ShiftDates), &key(), StdRng::seed_from_u64(9))
        .apply(text, &[sp(0, 10, Label::Date), sp(15, 25, Label::Date)]);
    let parse = |s: &str| chrono::NaiveDate::parse_from_str(s, "%m/%d/%Y").ok();
    let a = parse(&out.replacements[0].replacement);
    let b = parse(&out.replacements[1].replacement);
    assert_eq!(
        a.zip(b).map(|(a, b)| (b - a).num_days()),
        Some(10),
        "interval kept"
    );
}

#[test]
fn keep_mapping_fills_pairs() {
    let opts = DeidOptions {
        keep_mapping: true,
        ..DeidOptions::default()
    };
    let out = run(opts, TEXT, &spans());
    assert_eq!(
        out.mapping[0],
        ("[first_name]".to_owned(), "John".to_owned())
    );
    assert_eq!(out.mapping.len(), 4);
}

#[test]
fn hipaa_safe_harbor_policy() -> std::result::Result<(), PolicyError> {
    let opts = DeidOptions {
        method: Method::Replace,
        policy: Some(Policy::parse("hipaa_safe_harbor")?),
        ..DeidOptions::default()
    };
    let text = "Ann, 92-year-old, DOB 01/02/1980, age 45, ZIP 02115, seen March 2019";
    let s = [
        sp(0, 3, Label::FirstName),
        sp(5, 16, Label::Age),
        sp(22, 32, Label::DateOfBirth),
        sp(38, 40, Label::Age),
        sp(46, 51, Label::Zipcode),
        sp(58, 68, Label::Date),
    ];
    let out = run(opts, text, &s);
    assert_eq!(
        out.text,
        // The age over 89 makes the birth year telling: it goes too.
        "[first_name], 90+-year-old, DOB [date_of_birth], age 45, ZIP [zipcode], seen 2019"
    );
    assert!(out.mapping.is_empty());
    Ok(())
}

#[test]
fn gdpr_policy_keeps_mapping() -> std::result::Result<(), PolicyError> {
    let opts = DeidOptions {
        policy: Some(Policy::parse("gdpr")?),
        ..DeidOptions::default()
    };
    let out = run(opts, TEXT, &spans());
    assert_eq!(out.mapping.len(), 4);
    assert!(out.mapping.iter().all(|(r, o)| r != o));
    Ok(())
}

#[test]
fn hash_key_hex_round_trip_and_redacted_debug() -> Result<()> {
    let k = HashKey::generate(&mut StdRng::seed_from_u64(3));
    assert_eq!(HashKey::from_hex(&k.to_hex())?, k);
    assert!(HashKey::from_hex("abc").is_err());
    assert_eq!(format!("{k:?}"), "HashKey(<redacted>)");
    Ok(())
}

#[test]
fn method_serde_names() -> serde_json::Result<()> {
    assert_eq!(
        serde_json::to_string(&Method::ShiftDates)?,
        "\"shift_dates\""
    );
    let m: Method = serde_json::from_str("\"hash\"")?;
    assert_eq!(m, Method::Hash);
    Ok(())
}

fn arb_case() -> impl Strategy<Value = (String, Vec<Span>)> {
    "\\PC{0,60}"
        .prop_flat_map(|text| {
            let n = text.chars().count();
            let span = (0..=n, 1usize..8, 0..Label::ALL.len()).prop_map(move |(s, len, l)| {
                let s = s.min(n.saturating_sub(1));
                (s, (s + len).min(n), l)
            });
            (Just(text), prop::collection::vec(span, 0..6))
        })
        .prop_map(|(text, raw)| {
            let spans = raw
                .into_iter()
                .filter(|(s, e, _)| s < e)
                .map(|(s, e, l)| Span::new(s, e, Label::ALL[l], 0.5, Source::Rule))
                .collect();
            (text, spans)
        })
}

fn arb_method() -> impl Strategy<Value = Method> {
    prop_oneof![
        Just(Method::Mask),
        Just(Method::Remove),
        Just(Method::Replace),
        Just(Method::Hash),
        Just(Method::ShiftDates)
    ]
}

proptest! {
    #[test]
    fn output_is_input_with_each_span_replaced((text, spans) in arb_case(), m in arb_method(), seed in any::<u64>()) {
        let out = Deidentifier::new(method(m), &key(), StdRng::seed_from_u64(seed)).apply(&text, &spans);
        let chars: Vec<char> = text.chars().collect();
        let mut expected = String::new();
        let mut pos = 0;
        for r in &out.replacements {
            prop_assert!(r.span.start >= pos, "overlapping or unsorted replacements");
            prop_assert!(r.span.end <= chars.len(), "replacement outside the text");
            let original: String = chars[r.span.start..r.span.end].iter().collect();
            prop_assert_eq!(&r.original, &original);
            expected.extend(&chars[pos..r.span.start]);
            expected.push_str(&r.replacement);
            pos = r.span.end;
        }
        expected.extend(&chars[pos..]);
        prop_assert_eq!(out.text, expected);
        // Every input code point is covered by a replacement (nothing is kept without a policy).
        for s in &spans {
            for p in s.start..s.end {
                prop_assert!(out.replacements.iter().any(|r| r.span.start <= p && p < r.span.end));
            }
        }
    }
}

fn safe_harbor(reference_year: i32) -> DeidOptions {
    DeidOptions {
        policy: Policy::parse("hipaa_safe_harbor").ok(),
        reference_year: Some(reference_year),
        ..DeidOptions::default()
    }
}

/// Runs the real rule recognizers, then the Safe Harbor transform.
fn safe_harbor_text(text: &str, reference_year: i32) -> String {
    let spans = crate::detect::RuleRecognizer::new().find(text);
    run(safe_harbor(reference_year), text, &spans).text
}

#[test]
fn shifting_policies_mask_a_birth_date_that_reveals_an_age_over_89() {
    let shifted = |policy: &str, text: &str| {
        let opts = DeidOptions {
            policy: Policy::parse(policy).ok(),
            reference_year: Some(2026),
            date_shift_days: Some(10),
            ..DeidOptions::default()
        };
        let spans = crate::detect::RuleRecognizer::new().find(text);
        run(opts, text, &spans).text
    };
    for policy in ["hipaa_expert_review_assist", "clinical_preserve"] {
        assert_eq!(
            shifted(policy, "DOB 02/03/1931, seen 04/05/2024."),
            "DOB [date], seen 04/15/2024.",
            "{policy}"
        );
        assert_eq!(
            shifted(policy, "DOB 02/03/1950, seen 04/05/2024."),
            "DOB 02/13/1950, seen 04/15/2024.",
            "{policy}"
        );
    }
    // The bare method moves every date, as OpenMed's does.
    let opts = DeidOptions {
        date_shift_days: Some(10),
        ..method(Method::ShiftDates)
    };
    let text = "DOB 02/03/1931.";
    let spans = crate::detect::RuleRecognizer::new().find(text);
    assert_eq!(run(opts, text, &spans).text, "DOB 02/13/1931.");
}

#[test]
fn safe_harbor_masks_a_birth_year_that_reveals_an_age_over_89() {
    assert_eq!(
        safe_harbor_text("DOB 02/03/1931, seen 04/05/2024.", 2026),
        "DOB [date], seen 2024."
    );
    assert_eq!(
        safe_harbor_text("DOB 02/03/1950, seen 04/05/2024.", 2026),
        "DOB 1950, seen 2024."
    );
    // A stated age over 89 makes every birth date's year telling, wherever it stands.
    assert_eq!(
        safe_harbor_text("Date of birth: 02/03/1950. She is 93 years old.", 2026),
        "Date of birth: [date]. She is 90+ years old."
    );
    // Dates that are not birth dates keep their year.
    assert_eq!(
        safe_harbor_text("93 yo, admitted 01/02/2024, DOB 01/02/1933.", 2026),
        "90+ yo, admitted 2024, DOB [date]."
    );
}

/// A birth year written alone (`born 1931`): found by the service's context rules, kept
/// when it tells an age of 89 or less, masked when it tells more, or when an age over 89
/// stands anywhere in the note.
#[test]
fn safe_harbor_masks_a_bare_birth_year_that_reveals_an_age_over_89() {
    use crate::detect::Recognizer;
    let rules = crate::detect::Layered::service_rules();
    let text_of = |text: &str| {
        let spans = rules
            .detect_batch(&[text])
            .ok()
            .and_then(|mut v| v.pop())
            .unwrap_or_default();
        run(safe_harbor(2026), text, &spans).text
    };
    assert_eq!(
        text_of("Widow, born 1931, lives alone."),
        "Widow, born [date_of_birth], lives alone."
    );
    assert_eq!(
        text_of("Widow, born 1950, lives alone."),
        "Widow, born 1950, lives alone."
    );
    assert_eq!(
        text_of("She is 93 years old. Year of birth: 1950."),
        "She is 90+ years old. Year of birth: [date_of_birth]."
    );
}

#[test]
fn safe_harbor_remembers_an_age_over_89_across_stream_fragments() {
    let mut d = Deidentifier::new(safe_harbor(2026), &key(), StdRng::seed_from_u64(1));
    let first = "Age 95. ";
    let second = "DOB 01/02/1960.";
    let rules = crate::detect::RuleRecognizer::new();
    let a = d.apply_at(first, 0, &rules.find(first));
    let shifted: Vec<Span> = rules
        .find(second)
        .into_iter()
        .map(|mut s| {
            s.start += 8;
            s.end += 8;
            s
        })
        .collect();
    let b = d.apply_at(second, 8, &shifted);
    assert_eq!(format!("{}{}", a.text, b.text), "Age 90+. DOB [date].");
}

proptest! {
    /// Under Safe Harbor a birth year survives only when neither it nor a stated age says
    /// the patient is over 89.
    #[test]
    fn safe_harbor_never_keeps_a_telling_birth_year(
        year in 1900i32..2026,
        age in 0u32..120,
        month in 1u32..=12,
        day in 1u32..=28,
    ) {
        let text = format!("DOB {month:02}/{day:02}/{year}. Age {age}.");
        let out = safe_harbor_text(&text, 2026);
        let telling = age > 89 || 2026 - year > 89;
        prop_assert_eq!(out.contains(&year.to_string()), !telling, "{}", out);
    }
}

fn subject_run(subject: Option<&str>, rng_seed: u64, text: &str, spans: &[Span]) -> DeidOutput {
    let opts = DeidOptions {
        method: Method::Replace,
        subject: subject.map(|s| key().subject(s)),
        ..DeidOptions::default()
    };
    Deidentifier::new(opts, &key(), StdRng::seed_from_u64(rng_seed)).apply(text, spans)
}

#[test]
fn a_subject_gives_the_same_surrogates_and_offset_in_every_request() {
    let a = subject_run(Some("patient-17"), 1, TEXT, &spans());
    let b = subject_run(Some("patient-17"), 2, TEXT, &spans());
    assert_eq!(a.text, b.text, "same subject, different request generators");
    let other = subject_run(Some("patient-18"), 1, TEXT, &spans());
    assert_ne!(a.text, other.text, "another subject");
    let k = key().subject("patient-17");
    assert_eq!(
        k.date_shift_days(),
        key().subject("patient-17").date_shift_days()
    );
    let days = k.date_shift_days();
    assert!(days != 0 && (-365..=365).contains(&days));
    // Another install's secret gives other surrogates for the same subject.
    let opts = DeidOptions {
        method: Method::Replace,
        subject: Some(HashKey::from_bytes([8u8; 32]).subject("patient-17")),
        ..DeidOptions::default()
    };
    let foreign = Deidentifier::new(opts, &key(), StdRng::seed_from_u64(1)).apply(TEXT, &spans());
    assert_ne!(a.text, foreign.text);
}

#[test]
fn a_subject_fixes_the_date_offset_unless_the_request_sets_one() {
    let with = |subject: Option<&str>, days: Option<i64>, seed: u64| {
        let opts = DeidOptions {
            method: Method::ShiftDates,
            date_shift_days: days,
            subject: subject.map(|s| key().subject(s)),
            ..DeidOptions::default()
        };
        Deidentifier::new(opts, &key(), StdRng::seed_from_u64(seed)).shift_days()
    };
    let own = key().subject("s1").date_shift_days();
    assert_eq!(with(Some("s1"), None, 1), own);
    assert_eq!(with(Some("s1"), None, 2), own);
    assert_eq!(with(Some("s1"), Some(5), 1), 5);
    // Without a subject the offset is drawn per request.
    let drawn: std::collections::HashSet<i64> = (0..8).map(|seed| with(None, None, seed)).collect();
    assert!(drawn.len() > 1, "{drawn:?}");
}

#[test]
fn spellings_of_one_name_share_the_subjects_surrogate() {
    let text = "Dr. John Smith saw JOHN  SMITH";
    let spans = [sp(0, 14, Label::Person), sp(19, 30, Label::Person)];
    let out = subject_run(Some("p"), 3, text, &spans);
    let (first, second) = (
        &out.replacements[0].replacement,
        &out.replacements[1].replacement,
    );
    assert_eq!(subject_value(first), subject_value(second), "{out:?}");
    assert_eq!(subject_value("Dr. John  Smith"), "john smith");
    assert_eq!(subject_value("Dr."), "dr.");
}

#[test]
fn without_a_subject_replace_draws_per_request() {
    let outs: std::collections::HashSet<String> = (0..6)
        .map(|seed| subject_run(None, seed, TEXT, &spans()).text)
        .collect();
    assert!(outs.len() > 1);
}

#[test]
fn subject_keys_never_print() {
    let k = key().subject("Jane Doe MRN 12345");
    assert_eq!(format!("{k:?}"), "SubjectKey(..)");
}

/// The `replace` surrogate of a whole text labelled `label`.
fn surrogate_of(original: &str, label: Label, seed: u64) -> String {
    let n = original.chars().count();
    let opts = method(Method::Replace);
    Deidentifier::new(opts, &key(), StdRng::seed_from_u64(seed))
        .apply(original, &[sp(0, n, label)])
        .text
}

fn phone_surrogate(original: &str, seed: u64) -> String {
    surrogate_of(original, Label::Phone, seed)
}

fn digits(s: &str) -> String {
    s.chars().filter(char::is_ascii_digit).collect()
}

proptest! {
    #[test]
    fn north_american_phone_surrogates_are_fictional_and_keep_the_layout(
        d in "[2-9][0-9]{9}", sep in "[-. ]", seed in any::<u64>(), one in any::<bool>(),
    ) {
        let original = format!("{}({}){}{}{}{}", if one { "1 " } else { "" }, &d[..3], sep, &d[3..6], sep, &d[6..]);
        let out = phone_surrogate(&original, seed);
        let got = digits(&out);
        let national = if one { &got[1..] } else { &got[..] };
        prop_assert_eq!(national.len(), 10, "{}", out);
        prop_assert_eq!(&national[3..8], "55501", "{} is not in 555-01xx", out);
        prop_assert!(('2'..='9').contains(&national.chars().next().unwrap_or('0')));
        let layout = |s: &str| s.chars().map(|c| if c.is_ascii_digit() { '9' } else { c }).collect::<String>();
        prop_assert_eq!(layout(&out), layout(&original));
    }
}

#[test]
fn uk_phone_surrogates_use_ofcom_drama_ranges() {
    for (original, prefix) in [
        ("07911 123456", "07700900"),
        ("+44 7911 123456", "447700900"),
        ("020 8123 4567", "02079460"),
        ("+44 161 496 0000", "442079460"),
    ] {
        let out = phone_surrogate(original, 9);
        assert!(digits(&out).starts_with(prefix), "{original} → {out}");
        assert_eq!(
            digits(&out).len(),
            digits(original).len(),
            "{original} → {out}"
        );
    }
}

/// The NHS check digit of nine digits (modulus 11, weights 10..2); `None` when it is 10.
fn nhs_check(nine: &str) -> Option<u32> {
    let sum: u32 = nine
        .chars()
        .zip((2..=10u32).rev())
        .map(|(c, w)| c.to_digit(10).unwrap_or(0) * w)
        .sum();
    match 11 - sum % 11 {
        11 => Some(0),
        10 => None,
        c => Some(c),
    }
}

proptest! {
    #[test]
    fn nhs_number_surrogates_are_valid_never_issued_and_keep_the_layout(
        nine in "[0-9]{9}", spaced in any::<bool>(), seed in any::<u64>(),
    ) {
        let Some(check) = nhs_check(&nine) else { return Ok(()) };
        let d = format!("{nine}{check}");
        let original = if spaced { format!("{} {} {}", &d[..3], &d[3..6], &d[6..]) } else { d.clone() };
        let out = surrogate_of(&original, Label::MedicalRecordNumber, seed);
        let got = digits(&out);
        prop_assert_eq!(got.len(), 10, "{}", out);
        prop_assert!(got.starts_with("999"), "{} is outside the test range", out);
        prop_assert_eq!(nhs_check(&got[..9]), got[9..].parse::<u32>().ok(), "{} has a wrong check digit", out);
        let layout = |s: &str| s.chars().map(|c| if c.is_ascii_digit() { '9' } else { c }).collect::<String>();
        prop_assert_eq!(layout(&out), layout(&original));
    }
}

#[test]
fn sealed_spans_index_the_deidentified_text_for_every_method() {
    let text = "Ann Lee (MRN 4471) seen 2024-03-01 by Dr Bob; call 617-555-0142.";
    let spans = [
        sp(0, 3, Label::FirstName),
        sp(4, 7, Label::LastName),
        sp(13, 17, Label::MedicalRecordNumber),
        sp(24, 34, Label::Date),
        sp(41, 44, Label::LastName),
        sp(51, 63, Label::Phone),
    ];
    for m in [
        Method::Mask,
        Method::Remove,
        Method::Replace,
        Method::Hash,
        Method::ShiftDates,
    ] {
        let out = run(method(m), text, &spans);
        let chars: Vec<char> = out.text.chars().collect();
        let sealed = out.sealed_spans();
        assert_eq!(sealed.len(), out.replacements.len(), "{m:?}");
        for s in &sealed {
            let at: String = chars[s.start..s.end].iter().collect();
            assert_eq!(at, s.replacement, "{m:?}: {}", out.text);
        }
        let key = SealKey::from_bytes([3; 32]);
        let seal = key.seal(&out.text, sealed, &mut StdRng::seed_from_u64(1));
        let back = key.restore(&out.text, &seal).expect("opens");
        assert_eq!(back.text, text, "{m:?}");
        assert!(back.exact);
    }
}

#[test]
fn a_name_surrogate_never_reads_as_another_name_of_the_note() {
    // Half the surrogate pool appears in the note as real names: the replacement of "Zed"
    // is never one of them.
    let pool: Vec<&str> = surrogate::all_first_names().collect();
    let others: Vec<&str> = pool[..pool.len() / 2].to_vec();
    let text = format!("Zed met {}.", others.join(" and "));
    let mut spans = vec![sp(0, 3, Label::FirstName)];
    let mut at = 8;
    for n in &others {
        let len = n.chars().count();
        spans.push(sp(at, at + len, Label::FirstName));
        at += len + 5;
    }
    for seed in 0..8 {
        let out = Deidentifier::new(method(Method::Replace), &key(), StdRng::seed_from_u64(seed))
            .apply(&text, &spans);
        let zed = &out.replacements[0].replacement;
        assert!(
            !others.contains(&zed.as_str()),
            "seed {seed}: {zed} is another name of the note"
        );
    }
}

proptest! {
    #[test]
    fn address_surrogates_keep_lines_parts_and_postcode_shapes(
        house in 1u32..99999, street in "[A-Z][a-z]{3,9}", suffix in "(St|Street|Ave|Road)",
        unit in proptest::option::of(1u32..400), city in "[A-Z][a-z]{3,11}",
        state in "[A-Z]{2}", zip in "[0-9]{5}", crlf in any::<bool>(), seed in any::<u64>(),
    ) {
        let nl = if crlf { "\r\n" } else { "\n" };
        let unit = unit.map(|u| format!(", Apt {u}")).unwrap_or_default();
        let original = format!("{house} {street} {suffix}{unit}{nl}{city}, {state} {zip}");
        let out = surrogate_of(&original, Label::StreetAddress, seed);
        let lines: Vec<&str> = out.split(nl).collect();
        prop_assert_eq!(lines.len(), 2, "{:?}", out);
        prop_assert_eq!(out.matches(',').count(), original.matches(',').count(), "{:?}", out);
        prop_assert!(!out.contains(street.as_str()) && !out.contains(city.as_str()), "{:?}", out);
        let last: Vec<&str> = lines[1].rsplit(", ").next().unwrap_or("").split(' ').collect();
        prop_assert_eq!(last.len(), 2, "{:?}", out);
        prop_assert!(last[0].len() == 2 && last[0].chars().all(|c| c.is_ascii_uppercase()), "{:?}", out);
        prop_assert!(last[1].len() == 5 && last[1].chars().all(|c| c.is_ascii_digit()), "{:?}", out);
        prop_assert_eq!(out.contains("Apt"), !unit.is_empty(), "{:?}", out);
    }
}

#[test]
fn name_surrogates_keep_the_gender_the_text_gives() {
    // Neither name is in the gender lists: the title, the pronoun and the relation word
    // decide.
    let text = "Seen with Mrs Ngaio Example; she is better. Her son Rewi called.";
    let spans = [
        sp(14, 19, Label::FirstName),
        sp(20, 27, Label::LastName),
        sp(52, 56, Label::FirstName),
    ];
    for seed in 0..20 {
        let out = Deidentifier::new(method(Method::Replace), &key(), StdRng::seed_from_u64(seed))
            .apply(text, &spans);
        let tane = &out.replacements[0].replacement;
        let rewi = &out.replacements[2].replacement;
        assert!(
            surrogate::female_names().contains(&tane.as_str()),
            "{}",
            out.text
        );
        assert!(
            surrogate::male_names().contains(&rewi.as_str()),
            "{}",
            out.text
        );
    }
    // A known given name keeps its own gender with a subject, whatever the note around it
    // says, so one patient's notes agree.
    let subject = key().subject("p-1");
    let one = |t: &str| {
        let opts = DeidOptions {
            subject: Some(subject.clone()),
            ..method(Method::Replace)
        };
        let n = "Maria".chars().count();
        Deidentifier::new(opts, &key(), StdRng::seed_from_u64(1))
            .apply(t, &[sp(0, n, Label::FirstName)])
            .replacements[0]
            .replacement
            .clone()
    };
    let a = one("Maria reports he is well.");
    let b = one("Maria is well.");
    assert_eq!(a, b);
    assert!(surrogate::female_names().contains(&a.as_str()), "{a}");
    // A name the lists do not know takes no cue from its context with a subject: the
    // context differs from note to note (and from `Patient.name` in another file of an
    // export), and the surrogate must not. Before, `she` drew from the female names and the
    // bare note from all.
    let ngaio = |t: &str| {
        let opts = DeidOptions {
            subject: Some(subject.clone()),
            ..method(Method::Replace)
        };
        Deidentifier::new(opts, &key(), StdRng::seed_from_u64(1))
            .apply(t, &[sp(0, 5, Label::FirstName)])
            .replacements[0]
            .replacement
            .clone()
    };
    assert_eq!(
        ngaio("Ngaio says she is better."),
        ngaio("Ngaio is better.")
    );
}

#[test]
fn with_a_subject_one_number_in_any_format_gets_the_same_digits() {
    let text = "Phone (253) 555-0187, also 253-555-0187 and 2535550187.";
    let at = |s: &str| text[..text.find(s).expect("in text")].chars().count();
    let spans: Vec<Span> = ["(253) 555-0187", "253-555-0187", "2535550187"]
        .iter()
        .map(|s| sp(at(s), at(s) + s.chars().count(), Label::Phone))
        .collect();
    let opts = DeidOptions {
        subject: Some(key().subject("p001")),
        ..method(Method::Replace)
    };
    let out = Deidentifier::new(opts, &key(), StdRng::seed_from_u64(1)).apply(text, &spans);
    let digits: Vec<String> = out
        .replacements
        .iter()
        .map(|r| r.replacement.chars().filter(char::is_ascii_digit).collect())
        .collect();
    assert!(digits.iter().all(|d| *d == digits[0]), "{}", out.text);
    assert_ne!(digits[0], "2535550187");
}
