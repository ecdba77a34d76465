"""Note writers for gen_corpus.py: one function per note type, each writing a header block
and narrative prose into a Note through labelled segments (see `fmt`).

Each writer mixes PHI with the shared clinical vocabulary of corpus_pools.py, so that every
note carries hard negatives (drugs, eponymous diseases, scores, labs, vitals) next to the
identifiers a de-identifier must remove.
"""

import re

import corpus_pools as P


def fmt(template, *args):
    """Interleaves a template's literal text with segment lists: "{0}" is args[0].

    A segment is `(text, label)`, label None for plain text; a plain string argument is
    one unlabelled segment.
    """
    out = []
    pos = 0
    for m in re.finditer(r"\{(\d+)\}", template):
        if m.start() > pos:
            out.append((template[pos:m.start()], None))
        arg = args[int(m.group(1))]
        out.extend([(arg, None)] if isinstance(arg, str) else arg)
        pos = m.end()
    if pos < len(template):
        out.append((template[pos:], None))
    return out


def cap(s):
    return s[:1].upper() + s[1:]


def clinical_sentence(g):
    """One sentence of hard-negative clinical prose."""
    return g.c([
        f"History is notable for {g.c(P.DISEASES)} and {g.c(P.DISEASES)}.",
        f"Exam: {g.c(P.SIGNS)}; {g.c(P.SIGNS)}.",
        f"Labs today: {g.labs()}.",
        f"Vitals: {g.vitals()}.",
        f"{cap(g.c(P.PROCEDURES))}.",
        f"{g.c(P.SCORES)}; {g.c(P.SCORES)}.",
        f"Continue {g.drug()} and {g.drug()}.",
        f"Started on {g.drug()} for {g.c(P.DISEASES)}.",
        f"Coded as {g.c(P.CODES)} and {g.c(P.CODES)}.",
        f"{cap(g.c(P.IMAGING))} showed {g.c(P.FINDINGS)}.",
        f"Known {g.c(P.DISEASES)}, followed by {g.c(P.SPECIALTIES)}.",
        f"Takes 1/2 tab of {g.c(P.DRUGS)[0]} at {g.clock()} and 2 tabs at night.",
    ])


def prose(g, n, k):
    n.add([(" ".join(clinical_sentence(g) for _ in range(k)) + "\n", None)])


def discharge_summary(g, n):
    pt = g.person()
    att, att_segs = g.doctor()
    _, pcp = g.doctor()
    hosp = g.org()
    n.add(hosp)
    n.line("\nDISCHARGE SUMMARY")
    n.line("Patient: {0}    MRN: {1}    DOB: {2}", g.name(pt, g.c(["full", "last_first", "caps", "middle"])), g.mrn(), g.dob(age=pt["age"]))
    n.line("Admission Date: {0}    Discharge Date: {1}", g.date(), g.date())
    n.line("Attending: {0}    PCP: {1}", att_segs, pcp)
    if g.chance(0.3):
        n.line("SSN: {0}    Emergency contact: {1}", g.ssn(), g.phone())
    if g.chance(0.5):
        n.line("Account No: {0}    Insurance: {1}, member ID {2}", g.account(), g.org(g.insurers), g.health_plan())
    n.line("\nHISTORY OF PRESENT ILLNESS:")
    n.line("{0} is {1} {2} with {3} and {4} who presented to the {5} emergency department on {6} with "
           "{7}. {8}",
           g.titled(pt), g.age(pt["age"], article=True), g.noun(pt), g.c(P.DISEASES), g.c(P.DISEASES), g.org(),
           g.date(style=g.c(["long", "us", "no_year", "words"])),
           g.c(["shortness of breath", "chest pain", "a fall at home", "fever and confusion", "melena"]),
           clinical_sentence(g))
    if g.chance(0.35):
        n.line("{0} was the restrained driver in a motor vehicle collision; vehicle VIN {1}, plate {2}. "
               "Driver's licence {3} was recorded by security.",
               g.pronoun(pt), g.vin(), g.plate(), g.license())
    n.line("\nHOSPITAL COURSE:")
    prose(g, n, g.r.randint(3, 6))
    n.line("{0} was seen by {1} ({2}), who recommended {3}.", g.titled(pt), g.doctor()[1], g.c(P.SPECIALTIES), g.drug())
    n.line("\nDISCHARGE MEDICATIONS:")
    for i in range(g.r.randint(3, 7)):
        n.line("{0}. {1}", str(i + 1), g.drug())
    n.line("\nFOLLOW-UP:")
    n.line("With {0} ({1}) on {2} at {3}; clinic phone {4}, fax {5}.", g.doctor()[1], g.c(P.SPECIALTIES), g.date(),
           g.org(), g.phone(), g.phone(label="FAX"))
    rel = g.person()
    addr, _ = g.address()
    n.line("Disposition: home with {0} {1} ({2}), {3}.", g.c(P.RELATIONS), g.name(rel, g.c(["full", "lower", "nick"])),
           g.phone(), addr)
    n.line("\nElectronically signed by {0} on {1} at {2}", att_segs, g.date(), g.clock())


def progress_note(g, n):
    pt = g.person()
    n.line("PROGRESS NOTE ({0})    {1}", g.c(P.SPECIALTIES), g.date())
    n.line("Pt: {0}   Age: {1}   MRN {2}", g.name(pt, g.c(["last_first", "full", "family_first", "initial"])),
           [(str(pt["age"]), "AGE")], g.mrn())
    n.line("\nS: {0} {1} reports {2}. {3}", g.age(pt["age"]), g.noun(pt),
           g.c(["improved dyspnea", "ongoing tremor, worse in the right hand", "three loose stools overnight",
                "no further chest pain", "poor sleep"]), clinical_sentence(g))
    if g.chance(0.5):
        rel = g.person()
        n.line("Collateral from {0} {1}, who can be reached at {2}.", g.c(P.RELATIONS), g.name(rel), g.phone())
    if g.chance(0.3):
        n.line("Works as a driver for {0}; lives in {1}, originally from {2}.", g.org(g.employers), g.city_only(), g.country())
    n.line("O: {0}", g.vitals())
    n.line("   {0}; {1}.", g.c(P.SIGNS), g.labs())
    n.line("A/P:")
    for i in range(g.r.randint(2, 4)):
        n.line("{0}) {1} -- {2}. {3}", str(i + 1), g.c(P.DISEASES), g.drug(), g.c(P.SCORES))
    if g.chance(0.4):
        n.line("Discussed with Dr. {0}, who agrees. Will see again in {1} weeks.", [(g.person()["last"], "LAST_NAME")],
               str(g.r.randint(2, 12)))
    if g.chance(0.3):
        n.line("Seen with medical student {0}.", g.name(g.person(), "full"))
    signer = g.person()
    n.line("-- {0}, {1}", g.name(signer, g.c(["full", "initial", "middle"])), g.c(["MD", "DO", "NP", "PA-C", "resident PGY-2"]))


def radiology_report(g, n):
    pt = g.person()
    n.line("{0} -- Department of Radiology", g.org())
    n.line("EXAM: {0}", g.c(P.IMAGING))
    n.line("Patient: {0}   DOB: {1}   MRN: {2}   Accession: {3}", g.name(pt, g.c(["last_first", "caps", "full"])), g.dob(age=pt["age"]),
           g.mrn(), g.id_num())
    n.line("Date of service: {0} {1}   Ordering: {2}", g.date(), g.clock(), g.doctor()[1])
    n.line("\nCLINICAL INDICATION: {0} {1} with {2}; rule out {3}.", g.age(pt["age"]), g.noun(pt), g.c(P.DISEASES),
           g.c(["pulmonary embolism", "fracture", "obstruction", "stroke", "malignancy"]))
    n.line("COMPARISON: {0}", g.c([fmt("{0} from {1}.", g.date(), g.org()), fmt("None."), fmt("Prior study of {0}.", g.date())]))
    n.line("\nFINDINGS:")
    for _ in range(g.r.randint(2, 5)):
        n.line("{0}", f"There is {g.c(P.FINDINGS)}.")
    if g.chance(0.45):
        dev, kind = g.c(P.DEVICES)
        n.line("A {0} is present ({1} {2}); leads in expected position.", dev, kind, g.serial())
    n.line("\nIMPRESSION:")
    n.line("1. {0}.", cap(g.c(P.FINDINGS)))
    n.line("2. {0}", clinical_sentence(g))
    n.line("\nFindings discussed with {0} by telephone at {1} on {2}.", g.doctor()[1], g.clock(), g.date())
    if g.chance(0.4):
        n.line("Images available at {0} (workstation {1}).", g.url(), g.ip())
    n.line("Dictated by: {0}", g.doctor("full_md")[1])


def referral_letter(g, n):
    country = g.c(["us", "uk", "uk", "ca", "de", "in", "au"])
    hosp = g.org()
    letter_addr, _ = g.address(country, one_line=False)
    n.add(hosp)
    n.line("")
    n.add(letter_addr)
    n.line("\nTel: {0}   Fax: {1}", g.phone(country), g.phone(country, "FAX"))
    n.line("Email: {0}   Web: {1}", g.email(), g.url())
    n.line("\n{0}\n", g.date(style=g.c(["long", "long_uk", "uk", "de", "ordinal"])))
    rcpt = g.person()
    n.line("Dear Dr {0},", [(rcpt["last"], "LAST_NAME")])
    pt = g.person()
    if country == "uk":
        ident = fmt("NHS No. {0}", g.nhs())
    elif country == "ca":
        ident = fmt("Health card {0}", g.health_plan())
    elif country == "us":
        ident = fmt("SSN {0}", g.ssn())
    else:
        ident = fmt("Hospital No. {0}", g.mrn())
    if country == "us" and g.chance(0.5):
        ident = fmt("{0}, SSN {1}", ident, g.ssn())
    pt_addr, _ = g.address(country, one_line=True)
    n.line("\nRe: {0}, DOB {1}, {2}", g.name(pt, g.c(["full", "caps", "middle", "nick"])), g.dob(age=pt["age"]), ident)
    n.line("    {0}", pt_addr)
    n.line("\nThank you for seeing this {0} {1}, whom I am referring for assessment of {2}. {3} {4}",
           g.age(pt["age"]), g.noun(pt), g.c(P.DISEASES), clinical_sentence(g), clinical_sentence(g))
    n.line("{0} {1}", g.pronoun(pt), g.c(["lives alone since the death of her partner.", "works night shifts.",
                                         "is a retired teacher.", "cares for two grandchildren."]))
    if g.chance(0.5):
        rel = g.person()
        n.line("The {0}, {1}, may be contacted on {2} or {3}.", g.c(P.RELATIONS), g.name(rel), g.phone(country), g.email(rel))
    prose(g, n, g.r.randint(1, 3))
    me = g.person()
    n.line("\nYours sincerely,\n\n{0}\n{1}, {2}", g.name(me, g.c(["full", "middle", "initial"])),
           g.c(["Consultant Physician", "General Practitioner", "Facharzt für Innere Medizin", "Family Physician"]),
           hosp)
    n.line("Registration no. {0}", g.c([g.license(), g.npi()]))


def nursing_note(g, n):
    pt = g.person()
    n.line("NURSING NOTE {0} {1}", g.date(style=g.c(["us", "us_short", "iso", "dmy_abbr"])), g.clock())
    n.line("Pt {0}, {1}, bed {2}", g.name(pt, g.c(["last_first", "caps", "full"])), g.age(pt["age"]), str(g.r.randint(1, 30)))
    n.line("{0} Pt resting, {1}. {2}", g.clock(), g.vitals(), g.c(P.PROCEDURES))
    rel = g.person()
    n.line("{0} {1} at bedside, asking about discharge; states {2} will pick pt up after work at {3}.",
           cap(g.c(P.RELATIONS)), g.name(rel, g.c(["full", "lower", "nick"])),
           [(rel["first"].lower() if g.chance(0.4) else rel["first"], "FIRST_NAME")], g.org(g.employers))
    n.line("{0} Pt states \"my {1} {2} has my phone, call {3}\".", g.clock(), g.c(P.RELATIONS),
           [(g.c(g.word_names)[0], "FIRST_NAME")], g.phone())
    n.line("{0} {1}. {2}.", g.clock(), g.c(P.SCORES), g.c(["Call bell within reach", "Bed alarm on",
                                                             "Fall precautions maintained", "Turned q2h"]))
    if g.chance(0.4):
        n.line("IV pump {0} alarmed x2, tubing changed. {1}", g.serial(), clinical_sentence(g))
    if g.chance(0.3):
        n.line("Family's car (plate {0}) moved from ambulance bay by security.", g.plate())
    prose(g, n, g.r.randint(1, 3))
    signer = g.person()
    if g.chance(0.5):
        n.line("/s/ {0}, RN", [(signer["first"][0] + signer["last"][0], "PERSON")])
    else:
        n.line("{0}, RN", g.name(signer, g.c(["full", "initial"])))


def medication_list(g, n):
    pt = g.person()
    n.line("MEDICATION LIST -- printed {0}", g.date())
    n.line("Name: {0}    DOB: {1}    Sex: {2}", g.name(pt, g.c(["last_first", "full", "caps"])), g.dob(age=pt["age"]), pt["sex"].upper())
    n.line("Plan: {0}    Member ID: {1}    Group: {2}", g.org(g.insurers), g.health_plan(), g.digits(6))
    pharm = g.c(["Corner Drug Pharmacy", "Bayview Apothecary", "Northgate Outpatient Pharmacy",
                 "Rx Express #4471", "Hillside Chemist", "Apotheke am Rathaus"])
    addr, country = g.address()
    n.line("Pharmacy: {0}, {1}; phone {2}; fax {3}", [(pharm, "ORGANIZATION")], addr, g.phone(country), g.phone(country, "FAX"))
    doc, doc_segs = g.doctor("dr_full")
    n.line("Prescriber: {0}   NPI {1}   DEA {2}", doc_segs, g.npi(), g.dea())
    n.line("\nACTIVE MEDICATIONS")
    for _ in range(g.r.randint(4, 9)):
        n.line("- {0}   (Rx #{1}, last filled {2})", g.drug(), g.id_num(), g.date(style=g.c(["us", "us_short", "iso"])))
    n.line("\nAllergies: {0}", g.c(["penicillin (hives)", "sulfa drugs", "NKDA", "latex; codeine (nausea)", "iodinated contrast"]))
    n.line("Indications: {0}, {1}.", g.c(P.DISEASES), g.c(P.DISEASES))
    if g.chance(0.4):
        n.line("Device: {0}, {1} {2}.", *g.c(P.DEVICES), g.serial())
    n.line("Questions? Call {0} or write to {1}.", g.phone(), g.email())


def lab_report(g, n):
    pt = g.person()
    lab = g.org()
    n.line("{0} Laboratory Services", lab)
    n.line("Patient: {0}   MRN: {1}   Acct: {2}", g.name(pt, g.c(["last_first", "caps", "family_first", "full"])), g.mrn(), g.account())
    n.line("DOB: {0}   Age: {1}   Sex: {2}", g.dob(age=pt["age"]), [(str(pt["age"]), "AGE")], pt["sex"].upper())
    n.line("Collected: {0} {1}   Received: {2} {3}   Specimen: {4}", g.date(style="us"), g.clock(), g.date(style="us"), g.clock(),
           g.id_num())
    n.line("Ordering provider: {0}", g.doctor()[1])
    n.line("\nTEST                RESULT      REFERENCE")
    rows = [("Sodium", "138", "mmol/L", "135-145"), ("Potassium", "5.6 H", "mmol/L", "3.5-5.1"),
            ("Creatinine", "1.84 H", "mg/dL", "0.57-1.00"), ("Glucose", "212 H", "mg/dL", "70-99"),
            ("Hemoglobin A1c", "8.4 H", "%", "4.0-5.6"), ("TSH", "0.12 L", "mIU/L", "0.45-4.50"),
            ("Ferritin", "8 L", "ng/mL", "15-150"), ("INR", "3.1 H", "", "0.9-1.1"),
            ("WBC", "14.2 H", "x10^9/L", "4.0-11.0"), ("Platelets", "98 L", "x10^9/L", "150-400"),
            ("Troponin I, hs", "34 H", "ng/L", "<16"), ("25-OH vitamin D", "14 L", "ng/mL", "30-100"),
            ("Lithium", "0.9", "mmol/L", "0.6-1.2"), ("Anti-CCP", "112 H", "U/mL", "<20")]
    for name, val, unit, ref in g.r.sample(rows, g.r.randint(4, 9)):
        n.line("{0}", f"{name:<20}{val:<12}{ref} {unit}".rstrip())
    n.line("\nComment: {0}", clinical_sentence(g))
    n.line("Critical value called to {0} at {1} on {2}; read back verified.", g.name(g.person(), g.c(["full", "initial"])),
           g.clock(), g.date(style=g.c(["us", "us_short"])))
    if g.chance(0.3):
        n.line("Report also sent to {0} (fax {1}).", g.org(), g.phone(label="FAX"))


def patient_message(g, n):
    pt = g.person()
    greeting = g.c(["Hi", "Dear", "Hello"])
    first = pt["first"].lower() if g.chance(0.15) else pt["first"]
    n.line("{0} {1},", greeting, [(first, "FIRST_NAME")])
    n.line("\nYour results from {0} are back. {1} Your {2} was in the expected range, so please keep taking {3}.",
           g.date(style=g.c(["long", "no_year", "us_short", "word_day"])), g.c(["Good news!", "Thanks for waiting.", ""]),
           g.c(["HbA1c", "cholesterol", "kidney function", "thyroid level"]), g.drug())
    if g.chance(0.5):
        n.line("We also received the letter from {0} about your {1}.", g.org(), g.c(P.DISEASES))
    n.line("Your next visit is {0} at {1} with Dr. {2}.", g.date(style=g.c(["long", "ordinal", "words", "abbr"])),
           g.clock(), [(g.person()["last"], "LAST_NAME")])
    n.line("If anything changes call us at {0}, email {1}, or log in at {2} (username {3}).", g.phone(),
           g.email(), g.url(), g.username(pt))
    if g.chance(0.35):
        addr, _ = g.address(one_line=True)
        n.line("We have your address as {0}; tell us if it changed.", addr)
    if g.chance(0.3):
        n.line("We noticed a sign-in from {0} on {1}; if it was not you, reset your password.", g.ip(), g.date())
    if g.chance(0.25):
        n.line("P.S. Happy {0} birthday! Turning {1} is something.", g.c(["early", "belated"]), [(str(pt["age"] + 1), "AGE")])
    n.line("{0}", g.c(["Hope you are feeling better.", "Will call if anything else comes up.",
                       "May is a busy month, so book early.", "Grace period for the copay is 30 days.", ""]))
    n.line("\nWarm regards,\n{0}\n{1}", g.name(g.person(), g.c(["full", "initial"])), g.org())


WRITERS = {
    "discharge_summary": discharge_summary,
    "progress_note": progress_note,
    "radiology_report": radiology_report,
    "referral_letter": referral_letter,
    "nursing_note": nursing_note,
    "medication_list": medication_list,
    "lab_report": lab_report,
    "patient_message": patient_message,
}
