//! Organisations: hospitals, practices, insurers, employers.
//!
//! The bundled model has no organisation label at all, so unless a model with one is
//! configured every `ORGANIZATION` span comes from here. Two kinds of evidence are used:
//!
//! - **the name itself** ([`NAMED`]): one to six capitalised words ending in an
//!   institution word (`Hospital`, `Medical Center`, `Practice`, `PPO`) or starting with
//!   one (`Klinikum`, `Hôpital`), and the value of `Insurance:`;
//! - **the slot it sits in** ([`FIELDS`], [`SLOTS`], [`Institution::letterhead`]): after
//!   `Plan:` or `Employer:`, after "works at", before "emergency department", on a
//!   signature's role line, after "letter from", under the name in a sign-off, and a short
//!   title-case first line. The slot decides, not the words, so names of any shape and
//!   language are found where notes put an institution.
//!
//! Every match goes through [`Institution::refine`] ([`SpanRule::Institution`]): slot cues
//! accept any capitalised words, and a person after a title or a role is not an
//! institution.
//!
//! [`SpanRule::Institution`]: super::cues::SpanRule::Institution

use regex::Regex;

use super::super::{re, ByteSpan, STRONG, WEAK};
use super::cues::Cue;
use crate::detect::Label;

/// `{CAP}`: a capitalised word.
pub(super) const CAP: &str = r"\p{Lu}[\p{L}\p{M}'’.&-]*";

/// `{ORG_TAIL}`: the words an institution name ends in.
pub(super) const ORG_TAIL: &str = r"(?:Hospital|Hospitals|Clinic|Clinics|Medical Center|Medical Centre|Health Centre|Health Center|Health System|Health Services|Healthcare|Health Care|Infirmary|Practice|Associates|Institute|Hospice|Laboratories|Pharmacy|Surgery|Medical Group|Group|Partners|University|College|Foundation|PPO|HMO|EPO|Insurance|Assurance|Mutual|Health Plan|Health|Care|Centre|Center|Clinique|Klinik|Kliniken|Krankenhaus|Spital|Ziekenhuis|Sjukhus|Sygehus|Sykehus|Hospitalet|Sanatorium|Sanatorio|Poliklinik|Polyclinic|Trust|Inc|Ltd|LLC|LLP|Corp|Corporation|Company|GmbH|plc|PLC|Limited)";

/// `{ORG_HEAD}`: the words an institution name starts with.
pub(super) const ORG_HEAD: &str = r"(?:Klinikum|Krankenhaus|Hôpital|Hôtel-Dieu|Hospital de|Hospital das|Clinique|Clínica|Clinica|Policlinico|Ospedale|Centre Hospitalier|Centro|Centro Médico|Instituto|Istituto|Institut|Szpital|Universitätsklinikum|Mount|Mt\.|Saint|St\.|Sainte|Santa|San|São|Sacred Heart|Royal)";

/// `{ORG_NAME}`: any run of capitalised words, with the connectors institution names use,
/// for the slot cues.
pub(super) const ORG_NAME: &str = r"\p{Lu}[\p{L}\p{M}'’&.-]*(?:[ \t]+(?:\p{Lu}[\p{L}\p{M}'’&.-]*|of|and|for|the|de|du|des|la|le|del|di|am|an|der|&)){0,6}";

/// The lower-case words inside institution names (`Hospital for Special Surgery`), which
/// never end one.
const CONNECTORS: &[&str] = &[
    "of", "and", "for", "the", "de", "du", "des", "la", "le", "del", "di", "am", "an", "der", "&",
];

/// Names recognised by their own words.
pub(super) const NAMED: &[Cue] = &[
    Cue::institution(
        r"\b((?:{CAP} (?:(?:of|and|for|the|de|del|la|&) )?){1,5}{ORG_TAIL})\b(?:[ \t]+(?:East|West|North|South|Central))?",
        WEAK,
    ),
    Cue::institution(r"\b({ORG_HEAD}(?: {CAP}){1,4})", WEAK),
    Cue::institution(
        r"(?i)\binsurance[ \t]*:[ \t]*(\p{Lu}[^,;\n]{2,60}?)(?:,|;|\n|$|[ \t]{2})",
        STRONG,
    ),
];

/// Names after field names and work phrases.
pub(super) const FIELDS: &[Cue] = &[
    Cue::institution(
        r"(?i:\b(?:plan|pharmacy|employer|company|insurer|payer|school|facility|agency|carrier))[ \t]*:[ \t]*(\p{Lu}[\p{L}\p{M}'’&.-]*(?:[ \t](?:\p{Lu}[\p{L}\p{M}'’&.-]*|of|am|de|der|the|and|&|#\d+)){0,5})",
        STRONG,
    ),
    Cue::institution(
        r"(?i:\b(?:works?|worked|working|employed|job|driver|employee|volunteers?))\b[^.\n;]{0,25}?\b(?i:at|for|by|with)[ \t]+(\p{Lu}[\p{L}\p{M}'’&-]*(?:[ \t](?:\p{Lu}[\p{L}\p{M}'’&.-]*|of|am|&)){0,4})",
        WEAK,
    ),
];

/// Names in the slots notes put an institution in.
pub(super) const SLOTS: &[Cue] = &[
    Cue::institution(
        r"(?i:presented|came|brought|admitted|transferred|taken|went|returned|attended|arrived)[ \t]+(?i:to|at)[ \t]+(?:the[ \t]+)?({ORG_NAME})[ \t]+(?i:emergency|ED\b|A&E|ER\b|urgent[ \t]+care|casualty|walk-in)",
        STRONG,
    ),
    // a signature's role line: "Family Physician, <institution>"
    Cue::institution(
        r"(?m)^[ \t]*(?P<lead>[\p{L}\p{M}. ]*?)(?i:physician|practitioner|medizin|surgeon|consultant|nurse|therapist|doctor|specialist|registrar|resident|fellow|attending|midwife|pharmacist|dietitian|psychologist|radiologist|pathologist|cardiologist|neurologist|oncologist|pa?ediatrician|obstetrician|gyn(?:a)?ecologist|psychiatrist|dentist|optometrist|social[ \t]+worker|case[ \t]+manager),[ \t]+({ORG_NAME})[ \t]*\r?$",
        STRONG,
    )
    .group(2)
    .lead_at_most(40),
    Cue::institution(
        r"\bat[ \t]+(?:the[ \t]+)?({ORG_NAME})[ \t]*[;,][ \t]*(?i:(?:clinic|office|practice|surgery|department|ward|main)[ \t]+)?(?i:phone|tel|telephone|fax)\b",
        STRONG,
    ),
    Cue::institution(
        r"(?i:comparison|prior|previous)\b[^\n]{0,40}?\bfrom[ \t]+(?:the[ \t]+)?({ORG_NAME})",
        WEAK,
    ),
    Cue::institution(
        r"(?i:letters?|reports?|records?|referral|notes?|results|correspondence|images|imaging|films|studies|summary|discharge)[ \t]+(?i:from|by)[ \t]+(?:the[ \t]+)?({ORG_NAME})",
        WEAK,
    ),
    Cue::institution(
        r"(?i:sent|copied|faxed|forwarded|cc'?d|copy|referred|transferred|discharged)[ \t]+(?i:to|from)[ \t]+(?:the[ \t]+)?({ORG_NAME})",
        WEAK,
    ),
    // the line under the name in a sign-off
    Cue::institution(
        r"(?i:regards|sincerely|faithfully|truly|wishes|thanks|thank you),[ \t]*\r?\n(?:[ \t]*\r?\n)*[ \t]*[^\n]{2,60}\r?\n[ \t]*({ORG_NAME})[ \t]*\r?(?:\n|\z)",
        WEAK,
    ),
];

/// The compiled institution checks and the letterhead.
#[derive(Debug)]
pub(super) struct Institution {
    /// A department after the institution, which is not part of its name.
    department: Regex,
    /// A person, a role or a pronoun: what a slot cue caught that is not an institution.
    not_org: Regex,
    /// A name ending in an abbreviation that keeps its full stop (`Acme Inc.`).
    abbrev_end: Regex,
    /// A short title-case first line.
    letterhead: Regex,
    /// A first line that names a person or heads a table, not an institution.
    not_letterhead: Regex,
}

impl Institution {
    pub(super) fn new() -> Self {
        Institution {
            department: re(
                r"(?:[ \t]+(?:Laboratory|Imaging|Radiology|Pathology|Diagnostic|Outpatient|Department|Services))+\z",
            ),
            not_org: re(
                r"(?i)^(?:dr|mr|mrs|ms|miss|mx|prof|professor|sir|dame)\b|\b(?:physician|practitioner|consultant|nurse|surgeon|registrar|team|patient)$|^(?:he|she|they|we|it|this|that|his|her|their|our|my|your|a|an)$",
            ),
            abbrev_end: re(r"\b(?:Inc|Ltd|Co|Corp|Bros|Assn|Mt|St)\z"),
            letterhead: re(
                r"\A[ \t]*(\p{Lu}[\p{L}\p{M}'’.&-]*(?:[ \t]+(?:of|and|for|the|&|\p{Lu}[\p{L}\p{M}'’.&-]*)){1,6})[ \t]*(?:\r?\n|[ \t]+--)",
            ),
            // `Patient John Smith` (the patient's name, deleted with its cue and kept
            // under policies that keep organisations), `Name⇥DOB⇥Phone` (a table's header).
            not_letterhead: re(
                r"(?i)\A(?:patient|pt|name|client|resident|re|dear|to|from|attn|subject|mr|mrs|ms|miss|mx|dr|dob|d\.o\.b)\b|\t",
            ),
        }
    }

    /// The end of the institution name in the trimmed match `text[s..e]`, or `None` when
    /// the match is not an institution.
    pub(super) fn refine(&self, text: &str, s: usize, e: usize) -> Option<usize> {
        // A department after the institution is not part of its name.
        let mut e = s + self.department.replace(&text[s..e], "").len();
        // Nor is a connector it ends on (`Lahey Clinic for` in `Lahey Clinic for MRI`):
        // the words after it were not capitalised, so not the name's.
        loop {
            let name = text[s..e].trim_end();
            let Some(cut) = name.rfind([' ', '\t']) else {
                break;
            };
            let last = &name[cut + 1..];
            if !CONNECTORS.contains(&last) {
                e = s + name.len();
                break;
            }
            e = s + cut;
        }
        // Slot rules accept any capitalised words: a person after a title, a role or a
        // department name is not an institution.
        if self.not_org.is_match(&text[s..e]) {
            return None;
        }
        // `Acme Inc.`: the abbreviation keeps its full stop.
        if text[e..].starts_with('.') && self.abbrev_end.is_match(&text[s..e]) {
            e += 1;
        }
        Some(e)
    }

    /// A letterhead: the first line, when it is a few title-case words.
    pub(super) fn letterhead(&self, text: &str, out: &mut Vec<ByteSpan>) {
        if let Some(m) = self
            .letterhead
            .captures(text)
            .and_then(|c| c.get(1))
            .filter(|m| !self.not_letterhead.is_match(m.as_str()))
        {
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
    }
}

#[cfg(test)]
mod tests {
    use crate::detect::context::tests::rows;
    use crate::detect::Label;

    rows! {
        org_suffix: "presented to Saint Anselm Rehabilitation Hospital today", "Saint Anselm Rehabilitation Hospital" => Some(Label::Organization);
        org_head: "presented to the Klinikum Neustadt-Süd emergency department", "Klinikum Neustadt-Süd" => Some(Label::Organization);
        plan_field: "Plan: Pioneer Senior Advantage    Member ID: X", "Pioneer Senior Advantage" => Some(Label::Organization);
        soap_plan_is_not_org: "Plan: continue aspirin", "continue aspirin" => None;
        employer: "Works as a driver for Kestrel Aerospace; lives in Savannah, GA", "Kestrel Aerospace" => Some(Label::Organization);
        hospital_number_is_not_org: "DOB 2014-08-12, Hospital No. A8212062", "Hospital No" => None;
        org_ends_on_no_connector: "Report also sent to Mass General for dialysis.", "Mass General" => Some(Label::Organization);
        letterhead_is_no_patient: "Patient John Smith\nDOB 03/04/1980", "Patient John Smith" => None;
        letterhead_is_no_table_header: "Name\tDOB\tPhone\nChidi Okonkwo", "Name\tDOB\tPhone" => None;
        letterhead_without_department: "Mount Carmel East Laboratory Services\nPatient: X", "Mount Carmel East" => Some(Label::Organization);
        org_ed_slot: "who presented to the Fecuraka Gisezamu East emergency department on 5/1", "Fecuraka Gisezamu East" => Some(Label::Organization);
        org_role_line: "Yours sincerely,\n\nC. Mwangi\nFamily Physician, Sulode Neustadt-Süd\nRegistration no. 2919168", "Sulode Neustadt-Süd" => Some(Label::Organization);
        // A role line's words before the role: forty characters at most.
        org_role_line_lead_of_forty: "Locums in Elder Care and Acute Medicine Physician, Sulode Neustadt\n", "Sulode Neustadt" => Some(Label::Organization);
        org_role_line_lead_of_forty_one: "Locum in Elderly Care and Acute Medicine Physician, Sulode Neustadt\n", "Sulode Neustadt" => None;
        institution_by_short_name: "Comparison: 1/4/2021 chest x-ray at Montefiore.", "Montefiore" => Some(Label::Organization);
        org_clinic_phone: "seen by Dr. Reddy on 11/2018 at Tiwo Vale; clinic phone +1 666 812 0000", "Tiwo Vale" => Some(Label::Organization);
        org_comparison: "COMPARISON: 08/2015 from Lapodiza Rinu.\n\nFINDINGS:", "Lapodiza Rinu" => Some(Label::Organization);
        org_letter_from: "We also received the letter from Sude Malo about your knee.", "Sude Malo" => Some(Label::Organization);
        org_sent_to: "Report also sent to Resoho Zazeni (fax +1 821 679 8693).", "Resoho Zazeni" => Some(Label::Organization);
        org_sign_off: "Warm regards,\nPatricia Tran\nLapodiza Neustadt-Süd\n", "Lapodiza Neustadt-Süd" => Some(Label::Organization);
        org_inc_keeps_stop: "will pick pt up after work at Habuvo Inc.\n03:15 Pt states", "Habuvo Inc." => Some(Label::Organization);
        letter_from_doctor_is_not_org: "the letter from Dr. Sude about your knee", "Dr. Sude" => None;
    }
}
