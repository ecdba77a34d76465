//! Organisations, places, ages, dates written in words, usernames, bare URLs and
//! identifiers after their field names.
//!
//! - **Organisations**: one to six capitalised words ending in an institution word
//!   (`Hospital`, `Medical Center`, `Practice`, `PPO`), or starting with one (`Klinikum`,
//!   `Hôpital`); a letterhead (a short title-case first line); the value of `Insurance:`.
//! - **Places**: country and region names from `lists/places.txt`; a region abbreviation
//!   only between a city and a postcode (`Savannah, GA 31406`, `Fitzroy VIC 3065`);
//!   Canadian and UK postcodes by shape; Indian PIN codes after ` - `; streets with
//!   suffixes and prefixes the rule table lacks (`Close`, `Rue`, `-straße`).
//! - **Ages**: every age tied to an age phrase (`54-yo`, `Age: 29`, `turning 21`); the
//!   corpus convention and many policies mask all ages, not only those over 89.
//! - **Dates**: a month name with a day (`November 4`, `September tenth`), `the fifth of
//!   August, 2017`.
//! - **Identifiers**: a token with a digit after `Rx #`, `Specimen:`, `Accession:`,
//!   `Acct:`, `Registration number:` and similar field names, including spaced groups
//!   (IBAN-style account numbers).

use std::collections::HashSet;
use std::sync::OnceLock;

use regex::Regex;

use super::{re, ByteSpan, STRONG, WEAK};
use crate::detect::Label;

const PLACES: &str = include_str!("../lists/places.txt");

const MONTHS: &str = "January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec";
const ORDINALS: &str = "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|twenty-first|twenty-second|twenty-third|twenty-fourth|twenty-fifth|twenty-sixth|twenty-seventh|twenty-eighth|twenty-ninth|thirtieth|thirty-first";
const NUMBER_WORDS: &str = "(?:(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:-(?:one|two|three|four|five|six|seven|eight|nine))?|one hundred(?: and \\w+)?|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|one|two|three|four|five|six|seven|eight|nine)";

/// The compiled place, organisation, age, date and identifier heuristics.
#[derive(Debug)]
pub(crate) struct Places {
    /// `(regex, capture group, label, score)`.
    table: Vec<(Regex, usize, Label, f32)>,
    /// Field name → label, for identifiers.
    ids: Vec<(Regex, Label)>,
    countries: Regex,
    regions: Regex,
    city_region_zip: Regex,
    letterhead: Regex,
    department: Regex,
    not_org: Regex,
    abbrev_end: Regex,
    phone: Regex,
    city_before: Regex,
    bare_url: Regex,
}

fn alternation(prefix: &str) -> String {
    let mut names: Vec<&str> = PLACES
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .flat_map(|l| l.split('|'))
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    // Longest first so `United States of America` wins over `United States`.
    names.sort_by_key(|n| std::cmp::Reverse(n.len()));
    names
        .iter()
        .map(|n| regex::escape(n))
        .collect::<Vec<_>>()
        .join("|")
}

fn region_abbrevs() -> &'static HashSet<&'static str> {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| {
        PLACES
            .lines()
            .filter_map(|l| l.strip_prefix("A:"))
            .flat_map(|l| l.split('|'))
            .collect()
    })
}

impl Places {
    pub(crate) fn new() -> Self {
        let cap = r"\p{Lu}[\p{L}\p{M}'’.&-]*";
        let org_tail = r"(?:Hospital|Hospitals|Clinic|Clinics|Medical Center|Medical Centre|Health Centre|Health Center|Health System|Health Services|Healthcare|Health Care|Infirmary|Practice|Associates|Institute|Hospice|Laboratories|Pharmacy|Surgery|Medical Group|Group|Partners|University|College|Foundation|PPO|HMO|EPO|Insurance|Assurance|Mutual|Health Plan|Health|Care|Centre|Center|Clinique|Klinik|Kliniken|Krankenhaus|Spital|Ziekenhuis|Sjukhus|Sygehus|Sykehus|Hospitalet|Sanatorium|Sanatorio|Poliklinik|Polyclinic|Trust|Inc|Ltd|LLC|LLP|Corp|Corporation|Company|GmbH|plc|PLC|Limited)";
        let org_head = r"(?:Klinikum|Krankenhaus|Hôpital|Hôtel-Dieu|Hospital de|Hospital das|Clinique|Clínica|Clinica|Policlinico|Ospedale|Centre Hospitalier|Centro|Centro Médico|Instituto|Istituto|Institut|Szpital|Universitätsklinikum|Mount|Mt\.|Saint|St\.|Sainte|Santa|San|São|Sacred Heart|Royal)";
        // Any run of capitalised words (with the connectors institution names use), for the
        // context rules below: the slot decides, not the words, so names of any shape and
        // language are found where notes put an institution.
        let org_name = r"\p{Lu}[\p{L}\p{M}'’&.-]*(?:[ \t]+(?:\p{Lu}[\p{L}\p{M}'’&.-]*|of|and|for|the|de|du|des|la|le|del|di|am|an|der|&)){0,6}";
        let org = format!(
            r"\b((?:{cap} (?:(?:of|and|for|the|de|del|la|&) )?){{1,5}}{org_tail})\b(?:[ \t]+(?:East|West|North|South|Central))?"
        );
        let org_headed = format!(r"\b({org_head}(?: {cap}){{1,4}})");
        let month_day = format!(
            r"\b((?:{MONTHS})\.?[ \t]+(?:\d{{1,2}}(?:st|nd|rd|th)?|{ORDINALS})\b(?:,?[ \t]+\d{{4}}\b)?)"
        );
        let day_of_month = format!(
            r"(?i)\b((?:the[ \t]+)?(?:{ORDINALS}|\d{{1,2}}(?:st|nd|rd|th))[ \t]+(?:day[ \t]+)?of[ \t]+(?:{MONTHS}),?(?:[ \t]+\d{{4}})?)\b"
        );
        let day_month = format!(r"\b(\d{{1,2}}(?:st|nd|rd|th)?[ \t]+(?:{MONTHS}))\b");
        let table = vec![
            (re(&org), 1, Label::Organization, WEAK),
            (re(&org_headed), 1, Label::Organization, WEAK),
            (
                re(r"(?i)\binsurance[ \t]*:[ \t]*(\p{Lu}[^,;\n]{2,60}?)(?:,|;|\n|$|[ \t]{2})"),
                1,
                Label::Organization,
                STRONG,
            ),
            // ages
            (
                re(r"(?i)\b(\d{1,3})[ \t-]*(?:years?|yrs?|yo)[ \t-]*old\b"),
                1,
                Label::Age,
                STRONG,
            ),
            (
                re(r"(?i)\b(\d{1,3})[ \t]*-?[ \t]*(?:y/o|y\.o\.|yo\b)"),
                1,
                Label::Age,
                STRONG,
            ),
            (
                re(r"(?i)\b(?:age|aged|turning|turned|turns)[ \t]*:?[ \t]*(\d{1,3})\b"),
                1,
                Label::Age,
                STRONG,
            ),
            (
                re(r"(?i)\b(?:at[ \t]+the[ \t]+)?age[ \t]+of[ \t]+(\d{1,3})\b"),
                1,
                Label::Age,
                STRONG,
            ),
            (
                re(r"(?i)\b(\d{1,3})[ \t]+(?:years?|yrs?)[ \t]+of[ \t]+age\b"),
                1,
                Label::Age,
                STRONG,
            ),
            (
                re(&format!(r"(?i)\b({NUMBER_WORDS})[ \t-]+years?[ \t-]+old\b")),
                1,
                Label::Age,
                STRONG,
            ),
            (
                re(&format!(
                    r"(?i)\b(?:aged|turning|turned)[ \t]+({NUMBER_WORDS})\b"
                )),
                1,
                Label::Age,
                STRONG,
            ),
            // dates in words
            (re(&month_day), 1, Label::Date, STRONG),
            (re(&day_of_month), 1, Label::Date, STRONG),
            (re(&day_month), 1, Label::Date, WEAK),
            // usernames
            (
                re(
                    r"(?i)\b(?:username|user[ \t]*name|user[ \t]*id|userid|login[ \t]*id|handle)[ \t]*[:=#]?[ \t]*([A-Za-z0-9][A-Za-z0-9._-]{2,31})\b",
                ),
                1,
                Label::Username,
                STRONG,
            ),
            // postcodes by shape
            (
                re(r"\b([ABCEGHJ-NPRSTVXY]\d[ABCEGHJ-NPRSTV-Z][ \t]?\d[ABCEGHJ-NPRSTV-Z]\d)\b"),
                1,
                Label::Zipcode,
                STRONG,
            ),
            (
                re(r"\b([A-Z]{1,2}\d[A-Z\d]?[ \t]\d[ABD-HJLNP-UW-Z]{2})\b"),
                1,
                Label::Zipcode,
                STRONG,
            ),
            (
                re(
                    r"\b(\p{Lu}[\p{L}\p{M}'’.-]*(?:[ \t]\p{Lu}[\p{L}\p{M}'’.-]*)?)[ \t]+-[ \t]+(\d{6})\b",
                ),
                1,
                Label::City,
                STRONG,
            ),
            (
                re(r"\b\p{Lu}[\p{L}\p{M}'’.-]*[ \t]+-[ \t]+(\d{6})\b"),
                1,
                Label::Zipcode,
                STRONG,
            ),
            // streets the rule table lacks
            (
                re(
                    r"\b(\d{1,5}[A-Za-z]?,?[ \t]+(?:\p{Lu}[\p{L}\p{M}'’.-]*[ \t]+){1,4}(?:Close|Crescent|Gardens|Row|Mews|Walk|Hill|Grove|Green|Rise|View|Park|Marg|Nagar|Road|Street|Lane|Avenue|Ave|Way|Drive|Court|Place|Terrace|Square|Parade|Esplanade|Highway|Quay|Wharf|Boulevard|Run|Loop|Pass|Path|Trace|Bend|Point|Ridge|Cove|Heights|Alley|Pike|Glen|Vale|Dale|Hollow|Circle|Trail|Parkway|Plaza|Apartments)(?:[ \t]+(?:West|East|North|South|NW|NE|SW|SE))?(?:[ \t]+No\.[ \t]*\d+)?(?:,[ \t]+Near[ \t]+\p{Lu}\p{L}*(?:[ \t]\p{Lu}\p{L}*){0,3})?(?:,?[ \t]+(?:Apt|Apartment|Unit|Suite|Ste|Flat)\.?[ \t]*#?[A-Za-z0-9-]+)?)\b",
                ),
                1,
                Label::StreetAddress,
                STRONG,
            ),
            (
                re(
                    r"\b(\d{1,5},?[ \t]+(?:Rue|Via|Calle|Avenida|Avenue|Chemin|Boulevard|Viale|Piazza|Plaza|Rua|Praça)(?:[ \t]+(?:de|du|des|la|le|del|di|da|dos)?[ \t]*\p{Lu}[\p{L}\p{M}'’-]*){1,4})",
                ),
                1,
                Label::StreetAddress,
                STRONG,
            ),
            (
                re(
                    r"\b(\p{Lu}[\p{L}\p{M}-]*(?i:straße|strasse|weg|gasse|allee|platz|ring|damm|ufer|markt)[ \t]+\d{1,4}[a-z]?)\b",
                ),
                1,
                Label::StreetAddress,
                STRONG,
            ),
            (
                re(
                    r"\b((?:Door|Flat|House|Plot)[ \t]+No\.?[ \t]+[\d-]+(?:,[ \t]+\p{Lu}[\p{L}\p{M}'’-]*[ \t]+(?:Street|Road|Nagar|Marg|Lane|Colony))?)",
                ),
                1,
                Label::StreetAddress,
                STRONG,
            ),
            (
                re(
                    r"\b((?:Flat|Apt|Unit)[ \t]+\w+,[ \t]+(?:\p{Lu}[\p{L}\p{M}'’-]*[ \t]+){1,3}(?:Apartments|Residency|Towers|Tower|Court|House|Heights|Enclave))\b",
                ),
                1,
                Label::StreetAddress,
                STRONG,
            ),
            (
                // a street of any name when a "City, ST 12345" or "City ON  M5V 2T6" line
                // follows: the slot decides, not the street's words
                re(
                    r"\b(\d{1,5}[A-Za-z]?[ \t]+(?:(?:\p{Lu}[\p{L}\p{M}'’.-]*|des|de|du|la|le|del|van|von)[ \t]+){0,4}\p{Lu}[\p{L}\p{M}'’.-]*(?:,?[ \t]+(?:Apt|Apartment|Unit|Suite|Ste|Flat|\#)\.?[ \t]*\#?[A-Za-z0-9-]+)?)[ \t]*(?:,[ \t]*|\r?\n[ \t]*)\p{Lu}[\p{L}\p{M}'’.-]*(?:[ \t]\p{Lu}[\p{L}\p{M}'’.-]*){0,2},?[ \t]+(?:[A-Z]{2,3}|\p{Lu}\p{L}+(?:[ \t]\p{Lu}\p{L}+)?)[ \t]+(?:\d{5}(?:-\d{4})?|[A-Z]\d[A-Z][ \t]?\d[A-Z]\d)\b",
                ),
                1,
                Label::StreetAddress,
                STRONG,
            ),
            // cities by their neighbours
            (
                re(
                    r"\b(\p{Lu}[\p{L}\p{M}'’.-]*(?:[ \t]\p{Lu}[\p{L}\p{M}'’.-]*){0,2})(?:,[ \t]*|[ \t]*\r?\n[ \t]*)[A-Z]{1,2}\d[A-Z\d]?[ \t]\d[ABD-HJLNP-UW-Z]{2}\b",
                ),
                1,
                Label::City,
                STRONG,
            ),
            (
                re(
                    r"(?i:\b(?:lives|living|resides|residing|moved|relocated|based))[ \t]+(?i:in|to)[ \t]+(\p{Lu}[\p{L}\p{M}'’.-]*(?:[ \t]\p{Lu}[\p{L}\p{M}'’.-]*){0,2})",
                ),
                1,
                Label::City,
                WEAK,
            ),
            (
                re(
                    r"\b\d{5}[ \t]+(\p{Lu}[\p{L}\p{M}-]+(?:[ \t](?:am|an|der|im|\p{Lu}[\p{L}\p{M}-]+)){0,3})",
                ),
                1,
                Label::City,
                WEAK,
            ),
            // organisations after field names and work phrases
            (
                re(
                    r"(?i:\b(?:plan|pharmacy|employer|company|insurer|payer|school|facility|agency|carrier))[ \t]*:[ \t]*(\p{Lu}[\p{L}\p{M}'’&.-]*(?:[ \t](?:\p{Lu}[\p{L}\p{M}'’&.-]*|of|am|de|der|the|and|&|#\d+)){0,5})",
                ),
                1,
                Label::Organization,
                STRONG,
            ),
            (
                re(
                    r"(?i:\b(?:works?|worked|working|employed|job|driver|employee|volunteers?))\b[^.\n;]{0,25}?\b(?i:at|for|by|with)[ \t]+(\p{Lu}[\p{L}\p{M}'’&-]*(?:[ \t](?:\p{Lu}[\p{L}\p{M}'’&.-]*|of|am|&)){0,4})",
                ),
                1,
                Label::Organization,
                WEAK,
            ),
            // organisations by the slot notes put them in
            (
                re(&format!(
                    r"(?i:presented|came|brought|admitted|transferred|taken|went|returned|attended|arrived)[ \t]+(?i:to|at)[ \t]+(?:the[ \t]+)?({org_name})[ \t]+(?i:emergency|ED\b|A&E|ER\b|urgent[ \t]+care|casualty|walk-in)"
                )),
                1,
                Label::Organization,
                STRONG,
            ),
            (
                // a signature's role line: "Family Physician, <institution>"
                re(&format!(
                    r"(?m)^[ \t]*[\p{{L}}\p{{M}}. ]{{0,40}}?(?i:physician|practitioner|medizin|surgeon|consultant|nurse|therapist|doctor|specialist|registrar|resident|fellow|attending|midwife|pharmacist|dietitian|psychologist|radiologist|pathologist|cardiologist|neurologist|oncologist|pa?ediatrician|obstetrician|gyn(?:a)?ecologist|psychiatrist|dentist|optometrist|social[ \t]+worker|case[ \t]+manager),[ \t]+({org_name})[ \t]*\r?$"
                )),
                1,
                Label::Organization,
                STRONG,
            ),
            (
                re(&format!(
                    r"\bat[ \t]+(?:the[ \t]+)?({org_name})[ \t]*[;,][ \t]*(?i:(?:clinic|office|practice|surgery|department|ward|main)[ \t]+)?(?i:phone|tel|telephone|fax)\b"
                )),
                1,
                Label::Organization,
                STRONG,
            ),
            (
                re(&format!(
                    r"(?i:comparison|prior|previous)\b[^\n]{{0,40}}?\bfrom[ \t]+(?:the[ \t]+)?({org_name})"
                )),
                1,
                Label::Organization,
                WEAK,
            ),
            (
                re(&format!(
                    r"(?i:letters?|reports?|records?|referral|notes?|results|correspondence|images|imaging|films|studies|summary|discharge)[ \t]+(?i:from|by)[ \t]+(?:the[ \t]+)?({org_name})"
                )),
                1,
                Label::Organization,
                WEAK,
            ),
            (
                re(&format!(
                    r"(?i:sent|copied|faxed|forwarded|cc'?d|copy|referred|transferred|discharged)[ \t]+(?i:to|from)[ \t]+(?:the[ \t]+)?({org_name})"
                )),
                1,
                Label::Organization,
                WEAK,
            ),
            (
                // the line under the name in a sign-off
                re(&format!(
                    r"(?i:regards|sincerely|faithfully|truly|wishes|thanks|thank you),[ \t]*\r?\n(?:[ \t]*\r?\n)*[ \t]*[^\n]{{2,60}}\r?\n[ \t]*({org_name})[ \t]*\r?(?:\n|\z)"
                )),
                1,
                Label::Organization,
                WEAK,
            ),
            // phone shapes the rule table lacks
            (
                re(r"\+\d{1,3}[ \t]?(?:\(0\)[ \t]?)?\d{1,5}(?:[ \t-]\d{2,5}){1,4}\b"),
                0,
                Label::Phone,
                STRONG,
            ),
            (
                re(
                    r"\b((?:\p{Lu}[\p{L}\p{M}-]+[ \t]+){0,2}\p{Lu}[\p{L}\p{M}-]+[ \t]+\d{1,4}[a-z]?)[ \t]*(?:,[ \t]*|\r?\n[ \t]*)\d{5}[ \t]+\p{Lu}",
                ),
                1,
                Label::StreetAddress,
                WEAK,
            ),
            (
                re(
                    r"\b((?:Door[ \t]+No\.|No\.|Plot|Flat)[ \t]*[\w/-]+(?:,[ \t]+(?:Near[ \t]+)?[\p{Lu}\d][\p{L}\d.]*(?:[ \t][\p{Lu}\d][\p{L}\d.]*){0,4}){1,3})(?:,[ \t]+|[ \t]*\r?\n[ \t]*)\p{Lu}\p{L}*[ \t]+-[ \t]+\d{6}",
                ),
                1,
                Label::StreetAddress,
                STRONG,
            ),
            (
                re(r"\((\d{3}[ .-]?\d{3}[ .-]?\d{4}(?:[ \t]*(?:x|ext\.?)[ \t]*\d{1,6})?)\)"),
                1,
                Label::Phone,
                STRONG,
            ),
            (
                re(r"\b(?:Flat|Apt|Apartment|Unit|Suite)\.?[ \t]+#?\d+[A-Za-z]?\b"),
                0,
                Label::StreetAddress,
                STRONG,
            ),
            (
                re(r"\b(?:Road|Plot|House|Sector|Block)[ \t]+No\.?[ \t]+\d+\b|\bSector[ \t]+\d+\b"),
                0,
                Label::StreetAddress,
                STRONG,
            ),
            // a free-form identifier after a bare `#` (`#A-20331`, `order #88412`)
            (
                re(r"(?:^|[\s(])#[ \t]*([A-Za-z0-9-]*\d[A-Za-z0-9-]{3,})"),
                1,
                Label::IdNum,
                WEAK,
            ),
            (
                re(r"\b(\d{5})[ \t]+\p{Lu}[\p{L}\p{M}-]+\b"),
                1,
                Label::Zipcode,
                WEAK,
            ),
        ];
        let phone = re(
            r"(?i)\b(tel|telephone|phone|ph|mobile|mob|cell|fax|facsimile|contacted[ \t]+on|contact|call|reached[ \t]+at|reach[ \t]+at|pager|bleep)\b[.:]?[ \t]*(?:no\.?|number|#)?[ \t]*[:.]?[ \t]*(\+?\(?\d[\d ()-]{5,20}\d(?:[ \t]*(?:x|ext\.?)[ \t]*\d{1,6})?)",
        );
        let id_value = r"[ \t]*(?:#|no\.?|number|num|id)?[ \t]*[:#]?[ \t]*((?:[A-Z]{2}\d{2}(?:[ \t]?[A-Z0-9]{4}){2,7}(?:[ \t]?[A-Z0-9]{1,4})?)|[A-Za-z0-9][A-Za-z0-9/-]*\d[A-Za-z0-9/-]*)";
        let id = |words: &str, label: Label| (re(&format!(r"(?i)\b(?:{words}){id_value}")), label);
        let ids = vec![
            id(
                r"id|identifier|identification|rx|prescription|script|specimen|accession|acc|order|requisition|req|lab|case|encounter|visit|claim|ref|reference|sample|barcode|study|report|ticket|confirmation|workstation|station|exam|image|series|episode|admission|csn|fin|har",
                Label::IdNum,
            ),
            id(
                r"acct|account|a/c|iban|billing|invoice|guarantor",
                Label::AccountNumber,
            ),
            id(
                r"mrn|mr|nhs|medical[ \t]+record|chart|hospital|patient",
                Label::MedicalRecordNumber,
            ),
            id(
                r"registration|reg|gmc|npi|dea|licen[cs]e|lic|cert|certificate|board|provider|ahpra|nmc|cpso",
                Label::LicenseNumber,
            ),
            id(
                r"member|policy|subscriber|insurance|medicare|medicaid|plan|beneficiary|mbi|insured|health[ \t]+card|ohip|carte",
                Label::HealthPlanNumber,
            ),
            id(
                r"serial|s/n|device|udi|implant|lot|model|imei|pump|monitor|transmitter|pacemaker|defibrillator|icd|sensor|meter",
                Label::DeviceId,
            ),
            id(r"plate|vin|vehicle|tag", Label::VehicleId),
        ];
        Places {
            table,
            ids,
            countries: re(&format!(r"\b({})(?:\b|$)", alternation("C:"))),
            regions: re(&format!(r"\b({})\b", alternation("S:"))),
            city_region_zip: re(
                r"\b(\p{Lu}[\p{L}\p{M}'’.-]*(?:[ \t]\p{Lu}[\p{L}\p{M}'’.-]*){0,2}),?[ \t]+([A-Z]{2,3})[ \t]+(\d{4,5}(?:-\d{4})?|[A-Z]\d[A-Z][ \t]?\d[A-Z]\d)\b",
            ),
            phone,
            department: re(
                r"(?:[ \t]+(?:Laboratory|Imaging|Radiology|Pathology|Diagnostic|Outpatient|Department|Services))+\z",
            ),
            not_org: re(
                r"(?i)^(?:dr|mr|mrs|ms|miss|mx|prof|professor|sir|dame)\b|\b(?:physician|practitioner|consultant|nurse|surgeon|registrar|team|patient)$|^(?:he|she|they|we|it|this|that|his|her|their|our|my|your|a|an)$",
            ),
            abbrev_end: re(r"\b(?:Inc|Ltd|Co|Corp|Bros|Assn|Mt|St)\z"),
            city_before: re(
                r"(?:^|[,\n][ \t]*)(\p{Lu}[\p{L}\p{M}'’.-]*(?:[ \t]\p{Lu}[\p{L}\p{M}'’.-]*){0,2})[ \t]*\z",
            ),
            letterhead: re(
                r"\A[ \t]*(\p{Lu}[\p{L}\p{M}'’.&-]*(?:[ \t]+(?:of|and|for|the|&|\p{Lu}[\p{L}\p{M}'’.&-]*)){1,6})[ \t]*(?:\r?\n|[ \t]+--)",
            ),
            bare_url: re(
                r"(?i)(?:^|[^@\w.:/-])((?:[a-z0-9-]+\.)+(?:com|net|org|edu|gov|example|io|co|uk|ca|au|in|de|fr|health|info|us|nz|ie)(?:\.[a-z]{2})?(?:/[^\s<>)\]]*)?)",
            ),
        }
    }

    pub(crate) fn find(&self, text: &str, out: &mut Vec<ByteSpan>) {
        for (rx, group, label, score) in &self.table {
            for caps in rx.captures_iter(text) {
                if let Some(m) = caps.get(*group) {
                    let (s, mut e) = trim_punct(text, m.start(), m.end());
                    if *label == Label::Organization {
                        // A department after the institution is not part of its name.
                        e = s + self.department.replace(&text[s..e], "").len();
                        // Slot rules accept any capitalised words: a person after a title,
                        // a role or a department name is not an institution.
                        if self.not_org.is_match(&text[s..e]) {
                            continue;
                        }
                        // `Acme Inc.`: the abbreviation keeps its full stop.
                        if text[e..].starts_with('.') && self.abbrev_end.is_match(&text[s..e]) {
                            e += 1;
                        }
                    }
                    if s < e {
                        out.push(ByteSpan::new(s, e, *label, *score));
                    }
                }
            }
        }
        for (rx, label) in &self.ids {
            for caps in rx.captures_iter(text) {
                if let Some(m) = caps.get(1) {
                    let (s, e) = trim_punct(text, m.start(), m.end());
                    let value = &text[s..e];
                    // At least two digits and not a lone dose or date-like fraction.
                    if value.chars().filter(char::is_ascii_digit).count() >= 3
                        && !value.contains("//")
                    {
                        out.push(ByteSpan::new(s, e, *label, STRONG));
                    }
                }
            }
        }
        for m in self.countries.find_iter(text) {
            out.push(ByteSpan::new(m.start(), m.end(), Label::Country, WEAK));
        }
        for m in self.regions.find_iter(text) {
            let before = text[..m.start()].trim_end_matches([' ', '\t']);
            let after = text[m.end()..].trim_start_matches([' ', '\t']);
            let zip_len = after.chars().take_while(char::is_ascii_digit).count();
            if before.ends_with(',') || zip_len > 0 {
                out.push(ByteSpan::new(m.start(), m.end(), Label::State, WEAK));
            }
            if (4..=6).contains(&zip_len) {
                let zs = text.len() - after.len();
                out.push(ByteSpan::new(zs, zs + zip_len, Label::Zipcode, STRONG));
            }
            if let Some(head) = before.strip_suffix(',') {
                if let Some(city) = self.city_before.captures(head).and_then(|c| c.get(1)) {
                    out.push(ByteSpan::new(city.start(), city.end(), Label::City, WEAK));
                }
            }
        }
        let abbrevs = region_abbrevs();
        for caps in self.city_region_zip.captures_iter(text) {
            let (Some(city), Some(region), Some(zip)) = (caps.get(1), caps.get(2), caps.get(3))
            else {
                continue;
            };
            if !abbrevs.contains(region.as_str()) {
                continue;
            }
            out.push(ByteSpan::new(city.start(), city.end(), Label::City, STRONG));
            out.push(ByteSpan::new(
                region.start(),
                region.end(),
                Label::State,
                STRONG,
            ));
            out.push(ByteSpan::new(
                zip.start(),
                zip.end(),
                Label::Zipcode,
                STRONG,
            ));
        }
        for caps in self.phone.captures_iter(text) {
            let (Some(word), Some(m)) = (caps.get(1), caps.get(2)) else {
                continue;
            };
            let digits = m.as_str().chars().filter(char::is_ascii_digit).count();
            if !(7..=16).contains(&digits) {
                continue;
            }
            let label = if word.as_str().to_ascii_lowercase().starts_with("fa") {
                Label::Fax
            } else {
                Label::Phone
            };
            let (s, e) = trim_punct(text, m.start(), m.end());
            out.push(ByteSpan::new(s, e, label, STRONG));
        }
        if let Some(m) = self.letterhead.captures(text).and_then(|c| c.get(1)) {
            // A department after the institution is not part of its name.
            let line = self.department.replace(m.as_str(), "");
            let line = line.as_ref();
            let upper = line.chars().filter(|c| c.is_uppercase()).count();
            let letters = line.chars().filter(|c| c.is_alphabetic()).count();
            // A letterhead is title case, not an all-caps section header.
            if upper * 2 < letters {
                out.push(ByteSpan::new(
                    m.start(),
                    m.start() + line.len(),
                    Label::Organization,
                    WEAK,
                ));
            }
        }
        for caps in self.bare_url.captures_iter(text) {
            if let Some(m) = caps.get(1) {
                let (s, e) = trim_punct(text, m.start(), m.end());
                if s < e {
                    out.push(ByteSpan::new(s, e, Label::Url, STRONG));
                }
            }
        }
    }
}

/// Trims trailing sentence punctuation from a byte range.
fn trim_punct(text: &str, start: usize, end: usize) -> (usize, usize) {
    let trimmed =
        text[start..end].trim_end_matches(['.', ',', ';', ':', ')', '\'', '"', ' ', '\t']);
    (start, start + trimmed.len())
}
