//! Table tests of the context heuristics: each row is a text, a piece of it and the label
//! the piece must get (or `None`: it must stay unlabelled).

use super::ContextRecognizer;
use crate::detect::Label;

fn label_of(r: &ContextRecognizer, text: &str, piece: &str) -> Option<Label> {
    let start = text.find(piece)?;
    let cs = text[..start].chars().count();
    let ce = cs + piece.chars().count();
    r.find(text)
        .into_iter()
        .find(|s| s.start == cs && s.end == ce)
        .map(|s| s.label)
}

macro_rules! rows {
    ($($name:ident: $text:expr, $piece:expr => $want:expr;)*) => {$(
        #[test]
        fn $name() {
            let r = ContextRecognizer::new();
            assert_eq!(label_of(&r, $text, $piece), $want, "{:?} in {:?}", $piece, $text);
        }
    )*};
}

rows! {
    relation_then_a_sentence_is_not_a_name: "Her mother developed rash after penicillin.", "developed" => None;
    given_initial_surname: "says Ana D. Alves in an interview", "Alves" => Some(Label::LastName);
    given_initial_surname_first: "says Ana D. Alves in an interview", "Ana" => Some(Label::FirstName);
    given_initial_surname_initial: "says Ana D. Alves in an interview", "D" => Some(Label::MiddleName);
    eponym_after_title_is_a_surname: "Follow-up with Dr. Parkinson next week.", "Parkinson" => Some(Label::LastName);
    eponym_after_title_before_head_noun_is_a_term: "Known Dr. Parkinson disease? no", "Parkinson" => None;
    age_of: "My father retired at the age of 84", "84" => Some(Label::Age);
    years_of_age: "a woman 47 years of age presented", "47" => Some(Label::Age);
    id_after_id_field: "Badge ID QX-4471-B, seen", "QX-4471-B" => Some(Label::IdNum);
    patient_id_is_a_record_number: "Patient ID: QX-4471-B, seen", "QX-4471-B" => Some(Label::MedicalRecordNumber);
    id_after_hash: "see order #A20331 for details", "A20331" => Some(Label::IdNum);
    title_surname: "Seen by Dr. Reyes today.", "Reyes" => Some(Label::LastName);
    title_full_name: "Attending: Dr. Renée Mac an tSaoi    PCP", "Mac an tSaoi" => Some(Label::LastName);
    title_first_name: "Attending: Dr. Renée Mac an tSaoi    PCP", "Renée" => Some(Label::FirstName);
    field_last_first: "Patient: Davis, Conceição    MRN: 1", "Davis" => Some(Label::LastName);
    field_last_first_given: "Patient: Davis, Conceição    MRN: 1", "Conceição" => Some(Label::FirstName);
    all_caps_surname: "Pt: KAMIŃSKI, Rose   Age: 97", "KAMIŃSKI" => Some(Label::LastName);
    relation_lowercase: "home with brother hiawatha el-amin ((876) 687-9212)", "hiawatha" => Some(Label::FirstName);
    relation_ends_at_verb: "His son is at the bedside.", "is" => None;
    signature_initials: "Stable.\n/s/ MK, RN\n", "MK" => Some(Label::Person);
    signature_initial_dot: "-- W. Harris, resident PGY-2", "Harris" => Some(Label::LastName);
    credential: "Dictated by: Joshua Chatterjee, MD", "Chatterjee" => Some(Label::LastName);
    eponym_is_not_a_name: "Discussed with Parkinson clinic", "Parkinson" => None;
    org_suffix: "presented to Saint Anselm Rehabilitation Hospital today", "Saint Anselm Rehabilitation Hospital" => Some(Label::Organization);
    org_head: "presented to the Klinikum Neustadt-Süd emergency department", "Klinikum Neustadt-Süd" => Some(Label::Organization);
    age_yo: "S: 54-yo woman reports", "54" => Some(Label::Age);
    age_field: "Age: 29   Sex: M", "29" => Some(Label::Age);
    dose_is_not_age: "aspirin 81 mg daily", "81" => None;
    month_day: "on November 4 with", "November 4" => Some(Label::Date);
    month_ordinal: "on September tenth.", "September tenth" => Some(Label::Date);
    day_of_month: "signed on the fifth of August, 2017 at", "the fifth of August, 2017" => Some(Label::Date);
    rx_number: "(Rx #HU-95-842234, last filled", "HU-95-842234" => Some(Label::IdNum);
    iban_account: "Acct: DE29 7798 0816 0791 4234 20\nDOB", "DE29 7798 0816 0791 4234 20" => Some(Label::AccountNumber);
    username: "(username kwamem57).", "kwamem57" => Some(Label::Username);
    bare_url: "Web: records.lakeshorehealth.net/login\n", "records.lakeshorehealth.net/login" => Some(Label::Url);
    email_domain_is_not_url: "mail a.b@inbox-mail.net now", "inbox-mail.net" => None;
    country: "Glenelg SA 5045, Australia.", "Australia" => Some(Label::Country);
    city_state_zip: "25 Coronation Drive, Glenelg SA 5045, Australia", "Glenelg" => Some(Label::City);
    canadian_postcode: "Toronto ON  M5V 2T6\n", "M5V 2T6" => Some(Label::Zipcode);
    uk_postcode: "Norwich\nNR2 3PH\n", "NR2 3PH" => Some(Label::Zipcode);
    state_after_comma: "Bengaluru - 560038, Karnataka\n", "Karnataka" => Some(Label::State);
    indian_pin: "Bengaluru - 560038, Karnataka\n", "560038" => Some(Label::Zipcode);
    known_first_name: "Collateral from son Hyun-woo Moore, who", "Moore" => Some(Label::LastName);
    signed_by_dr_initial: "Electronically signed by Dr T. Huang on 7/13/2022", "Huang" => Some(Label::LastName);
    relation_lowercase_pair: "Husband juma joshi at bedside", "joshi" => Some(Label::LastName);
    uk_city_line: "211 Kingsley Road\nAberdeen\nAB24 3FX\n", "Aberdeen" => Some(Label::City);
    fax_after_word: "Tel: 020 7946 0896   Fax: 020 7946 0379\n", "020 7946 0379" => Some(Label::Fax);
    intl_phone: "contacted on +61 3 1445 8868 or", "+61 3 1445 8868" => Some(Label::Phone);
    german_street: "Karl-Marx-Allee 59\n60311 Frankfurt am Main", "Karl-Marx-Allee 59" => Some(Label::StreetAddress);
    german_city: "Karl-Marx-Allee 59\n60311 Frankfurt am Main.", "Frankfurt am Main" => Some(Label::City);
    plan_field: "Plan: Pioneer Senior Advantage    Member ID: X", "Pioneer Senior Advantage" => Some(Label::Organization);
    soap_plan_is_not_org: "Plan: continue aspirin", "continue aspirin" => None;
    employer: "Works as a driver for Kestrel Aerospace; lives in Savannah, GA", "Kestrel Aerospace" => Some(Label::Organization);
    lives_in: "Works as a driver for Kestrel Aerospace; lives in Savannah, GA", "Savannah" => Some(Label::City);
    nickname: "Grandson Michael \"Mike\" Virtanen at bedside", "Mike" => Some(Label::FirstName);
    nickname_surname: "Grandson Michael \"Mike\" Virtanen at bedside", "Virtanen" => Some(Label::LastName);
    lowercase_particles: "home with husband james von bülow (889", "von bülow" => Some(Label::LastName);
    city_before_state: "6081 Oak Street, Apt 25B, Savannah, Georgia 31471, USA", "Savannah" => Some(Label::City);
    zip_after_state: "6081 Oak Street, Apt 25B, Savannah, Georgia 31471, USA", "31471" => Some(Label::Zipcode);
    acronym_after_with_is_not_a_name: "CT abdomen with IV contrast", "IV" => None;
    comma_after_particle_surname: "Name: Mac an tSaoi, Sarah    DOB", "Mac an tSaoi" => Some(Label::LastName);
    given_after_particle_surname: "Name: Mac an tSaoi, Sarah    DOB", "Sarah" => Some(Label::FirstName);
    greeting_lowercase: "Hi ingrid,\n\nYour results", "ingrid" => Some(Label::FirstName);
    hospital_number_is_not_org: "DOB 2014-08-12, Hospital No. A8212062", "Hospital No" => None;
    letterhead_without_department: "Mount Carmel East Laboratory Services\nPatient: X", "Mount Carmel East" => Some(Label::Organization);
    org_ed_slot: "who presented to the Fecuraka Gisezamu East emergency department on 5/1", "Fecuraka Gisezamu East" => Some(Label::Organization);
    org_role_line: "Yours sincerely,\n\nC. Mwangi\nFamily Physician, Sulode Neustadt-Süd\nRegistration no. 2919168", "Sulode Neustadt-Süd" => Some(Label::Organization);
    org_clinic_phone: "seen by Dr. Reddy on 11/2018 at Tiwo Vale; clinic phone +1 666 812 0000", "Tiwo Vale" => Some(Label::Organization);
    org_comparison: "COMPARISON: 08/2015 from Lapodiza Rinu.\n\nFINDINGS:", "Lapodiza Rinu" => Some(Label::Organization);
    org_letter_from: "We also received the letter from Sude Malo about your knee.", "Sude Malo" => Some(Label::Organization);
    org_sent_to: "Report also sent to Resoho Zazeni (fax +1 821 679 8693).", "Resoho Zazeni" => Some(Label::Organization);
    org_sign_off: "Warm regards,\nPatricia Tran\nLapodiza Neustadt-Süd\n", "Lapodiza Neustadt-Süd" => Some(Label::Organization);
    org_inc_keeps_stop: "will pick pt up after work at Habuvo Inc.\n03:15 Pt states", "Habuvo Inc." => Some(Label::Organization);
    letter_from_doctor_is_not_org: "the letter from Dr. Sude about your knee", "Dr. Sude" => None;
    street_before_city_line: "with son Dorothy Reddy (4605430668), 1641 Defilo Hubewigu West, Moncton NB  E1C 4B8.", "1641 Defilo Hubewigu West" => Some(Label::StreetAddress);
    street_with_unit: "(688) 555-0184), 8681 Gerova Tozi, Unit 279\nBurlington, Vermont 05420", "8681 Gerova Tozi, Unit 279" => Some(Label::StreetAddress);
    first_name_then_surname: "Call Sarah Okafor tomorrow", "Okafor" => Some(Label::LastName);
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
