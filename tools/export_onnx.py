"""Export a phiguard model folder to ONNX (float32 and dynamic int8) for the onnxruntime peer.

Why: the benchmarks (tools/bench_peers.py, tools/bench_product.py) compare phiguard with
onnxruntime and transformers, and every peer must run the same model as phiguard's default.
The bundled model, `models/phiguard-deid`, exists only as safetensors (HF
`BertForTokenClassification`), so its ONNX is made here, the way a user would make it:

* `model.onnx`: the model loaded in float32 (its float16 matrices upcast, as phiguard does at
  load) and traced by `torch.onnx.export` (the TorchScript exporter, `dynamo=False`) with
  dynamic batch and sequence axes; inputs `input_ids`, `attention_mask`, `token_type_ids`
  (int64), output `logits`;
* `model.int8.onnx`: `onnxruntime.quantization.quantize_dynamic` of it, the usual way to speed
  up onnxruntime on a CPU: int8 weights (per output channel), activations quantized on the
  fly.

Then it checks its work on a few invented sentences (fake names, dates and numbers; no real
data): onnxruntime on `model.onnx` must give the same top label as transformers in float32 on
at least 99.9 % of the tokens, or the script fails. The int8 agreement is printed, not
enforced (quantization is expected to move a few labels). It prints the sha256 of both files
and writes `export.json` beside them (the source model's digests, which the benchmarks check,
the digests of the two files and the agreement figures).

    tools/.venv-parity/bin/python tools/export_onnx.py --out DIR [--model models/phiguard-deid]

`--out` must be a new or empty folder: nothing is ever overwritten. Needs the parity venv
(tools/requirements-parity.txt).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT / "models" / "phiguard-deid"
F32_NAME = "model.onnx"
INT8_NAME = "model.int8.onnx"
MANIFEST = "export.json"
MIN_AGREEMENT = 0.999
OPSET = 17  # LayerNormalization is a single op from 17 on; onnxruntime 1.22 and its quantizer handle it.

# Invented notes, nothing real: names, dates, numbers and places are made up. One is long so
# the check covers sequences longer than the ones traced.
TEXTS = [
    "Patient Marlow Quenby, DOB 03/14/1962, was seen on 2031-07-09 by Dr. Ilse Varga.",
    "Call the daughter, Tamsin Oyelaran, at (555) 013-2294 or tamsin.oyelaran@example.org.",
    "MRN 00482193; SSN 900-12-3456; insurance member ID QZH884120573.",
    "Lives at 4417 Bramblewood Lane, Fairhaven, OR 97999 with her husband Corvin.",
    "The 81-year-old man denies chest pain; follow up on Tuesday, March 3rd, with Nurse Pell.",
    "No acute distress. Lungs clear bilaterally. Continue lisinopril 10 mg daily.",
    "Discharged 12 Jan 2030 to Sunnyvale Rehab, fax 555-019-7731, attn. Odalys Brenneck.",
    " ".join([
        "Admission note for Juniper Halvorsen-Achebe, age 47, MRN A-77310458, admitted 2029-11-30.",
        "She was transferred from St. Ottoline Hospital in Port Renwick, WA after a fall at home,",
        "1208 Quillon Street Apt 6B. Her brother Desmond Halvorsen (phone 555-010-4478) is the",
        "contact; her primary physician is Dr. Pradeep Okonkwo-Lindqvist at Harborview Family",
        "Clinic. Past history: asthma, appendectomy in 1998. Vitals on arrival: BP 128/84, HR 91.",
        "Plan: CT head, orthopedics consult, repeat labs on 12/02/2029, and a call to her employer,",
        "Westerly Freight Inc., account 4400-2291-07, regarding leave paperwork.",
    ]),
]


# Benchmark engine name -> file written here (tools/bench_peers.py, tools/bench_product.py).
ENGINES = {"onnxruntime-f32": F32_NAME, "onnxruntime-int8": INT8_NAME}


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load_tokenizer(model_dir: Path):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.no_padding()  # padding is done here, so both engines see the same batch
    tok.enable_truncation(512)
    return tok


def batch_inputs(tok, texts: list[str]):
    import numpy as np

    encs = [tok.encode(t) for t in texts]
    width = max(len(e.ids) for e in encs)
    ids = np.zeros((len(encs), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for i, e in enumerate(encs):
        ids[i, :len(e.ids)] = e.ids
        mask[i, :len(e.ids)] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def load_model(model_dir: Path):
    import torch
    from transformers import AutoModelForTokenClassification

    # float32: the graph for onnxruntime-f32, and the reference the check compares with.
    # Eager attention traces to plain MatMul/Softmax, which onnxruntime's optimizer fuses and
    # its quantizer understands.
    return AutoModelForTokenClassification.from_pretrained(
        str(model_dir), dtype=torch.float32, attn_implementation="eager").eval()


def export(model, tok, path: Path) -> None:
    import torch

    # Two padded rows, so the traced graph takes the attention mask from the input.
    feed = batch_inputs(tok, TEXTS[:2])
    args = tuple(torch.from_numpy(feed[k]) for k in ("input_ids", "attention_mask", "token_type_ids"))
    dynamic = {name: {0: "batch", 1: "sequence"} for name in ("input_ids", "attention_mask", "token_type_ids", "logits")}
    with torch.no_grad(), warnings.catch_warnings():
        # The TorchScript exporter is chosen on purpose (it is what most users still run);
        # its deprecation notice says nothing about this export.
        warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX export", category=DeprecationWarning)
        torch.onnx.export(model, args, str(path), input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["logits"], dynamic_axes=dynamic, opset_version=OPSET,
                          do_constant_folding=True, dynamo=False)


def quantize(src: Path, dst: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # MatMul weights per output channel; the embedding tables (Gather) stay per tensor, as
    # quantize_dynamic does for them. The pre-processing its warning suggests is skipped: its
    # symbolic shape inference fails on this graph, and without that step it changes neither
    # the labels nor the speed (onnxruntime's session optimizer does the same folding).
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8, per_channel=True)
    finally:
        root.setLevel(level)


def agreement(model, tok, paths: list[Path]) -> list[dict]:
    import numpy as np
    import onnxruntime as ort
    import torch

    feed = batch_inputs(tok, TEXTS)
    real = feed["attention_mask"].astype(bool)  # padding positions are not compared
    with torch.no_grad():
        ref = model(**{k: torch.from_numpy(v) for k, v in feed.items()}).logits.numpy()
    want = ref.argmax(-1)[real]
    out = []
    for path in paths:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 2
        sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        got = sess.run(["logits"], feed)[0]
        same = int((got.argmax(-1)[real] == want).sum())
        out.append({"file": path.name, "tokens": int(real.sum()), "same_top_label": same,
                    "agreement": same / int(real.sum()),
                    "max_abs_logit_diff": float(np.abs(got - ref)[real].max())})
    return out


def exported(onnx_dir: Path | None, model_dir: Path) -> dict[str, Path]:
    """For the benchmarks: the ONNX files this script wrote into `onnx_dir`, by engine name.

    Exits with what to run when the folder is missing or incomplete, when its files are not
    the ones exported, or when they were exported from another model than `model_dir` (the
    peers must run the model phiguard runs).
    """
    try:
        shown = model_dir.resolve().relative_to(ROOT)
    except ValueError:
        shown = model_dir
    make = f"tools/.venv-parity/bin/python tools/export_onnx.py --model {shown} --out DIR"
    if onnx_dir is None:
        raise SystemExit(f"--onnx-dir is missing: export the model first ({make}), then pass --onnx-dir DIR")
    files = {engine: onnx_dir / name for engine, name in ENGINES.items()}
    if not (onnx_dir / MANIFEST).is_file() or not all(f.is_file() for f in files.values()):
        raise SystemExit(f"{onnx_dir} lacks {F32_NAME}, {INT8_NAME} or {MANIFEST}: make it with {make}")
    manifest = json.loads((onnx_dir / MANIFEST).read_text(encoding="utf-8"))
    if manifest["source"]["model.safetensors"] != sha256(model_dir / "model.safetensors"):
        raise SystemExit(f"{onnx_dir} was exported from another model than {shown}: make it again with {make}")
    for f in files.values():
        if manifest["files"].get(f.name) != sha256(f):
            raise SystemExit(f"{f} is not the file tools/export_onnx.py wrote and checked: make it again with {make}")
    return files


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="model folder (config.json, tokenizer.json, model.safetensors)")
    p.add_argument("--out", type=Path, required=True, help="new or empty folder for model.onnx, model.int8.onnx, export.json")
    args = p.parse_args(argv)

    model_dir = args.model.resolve()
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        if not (model_dir / name).is_file():
            raise SystemExit(f"{model_dir} is not a model folder: {name} is missing")
    out = args.out
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise SystemExit(f"{out} exists and is not an empty folder; give a new one (nothing is overwritten)")
    out.mkdir(parents=True, exist_ok=True)

    tok = load_tokenizer(model_dir)
    model = load_model(model_dir)
    f32, int8 = out / F32_NAME, out / INT8_NAME
    print(f"exporting {model_dir.name} to {f32} (opset {OPSET}) ...", file=sys.stderr)
    export(model, tok, f32)
    print(f"quantizing to {int8} ...", file=sys.stderr)
    quantize(f32, int8)

    results = agreement(model, tok, [f32, int8])
    digests = {path.name: sha256(path) for path in (f32, int8)}
    import onnxruntime
    import torch
    import transformers

    manifest = {
        "source": {"model": model_dir.name, **{n: sha256(model_dir / n) for n in ("config.json", "tokenizer.json", "model.safetensors")}},
        "files": digests,
        "opset": OPSET,
        "quantization": "quantize_dynamic, weight_type=QInt8, per_channel=True",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "onnxruntime": onnxruntime.__version__},
        "agreement_with_transformers_f32": results,
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")

    for r in results:
        print(f"{r['file']}: top label equals transformers f32 on {r['same_top_label']}/{r['tokens']} tokens "
              f"({100 * r['agreement']:.2f} %), max |logit diff| {r['max_abs_logit_diff']:.2e}")
    for name, digest in digests.items():
        print(f"{digest}  {name}")
    if results[0]["agreement"] < MIN_AGREEMENT:
        print(f"FAIL: {F32_NAME} agrees on {100 * results[0]['agreement']:.2f} % of tokens, below {100 * MIN_AGREEMENT:.1f} %",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
