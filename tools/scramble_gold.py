"""Replaces the gold spans of chosen labels with invented words, keeping the offsets right.

The corpus splits its name, place and institution pools between dev and test, so a rule
that learned dev's *words* scores well on dev and drops on test. Scoring a scrambled dev
file shows how much of a label's recall comes from the slot (context) rather than from
vocabulary, without looking at the test split:

    python3 tools/scramble_gold.py tests/fixtures/corpus/dev.jsonl /tmp/dev-org.jsonl \
        --labels ORGANIZATION --mode tail
    phiguard eval --detectors rules --gold /tmp/dev-org.jsonl

Modes: `one` (one invented word, case kept: names, cities), `bare` (one to three invented
capitalised words), `tail` (every word but the last invented: `X Y Hospital`), `street`
(capitalised words but the last invented, numbers and units kept).
"""

from __future__ import annotations

import argparse
import json
import random
import re

CONS = "bcdfghjklmnprstvwz"
VOW = "aeiou"


def invented(r: random.Random) -> str:
    return "".join(r.choice(CONS) + r.choice(VOW) for _ in range(r.randint(2, 4))).capitalize()


def scramble(value: str, mode: str, r: random.Random) -> str:
    if mode == "one":
        w = invented(r)
        return w.upper() if value.isupper() else (w.lower() if value.islower() else w)
    if mode == "bare":
        return " ".join(invented(r) for _ in range(r.randint(1, 3)))
    if mode == "street":
        toks = re.split(r"(\s+|,)", value)
        caps = [i for i, t in enumerate(toks) if t.isalpha() and t[:1].isupper()]
        for i in caps[:-1]:
            toks[i] = invented(r)
        return "".join(toks)
    parts = value.split()
    return " ".join([invented(r) for _ in parts[:-1]] + parts[-1:]) if len(parts) > 1 else invented(r)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--labels", required=True, help="comma-separated canonical labels")
    ap.add_argument("--mode", choices=["one", "bare", "tail", "street"], default="tail")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    labels = set(args.labels.split(","))
    r = random.Random(args.seed)
    with open(args.src, encoding="utf-8") as src, open(args.dst, "w", encoding="utf-8") as out:
        for line in src:
            doc = json.loads(line)
            key = "gold_spans" if "gold_spans" in doc else "spans"
            text = doc["text"]
            spans = sorted(doc[key], key=lambda s: s.get("start", s.get("begin")))
            pieces, new, pos, shift = [], [], 0, 0
            for s in spans:
                start, end = s.get("start", s.get("begin")), s["end"]
                pieces.append(text[pos:start])
                value = text[start:end]
                if s["label"] in labels:
                    value = scramble(value, args.mode, r)
                pieces.append(value)
                new.append({"start": start + shift, "end": start + shift + len(value), "label": s["label"]})
                shift += len(value) - (end - start)
                pos = end
            pieces.append(text[pos:])
            doc["text"] = "".join(pieces)
            doc.pop("spans", None)
            doc["gold_spans"] = new
            out.write(json.dumps(doc, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
