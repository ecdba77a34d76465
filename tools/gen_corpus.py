#!/usr/bin/env python3
"""Generates phiguard's synthetic clinical development corpus (JSON Lines, gold spans).

Every note is invented from the word pools in corpus_pools.py; no patient data is involved.
Gold spans are produced by construction: each PHI value is appended to the note together
with its label, so offsets are exact Unicode code-point offsets (Python string indices)
and `text[start:end]` is the entity text. Each span also carries that `text`, so readers
(tools/check_corpus.py, phiguard's `eval::read_gold`) can prove the offsets are code points. Labels are phiguard's canonical names
(`Label::canonical()` in src/detect/span.rs).

Labelling conventions (so a reader of the figures knows what was asked for):
- Names are split into FIRST_NAME / MIDDLE_NAME / LAST_NAME; titles (Dr., Mrs.) and
  credentials (MD, RN) are not PHI; the period after an initial is not part of the span;
  particles belong to the surname ("van der Berg"); a quoted nickname is a FIRST_NAME.
  Signature initials ("/s/ MK") are PERSON.
- Every date (including dates of birth) is DATE; clock times are left unlabelled.
- Every age is AGE, only the number ("67" in "67-year-old", "ninety-two" in words).
- Addresses are split into STREET_ADDRESS (number, street, unit), CITY, STATE, ZIPCODE
  (postcodes of every country) and COUNTRY.
- Accession, specimen and prescription numbers are ID_NUM; NHS numbers are
  MEDICAL_RECORD_NUMBER; NPI, DEA and professional registration numbers LICENSE_NUMBER.
  With --rare-identifiers, photograph file names, biometric identifiers (voiceprint,
  fingerprint, retinal scan) and other unique codes (study, trial, badge) are ID_NUM too.
- Hard negatives stay unlabelled: drugs, doses, diseases and eponyms (Parkinson, Hodgkin,
  Crohn), signs, scores, lab values, vitals (132/84 looks like a date), codes, device makes.
- With --phi-free N, N short texts with no PHI at all follow the notes (note type
  `phi_free`, no gold spans): one clinical sentence, question or coded line each (symptoms,
  drugs, diseases and eponyms, signs, labs, staging, gene variants), so that a model trained
  on the notes also sees short text in which nothing is a name. They come from their own
  random stream: the notes are the same with or without them.

Usage:
    python3 tools/gen_corpus.py --split dev --count 300 --seed 1 > tests/fixtures/corpus/dev.jsonl
"""

import argparse
import json
import random
import re
import sys

import corpus_pools as P
from note_types import WRITERS, fmt

NOTE_TYPES = [
    "discharge_summary", "progress_note", "radiology_report", "referral_letter",
    "nursing_note", "medication_list", "lab_report", "patient_message",
]

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
        "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
ORDINALS = {1: "first", 2: "second", 3: "third", 5: "fifth", 8: "eighth", 9: "ninth",
            12: "twelfth", 20: "twentieth", 30: "thirtieth"}
FAMILY_FIRST = {"Wang", "Li", "Zhang", "Liu", "Chen", "Yang", "Huang", "Zhao", "Wu", "Zhou",
                "Xu", "Nguyen", "Tran", "Le", "Pham", "Kim", "Park", "Choi", "Nagy", "Kovács"}


def words(n):
    if n < 20:
        return ONES[n]
    if n < 100:
        return TENS[n // 10] + ("-" + ONES[n % 10] if n % 10 else "")
    rest = n % 100
    return "one hundred" + (" and " + words(rest) if rest else "")


def ordinal_word(n):
    if n in ORDINALS:
        return ORDINALS[n]
    if n > 20 and n % 10 and n // 10 * 10 != n:
        return TENS[n // 10] + "-" + ordinal_word(n % 10)
    return words(n) + "th"


def suffix(d):
    if 10 <= d % 100 <= 20:
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(d % 10, "th")


class Note:
    """Accumulates text and gold spans; offsets are code points by construction."""

    def __init__(self):
        self.parts = []
        self.spans = []
        self.length = 0

    def add(self, segs):
        for text, label in segs:
            if not text:
                continue
            if label is not None:
                self.spans.append({"start": self.length, "end": self.length + len(text), "label": label,
                                   "text": text})
            self.parts.append(text)
            self.length += len(text)

    def line(self, template, *args):
        self.add(fmt(template + "\n", *args))

    def text(self):
        return "".join(self.parts)


class Gen:
    """PHI value factories over one split's pools and one seeded RNG."""

    def __init__(self, split, seed):
        self.r = random.Random(f"{split}:{seed}")
        sp = lambda pool: P.split_pool(pool, split)  # noqa: E731
        self.first_names = sp(P.FIRST_NAMES)
        self.last_names = sp(P.LAST_NAMES)
        self.us_cities = sp(P.US_CITIES)
        self.us_streets = sp(P.US_STREETS)
        self.uk_places, self.uk_streets = sp(P.UK_PLACES), sp(P.UK_STREETS)
        self.ca_places, self.ca_streets = sp(P.CA_PLACES), sp(P.CA_STREETS)
        self.de_places, self.de_streets = sp(P.DE_PLACES), sp(P.DE_STREETS)
        self.in_places, self.in_streets = sp(P.IN_PLACES), sp(P.IN_STREETS)
        self.au_places, self.au_streets = sp(P.AU_PLACES), sp(P.AU_STREETS)
        self.hospitals = sp(P.HOSPITALS)
        self.employers = sp(P.EMPLOYERS)
        self.insurers = sp(P.INSURERS)
        self.domains = sp(P.EMAIL_DOMAINS)
        self.portals = sp(P.PORTAL_HOSTS)
        self.word_names = sp(P.WORD_NAMES)

    def c(self, seq):
        return self.r.choice(seq)

    def chance(self, p):
        return self.r.random() < p

    def digits(self, n):
        return "".join(str(self.r.randrange(10)) for _ in range(n))

    def letters(self, n, alphabet="ABCDEFGHJKLMNPRSTUVWXYZ"):
        return "".join(self.c(alphabet) for _ in range(n))

    # --- people ---------------------------------------------------------------------
    def person(self):
        first, sex = self.c(self.first_names)
        last = self.c(self.last_names)
        if self.chance(0.06):
            a, b = self.c(self.last_names), self.c(self.last_names)
            if " " not in a + b and "-" not in a + b and a != b:
                last = f"{a}-{b}"
        middle = None
        if self.chance(0.3):
            middle = self.c(self.first_names)[0]
        return {"first": first, "sex": sex, "last": last, "middle": middle, "age": self.age_value(),
                "nick": P.NICKNAMES.get(first), "family_first": last in FAMILY_FIRST}

    def name(self, p, style=None):
        """A rendering of a person's name as labelled segments."""
        f, l, m = p["first"], p["last"], p["middle"]
        style = style or self.c(["full", "full", "full", "last_first", "initial", "caps",
                                 "middle", "nick", "lower", "family_first"])
        F, L, M = "FIRST_NAME", "LAST_NAME", "MIDDLE_NAME"
        if style == "nick" and not p["nick"]:
            style = "middle"
        if style == "middle" and not m:
            style = "full"
        if style == "family_first" and not p["family_first"]:
            style = "full"
        if style == "full":
            return [(f, F), (" ", None), (l, L)]
        if style == "middle":
            if self.chance(0.5):
                return [(f, F), (" ", None), (m[0], M), (". ", None), (l, L)]
            return [(f, F), (" ", None), (m, M), (" ", None), (l, L)]
        if style == "last_first":
            caps = self.chance(0.5)
            segs = [(l.upper() if caps else l, L), (", ", None), (f, F)]
            if m:
                segs += [(" ", None), (m[0], M), (".", None)]
            return segs
        if style == "initial":
            return [(f[0], F), (". ", None), (l, L)]
        if style == "caps":
            return [(f.upper(), F), (" ", None), (l.upper(), L)]
        if style == "nick":
            q = self.c(['"', "'"])
            return [(f, F), (f" {q}", None), (p["nick"], F), (f"{q} ", None), (l, L)]
        if style == "lower":
            return [(f.lower(), F), (" ", None), (l.lower(), L)]
        if style == "family_first":
            return [(l.upper(), L), (" ", None), (f, F)]
        raise ValueError(style)

    def titled(self, p):
        """'Mr. Lima', 'Ms. O'Brien', 'Mx. Nguyen'."""
        t = {"m": self.c(["Mr.", "Mr"]), "f": self.c(["Ms.", "Mrs.", "Ms"])}[p["sex"]]
        if self.chance(0.05):
            t = "Mx."
        return [(t + " ", None), (p["last"], "LAST_NAME")]

    def doctor(self, style=None):
        d = self.person()
        style = style or self.c(["dr_full", "dr_last", "full_md", "dr_initial"])
        if style == "dr_full":
            return d, fmt("Dr. {0}", self.name(d, "full"))
        if style == "dr_last":
            return d, [("Dr. ", None), (d["last"], "LAST_NAME")]
        if style == "dr_initial":
            return d, fmt("Dr {0}", self.name(d, "initial"))
        return d, fmt("{0}, " + self.c(["MD", "DO", "MBBS", "FRCP", "NP", "PA-C"]), self.name(d, "full"))

    # --- dates and ages -------------------------------------------------------------
    def ymd(self, lo=2015, hi=2026):
        return self.r.randint(lo, hi), self.r.randint(1, 12), self.r.randint(1, 28)

    def date(self, lo=2015, hi=2026, style=None):
        y, m, d = self.ymd(lo, hi)
        M = MONTHS[m - 1]
        styles = {
            "us": f"{m:02d}/{d:02d}/{y}", "us_short": f"{m}/{d}/{y}", "us_yy": f"{m}/{d}/{y % 100:02d}",
            "iso": f"{y}-{m:02d}-{d:02d}", "de": f"{d:02d}.{m:02d}.{y}", "uk": f"{d:02d}/{m:02d}/{y}",
            "long": f"{M} {d}, {y}", "long_uk": f"{d} {M} {y}", "abbr": f"{M[:3]} {d} {y}",
            "abbr_dot": f"{M[:3]}. {d}, {y}", "dmy_abbr": f"{d:02d}-{M[:3]}-{y}",
            "dmy_caps": f"{d:02d}-{M[:3].upper()}-{y}", "ordinal": f"{M} {d}{suffix(d)}, {y}",
            "words": f"the {ordinal_word(d)} of {M}, {y}", "month_year": f"{M} {y}",
            "mm_yyyy": f"{m:02d}/{y}", "slash_iso": f"{y}/{m:02d}/{d:02d}", "no_year": f"{M} {d}",
            "d_mon": f"{d} {M[:3]}", "word_day": f"{M} {ordinal_word(d)}",
        }
        weights = {"us": 6, "us_short": 4, "iso": 3, "long": 4, "long_uk": 2, "uk": 2, "de": 1,
                   "abbr": 1, "abbr_dot": 1, "dmy_abbr": 1, "dmy_caps": 1, "ordinal": 1, "words": 1,
                   "month_year": 1, "mm_yyyy": 1, "slash_iso": 1, "no_year": 1, "d_mon": 1,
                   "word_day": 1, "us_yy": 2}
        if style is None:
            keys = list(weights)
            style = self.r.choices(keys, [weights[k] for k in keys])[0]
        return [(styles[style], "DATE")]

    def dob(self, style=None, age=None):
        """A date of birth; with `age`, one consistent with that age in 2025."""
        lo, hi = (2024 - age, 2025 - age) if age is not None else (1925, 2022)
        return self.date(lo, hi, style or self.c(["us", "us", "iso", "long", "uk", "dmy_abbr"]))

    def age_value(self):
        roll = self.r.random()
        if roll < 0.12:
            return self.r.randint(90, 104)
        if roll < 0.2:
            return self.r.randint(1, 17)
        return self.r.randint(18, 89)

    def age(self, a=None, article=False):
        """'67-year-old' style phrase (with "a"/"an" when asked); the span is the number only."""
        a = a if a is not None else self.age_value()
        if self.chance(0.08):
            segs = [(words(a), "AGE"), ("-year-old", None)]
        else:
            segs = [(str(a), "AGE"), (self.c(["-year-old", "-year-old", " year old", "-yo", " y/o", " yo"]), None)]
        if article:
            an = segs[0][0][0] in "8e" or segs[0][0] in ("11", "18")
            segs.insert(0, ("an " if an else "a ", None))
        return segs

    # --- contact ----------------------------------------------------------------------
    def phone(self, country="us", label="PHONE"):
        d = self.digits
        if country == "uk":
            v = self.c([f"+44 20 7946 0{d(3)}", f"020 7946 0{d(3)}", f"07700 900{d(3)}",
                        f"0113 496 0{d(3)}", f"+44 (0)161 496 0{d(3)}"])
        elif country == "de":
            v = self.c([f"+49 30 {d(8)}", f"030 {d(7)}", f"+49 (0)89 {d(4)}-{d(3)}", f"0221 {d(3)} {d(4)}"])
        elif country == "in":
            v = self.c([f"+91 98{d(3)} {d(5)}", f"+91-80-{d(8)}", f"0{d(2)}-{d(8)}", f"9{d(9)}"])
        elif country == "au":
            v = self.c([f"+61 3 {d(4)} {d(4)}", f"(02) {d(4)} {d(4)}", f"04{d(2)} {d(3)} {d(3)}"])
        else:
            a = f"{self.r.randint(2, 9)}{d(2)}"
            n = self.c(["555-01" + d(2), f"{self.r.randint(2, 9)}{d(2)}-{d(4)}"])
            v = self.c([f"({a}) {n}", f"{a}-{n}", f"{a}.{n.replace('-', '.')}",
                        f"+1 {a} {n.replace('-', ' ')}", f"1-{a}-{n}", f"{a}{n.replace('-', '')}"])
            if self.chance(0.1):
                v += f" x{d(3)}"
        return [(v, label)]

    def email(self, p=None):
        p = p or self.person()
        f = re.sub(r"[^a-z]", "", p["first"].lower().encode("ascii", "ignore").decode()) or "pt"
        l = re.sub(r"[^a-z]", "", p["last"].lower().encode("ascii", "ignore").decode()) or "user"
        local = self.c([f"{f}.{l}", f"{f[0]}{l}", f"{f}{self.r.randint(1, 99)}", f"{l}.{f}",
                        f"{f}_{l}{self.r.randint(60, 99)}"])
        return [(f"{local}@{self.c(self.domains)}", "EMAIL")]

    def url(self):
        host = self.c(self.portals)
        v = self.c([f"https://{host}/patient/{self.digits(6)}", f"https://{host}", f"www.{host.split('.', 1)[1]}",
                    f"http://{host}/results?id={self.digits(8)}", f"{host}/login"])
        return [(v, "URL")]

    def ip(self):
        r = self.r.randint
        v = self.c([f"10.{r(0, 255)}.{r(0, 255)}.{r(1, 254)}", f"192.168.{r(0, 255)}.{r(1, 254)}",
                    f"172.{r(16, 31)}.{r(0, 255)}.{r(1, 254)}", f"{r(11, 223)}.{r(0, 255)}.{r(0, 255)}.{r(1, 254)}",
                    f"2001:db8:{r(0, 65535):x}::{r(1, 65535):x}", f"fe80::{r(0, 65535):x}:{r(0, 65535):x}"])
        return [(v, "IP_ADDRESS")]

    def username(self, p):
        base = re.sub(r"[^a-z]", "", p["first"].lower().encode("ascii", "ignore").decode())[:6] or "user"
        return [(f"{base}{p['last'][0].lower() if p['last'][0].isalpha() else 'x'}{self.r.randint(10, 99)}", "USERNAME")]

    # --- identifiers --------------------------------------------------------------------
    def ssn(self):
        while True:
            area = self.r.randint(1, 899)
            if area != 666:
                break
        g, s = self.r.randint(1, 99), self.r.randint(1, 9999)
        sep = self.c(["-", "-", "-", " "])
        return [(f"{area:03d}{sep}{g:02d}{sep}{s:04d}", "SSN")]

    def mrn(self):
        d = self.digits
        return [(self.c([d(8), d(7), f"{d(3)}-{d(3)}-{d(3)}", f"A{d(7)}", f"MR{d(6)}",
                         f"{self.letters(2)}{d(6)}", f"00{d(6)}"]), "MEDICAL_RECORD_NUMBER")]

    def nhs(self):
        while True:
            ds = [self.r.randrange(10) for _ in range(9)]
            check = 11 - sum(x * w for x, w in zip(ds, range(10, 1, -1))) % 11
            check = 0 if check == 11 else check
            if check != 10:
                s = "".join(map(str, ds)) + str(check)
                return [(f"{s[:3]} {s[3:6]} {s[6:]}", "MEDICAL_RECORD_NUMBER")]

    def health_plan(self):
        d = self.digits
        mbi = (f"{self.r.randint(1, 9)}{self.letters(1, 'ACDEFGHJKMNPQRTUVWXY')}{self.c('ACDEFGHJKMNPQRTUVWXY0123456789')}"
               f"{d(1)}-{self.letters(1, 'ACDEFGHJKMNPQRTUVWXY')}{self.c('ACDEFGHJKMNPQRTUVWXY0123456789')}{d(1)}"
               f"-{self.letters(2, 'ACDEFGHJKMNPQRTUVWXY')}{d(2)}")
        return [(self.c([f"{self.letters(3)}{d(9)}", f"W{d(8)}", mbi, f"{d(4)}-{d(3)}-{d(3)}-{self.letters(2)}",
                         f"{self.letters(1)}{d(2)}-{d(5)}-{d(2)}", f"ZGP{d(7)}01"]), "HEALTH_PLAN_NUMBER")]

    def account(self):
        d = self.digits
        if self.chance(0.15):
            return self.iban()
        return [(self.c([f"{d(4)}-{d(3)}-{d(3)}", d(11), f"ACCT{d(7)}", f"{d(2)}-{d(7)}", d(9)]), "ACCOUNT_NUMBER")]

    def iban(self):
        bban = self.digits(18)
        num = int(bban + "131400")  # D=13, E=14, check digits 00
        check = 98 - num % 97
        s = f"DE{check:02d}{bban}"
        return [(" ".join(s[i:i + 4] for i in range(0, len(s), 4)), "ACCOUNT_NUMBER")]

    def dea(self):
        ds = [self.r.randrange(10) for _ in range(6)]
        check = (ds[0] + ds[2] + ds[4] + 2 * (ds[1] + ds[3] + ds[5])) % 10
        return [(self.c("ABFGM") + self.letters(1) + "".join(map(str, ds)) + str(check), "LICENSE_NUMBER")]

    def npi(self):
        body = [self.r.randint(1, 2)] + [self.r.randrange(10) for _ in range(8)]
        digits = [8, 0, 8, 4, 0] + body
        total = 0
        for i, x in enumerate(reversed(digits)):
            y = x * 2 if i % 2 == 0 else x
            total += y - 9 if y > 9 else y
        check = (10 - total % 10) % 10
        return [("".join(map(str, body)) + str(check), "LICENSE_NUMBER")]

    def license(self):
        d = self.digits
        return [(self.c([f"{self.letters(1)}{d(7)}", f"{self.letters(1)}{d(3)}-{d(4)}-{d(4)}", f"MD-{d(7)}",
                         f"{d(3)} {d(3)} {d(3)}", f"RN{d(6)}", f"{self.letters(2)}{d(6)}"]), "LICENSE_NUMBER")]

    def vin(self):
        alphabet = "ABCDEFGHJKLMNPRSTUVWXYZ0123456789"
        trans = {**{str(i): i for i in range(10)},
                 **dict(zip("ABCDEFGH", range(1, 9))), **dict(zip("JKLMN", range(1, 6))), "P": 7, "R": 9,
                 **dict(zip("STUVWXYZ", range(2, 10)))}
        weights = [8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2]
        chars = [self.c(alphabet) for _ in range(17)]
        chars[8] = "0"
        check = sum(trans[c] * w for c, w in zip(chars, weights)) % 11
        chars[8] = "X" if check == 10 else str(check)
        return [("".join(chars), "VEHICLE_ID")]

    def plate(self):
        d = self.digits
        return [(self.c([f"{d(1)}{self.letters(3)}{d(3)}", f"{self.letters(3)}-{d(4)}", f"{self.letters(2)}{d(2)} {self.letters(3)}",
                         f"{self.c(['B', 'M', 'HH', 'K'])}-{self.letters(2)} {d(4)}", f"{self.letters(2)} {d(2)} {self.letters(2)} {d(4)}"]),
                 "VEHICLE_ID")]

    def serial(self):
        d = self.digits
        return [(self.c([f"SN-{self.letters(4, 'ABCDEFGHJKLMNPQRSTUVWXYZ0123456789')}-{d(5)}", f"{self.letters(3)}{d(6)}{self.letters(1)}",
                         f"{d(2)}{self.letters(2)}{d(7)}", f"(01)00{d(12)}(17){d(6)}(21){self.letters(3)}{d(6)}",
                         f"{self.letters(1)}{d(9)}"]), "DEVICE_ID")]

    def id_num(self, prefix=""):
        return [(prefix + self.c([self.digits(8), f"{self.letters(2)}-{self.digits(2)}-{self.digits(6)}",
                                  f"{self.digits(4)}{self.letters(1)}{self.digits(4)}"]), "ID_NUM")]

    # Safe Harbor (16) biometric identifiers, (17) full-face photographs and comparable
    # images (a note names them by file or image reference) and (18) any other unique
    # identifying code: each is an ID_NUM span, the label that any other identifier takes.
    def photo(self):
        d, day = self.digits, f"20{self.r.randint(10, 26)}{self.r.randint(1, 12):02d}{self.r.randint(1, 28):02d}"
        return [(self.c([f"IMG_{day}_{d(4)}.jpg", f"DSC{d(5)}.JPG", f"photo-{d(6)}.jpeg",
                         f"face_{d(4)}_{self.letters(2).lower()}.png", f"wound-{day}-{d(3)}.tif",
                         f"PXL_{day}_{d(9)}.jpg"]), "ID_NUM")]

    def biometric(self):
        d = self.digits
        return [(self.c([f"VP-{self.letters(2)}{d(6)}", f"FP{d(8)}", f"RS-{d(5)}-{self.letters(1)}",
                         f"BIO{d(3)}{self.letters(3)}{d(2)}", f"{self.letters(3)}-{d(4)}-{d(4)}"]), "ID_NUM")]

    def other_code(self):
        d = self.digits
        return [(self.c([f"STUDY-{d(3)}-{d(4)}", f"{self.letters(2)}-{d(4)}", f"{self.letters(3)}{d(2)}-{d(3)}",
                         f"B{d(5)}", f"{d(2)}{self.letters(1)}{d(5)}", f"S{d(3)}-{self.letters(2)}{d(2)}"]), "ID_NUM")]

    def org(self, pool=None):
        return [(self.c(pool or self.hospitals), "ORGANIZATION")]

    # --- places -----------------------------------------------------------------------
    def address(self, country=None, one_line=None):
        """Returns (segments, country code)."""
        country = country or self.r.choices(["us", "uk", "ca", "de", "in", "au"], [6, 2, 2, 1, 2, 1])[0]
        one_line = self.chance(0.6) if one_line is None else one_line
        nl = ", " if one_line else "\n"
        d = self.r.randint
        with_country = self.chance(0.35)
        if country == "us":
            city, st, state, z = self.c(self.us_cities)
            street = f"{d(1, 9999)} {self.c(self.us_streets)}"
            if self.chance(0.3):
                street += self.c([f", Apt {d(1, 40)}{self.c('ABCD')}", f" #{d(100, 999)}", f", Unit {d(1, 300)}"])
            zipc = z + self.digits(2) + (f"-{self.digits(4)}" if self.chance(0.2) else "")
            segs = [(street, "STREET_ADDRESS"), (nl, None), (city, "CITY"), (", ", None),
                    (st if self.chance(0.75) else state, "STATE"), (" ", None), (zipc, "ZIPCODE")]
            if with_country:
                segs += [(nl, None), (self.c(["USA", "United States"]), "COUNTRY")]
        elif country == "uk":
            city, pc = self.c(self.uk_places)
            street = f"{d(1, 240)} {self.c(self.uk_streets)}"
            if self.chance(0.3):
                street = f"Flat {d(1, 12)}, " + street
            segs = [(street, "STREET_ADDRESS"), (nl, None), (city.upper() if self.chance(0.2) else city, "CITY"),
                    (nl, None), (pc, "ZIPCODE")]
            if with_country:
                segs += [(nl, None), (self.c(["United Kingdom", "UK"]), "COUNTRY")]
        elif country == "ca":
            city, prov, pc = self.c(self.ca_places)
            segs = [(f"{d(1, 4000)} {self.c(self.ca_streets)}", "STREET_ADDRESS"), (nl, None), (city, "CITY"),
                    (" ", None), (prov, "STATE"), ("  ", None), (pc, "ZIPCODE")]
            if with_country:
                segs += [(nl, None), ("Canada", "COUNTRY")]
        elif country == "de":
            city, plz = self.c(self.de_places)
            segs = [(f"{self.c(self.de_streets)} {d(1, 120)}{self.c(['', '', 'a', 'b'])}", "STREET_ADDRESS"), (nl, None),
                    (plz, "ZIPCODE"), (" ", None), (city, "CITY")]
            if with_country:
                segs += [(nl, None), (self.c(["Germany", "Deutschland"]), "COUNTRY")]
        elif country == "in":
            city, state, pin = self.c(self.in_places)
            segs = [(self.c(self.in_streets), "STREET_ADDRESS"), (nl, None), (city, "CITY"), (" - ", None),
                    (pin, "ZIPCODE"), (", ", None), (state, "STATE")]
            if with_country:
                segs += [(nl, None), ("India", "COUNTRY")]
        else:
            city, st, pc = self.c(self.au_places)
            segs = [(f"{d(1, 300)} {self.c(self.au_streets)}", "STREET_ADDRESS"), (nl, None), (city, "CITY"),
                    (" ", None), (st, "STATE"), (" ", None), (pc, "ZIPCODE")]
            if with_country:
                segs += [(nl, None), ("Australia", "COUNTRY")]
        return segs, country

    def city_only(self):
        city, st, _, _ = self.c(self.us_cities)
        if self.chance(0.5):
            return [(city, "CITY"), (", ", None), (st, "STATE")]
        return [(city, "CITY")]

    def country(self):
        return [(self.c(P.COUNTRIES), "COUNTRY")]

    # --- hard negatives ------------------------------------------------------------------
    def drug(self):
        name, dose = self.c(P.DRUGS)
        return f"{name} {dose}"

    def vitals(self):
        r = self.r.randint
        parts = [f"BP {r(95, 178)}/{r(55, 104)} mmHg", f"HR {r(52, 128)} bpm", f"RR {r(12, 28)}",
                 f"SpO2 {r(88, 100)}% on {self.c(['RA', '2 L NC', 'room air', '40% FiO2'])}",
                 f"T {r(360, 395) / 10:.1f} °C", f"Wt {r(450, 1300) / 10:.1f} kg", f"BMI {r(170, 420) / 10:.1f}",
                 f"pain {r(0, 10)}/10"]
        self.r.shuffle(parts)
        return ", ".join(parts[: r(4, 8)])

    def labs(self, n=None):
        return ", ".join(self.r.sample(P.LABS, n or self.r.randint(3, 7)))

    def clock(self):
        return self.c([f"{self.r.randint(0, 23):02d}:{self.r.choice(['00', '15', '30', '45', '10', '52'])}",
                       f"{self.r.randint(0, 23):02d}{self.r.choice(['00', '30', '45'])}",
                       f"{self.r.randint(1, 12)}:{self.r.randint(0, 59):02d} {self.c(['AM', 'PM', 'am', 'pm'])}"])

    def pronoun(self, p):
        return "He" if p["sex"] == "m" else "She"

    def noun(self, p):
        return "man" if p["sex"] == "m" else "woman"



RARE_LINES = [
    ("Clinical photographs: {0} and {1}.", "photo", "photo"),
    ("Photo on file: {0}", "photo"),
    ("Image {0} uploaded to the chart (consent signed).", "photo"),
    ("Full-face photograph {0} attached for identification.", "photo"),
    ("Voiceprint enrolment ID {0} verified on the call.", "biometric"),
    ("Fingerprint template {0} on record.", "biometric"),
    ("Biometric ID: {0}", "biometric"),
    ("Retinal scan reference {0} archived.", "biometric"),
    ("Enrolled in the research study, subject ID {0}.", "other_code"),
    ("Study code: {0}", "other_code"),
    ("Visitor badge #{0} issued to the family.", "other_code"),
    ("Trial participant {0}; unblinding not requested.", "other_code"),
]


def rare_identifier_line(g, n):
    template, *kinds = g.c(RARE_LINES)
    n.line(template, *[getattr(g, k)() for k in kinds])


def tnm(g):
    """A TNM stage ("pT2 N1 M0", "ypT3a N0", "cT4b N2 M1")."""
    t = g.c(["1", "1a", "1b", "1c", "2", "2a", "2b", "3", "3a", "3b", "4", "4a", "4b", "is", "X"])
    parts = [f"{g.c(['c', 'p', 'yp', ''])}T{t}", f"N{g.c(['0', '1', '1a', '2', '2b', '3', 'X'])}"]
    if g.chance(0.7):
        parts.append(f"M{g.c(['0', '1', '1a', '1b', 'X'])}")
    return " ".join(parts)


def variant(g):
    """A gene variant in HGVS-like notation ("c.1799T>A", "p.Gly12Asp", "p.Phe508del")."""
    bases = "ACGT"
    pos = g.r.randint(2, 4000)
    return g.c([
        f"c.{pos}{g.c(bases)}>{g.c(bases)}",
        f"c.{pos}_{pos + g.r.randint(1, 4)}del{''.join(g.c(bases) for _ in range(g.r.randint(1, 3)))}",
        f"c.{pos}+{g.r.randint(1, 6)}{g.c(bases)}>{g.c(bases)}",
        f"p.{g.c(P.AMINO_ACIDS)}{g.r.randint(2, 900)}{g.c(P.AMINO_ACIDS)}",
        f"p.{g.c(P.AMINO_ACIDS)}{g.r.randint(2, 900)}{g.c(['del', 'fs', 'Ter', 'dup'])}",
    ])


def cap(s):
    return s[:1].upper() + s[1:]


def phi_free_text(g):
    """One short text with no PHI: a clinical sentence, a question or a coded line."""
    sym, drug = g.c(P.SYMPTOMS), g.c(P.DRUGS)[0]
    disease, subject = g.c(P.DISEASES), g.c(["The patient", "Patient", "Pt", "He", "She", "They",
                                             "The child", f"Her {g.c(P.RELATIONS)}",
                                             f"His {g.c(P.RELATIONS)}"])
    text = g.c([
        f"{subject} {g.c(['denies', 'reports', 'endorses', 'complains of', 'developed', 'notes'])} {sym}.",
        f"{subject} {g.c(['denies', 'reports'])} {sym} and {g.c(P.SYMPTOMS)} on {drug}.",
        f"{sym.capitalize()} {g.c(['improved', 'resolved', 'worsened', 'recurred'])} after {drug}.",
        f"{sym.capitalize()} for {g.r.randint(2, 14)} {g.c(['days', 'weeks', 'hours'])}.",
        f"No {sym} or {g.c(P.SYMPTOMS)}.",
        f"{cap(disease)} {g.c(['ruled out', 'suspected', 'confirmed', 'in remission', 'not excluded'])}.",
        f"History of {disease}.",
        f"{g.c(['Continue', 'Start', 'Stop', 'Hold'])} {drug}.",
        f"Can {drug} cause {sym}?",
        f"Is {sym} after the {g.c(P.IMAGING)} a concern?",
        f"What is the usual dose of {drug} in {disease}?",
        f"{cap(g.c(P.SIGNS))}.",
        f"{g.c(P.SCORES)}.",
        f"{g.labs()}.",
        g.vitals(),
        f"{g.c(P.IMAGING)}: {g.c(P.FINDINGS)}.",
        f"Refer to {g.c(P.SPECIALTIES)}.",
        f"Staged as {tnm(g)}.",
        tnm(g),
        f"{g.c(P.GENES)} {variant(g)} {g.c(['detected', 'not detected', 'of uncertain significance'])}"
        f"{g.c(['', ' by NGS', ' by PCR', ' by FISH'])}.",
        variant(g),
        f"{g.c(P.CODES)}",
    ])
    return text.lower() if g.chance(0.1) else text


def phi_free(split, count, seed, id_prefix):
    g = Gen(split, seed)
    # Its own stream: the notes drawn from `seed` are the same with or without these texts.
    g.r = random.Random(f"{split}:{seed}:phi-free")
    for i in range(count):
        yield {"id": f"{id_prefix}-free-{i:04d}", "note_type": "phi_free", "split": split,
               "text": phi_free_text(g), "gold_spans": []}


def generate(split, count, seed, id_prefix=None, rare_identifiers=0.0):
    g = Gen(split, seed)
    id_prefix = id_prefix or split
    for i in range(count):
        note_type = NOTE_TYPES[i % len(NOTE_TYPES)] if i < len(NOTE_TYPES) else g.c(NOTE_TYPES)
        n = Note()
        WRITERS[note_type](g, n)
        # Drawn only when asked for, so the committed corpora regenerate byte for byte.
        if rare_identifiers and g.chance(rare_identifiers):
            rare_identifier_line(g, n)
        yield {"id": f"{id_prefix}-{i:04d}", "note_type": note_type, "split": split,
               "text": n.text(), "gold_spans": n.spans}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=["dev", "test"], required=True)
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", help="output file (default: stdout)")
    ap.add_argument("--id-prefix", help="document id prefix (default: the split name)")
    ap.add_argument("--rare-identifiers", type=float, default=0.0, metavar="P",
                    help="share of notes that also name a photograph, a biometric identifier or "
                         "another unique code (Safe Harbor categories 16-18, as ID_NUM); default 0")
    ap.add_argument("--phi-free", type=int, default=0, metavar="N",
                    help="also write N short texts without PHI (note type phi_free) after the notes")
    args = ap.parse_args(argv)
    out = open(args.out, "w", encoding="utf-8", newline="\n") if args.out else sys.stdout
    try:
        for doc in generate(args.split, args.count, args.seed, args.id_prefix, args.rare_identifiers):
            out.write(json.dumps(doc, ensure_ascii=False) + "\n")
        for doc in phi_free(args.split, args.phi_free, args.seed, args.id_prefix or args.split):
            out.write(json.dumps(doc, ensure_ascii=False) + "\n")
    finally:
        if args.out:
            out.close()


if __name__ == "__main__":
    main()
