//! Person names after an anchor: titles (`Dr.`, `Mrs`), field labels (`Patient:`,
//! `Attending:`), phrases (`seen by`, `discussed with`), relation words (`son`,
//! `neighbour`; a pair of lowercase words is accepted there), signature markers (`--`, `/s/`), valedictions, credentials after a name
//! (`, MD`), a known first name before a capitalised word, and a given name, initial and
//! surname (`Hleb R. Tikhonov`) anywhere. After a title or a field label a protected term
//! is a surname (`Dr. Parkinson`) unless a clinical head noun follows (`Parkinson's
//! disease`).
//!
//! After the anchor at most five name tokens are read, joined by single spaces (a comma
//! once, for `Last, First`): capitalised words, all-caps words, initials, surname
//! particles (`van der`, `el-`). Words that are field names, credentials or protected
//! terms end the name.

use std::collections::HashSet;
use std::sync::OnceLock;

use regex::Regex;
use unicode_normalization::char::is_combining_mark;

use super::{re, ByteSpan, STRONG, WEAK};
use crate::detect::protected::{followed_by_head, is_protected_at, PATIENT_WORDS, TITLES};
use crate::detect::Label;

const FIRST_NAMES: &str = include_str!("../lists/first_names.txt");

/// How much to trust what follows an anchor.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// Title or field label: a person's slot. As `Strong`, and a protected term there is a
    /// surname (`Dr. Parkinson`) unless a clinical head noun follows it.
    Person,
    /// Phrases, credentials, known first names: capitalised and all-caps words,
    /// `Last, First`.
    Strong,
    /// Relation word: also two lowercase words before `(` or `,`.
    Relation,
    /// `--` or `/s/` at a line start: initials alone (`MK`) are a person.
    Signature,
    /// Right after a given name found by any recognizer: the first word stands in a name
    /// position, so a protected term there is a surname unless a clinical head noun follows.
    After,
}

/// Lowercase surname particles.
const PARTICLES: &[&str] = &[
    "van", "von", "der", "den", "de", "del", "della", "da", "di", "du", "la", "le", "dos", "das",
    "bin", "binti", "al", "el", "ibn", "an", "ter", "ten", "y", "zu", "af", "av", "st.",
];
/// Capitalised particles that start a surname when more words follow.
const CAP_PARTICLES: &[&str] = &[
    "Van", "Von", "De", "Del", "Della", "Da", "Di", "Du", "La", "Le", "Mac", "Mc", "St.", "Ó", "O",
    "Ní", "Nic", "Bin", "Al", "El", "Ten", "Ter", "Dos", "Das",
];
/// Words that end a name: credentials, field names, roles and common capitalised words;
/// with them a record's field names and the names of identifiers
/// ([`crate::detect::protected::is_record_word`]).
const STOP: &[&str] = &[
    "MD",
    "DO",
    "RN",
    "NP",
    "PA",
    "PA-C",
    "PhD",
    "FRCP",
    "FRCS",
    "MBBS",
    "MRCP",
    "DNP",
    "APRN",
    "LPN",
    "BSN",
    "MSN",
    "PharmD",
    "DDS",
    "FACP",
    "FACC",
    "ID",
    "Age",
    "Sex",
    "Acct",
    "Account",
    "Insurance",
    "Phone",
    "Tel",
    "Fax",
    "Email",
    "Web",
    "The",
    "And",
    "Or",
    "Of",
    "In",
    "On",
    "At",
    "To",
    "For",
    "With",
    "From",
    "By",
    "He",
    "She",
    "They",
    "His",
    "Her",
    "Patient",
    "Pt",
    "Name",
    "Date",
    "Time",
    "Dept",
    "Department",
    "Hospital",
    "Clinic",
    "Unit",
    "Ward",
    "Room",
    "Bed",
    "Service",
    "Services",
    "Consultant",
    "Physician",
    "Resident",
    "Attending",
    "Nurse",
    "Doctor",
    "Dr",
    "Mr",
    "Mrs",
    "Ms",
    "Re",
    "Dear",
    "DISCHARGE",
    "SUMMARY",
    "HISTORY",
    "NOTE",
    "PROGRESS",
    "ADMISSION",
    "MEDICATIONS",
    "Admission",
    "Discharge",
    "Follow-up",
    "Signed",
    "Electronically",
    "Dictated",
    "Thank",
    "Thanks",
    "Yours",
    "Sincerely",
    "Regards",
    "Kind",
    "Best",
    "Please",
    "Who",
    "Emergency",
    "Cardiology",
    "Neurology",
    "Oncology",
    "Radiology",
    "Surgery",
    "Medicine",
    "General",
    "Practitioner",
    "Facharzt",
    "Registration",
    "Collateral",
    "Specimen",
    "Ordering",
    "Provider",
    "Referring",
    "Mon",
    "Tue",
    "Wed",
    "Thu",
    "Fri",
    "Sat",
    "Sun",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
    "January",
    "February",
    "March",
    "April",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
    "Jan",
    "Feb",
    "Mar",
    "Apr",
    "Jun",
    "Jul",
    "Aug",
    "Sep",
    "Sept",
    "Oct",
    "Nov",
    "Dec",
    "We",
    "You",
    "It",
    "This",
    "That",
    "An",
    "No",
    "Yes",
    "Not",
    "Is",
    "Was",
    "Has",
    "Had",
    "Seen",
    "See",
    "Plan",
    "Assessment",
    "Impression",
    "Findings",
    "Exam",
    "CT",
    "MRI",
    "ED",
    "ICU",
    "PCP",
    "OR",
    "BP",
    "HR",
    "RR",
    "Wt",
    "BMI",
    "SpO2",
    "Sincerely,",
    // Postpositions, conjunctions and verbs of the caseless scripts (Hindi, Marathi,
    // Bengali, Urdu, Punjabi, Gujarati, Telugu, Tamil, Kannada): after a patient word
    // `रोगी को मधुमेह है` ("the patient has diabetes") was read as a three-word name.
    "का",
    "के",
    "की",
    "को",
    "से",
    "में",
    "पर",
    "ने",
    "है",
    "हैं",
    "था",
    "थी",
    "थे",
    "और",
    "या",
    "लिए",
    "कि",
    "भी",
    "तो",
    "ही",
    "यह",
    "वह",
    "इस",
    "उस",
    "आज",
    "नहीं",
    "साथ",
    "द्वारा",
    "बाद",
    "तक",
    "आहे",
    "आहेत",
    "होते",
    "होता",
    "आणि",
    "ला",
    "चे",
    "ची",
    "चा",
    "च्या",
    "मध्ये",
    "এবং",
    "ও",
    "এর",
    "কে",
    "থেকে",
    "আছে",
    "ছিল",
    "জন্য",
    "সাথে",
    "کا",
    "کے",
    "کی",
    "کو",
    "سے",
    "میں",
    "پر",
    "نے",
    "ہے",
    "ہیں",
    "تھا",
    "تھی",
    "اور",
    "یا",
    "لیے",
    "کہ",
    "بھی",
    "ਦਾ",
    "ਦੇ",
    "ਦੀ",
    "ਨੂੰ",
    "ਤੋਂ",
    "ਵਿੱਚ",
    "ਹੈ",
    "ਅਤੇ",
    "ਨੇ",
    "નો",
    "ની",
    "નું",
    "ને",
    "માં",
    "છે",
    "અને",
    "కోసం",
    "లో",
    "కి",
    "మరియు",
    "ఉంది",
    "மற்றும்",
    "உள்ளது",
    "ಮತ್ತು",
    "ಇದೆ",
    "ಅವರು",
];
/// Services and their short forms, which a consult list joins with `/` or a dash as it
/// joins a service and its consultant (`ID/Pulm`, `Heme/Onc`, `GI—Hepatology`).
const SERVICES: &[&str] = &[
    "Cards",
    "Cardiology",
    "Cardiac",
    "GI",
    "Hepatology",
    "Hepatic",
    "ID",
    "Pulm",
    "Pulmonary",
    "Renal",
    "Nephro",
    "Nephrology",
    "Neuro",
    "Neurology",
    "Neurosurgery",
    "NSGY",
    "Heme",
    "Hem",
    "Onc",
    "Oncology",
    "Hematology",
    "Endo",
    "Endocrine",
    "Endocrinology",
    "Derm",
    "Dermatology",
    "Psych",
    "Psychiatry",
    "Ortho",
    "Orthopedics",
    "Orthopaedics",
    "Surgery",
    "Gen",
    "General",
    "Vascular",
    "Urology",
    "Uro",
    "ENT",
    "OB",
    "GYN",
    "OBGYN",
    "Rheum",
    "Rheumatology",
    "Palliative",
    "PT",
    "OT",
    "SLP",
    "SW",
    "Nutrition",
    "Rehab",
    "PM&R",
    "Geriatrics",
    "Geri",
    "Wound",
    "Pain",
    "Anesthesia",
    "Transplant",
    "IR",
    "Radiology",
    "Ophtho",
    "Ophthalmology",
    "CT",
    "Thoracic",
    "Trauma",
    "Tox",
    "Toxicology",
    "Allergy",
    "Immunology",
    "Genetics",
    "Gastroenterology",
    "Infectious",
    "Medicine",
    "Team",
    "Service",
    "Chaplain",
    "Chaplaincy",
    "Ethics",
    "Social",
    "Case",
    "CM",
    "Dietitian",
    "EP",
    "HF",
    "CHF",
    "Stroke",
    "Spine",
    "Hand",
    "Plastics",
    "Breast",
    "Colorectal",
    "CRS",
    "Hospice",
    "Peds",
    "NICU",
    "MFM",
    "Nursing",
    "Pharmacy",
    "Speech",
    "Physical",
    "Occupational",
    "Respiratory",
    "RT",
    "Diabetes",
    "Sleep",
    "Addiction",
    "Dental",
    "Oral",
    "Maxillofacial",
    "OMFS",
    "Burn",
    "Critical",
    "Care",
    "ICU",
    "MICU",
    "SICU",
    "CCU",
    "Hospitalist",
    "Hospitalists",
];

/// Words that make a line a company's, not a person's (`Hill Inc.`, `Georg Fischer AG`).
const CORPORATE: &[&str] = &[
    "Inc",
    "Ltd",
    "LLC",
    "LLP",
    "Corp",
    "Corporation",
    "Company",
    "Co",
    "AG",
    "GmbH",
    "SA",
    "plc",
    "PLC",
    "Group",
    "Holdings",
    "Bank",
    "Trust",
    "Fund",
    "Partners",
    "Associates",
    "Clinic",
    "Hospital",
    "Practice",
    "Centre",
    "Center",
    "Services",
    "Pharmacy",
    "Surgery",
];

/// Lowercase words that end a relation name.
const FUNCTION: &[&str] = &[
    "is", "was", "who", "at", "and", "the", "a", "an", "of", "in", "on", "to", "with", "will",
    "has", "had", "have", "says", "said", "reports", "present", "here", "also", "may", "can",
    "his", "her", "their", "called", "visited", "passed", "died", "lives", "is", "are", "were",
    "by", "for", "from", "that", "this", "not", "no", "but", "or", "via", "about", "bedside",
];

/// One name token (byte range) and its shape.
#[derive(Clone, Copy, Debug)]
struct Tok {
    start: usize,
    end: usize,
    kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Initial,
    Cap,
    AllCaps,
    Particle,
    Lower,
    /// A quoted nickname (`"Mike"`), without its quotes.
    Nick,
    /// A word of a script without letter case (Devanagari, Arabic, Tamil, …): a name only
    /// in a person's slot, after a title or label.
    Caseless,
}

/// Most words of a caseless script taken as one name: given, father's or middle, family
/// name. Without capitals nothing shows where a name ends, so a longer run is a sentence.
const MAX_CASELESS: usize = 3;

/// The compiled name heuristics.
#[derive(Debug)]
pub(crate) struct Names {
    anchors: Vec<(Regex, Mode)>,
    token: Regex,
    credential: Regex,
    capword: Regex,
    nick: Regex,
    greeting: Regex,
    /// A Han or Hangul name field and the name after it (group 1).
    name_field_cjk: Regex,
    initial_name: Regex,
    addressee: Regex,
    consults: Regex,
    consultant: Regex,
}

fn first_names() -> &'static HashSet<&'static str> {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| {
        FIRST_NAMES
            .lines()
            .filter(|l| !l.starts_with('#'))
            .flat_map(str::split_whitespace)
            .collect()
    })
}

/// Function words that no name is, written in capitals by notes in capitals (`PT IS A 76
/// YO M` read `IS A` as a name). Not [`STOP`]'s capitalised words: `APRIL` and `JUNE` are
/// given names there too; nor `MAY`, `WILL`, `CAN`, which are names.
const SHOUTED: &[&str] = &[
    "IS", "WAS", "WHO", "AT", "AND", "THE", "OF", "IN", "ON", "TO", "WITH", "HAS", "HAD", "HAVE",
    "SAYS", "SAID", "HIS", "HER", "THEIR", "ARE", "WERE", "BY", "FOR", "FROM", "THAT", "THIS",
    "NOT", "NO", "BUT", "OR", "VIA", "ABOUT",
];

/// True when `word` is in `stop` or is one of [`SHOUTED`].
fn is_stop(stop: &HashSet<&'static str>, word: &str) -> bool {
    stop.contains(word) || SHOUTED.contains(&word)
}

fn stop_words() -> &'static HashSet<&'static str> {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| {
        STOP.iter()
            .chain(crate::detect::protected::RECORD_FIELDS)
            .chain(crate::detect::protected::IDENTIFIER_NAMES)
            .copied()
            .collect()
    })
}

impl Names {
    /// The one compiled set, shared by the context recognizer and [`surname_after`], so the
    /// patterns are compiled once per process.
    pub(crate) fn shared() -> &'static Names {
        static NAMES: OnceLock<Names> = OnceLock::new();
        NAMES.get_or_init(Names::new)
    }

    fn new() -> Self {
        let title = format!(r"\b(?:{})\.?[ \t]+", TITLES.join("|"));
        let patient = format!(
            r"\b(?:{})[ \t]+(?:(?:{})\.?[ \t]+)?",
            PATIENT_WORDS.join("|"),
            TITLES.join("|")
        );
        let field = r"(?i)\b(?:patient(?:[ \t]+name)?|pt|name|re|attending(?:[ \t]+physician)?|pcp|ordering(?:[ \t]+(?:provider|physician))?|referring(?:[ \t]+(?:provider|physician|doctor))?|provider|physician|surgeon|consultant|resident|nurse|dictated[ \t]+by|signed[ \t]+by|reviewed[ \t]+by|transcribed[ \t]+by|verified[ \t]+by|cc|guarantor|emergency[ \t]+contact|next[ \t]+of[ \t]+kin|nok|to|from|author|clinician|therapist|midwife|pharmacist|gp)[ \t]*(?:[:#]|\|)[ \t]*";
        // A nurse's or practitioner's credential may stand as a title after the phrase
        // (`f/u with NP Chen`, `discussed with RN Okafor`).
        let phrase = r"(?i)\b(?:electronically[ \t]+signed[ \t]+by|signed[ \t]+by|seen[ \t]+by|seen[ \t]+with|discussed[ \t]+with|reviewed[ \t]+with|dictated[ \t]+by|referred[ \t]+by|examined[ \t]+by|spoke[ \t]+(?:with|to)|care[ \t]+of|c/o|dear|re|pt|attn\.?|called[ \t]+to|reported[ \t]+to|medical[ \t]+student|student|hi|hello|states|with|per|paged|notified|informed|contacted)[ \t]+(?-i:(?:NP|RN|LPN|APRN|PA-C|CRNA|CNM|LCSW|CNA)\.?[ \t]+)?";
        let relation = r"(?i)\b(?:son|daughter|brother|sister|wife|husband|mother|father|mom|mum|dad|partner|spouse|neighbou?r|friend|niece|nephew|aunt|uncle|cousin|grandson|granddaughter|grandmother|grandfather|guardian|caregiver|carer|fianc[ée]e?|roommate|landlord|employer|colleague|sibling)s?\b,?[ \t]+";
        let signature = r"(?m)^[ \t]*(?:--|/s/|—)[ \t]*";
        let valediction = r"(?i)\b(?:sincerely|regards|best[ \t]+wishes|yours[ \t]+truly|yours[ \t]+faithfully|with[ \t]+thanks),?[ \t]*\r?\n(?:[ \t]*\r?\n)*[ \t]*";
        let tok = r"[\p{L}][\p{L}\p{M}'’-]*";
        Names {
            anchors: vec![
                (re(&title), Mode::Person),
                (re(&patient), Mode::Person),
                (re(field), Mode::Person),
                // The Amharic name field (`ስም፡ ሰላም ተስፋዬ`), with the Ethiopic wordspace
                // as its colon.
                (re(r"(?:^|[^\p{L}\p{M}])ስም[ \t]*[፡:][ \t]*"), Mode::Person),
                (re(phrase), Mode::Strong),
                (re(relation), Mode::Relation),
                (re(signature), Mode::Signature),
                (re(valediction), Mode::Strong),
            ],
            token: re(tok),
            credential: re(&format!(
                r"((?:{tok}\.?[ \t]+){{0,3}}{tok}),?[ \t]+(?:MD|M\.D\.|DO|RN|NP|PA-C|PhD|FRCP|FRCS|MBBS|MRCP|DNP|APRN|LPN|PharmD|FACP|FACC)\b"
            )),
            capword: re(r"\b\p{Lu}[\p{L}\p{M}'’-]+"),
            greeting: re(r"(?m)^(?:Hi|Hello|Dear)[ \t]+(\p{Ll}[\p{L}\p{M}'’-]*),"),
            // Han and Hangul run words together (`患者姓名林晓，居民…`), so the name is at
            // most four of their characters, and one more such run after a space (`佐藤
            // 花子`); the field needs no boundary before it (`患者姓名`). The word for the
            // patient is a field only with its colon, and its name only two to four
            // characters with a stop after them (`환자: 김민준,`): `患者主诉头痛` is "the
            // patient complains of headache".
            name_field_cjk: re(
                r"(?:(?:姓名|氏名|名前|이름|성명)[ \t]*[:：]?[ \t]*([\p{Han}\p{Hangul}]{1,4}(?:[ 　][\p{Han}\p{Hangul}]{1,4})?)|(?:患者|病人|환자)[ \t]*[:：][ \t]*([\p{Han}\p{Hangul}]{2,4})(?:[，,、。；; \t]|$))",
            ),
            initial_name: re(
                r"\b(\p{Lu}\p{Ll}[\p{L}\p{M}'’-]+)[ \t]+(\p{Lu})\.[ \t]+(\p{Lu}[\p{L}\p{M}'’-]*\p{L})",
            ),
            // `"Mike"`, or in parentheses: `("Jim")`.
            nick: re(r#"^\(?["'“‘](\p{Lu}[\p{L}\p{M}-]*)["'”’]\)?"#),
            // The line above a postal block: capitalised words alone on a line, then a line
            // that is a house number and a street's words, then a line that starts with a
            // capital (the unit or the town). Quoting marks (`> `) may open each line.
            // A consult list (`Consults: cardiology(Garcia); GI—LaFleur; renal/Bell`):
            // each service is followed by its consultant's name run together with `(`, `/`
            // or a dash.
            consults: re(
                r"(?im)^[ \t]*(?:consults?|consultants?|consulting(?:[ \t]+services?)?|consulted)[ \t]*:[^\n]*",
            ),
            consultant: re(r"[\p{L}.&](?:\(|/|—|–)[ \t]*(?:(?:Drs?|Dr)\.?[ \t]+)?"),
            addressee: re(
                r"(?m)^[^\p{L}\d\n]*(\p{Lu}[\p{L}\p{M}'’.-]*(?:[ \t]+\p{Lu}[\p{L}\p{M}'’.-]*){1,3})[ \t]*\r?\n[^\p{L}\d\n]*\d{1,5}[A-Za-z]?[ \t]+\p{Lu}[\p{L}\p{M}'’.-]*(?:[ \t]+\p{Lu}[\p{L}\p{M}'’.-]*){0,4}[ \t]*\r?\n[^\p{L}\d\n]*\p{Lu}",
            ),
        }
    }

    pub(crate) fn find(&self, text: &str, out: &mut Vec<ByteSpan>) {
        for (anchor, mode) in &self.anchors {
            for m in anchor.find_iter(text) {
                let (toks, comma) = self.take(text, m.end(), *mode);
                label_tokens(text, &toks, comma, *mode, STRONG, out);
            }
        }
        for caps in self.credential.captures_iter(text) {
            let Some(g) = caps.get(1) else { continue };
            // The name is the longest run of name words that ends at the credential (`Routed
            // to Allen MD`: `Allen`), the earliest start first. Before a credential the words
            // are a person's, as after a title: a protected term there is a surname.
            for word in self.token.find_iter(g.as_str()) {
                let (toks, _) = self.take(text, g.start() + word.start(), Mode::Person);
                let toks: Vec<Tok> = toks.into_iter().filter(|t| t.end <= g.end()).collect();
                let reaches = toks
                    .last()
                    .is_some_and(|t| t.end == g.end() || text[t.end..g.end()] == *".");
                if !reaches {
                    continue;
                }
                // Capitals alone before a credential are initials (`—DF, RN`), as after a
                // signature marker.
                let initials = toks.len() == 1 && toks[0].kind == Kind::AllCaps;
                let mode = if initials {
                    Mode::Signature
                } else {
                    Mode::Strong
                };
                label_tokens(text, &toks, None, mode, STRONG, out);
                break;
            }
        }
        // A known first name followed by a capitalised word.
        let names = first_names();
        for m in self.capword.find_iter(text) {
            if !names.contains(m.as_str()) {
                continue;
            }
            let (toks, comma) = self.take(text, m.start(), Mode::Strong);
            if toks.len() >= 2 {
                label_tokens(text, &toks, comma, Mode::Strong, WEAK, out);
            }
        }
        // A given name, an initial and a surname (`Hleb R. Tikhonov`): the initial between
        // two capitalised words is a person's shape in any layout.
        for caps in self.initial_name.captures_iter(text) {
            let (Some(first), Some(initial), Some(last)) = (caps.get(1), caps.get(2), caps.get(3))
            else {
                continue;
            };
            let stop = stop_words();
            let words = [first.as_str(), last.as_str()];
            if words
                .iter()
                .any(|w| stop.contains(w) || is_protected_at(w, &text[last.end()..]))
            {
                continue;
            }
            out.push(ByteSpan::new(
                first.start(),
                first.end(),
                Label::FirstName,
                WEAK,
            ));
            out.push(ByteSpan::new(
                initial.start(),
                initial.end(),
                Label::MiddleName,
                WEAK,
            ));
            out.push(ByteSpan::new(
                last.start(),
                last.end(),
                Label::LastName,
                WEAK,
            ));
        }
        // The addressee of a postal block (`Maria Gustavsen⏎1685 Mary Street⏎Springfield`):
        // every word of the line must read as a name part, so a company's line (`Hill Inc.`)
        // or a heading stays.
        for caps in self.addressee.captures_iter(text) {
            let Some(g) = caps.get(1) else { continue };
            let (toks, _) = self.take(text, g.start(), Mode::Strong);
            let whole = toks.last().is_some_and(|t| {
                t.end == g.end() || text[t.end..g.end()].trim_end_matches('.').is_empty()
            });
            let words = g.as_str().split_whitespace();
            let suffix = words
                .clone()
                .any(|w| CORPORATE.contains(&w.trim_end_matches(['.', ','])));
            if whole && toks.len() >= 2 && !suffix {
                label_tokens(text, &toks, None, Mode::Strong, WEAK, out);
            }
        }
        // A consult list: after a service and `(`, `/` or a dash, a capitalised name that
        // is not a service itself (`ID/Pulm`, `Heme/Onc`).
        for line in self.consults.find_iter(text) {
            for m in self.consultant.find_iter(line.as_str()) {
                let pos = line.start() + m.end();
                let (toks, _) = self.take(text, pos, Mode::Strong);
                let service = toks.first().is_some_and(|t| {
                    let w = text[t.start..t.end].trim_end_matches('.');
                    SERVICES.iter().any(|s| s.eq_ignore_ascii_case(w))
                });
                if !service && toks.first().is_some_and(|t| t.start == pos) {
                    label_tokens(text, &toks, None, Mode::Strong, WEAK, out);
                }
            }
        }
        // A greeting to a lowercase first name (`Hi ingrid,`).
        for caps in self.greeting.captures_iter(text) {
            if let Some(g) = caps.get(1) {
                out.push(ByteSpan::new(g.start(), g.end(), Label::FirstName, WEAK));
            }
        }
        for caps in self.name_field_cjk.captures_iter(text) {
            if let Some(g) = caps.get(1).or_else(|| caps.get(2)) {
                out.push(ByteSpan::new(g.start(), g.end(), Label::Person, STRONG));
            }
        }
    }

    /// Reads name tokens from byte `pos` (see the module docs).
    fn take(&self, text: &str, mut pos: usize, mode: Mode) -> (Vec<Tok>, Option<usize>) {
        let mut toks: Vec<Tok> = Vec::new();
        let mut comma_used = false;
        let mut comma_after = None;
        let stop = stop_words();
        while toks.len() < 5 {
            let nick = self.nick.captures(&text[pos..]);
            if let Some((n, whole)) = nick.as_ref().and_then(|c| c.get(1).zip(c.get(0))) {
                if !toks.is_empty() {
                    let (start, end) = (pos + n.start(), pos + n.end());
                    toks.push(Tok {
                        start,
                        end,
                        kind: Kind::Nick,
                    });
                    // Past the closing quote (and parenthesis).
                    let close = pos + whole.end();
                    if text[close..].starts_with(' ') {
                        pos = close + 1;
                        continue;
                    }
                    break;
                }
            }
            let Some(m) = self.token.find_at(text, pos) else {
                break;
            };
            if m.start() != pos {
                break;
            }
            let word = m.as_str().trim_end_matches(['-', '\'', '’']);
            if word.is_empty() {
                break;
            }
            let end = m.start() + word.len();
            let after = &text[end..];
            let kind = classify(word);
            // A title, a label or a name word just before makes this a person's slot: there a
            // protected term is a surname (`Dr. Parkinson`, `Janina Hartmann`) unless a
            // clinical head noun follows (`Parkinson's disease`).
            let name_position = if toks.is_empty() {
                matches!(mode, Mode::Person | Mode::After)
            } else {
                toks.last()
                    .is_some_and(|t| matches!(t.kind, Kind::Cap | Kind::Initial | Kind::Nick))
            };
            let stopped = is_stop(stop, word)
                // A word run into digits is a code or a measure (`SpO2`, `G2P1`, `L4-L5`),
                // never a name.
                || after.starts_with(|c: char| c.is_ascii_digit())
                || word.starts_with("non-")
                || is_stop(stop, word.trim_end_matches('.'))
                || (is_protected_at(word, after) && (!name_position || followed_by_head(after)))
                // Any word before a clinical head noun names a term (`Hickman line`,
                // `Holter monitor`), listed or not; only a title or label makes it a person.
                || (mode != Mode::Person && followed_by_head(after))
                || (kind == Kind::Lower && (mode != Mode::Relation || FUNCTION.contains(&word)))
                || (kind == Kind::Caseless
                    && (mode != Mode::Person
                        || toks.iter().filter(|t| t.kind == Kind::Caseless).count()
                            >= MAX_CASELESS))
                // A name written in a caseless script does not go on in another one.
                || (kind != Kind::Caseless
                    && toks.last().is_some_and(|t| t.kind == Kind::Caseless));
            if stopped {
                break;
            }
            toks.push(Tok {
                start: m.start(),
                end,
                kind,
            });
            // Separator: an initial's full stop, then one space, or a comma and a space once.
            let mut p = end;
            // A short caseless word with a full stop is an initial too (`மு.`, `कु.`,
            // `ஸ்ரீ.`): two letters at most, its vowel signs not counted (they are
            // alphabetic to `char`, and combining marks), and only before the name's
            // first whole word: after one, the full stop ends the name (`ਜੱਸਪ੍ਰੀਤ ਸਿੰਘ. ਜਨਮ`,
            // "Singh. Born", where `ਸਿੰਘ` has two letters).
            let short = |w: &str| {
                w.chars()
                    .filter(|c| c.is_alphabetic() && !is_combining_mark(*c))
                    .count()
                    <= 2
            };
            let caseless_initial = kind == Kind::Caseless
                && short(word)
                && !toks[..toks.len() - 1]
                    .iter()
                    .any(|t| t.kind == Kind::Caseless && !short(&text[t.start..t.end]))
                && text[p..].starts_with(". ");
            if (kind == Kind::Initial || caseless_initial) && text[p..].starts_with('.') {
                p += 1;
            }
            let rest = &text[p..];
            if rest.starts_with(", ")
                && !comma_used
                && toks.len() <= 3
                && mode != Mode::Signature
                && matches!(kind, Kind::Cap | Kind::AllCaps)
                && rest[2..].starts_with(|c: char| c.is_uppercase())
            {
                comma_used = true;
                comma_after = Some(toks.len() - 1);
                pos = p + 2;
            } else if (kind == Kind::Initial || caseless_initial)
                && text[end..].starts_with('.')
                && rest.starts_with(|c: char| c.is_uppercase())
                && rest.chars().nth(1) == Some('.')
            {
                // Initials run together (`S.G.`, `J.D.`): the next one follows its dot.
                pos = p;
            } else if rest.starts_with(' ') && !rest.starts_with("  ") {
                pos = p + 1;
            } else {
                break;
            }
        }
        // Trailing particles are not names.
        while toks.last().is_some_and(|t| t.kind == Kind::Particle) {
            toks.pop();
        }
        // Lowercase words only as a pair after a relation word (`brother juma joshi`).
        if toks.iter().any(|t| t.kind == Kind::Lower) {
            let all_lower = toks
                .iter()
                .all(|t| matches!(t.kind, Kind::Lower | Kind::Particle));
            // …and only where a name ends: before `(`, `,`, `;`, a function word or the end of
            // a line, so that `mother developed rash after penicillin.` is a sentence, not a
            // name.
            let closes = toks.last().is_some_and(|t| {
                let rest = text[t.end..].trim_start_matches([' ', '\t']);
                let next = rest.split_whitespace().next().unwrap_or("");
                rest.is_empty()
                    || rest.starts_with(['(', ',', ';', '\n', '\r'])
                    || FUNCTION.contains(&next)
            });
            if !(all_lower && closes && (2..=4).contains(&toks.len())) {
                toks.retain(|t| t.kind != Kind::Lower);
                if toks.iter().any(|t| t.kind == Kind::Particle) && toks.len() < 2 {
                    toks.clear();
                }
            }
        }
        // `Last, First` needs a name after the comma.
        if comma_after.is_some_and(|c| c + 1 >= toks.len()) {
            comma_after = None;
        }
        (toks, comma_after)
    }
}

/// The surname that follows a given name ending at byte `end` (`Troy Hodneland`, `Ayşe
/// Yılmaz`, `Janina R. Hartmann`): one space, an optional initial, then one capitalised
/// word that passes every check a name word passes after an anchor (not a field name,
/// credential, company word, protected term in a term's position, or a word before a
/// clinical head noun).
///
/// The given name may come from the model, so this runs after the merge
/// ([`crate::detect::sweep`]); a capital at a sentence start cannot follow it, because a
/// sentence end (a full stop) is not a single space.
pub(crate) fn surname_after(text: &str, end: usize) -> Option<Surname> {
    let names = Names::shared();
    let rest = text.get(end..)?;
    let gap = if rest.starts_with(' ') || rest.starts_with('\t') {
        1
    } else {
        return None;
    };
    if rest[gap..].starts_with(char::is_whitespace) {
        return None;
    }
    let (toks, comma) = names.take(text, end + gap, Mode::After);
    if comma.is_some() {
        return None;
    }
    let (initial, surname) = match toks.as_slice() {
        [s, ..] if s.kind == Kind::Cap => (None, s),
        [i, s, ..] if i.kind == Kind::Initial && s.kind == Kind::Cap => (Some((i.start, i.end)), s),
        _ => return None,
    };
    // `Elmos Semiconductor AG`: a company word right after makes the pair a company's name.
    let word = text[surname.start..surname.end].trim_end_matches(['.', ',']);
    let next = text[surname.end..]
        .strip_prefix(' ')
        .and_then(|r| r.split_whitespace().next())
        .map_or("", |w| w.trim_end_matches(['.', ',']));
    if CORPORATE.contains(&word)
        || CORPORATE.contains(&next)
        || word.chars().filter(|c| c.is_alphabetic()).count() < 2
    {
        return None;
    }
    Some(Surname {
        initial,
        word: (surname.start, surname.end),
    })
}

/// What [`surname_after`] found, as byte ranges.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Surname {
    /// A middle initial between the given name and the surname (`R` in `Janina R. Hartmann`).
    pub(crate) initial: Option<(usize, usize)>,
    /// The surname.
    pub(crate) word: (usize, usize),
}

fn classify(word: &str) -> Kind {
    let mut chars = word.chars();
    let first = chars.next().unwrap_or(' ');
    let letters: Vec<char> = word.chars().filter(|c| c.is_alphabetic()).collect();
    if word.chars().count() == 1 && first.is_uppercase() {
        return Kind::Initial;
    }
    if PARTICLES.contains(&word) {
        return Kind::Particle;
    }
    if first.is_uppercase() {
        if letters.len() >= 2 && letters.iter().all(|c| c.is_uppercase()) {
            return Kind::AllCaps;
        }
        return Kind::Cap;
    }
    // `tSaoi`, `el-Amin`: a lowercase prefix before an uppercase letter.
    if word.chars().any(char::is_uppercase) {
        return Kind::Cap;
    }
    if !letters.is_empty() && !letters.iter().any(|c| c.is_lowercase()) {
        return Kind::Caseless;
    }
    Kind::Lower
}

/// Labels the tokens of one name and pushes their spans; `comma` is the index of the last
/// surname token in `Last, First` order.
fn label_tokens(
    text: &str,
    toks: &[Tok],
    comma: Option<usize>,
    mode: Mode,
    score: f32,
    out: &mut Vec<ByteSpan>,
) {
    let Some(first) = toks.first() else { return };
    // Signature initials: `/s/ MK`.
    if mode == Mode::Signature
        && toks.len() == 1
        && first.kind == Kind::AllCaps
        && first.end - first.start <= 4
    {
        out.push(ByteSpan::new(first.start, first.end, Label::Person, score));
        return;
    }
    // A lone all-caps word after a title or label is a field name or an acronym more often
    // than a name, except in `LAST, First`.
    if toks.len() == 1 {
        if first.kind == Kind::AllCaps {
            return;
        }
        // One word after a relation word is the relative's given name (`son Miguel`, `wife
        // Ana`): people name their family so; after a title or a label it is a surname.
        let label = if first.kind == Kind::Initial || mode == Mode::Relation {
            Label::FirstName
        } else {
            Label::LastName
        };
        if first.kind != Kind::Particle {
            out.push(ByteSpan::new(first.start, first.end, label, score));
        }
        return;
    }
    if let Some(c) = comma {
        out.push(ByteSpan::new(
            first.start,
            toks[c].end,
            Label::LastName,
            score,
        ));
        let rest = &toks[c + 1..];
        if let Some(f) = rest.first() {
            out.push(ByteSpan::new(f.start, f.end, Label::FirstName, score));
        }
        for t in rest.iter().skip(1) {
            out.push(ByteSpan::new(t.start, t.end, Label::MiddleName, score));
        }
        return;
    }
    // Nicknames are first names wherever they stand.
    for t in toks.iter().filter(|t| t.kind == Kind::Nick) {
        out.push(ByteSpan::new(t.start, t.end, Label::FirstName, score));
    }
    let named: Vec<Tok> = toks
        .iter()
        .copied()
        .filter(|t| t.kind != Kind::Nick)
        .collect();
    let toks = named.as_slice();
    let Some(first) = toks.first() else { return };
    if toks.len() == 1 {
        out.push(ByteSpan::new(
            first.start,
            first.end,
            Label::FirstName,
            score,
        ));
        return;
    }
    // First name, middle names, then the surname from its first particle.
    let surname = toks
        .iter()
        .enumerate()
        .skip(1)
        .find(|(i, t)| {
            t.kind == Kind::Particle
                || (*i + 1 < toks.len() && CAP_PARTICLES.contains(&&text[t.start..t.end]))
        })
        .map_or(toks.len() - 1, |(i, _)| i);
    out.push(ByteSpan::new(
        first.start,
        first.end,
        Label::FirstName,
        score,
    ));
    for t in &toks[1..surname] {
        out.push(ByteSpan::new(t.start, t.end, Label::MiddleName, score));
    }
    if let (Some(s), Some(e)) = (toks.get(surname), toks.last()) {
        out.push(ByteSpan::new(s.start, e.end, Label::LastName, score));
    }
}
