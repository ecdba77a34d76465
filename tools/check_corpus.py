#!/usr/bin/env python3
"""Self-check for corpus files written by gen_corpus.py (or any gold JSON Lines file).

Checks, per line: the JSON shape (`id`, `text`, `gold_spans`), that every span has integer
code-point offsets inside the text with start < end, a canonical phiguard label, no leading
or trailing whitespace, and that spans do not overlap. With several files it also checks
that ids are unique and reports how many name tokens the files share (dev and test pools
are meant to be disjoint). Messages name the file and line, never the text.

Usage: python3 tools/check_corpus.py tests/fixtures/corpus/*.jsonl
Exit status: 0 when every file is clean, 1 otherwise.
"""

import collections
import json
import sys

# Label::canonical() in src/detect/span.rs.
CANONICAL = {
    "PERSON", "FIRST_NAME", "LAST_NAME", "MIDDLE_NAME", "DATE", "DATE_OF_BIRTH", "TIME", "AGE",
    "PHONE", "FAX", "EMAIL", "URL", "IP_ADDRESS", "SSN", "MEDICAL_RECORD_NUMBER",
    "HEALTH_PLAN_NUMBER", "ACCOUNT_NUMBER", "LICENSE_NUMBER", "VEHICLE_ID", "DEVICE_ID", "ID_NUM",
    "CREDIT_CARD", "ZIPCODE", "STREET_ADDRESS", "CITY", "STATE", "COUNTRY", "LOCATION",
    "ORGANIZATION", "USERNAME", "PASSWORD", "OTHER",
}


def check_file(path, seen_ids, names):
    errors = []
    labels = collections.Counter()
    docs = 0
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                doc = json.loads(line)
            except json.JSONDecodeError as e:
                errors.append(f"{where}: invalid JSON at column {e.colno}")
                continue
            text = doc.get("text")
            spans = doc.get("gold_spans")
            if not isinstance(text, str) or not isinstance(spans, list):
                errors.append(f"{where}: needs string `text` and array `gold_spans`")
                continue
            docs += 1
            doc_id = doc.get("id")
            if doc_id in seen_ids:
                errors.append(f"{where}: duplicate id")
            seen_ids.add(doc_id)
            prev_end, prev_index = -1, -1
            for i, s in enumerate(sorted(spans, key=lambda s: (s.get("start", -1), s.get("end", -1)))):
                start, end, label = s.get("start"), s.get("end"), s.get("label")
                if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
                    errors.append(f"{where}: span {i} has bad offsets {start}..{end}")
                    continue
                if label not in CANONICAL:
                    errors.append(f"{where}: span {i} has a non-canonical label")
                surface = text[start:end]
                if "text" in s and s["text"] != surface:
                    errors.append(f"{where}: span {i} text differs from text[start:end]")
                if surface != surface.strip():
                    errors.append(f"{where}: span {i} starts or ends with whitespace")
                if start < prev_end:
                    errors.append(f"{where}: span {i} overlaps span {prev_index}")
                prev_end, prev_index = max(prev_end, end), i
                labels[label] += 1
                if label in ("FIRST_NAME", "LAST_NAME"):
                    names[path].add(surface.lower())
    return docs, labels, errors


def main(paths):
    if not paths:
        print(__doc__)
        return 1
    seen_ids = set()
    names = collections.defaultdict(set)
    failed = False
    for path in paths:
        docs, labels, errors = check_file(path, seen_ids, names)
        for e in errors[:50]:
            print(e)
        if errors:
            failed = True
        total = sum(labels.values())
        print(f"{path}: {docs} documents, {total} spans, {len(errors)} problems")
        print("  " + ", ".join(f"{k} {v}" for k, v in sorted(labels.items())))
    if len(paths) > 1:
        sets = list(names.values())
        shared = set.intersection(*sets) if sets else set()
        print(f"name tokens shared by all files: {len(shared)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
