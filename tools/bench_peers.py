"""Side-by-side benchmark of phiguard's engine against its peers, all on the same model.

Same synthetic clinical notes (generated here from a fixed seed; no patient data), same
machine, one run, and one model: `--model DIR`, by default phiguard's bundled default
`models/phiguard-deid` (safetensors, HF `BertForTokenClassification`):

* phiguard: `examples/classify.rs --mode bench` (release build) over DIR, once with int8
  dense layers (the service default on CPUs with AVX-512 VNNI) and once in f32; worker
  threads each run whole batches with single-threaded candle ops;
* transformers: `pipeline("token-classification", aggregation_strategy="first")` on
  PyTorch CPU (float32) over DIR itself;
* onnxruntime, twice: `onnxruntime-f32` runs DIR exported to ONNX in float32 and
  `onnxruntime-int8` the same graph after `quantize_dynamic` (int8 weights), both written by
  tools/export_onnx.py into `--onnx-dir`. The export checks that the f32 graph gives
  transformers' labels, and this script refuses an export made from another model than DIR,
  so every peer runs the same weights as phiguard.

Each engine runs in its own process (so peak RSS is its own) with the same number of
threads. Reported: documents/s and tokens/s at batch 1 (one document per call) and
batched, p50/p99 latency per call, peak RSS, load time.

    tools/.venv-parity/bin/python tools/export_onnx.py --out ONNX_DIR    # once per model
    tools/.venv-parity/bin/python tools/bench_peers.py --onnx-dir ONNX_DIR [--docs 300] \
        [--threads 2] [--model models/phiguard-deid] [--classify target/release/examples/classify]

The parity venv (tools/requirements-parity.txt) has torch, transformers, onnx and
onnxruntime. Build phiguard first: `cargo build --release --example classify`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_onnx  # noqa: E402  (where the ONNX peers' files come from)

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "models" / "phiguard-deid"  # phiguard's bundled default; --model changes it

FIRST = ["John", "Maria", "Aisha", "Peter", "Zoë", "Chen", "Samuel", "Eleanor", "José", "Fatima", "Liam", "Olga"]
LAST = ["Smith", "Garcia", "Khan", "O'Neil", "Müller", "Wei", "Okafor", "Rigby", "Álvarez", "Haddad", "Novak"]
STREETS = ["Elm Street", "Harbor Road", "Penny Lane", "Lagos Avenue", "Maple Drive", "Cedar Court"]
CITIES = [("Springfield", "IL", "62704"), ("Boston", "MA", "02110"), ("Houston", "TX", "77002"), ("Denver", "CO", "80202")]
FINDINGS = [
    "reports intermittent chest pain radiating to the left arm",
    "denies fever, chills or night sweats",
    "was started on metformin 500 mg twice daily",
    "has a history of hypertension and type 2 diabetes",
    "presents with a productive cough for three weeks",
    "blood pressure 142/88, heart rate 76, afebrile",
    "MRI of the lumbar spine shows mild degenerative changes",
    "was counselled on smoking cessation and diet",
    "follow-up in two weeks with repeat labs",
    "tolerating oral intake, ambulating without assistance",
]


def make_notes(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    notes = []
    for _ in range(n):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        city, state, zipc = rng.choice(CITIES)
        parts = [
            f"Patient {first} {last}, DOB {rng.randint(1, 12):02d}/{rng.randint(1, 28):02d}/{rng.randint(1930, 2010)}.",
            f"Address: {rng.randint(1, 999)} {rng.choice(STREETS)}, {city}, {state} {zipc}.",
        ]
        for _ in range(rng.randint(1, 8)):
            parts.append(f"The patient {rng.choice(FINDINGS)}.")
        if rng.random() < 0.5:
            parts.append(f"Contact {rng.choice(FIRST)} at ({rng.randint(200, 999)}) {rng.randint(200, 999)}-{rng.randint(1000, 9999)} "
                         f"or {first.lower()}.{last.lower()}@example.com.")
        if rng.random() < 0.3:
            parts.append(f"SSN {rng.randint(100, 899)}-{rng.randint(10, 99)}-{rng.randint(1000, 9999)} on file.")
        rng.shuffle(parts[2:])
        notes.append(" ".join(parts))
    return notes


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[round((len(xs) - 1) * p)] if xs else 0.0


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_torch(notes: list[str], threads: int, model_dir: Path) -> dict:
    import torch
    from transformers import AutoModelForTokenClassification, PreTrainedTokenizerFast, pipeline

    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    tok = PreTrainedTokenizerFast(tokenizer_file=str(model_dir / "tokenizer.json"), unk_token="[UNK]",
                                  pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    model = AutoModelForTokenClassification.from_pretrained(str(model_dir), torch_dtype=torch.float32).eval()
    pipe = pipeline("token-classification", model=model, tokenizer=tok, aggregation_strategy="first", device=-1)
    load = time.perf_counter() - t0
    pipe(notes[:4])
    lat = []
    t = time.perf_counter()
    for n in notes:
        s = time.perf_counter()
        pipe(n)
        lat.append(time.perf_counter() - s)
    wall1 = time.perf_counter() - t
    t = time.perf_counter()
    pipe(notes, batch_size=8)
    wallb = time.perf_counter() - t
    return {"engine": "transformers-pytorch", "load_s": load, "batch1": {"wall_s": wall1, "p50_ms": pct(lat, .5) * 1e3, "p99_ms": pct(lat, .99) * 1e3},
            "batched": {"wall_s": wallb, "batch_size": 8}, "peak_rss_mb": peak_rss_mb()}


def run_onnx(notes: list[str], threads: int, model_dir: Path, engine: str, onnx_path: str) -> dict:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    t0 = time.perf_counter()
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(onnx_path, opts, providers=["CPUExecutionProvider"])
    load = time.perf_counter() - t0

    def run(batch: list[str]) -> None:
        # The padded batch the export's own check builds (tools/export_onnx.py).
        logits = sess.run(None, export_onnx.batch_inputs(tok, batch))[0]
        logits.argmax(-1)

    run(notes[:4])
    lat = []
    t = time.perf_counter()
    for n in notes:
        s = time.perf_counter()
        run([n])
        lat.append(time.perf_counter() - s)
    wall1 = time.perf_counter() - t
    order = sorted(notes, key=len)
    t = time.perf_counter()
    for i in range(0, len(order), 8):
        run(order[i : i + 8])
    wallb = time.perf_counter() - t
    return {"engine": engine, "load_s": load, "batch1": {"wall_s": wall1, "p50_ms": pct(lat, .5) * 1e3, "p99_ms": pct(lat, .99) * 1e3},
            "batched": {"wall_s": wallb, "batch_size": 8}, "peak_rss_mb": peak_rss_mb()}


def run_phiguard(notes_path: str, threads: int, classify: str, precision: str, model_dir: Path) -> dict:
    cmd = [classify, "--model", str(model_dir), "--input", notes_path, "--mode", "bench", "--threads", str(threads),
           "--precision", precision]
    res = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT)
    out = json.loads(res.stdout)
    out["engine"] = f"phiguard-{precision}"
    return out


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--docs", type=int, default=300)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--classify", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target")), "release", "examples", "classify"))
    p.add_argument("--model", type=Path, default=MODEL, help="model folder every engine runs (default: models/phiguard-deid)")
    p.add_argument("--onnx-dir", type=Path, default=None, help="folder tools/export_onnx.py wrote for --model")
    p.add_argument("--engine", default=None, help=argparse.SUPPRESS)
    p.add_argument("--onnx", default=None, help=argparse.SUPPRESS)
    p.add_argument("--notes", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.model = args.model.resolve()  # classify runs from the repository root

    if args.engine:  # child process: one engine
        notes = json.loads(Path(args.notes).read_text(encoding="utf-8"))
        if args.engine == "torch":
            out = run_torch(notes, args.threads, args.model)
        else:
            out = run_onnx(notes, args.threads, args.model, args.engine, args.onnx)
        sys.stdout.write(json.dumps(out) + "\n")
        return 0

    onnx_files = export_onnx.exported(args.onnx_dir, args.model)
    notes = make_notes(args.docs)
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(args.model / "tokenizer.json"))
    tokens = sum(len(tok.encode(n).ids) for n in notes)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as fh:
        json.dump(notes, fh)
        notes_path = fh.name
    results = []
    try:
        for precision in ("int8", "f32"):
            results.append(run_phiguard(notes_path, args.threads, args.classify, precision, args.model))
        for engine in (*onnx_files, "torch"):
            cmd = [sys.executable, __file__, "--engine", engine, "--notes", notes_path, "--threads", str(args.threads),
                   "--model", str(args.model)] + (["--onnx", str(onnx_files[engine])] if engine in onnx_files else [])
            res = subprocess.run(cmd, check=True, capture_output=True, text=True)
            results.append(json.loads(res.stdout.strip().splitlines()[-1]))
    finally:
        os.unlink(notes_path)

    n = len(notes)
    load_avg = os.getloadavg()[0]
    lines = [f"{n} notes, {tokens} tokens (specials included), {args.threads} threads, load average at end {load_avg:.1f} on {os.cpu_count()} CPUs (shared machine)",
             f"{'engine':24} {'b1 docs/s':>10} {'b1 tok/s':>10} {'b1 p50 ms':>10} {'b1 p99 ms':>10} {'batched docs/s':>15} {'batched tok/s':>14} {'peak RSS MB':>12}"]
    for r in results:
        b1 = r.get("batch1") or r["batch1_threads"]
        wall1, wallb = b1["wall_s"], r["batched"]["wall_s"]
        lines.append(f"{r['engine']:24} {n / wall1:10.1f} {tokens / wall1:10.0f} {b1['p50_ms']:10.2f} {b1['p99_ms']:10.2f} "
                     f"{n / wallb:15.1f} {tokens / wallb:14.0f} {r['peak_rss_mb']:12.1f}")
    for r in results:
        if "batch1_one_thread" in r:
            o = r["batch1_one_thread"]
            lines.append(f"{r['engine']} batch 1 on one worker thread: {n / o['wall_s']:.1f} docs/s, p50 {o['p50_ms']:.2f} ms, p99 {o['p99_ms']:.2f} ms")
    by = {r["engine"]: r for r in results}
    for mine in ("phiguard-int8", "phiguard-f32"):
        for peer in (*export_onnx.ENGINES, "transformers-pytorch"):
            if mine in by and peer in by:
                a, b = by[mine], by[peer]
                r1 = (b.get("batch1") or b["batch1_threads"])["wall_s"] / (a.get("batch1") or a["batch1_threads"])["wall_s"]
                rb = b["batched"]["wall_s"] / a["batched"]["wall_s"]
                lines.append(f"{mine} / {peer}: batch 1 {r1:.2f}x, batched {rb:.2f}x")
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.write(json.dumps(results) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
