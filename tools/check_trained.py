#!/usr/bin/env python3
"""Checks that phiguard (candle) computes what transformers computes for a model written by
tools/train_deid.py (or any BERT token classifier whose labels are canonical names).

    tools/.venv-parity/bin/python tools/check_trained.py MODELDIR --phiguard target/release/phiguard
    tools/.venv-parity/bin/python tools/check_trained.py MODELDIR --phiguard BIN \\
        --classify "target/release/examples/classify"

Texts: the first `--count` notes of `--notes` (default the corpus sample, one note per note
type) plus two fixed texts: non-ASCII names, and all the notes joined into one text longer
than a window (so that windowing and stitching are compared too).

transformers side: BertForTokenClassification in float32, the same tokenizer.json, phiguard's
window plan (windows of the model's positions capped at 512, overlap 64, each token from
the window that owns it), argmax per token, then phiguard's decoding (first sub-word
decides, BIO grouping, neighbours of one label joined): tools/train_deid.py holds these.

phiguard side, per precision (`PHIGUARD_MODEL_PRECISION` f32 and int8):
- spans: the model is imported into a temporary PHIGUARD_HOME (`BIN models import`) and
  `BIN eval --detectors model --threshold 0 --predictions FILE` is run with the per-label
  thresholds turned off; its spans of source `model` are compared with transformers'
  spans (start, end, label). phiguard also drops name spans made only of protected terms
  (drug and disease names) and sweeps repeats of names (source `rule`); the first are
  reported as expected differences when they are name labels; a swept span (source
  `rule`) at the offsets and label of a transformers span counts as identical (the merge
  kept one of the two), and the other swept repeats are not compared.
- tokens (with `--classify CMD`, a command running examples/classify.rs): the top raw label
  of every token.

Requirements: f32 spans identical and, with --classify, f32 token labels identical on at
least 99.9 % of tokens; int8 at least 97 % of spans identical (int8 arithmetic moves near
ties). Prints every difference and a closing line `N passed, N failed`.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import train_deid as T  # noqa: E402

# Every label the default `models.label_thresholds` names (CITY, STREET_ADDRESS, ZIPCODE), at 0: an empty variable counts as
# unset (the defaults would apply and drop low-scoring model spans transformers keeps).
NO_LABEL_THRESHOLDS = "CITY=0,STREET_ADDRESS=0,ZIPCODE=0"
NAME_LABELS = {"FIRST_NAME", "LAST_NAME", "MIDDLE_NAME", "PERSON"}
EXTRA = [
    "Zoë Müller (DOB 03/04/1965) was seen by Dr. José Álvarez at Hôpital Saint-Éloi; "
    "call 555-0134 or write to zoe.muller@example.org.",
]


def texts_from(notes: Path, count: int) -> list[str]:
    out = []
    with open(notes, encoding="utf-8") as fh:
        for line in fh:
            if line.strip() and len(out) < count:
                out.append(json.loads(line)["text"])
    return out


def transformers_side(model_dir: Path, texts: list[str]):
    import torch
    from transformers import BertForTokenClassification

    torch.set_num_threads(2)
    model = BertForTokenClassification.from_pretrained(str(model_dir), dtype=torch.float32)
    tok = T.Tok(model_dir / "tokenizer.json")
    id2label = {int(k): v for k, v in model.config.id2label.items()}
    tokens, spans = [], []
    for text, (offsets, word_ids, rows) in zip(texts, T.predict_logits(model, tok, texts)):
        labels = [id2label[max(range(len(r)), key=lambda k: (r[k], -k))] for r in rows]
        tokens.append([(s, e, lab) for (s, e), lab in zip(offsets, labels)])
        spans.append([(s, e, lab) for s, e, lab, _ in T.decode_spans(text, offsets, word_ids, rows, id2label)])
    return tokens, spans


def phiguard_spans(binary: str, model_dir: Path, texts: list[str], precision: str):
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, PHIGUARD_HOME=home, PHIGUARD_MODEL_PRECISION=precision,
                   PHIGUARD_LABEL_THRESHOLDS=NO_LABEL_THRESHOLDS)
        subprocess.run([binary, "models", "import", str(model_dir), "--id", "check-trained"],
                       check=True, env=env, capture_output=True, text=True)
        gold = Path(home) / "texts.jsonl"
        with open(gold, "w", encoding="utf-8") as fh:
            for i, t in enumerate(texts):
                fh.write(json.dumps({"id": f"t{i}", "text": t, "gold_spans": []}) + "\n")
        pred = Path(home) / "pred.jsonl"
        res = subprocess.run(
            [binary, "eval", "--gold", str(gold), "--model", "check-trained", "--detectors", "model",
             "--threshold", "0", "--predictions", str(pred), "--json"],
            env=env, capture_output=True, text=True)
        if res.returncode != 0:
            sys.stdout.write(res.stdout[-2000:] + res.stderr[-2000:])
            raise SystemExit(f"phiguard eval failed ({precision})")
        model = [[] for _ in texts]
        rule = [[] for _ in texts]
        for line in pred.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            for s in rec["spans"]:
                side = model if s["source"] == "model" else rule
                side[rec["index"]].append((s["start"], s["end"], s["label"]))
        return model, rule


def classify_tokens(cmd: str, model_dir: Path, texts: list[str], precision: str):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as fh:
        json.dump(texts, fh)
        path = fh.name
    try:
        full = shlex.split(cmd) + ["--model", str(model_dir), "--input", path, "--mode", "tokens",
                                   "--precision", precision]
        res = subprocess.run(full, check=True, cwd=ROOT, capture_output=True, text=True)
    finally:
        os.unlink(path)
    return [[(t["start"], t["end"], t["label"]) for t in d["tokens"]] for d in json.loads(res.stdout)]


def compare_spans(want, got, swept, precision: str) -> tuple[int, int, int]:
    """Counts spans identical in both; a transformers span that phiguard reports with source
    `rule` at the same offsets and label is identical too (the sweep re-found a name the
    model found, and the merge kept one span). Other `rule` spans are the sweep's repeats."""
    same = total = protected = 0
    for n, (w, g, r) in enumerate(zip(want, got, swept)):
        ws, gs = set(w), set(g) | (set(w) & set(r))
        total += len(ws | gs)
        same += len(ws & gs)
        for s, e, lab in sorted(ws - gs):
            if lab in NAME_LABELS and not any(a < e and s < b for a, b, _ in gs):
                protected += 1
                sys.stdout.write(f"{precision} text {n} {s}:{e} {lab}: transformers only "
                                 "(a name; phiguard drops protected terms)\n")
            else:
                sys.stdout.write(f"{precision} text {n} {s}:{e} {lab}: transformers only\n")
        for s, e, lab in sorted(gs - ws):
            sys.stdout.write(f"{precision} text {n} {s}:{e} {lab}: phiguard only\n")
    return same, total, protected


def write_expected(path: Path, model_dir: Path, texts, tokens, spans) -> None:
    """transformers' answers for `texts`, keyed to the weights that gave them: a test in
    Rust compares candle's f32 and int8 paths with them on every run."""
    import hashlib

    with open(model_dir / "model.safetensors", "rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
    doc = {
        "generator": "tools/check_trained.py --write-expected (transformers "
                     "BertForTokenClassification, float32, phiguard's windows and decoding)",
        "model_sha256": digest,
        "texts": [
            {"text": t,
             "tokens": [[s, e, lab] for s, e, lab in tok],
             "spans": [[s, e, lab] for s, e, lab in sp]}
            for t, tok, sp in zip(texts, tokens, spans)
        ],
    }
    path.write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="transformers vs phiguard on a trained model")
    ap.add_argument("model", type=Path)
    ap.add_argument("--phiguard", required=True, help="the phiguard binary")
    ap.add_argument("--classify", help="command running examples/classify.rs (token-level check)")
    ap.add_argument("--notes", type=Path, default=ROOT / "tests" / "fixtures" / "corpus" / "sample.jsonl")
    ap.add_argument("--count", type=int, default=8)
    ap.add_argument("--write-expected", type=Path, metavar="FILE",
                    help="also write transformers' side (texts, top label per token, spans) as JSON "
                         "for tests/bundled_model.rs, which compares candle with it without PyTorch")
    args = ap.parse_args(argv)

    notes = texts_from(args.notes, args.count)
    texts = notes + EXTRA + ["\n\n".join(notes)]
    want_tokens, want_spans = transformers_side(args.model, texts)
    if args.write_expected:
        write_expected(args.write_expected, args.model, texts, want_tokens, want_spans)
    n_tokens = sum(len(t) for t in want_tokens)
    n_spans = sum(len(s) for s in want_spans)
    sys.stdout.write(f"{len(texts)} texts, {n_tokens} tokens, {n_spans} transformers spans "
                     f"(longest text {max(len(t) for t in want_tokens)} tokens)\n")
    passed = failed = 0
    for precision in ("f32", "int8"):
        got, rule = phiguard_spans(args.phiguard, args.model, texts, precision)
        same, total, protected = compare_spans(want_spans, got, rule, precision)
        rate = same / total if total else 1.0
        repeats = sum(len(set(r) - set(w)) for r, w in zip(rule, want_spans))
        sys.stdout.write(f"{precision} spans: {same}/{total} identical = {rate:.4f} "
                         f"({protected} name spans only in transformers, {repeats} swept repeats "
                         "not compared)\n")
        need = 1.0 if precision == "f32" else 0.97
        ok = (same + protected) / total >= need if total else True
        passed, failed = (passed + 1, failed) if ok else (passed, failed + 1)
        if args.classify:
            got_t = classify_tokens(args.classify, args.model, texts, precision)
            agree = tot = 0
            for n, (w, g) in enumerate(zip(want_tokens, got_t)):
                if [(s, e) for s, e, _ in w] != [(s, e) for s, e, _ in g]:
                    sys.stdout.write(f"FAIL {precision} text {n}: token offsets differ\n")
                    failed += 1
                    continue
                for (s, e, lw), (_, _, lg) in zip(w, g):
                    tot += 1
                    agree += lw == lg
                    if lw != lg:
                        sys.stdout.write(f"{precision} text {n} token {s}:{e}: transformers {lw}, "
                                         f"phiguard {lg}\n")
            trate = agree / tot if tot else 1.0
            sys.stdout.write(f"{precision} tokens: {agree}/{tot} top labels identical = {trate:.4f}\n")
            need = 0.999 if precision == "f32" else 0.97
            passed, failed = (passed + 1, failed) if trate >= need else (passed, failed + 1)
    sys.stdout.write(f"check-trained: {passed} passed, {failed} failed\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
