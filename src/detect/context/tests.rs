//! Table tests of the context heuristics: each row is a text, a piece of it and the label
//! the piece must get (or `None`: it must stay unlabelled).
//!
//! The rows for names are here; the rows for the other families sit beside their cues in
//! `places/*`, written with the same [`rows!`] macro. Every row runs the whole
//! [`ContextRecognizer`], overlap resolution included.

use super::ContextRecognizer;
use crate::detect::Label;

/// The label that the recognizer gives exactly `piece` (its first occurrence) in `text`.
pub(crate) fn label_of(r: &ContextRecognizer, text: &str, piece: &str) -> Option<Label> {
    let start = text.find(piece)?;
    let cs = text[..start].chars().count();
    let ce = cs + piece.chars().count();
    r.find(text)
        .into_iter()
        .find(|s| s.start == cs && s.end == ce)
        .map(|s| s.label)
}

/// One `#[test]` per row `name: text, piece => expected label;`.
macro_rules! rows {
    ($($name:ident: $text:expr, $piece:expr => $want:expr;)*) => {$(
        #[test]
        fn $name() {
            let r = $crate::detect::context::ContextRecognizer::new();
            assert_eq!(
                $crate::detect::context::tests::label_of(&r, $text, $piece),
                $want,
                "{:?} in {:?}",
                $piece,
                $text
            );
        }
    )*};
}
pub(crate) use rows;

rows! {
    initials_before_a_credential: "Tolerated well. —DF, RN", "DF" => Some(Label::Person);
    unit_before_a_credential_is_not_initials: "Report given to ICU RN.", "ICU" => None;
    protected_word_before_a_credential_is_a_surname: "Routed to Allen MD.", "Allen" => Some(Label::LastName);
    name_before_a_credential_after_words: "Follow up with PCP Yamamoto MD on 2/24/23.", "Yamamoto" => Some(Label::LastName);
    initials_run_together_in_a_signature: "Recheck.\n\n-- S.G., RN\n", "G" => Some(Label::LastName);
    field_in_a_pipe_table: "| Patient | DE LA CRUZ, APRIL U |", "DE LA CRUZ" => Some(Label::LastName);
    a_word_run_into_digits_is_no_name: "Spoke with pharmacy re: SpO2 94% on 2L.", "SpO" => None;
    an_initial_run_into_digits_is_no_name: "Patient presented with G2P1 and L4-L5 stenosis.", "G" => None;
    an_initial_run_into_digits_is_no_name_spine: "Patient presented with G2P1 and L4-L5 stenosis.", "L" => None;
    consult_in_parentheses: "Consults: cardiology(Garcia); GI—LaFleur—signed off; renal/Venkataraman.", "Garcia" => Some(Label::LastName);
    consult_after_a_dash: "Consults: cardiology(Garcia); GI—LaFleur—signed off; renal/Venkataraman.", "LaFleur" => Some(Label::LastName);
    consult_after_a_slash: "Consults: cardiology(Garcia); GI—LaFleur—signed off; renal/Venkataraman.", "Venkataraman" => Some(Label::LastName);
    clergy_title: "Contact: Rev. Thomas Brennan, St. Patrick's Parish.", "Thomas Brennan" => Some(Label::LastName);
    credential_as_a_title: "Stable; f/u with NP Chen in 2 wks.", "Chen" => Some(Label::LastName);
    credential_as_a_title_no_name: "Discussed with RN at bedside.", "RN" => None;
    consult_service_pair_is_not_a_name: "Consults: ID/Pulm following; Heme/Onc signed off.", "Pulm" => None;
    consult_service_pair_is_not_a_name_onc: "Consults: ID/Pulm following; Heme/Onc signed off.", "Onc" => None;
    slash_outside_a_consult_list_is_left: "Plan: cardiology/Garcia clinic", "Garcia" => None;
    relation_then_a_sentence_is_not_a_name: "Her mother developed rash after penicillin.", "developed" => None;
    given_initial_surname: "says Ana D. Alves in an interview", "Alves" => Some(Label::LastName);
    given_initial_surname_first: "says Ana D. Alves in an interview", "Ana" => Some(Label::FirstName);
    given_initial_surname_initial: "says Ana D. Alves in an interview", "D" => Some(Label::MiddleName);
    eponym_after_title_is_a_surname: "Follow-up with Dr. Parkinson next week.", "Parkinson" => Some(Label::LastName);
    eponym_after_title_before_head_noun_is_a_term: "Known Dr. Parkinson disease? no", "Parkinson" => None;
    title_surname: "Seen by Dr. Reyes today.", "Reyes" => Some(Label::LastName);
    title_full_name: "Attending: Dr. Renée Mac an tSaoi    PCP", "Mac an tSaoi" => Some(Label::LastName);
    title_first_name: "Attending: Dr. Renée Mac an tSaoi    PCP", "Renée" => Some(Label::FirstName);
    field_last_first: "Patient: Davis, Conceição    MRN: 1", "Davis" => Some(Label::LastName);
    field_last_first_given: "Patient: Davis, Conceição    MRN: 1", "Conceição" => Some(Label::FirstName);
    all_caps_surname: "Pt: KAMIŃSKI, Rose   Age: 97", "KAMIŃSKI" => Some(Label::LastName);
    relation_lowercase: "home with brother hiawatha el-amin ((876) 687-9212)", "hiawatha" => Some(Label::FirstName);
    relation_ends_at_verb: "His son is at the bedside.", "is" => None;
    relative_given_name: "Her son Miguel visited; daughter Aiyana called.", "Miguel" => Some(Label::FirstName);
    relative_given_name_second: "Her son Miguel visited; daughter Aiyana called.", "Aiyana" => Some(Label::FirstName);
    signature_initials: "Stable.\n/s/ MK, RN\n", "MK" => Some(Label::Person);
    signature_initial_dot: "-- W. Harris, resident PGY-2", "Harris" => Some(Label::LastName);
    credential: "Dictated by: Joshua Chatterjee, MD", "Chatterjee" => Some(Label::LastName);
    eponym_is_not_a_name: "Discussed with Parkinson clinic", "Parkinson" => None;
    device_eponym_is_not_a_name: "Bell's palsy resolved; Holter monitor showed no arrhythmia", "Holter" => None;
    line_eponym_is_not_a_name: "Discussed with Hickman line team", "Hickman" => None;
    known_first_name: "Collateral from son Hyun-woo Moore, who", "Moore" => Some(Label::LastName);
    signed_by_dr_initial: "Electronically signed by Dr T. Huang on 7/13/2022", "Huang" => Some(Label::LastName);
    relation_lowercase_pair: "Husband juma joshi at bedside", "joshi" => Some(Label::LastName);
    nickname: "Grandson Michael \"Mike\" Virtanen at bedside", "Mike" => Some(Label::FirstName);
    nickname_in_parentheses: "Name: Peter James Chalmers (\"Jim\") seen", "Jim" => Some(Label::FirstName);
    nickname_surname: "Grandson Michael \"Mike\" Virtanen at bedside", "Virtanen" => Some(Label::LastName);
    lowercase_particles: "home with husband james von bülow (889", "von bülow" => Some(Label::LastName);
    acronym_after_with_is_not_a_name: "CT abdomen with IV contrast", "IV" => None;
    comma_after_particle_surname: "Name: Mac an tSaoi, Sarah    DOB", "Mac an tSaoi" => Some(Label::LastName);
    given_after_particle_surname: "Name: Mac an tSaoi, Sarah    DOB", "Sarah" => Some(Label::FirstName);
    addressee_above_street: "Referral\n\nMaria Gustavsen\n1685 Mary Street\nSpringfield\n", "Gustavsen" => Some(Label::LastName);
    addressee_quoted: "> Johannes Varvio\n> 1685 Mary Street\n> Suite 9\n", "Johannes" => Some(Label::FirstName);
    company_above_street_is_not_a_name: "Hill Inc.\n1685 Mary Street\nSpringfield\n", "Hill" => None;
    heading_above_numbers_is_not_a_name: "Vital Signs\n120 Systolic\nHeart rate 80\n", "Vital" => None;
    greeting_lowercase: "Hi ingrid,\n\nYour results", "ingrid" => Some(Label::FirstName);
    first_name_then_surname: "Call Sarah Okafor tomorrow", "Okafor" => Some(Label::LastName);
    honorific_caseless_given: "रुग्ण श्री. अनिकेत माधव पाटील आहे.", "अनिकेत" => Some(Label::FirstName);
    honorific_caseless_family: "रुग्ण श्री. अनिकेत माधव पाटील आहे.", "पाटील" => Some(Label::LastName);
    honorific_tamil: "பதிவு: திரு மு. கார்த்திக், பிறந்த", "கார்த்திக்" => Some(Label::LastName);
    patient_word_arabic: "المريض كريم حسن حضر", "كريم" => Some(Label::FirstName);
    honorific_urdu_before_latin_text: "مریض جناب علی خان, DOB", "خان" => Some(Label::LastName);
    honorific_doctor_tamil: "குறிப்பு: டாக்டர் ஸ்ரீ. ஸ்ரீநிவாசன்; தேதி", "ஸ்ரீநிவாசன்" => Some(Label::LastName);
    honorific_married_marathi: "नाव सौ. वैशाली सुरेश देशमुख. जन्म", "देशमुख" => Some(Label::LastName);
    honorific_doctor_malayalam: "Patient ഡോ. പുതുശ്ശേരി രാമൻ. DOB", "രാമൻ" => Some(Label::LastName);
    patient_word_and_sardar_punjabi: "ਮਰੀਜ\u{0A3C} ਸ. ਜੱਸਪ੍ਰੀਤ ਸਿੰਘ. ਜਨਮ ਮਿਤੀ", "ਸਿੰਘ" => Some(Label::LastName);
    patient_word_and_sardar_punjabi_given: "ਮਰੀਜ\u{0A3C} ਸ. ਜੱਸਪ੍ਰੀਤ ਸਿੰਘ. ਜਨਮ ਮਿਤੀ", "ਜੱਸਪ੍ਰੀਤ" => Some(Label::FirstName);
    function_words_after_a_patient_word_are_no_name: "रोगी को मधुमेह है और", "मधुमेह" => None;
    function_words_end_a_caseless_name: "रोगी आरव शर्मा की ABHA संख्या", "शर्मा" => Some(Label::LastName);
    name_field_amharic: "ስም፡ ሰላም ተስፋዬ። የትውልድ", "ተስፋዬ" => Some(Label::LastName);
    name_field_chinese: "合成病例：患者姓名林晓，居民身份证号", "林晓" => Some(Label::Person);
    name_field_japanese: "氏名: 佐藤 花子、生年月日", "佐藤 花子" => Some(Label::Person);
    words_of_a_note_in_capitals_are_no_name: "PT IS A 76 YO M FROM TOWN", "IS" => None;
    a_name_in_capitals_after_a_field_stays: "PATIENT NAME: JOHNSON, ROBERT A    DOB", "ROBERT" => Some(Label::FirstName);
    medical_centre_by_its_short_name: "She had surgery at Mass General in 2015.", "Mass General" => Some(Label::Organization);
    medical_centre_with_a_hyphen: "prior care at Cedars-Sinai; PCP", "Cedars-Sinai" => Some(Label::Organization);
    patient_field_korean: "환자: 김민준, 주민등록번호", "김민준" => Some(Label::Person);
    patient_word_chinese_without_a_colon_is_no_field: "患者主诉头痛，三天", "主诉头痛" => None;
    identifier_name_after_a_comma_is_no_given_name: "Pacjent: Anna Kowalska, PESEL 44051401359", "PESEL" => None;
    name_field_cjk_reads_four_characters_at_most: "姓名林晓居民身份证号", "林晓居民" => Some(Label::Person);
    caseless_words_after_a_phrase_are_not_a_name: "Discussed with आरव शर्मा today", "आरव" => None;
    eponym_after_a_given_name_is_a_surname: "correct it to Mr. Janina Hartmann?", "Hartmann" => Some(Label::LastName);
    eponym_after_a_given_name_is_a_surname_given: "correct it to Mr. Janina Hartmann?", "Janina" => Some(Label::FirstName);
    eponym_after_a_given_name_before_a_head_noun_is_a_term: "Seen with John Hartmann procedure notes", "Hartmann" => None;
}

/// `surname_after`: the word after a given name, as the sweep asks for it.
#[test]
fn a_surname_follows_a_given_name_found_elsewhere() {
    use super::surname_after;
    fn after(text: &str, given: &str) -> Option<(Option<String>, String)> {
        let end = text.find(given).map(|b| b + given.len())?;
        let super::Surname {
            initial,
            word: (b, e),
        } = surname_after(text, end)?;
        Some((
            initial.map(|(b, e)| text[b..e].to_owned()),
            text[b..e].to_owned(),
        ))
    }
    let some = |i: Option<&str>, s: &str| Some((i.map(str::to_owned), s.to_owned()));
    assert_eq!(
        after("a huge Troy Hodneland fan", "Troy"),
        some(None, "Hodneland")
    );
    assert_eq!(
        after("sung by Ayşe Yılmaz in 2015", "Ayşe"),
        some(None, "Yılmaz")
    );
    assert_eq!(
        after("to Mr. Janina R. Hartmann?", "Janina"),
        some(Some("R"), "Hartmann")
    );
    // Not a surname: a sentence end, a field name, a company, a term, a lowercase word,
    // two spaces (a column), a line break.
    assert_eq!(after("with Troy. Monday we", "Troy"), None);
    assert_eq!(after("Troy MRN 4455", "Troy"), None);
    assert_eq!(after("Elmos Semiconductor AG", "Elmos"), None);
    assert_eq!(after("Troy Foley catheter", "Troy"), None);
    assert_eq!(after("Troy was here", "Troy"), None);
    assert_eq!(after("Troy  Hodneland", "Troy"), None);
    assert_eq!(after("Troy\nHodneland", "Troy"), None);
    assert_eq!(after("Troy", "Troy"), None);
}

#[test]
fn never_panics_on_odd_text() {
    let r = ContextRecognizer::new();
    for t in [
        "",
        "Dr.",
        "Dr. ",
        "Patient: ,",
        "-- ",
        "/s/",
        "Mr. É",
        "Age:",
        "Rx #",
        "the fifth of",
        "\u{1F600} Dr. X\u{0301}y",
    ] {
        let _ = r.find(t);
    }
}
