"""Side-by-side benchmark of the product path: what a user runs, whole process, beside peers
running the same model over the same files with the same threads, in one run.

Every engine runs one model: `--model DIR`, by default phiguard's bundled default
`models/phiguard-deid` (safetensors, HF `BertForTokenClassification`).

1. `phiguard deid --method mask --out DIR FILES` (release build, fresh PHIGUARD_HOME, the
   bundled model taken from DIR through PHIGUARD_BUNDLED_MODEL_DIR, int8 dense layers as
   shipped and f32), against peers written the way a user would write them: a Python
   process that loads the model, reads each file, runs it, masks every entity and writes the
   result, with
   * onnxruntime running DIR exported to ONNX by tools/export_onnx.py (`--onnx-dir`), windows
     sorted by length and run 8 at a time: `onnxruntime-f32` on the float32 graph, whose
     labels the export checked against transformers, and `onnxruntime-int8` on its
     `quantize_dynamic` copy (int8 weights, what a user does to speed onnxruntime up on a
     CPU); an export made from another model than DIR is refused;
   * the transformers `token-classification` pipeline (PyTorch CPU, f32, batch 8,
     aggregation "first") over DIR itself.
   Wall time (process start to exit: imports, model load and file I/O included), files/s
   and peak RSS (`wait4`) per engine; each engine runs `--runs` times, alternating.
   With `--device cuda` (a binary built with `--features cuda`, on a machine with an NVIDIA
   GPU) the engines are `phiguard-cuda` (the same binary, `PHIGUARD_DEVICE=cuda`; int8 is a
   CPU kernel, so the GPU runs f32), `phiguard-int8` on the CPU beside it, and transformers
   twice: on the GPU (`transformers-cuda`, f32) and on the CPU; onnxruntime only with
   `--onnx-dir`. The speed-up column is against the first engine.
2. `phiguard serve` over loopback: `--clients` concurrent clients (one keep-alive HTTP
   connection each, Python threads) post every note to `POST /pii/deidentify`
   (`method: mask`); per client count the notes de-identified per second (a note the server
   shed, `503 backpressure` when it waited longer than `admission.max_queue_wait_ms`, is
   counted under non-200 by status and error code, not as throughput), p50 and p99 latency
   of every answer, and the server's peak RSS (`VmHWM`) at the end; `--runs` passes per
   client count, the best reported (as for `deid`), each pass's rate beside it. The clients share the
   machine with the server. The first line names the CPU and the int8 kernel it runs (AMX
   tiles, AVX-512 VNNI or AVX2): the ratios differ between them. With `--wrk SECONDS` the same
   server is also loaded by `wrk` (Debian package `wrk`: one C thread, `-cN` connections,
   the bodies in turn from a Lua table, SECONDS a pass), which leaves the CPUs to the
   server: what the server does when its clients cost nothing.

The notes: `tests/fixtures/outside/deidgate.jsonl` (an outside generator's clinical notes;
held out for accuracy, used here for timing only, never printed), as "short" (one note per
file) and "long" (ten consecutive notes per file).

    tools/.venv-parity/bin/python tools/export_onnx.py --out ONNX_DIR    # once per model
    tools/.venv-parity/bin/python tools/bench_product.py --onnx-dir ONNX_DIR [--threads 2] \
        [--runs 2] [--clients 1,4,16,64] [--model models/phiguard-deid] \
        [--phiguard target/release/phiguard] [--device cuda] [--skip-onnx] [--skip-torch] \
        [--wrk 5]

Needs the parity venv (tools/requirements-parity.txt) and `cargo build --release --bin
phiguard`. Output: Markdown on stdout.
Only 127.0.0.1 is contacted; processes started here are stopped on exit.
"""

from __future__ import annotations

import argparse
import atexit
import collections
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fastfail as ff  # noqa: E402  (process helpers shared with the fast-fail bench)
import export_onnx  # noqa: E402  (where the ONNX peers' files come from)

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "models" / "phiguard-deid"  # phiguard's bundled default; --model changes it
NOTES = ROOT / "tests" / "fixtures" / "outside" / "deidgate.jsonl"


def write_sets(work: Path) -> dict[str, list[Path]]:
    texts = [json.loads(line)["text"] for line in NOTES.read_text(encoding="utf-8").splitlines() if line.strip()]
    sets: dict[str, list[Path]] = {}
    for name, group in (("short", 1), ("long", 10)):
        folder = work / "in" / name
        folder.mkdir(parents=True)
        files = []
        for i in range(0, len(texts), group):
            f = folder / f"note{i:05d}.txt"
            f.write_text("\n\n".join(texts[i:i + group]), encoding="utf-8")
            files.append(f)
        sets[name] = files
    return sets


class Failed(Exception):
    """A peer's process exited non-zero; its row says so and the benchmark goes on."""


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Runs `cmd` to completion; returns (wall seconds, peak RSS MB)."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        err = p.stderr.read().decode(errors="replace").strip()
        raise Failed(err.splitlines()[-1][:300] if err else f"exit {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_maxrss / 1024.0


# ---- peers, each in its own process: read every file, mask what the model finds, write --------

def mask(text: str, spans: list[tuple[int, int, str]]) -> str:
    out, last = [], 0
    for s, e, label in sorted(spans):
        if s < last:
            continue
        out.append(text[last:s])
        out.append(f"[{label}]")
        last = e
    out.append(text[last:])
    return "".join(out)


def peer_onnx(files: list[str], out: Path, threads: int, model_dir: Path, onnx_path: str) -> None:
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    config = json.loads((model_dir / "config.json").read_text())
    id2label = {int(k): v for k, v in config["id2label"].items()}
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(512)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(onnx_path, opts, providers=["CPUExecutionProvider"])
    texts = [Path(f).read_text(encoding="utf-8") for f in files]
    encs = [tok.encode(t) for t in texts]
    order = sorted(range(len(texts)), key=lambda i: len(encs[i].ids))
    spans: dict[int, list] = {}
    for b in range(0, len(order), 8):
        batch = order[b:b + 8]
        width = max(len(encs[i].ids) for i in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        att = np.zeros_like(ids)
        for r, i in enumerate(batch):
            ids[r, :len(encs[i].ids)] = encs[i].ids
            att[r, :len(encs[i].ids)] = 1
        pred = sess.run(None, {"input_ids": ids, "attention_mask": att, "token_type_ids": np.zeros_like(ids)})[0].argmax(-1)
        for r, i in enumerate(batch):
            found, cur = [], None
            for t, (s, e) in enumerate(encs[i].offsets):
                label = id2label[int(pred[r, t])]
                if s == e or label == "O":
                    cur = None
                    continue
                kind = label.split("-", 1)[-1]
                if cur and cur[2] == kind and not label.startswith("B-"):
                    cur[1] = e
                else:
                    cur = [s, e, kind]
                    found.append(cur)
            spans[i] = [tuple(x) for x in found]
    for i, f in enumerate(files):
        (out / Path(f).name).write_text(mask(texts[i], spans[i]), encoding="utf-8")


def peer_torch(files: list[str], out: Path, threads: int, model_dir: Path, device: str) -> None:
    import torch
    from transformers import AutoModelForTokenClassification, PreTrainedTokenizerFast, pipeline

    torch.set_num_threads(threads)
    tok = PreTrainedTokenizerFast(tokenizer_file=str(model_dir / "tokenizer.json"), unk_token="[UNK]", pad_token="[PAD]",
                                  cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    model = AutoModelForTokenClassification.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    pipe = pipeline("token-classification", model=model, tokenizer=tok, aggregation_strategy="first",
                    device=0 if device == "cuda" else -1)
    texts = [Path(f).read_text(encoding="utf-8") for f in files]
    for f, text, ents in zip(files, texts, pipe(texts, batch_size=8)):
        found = [(e["start"], e["end"], e["entity_group"]) for e in ents]
        (out / Path(f).name).write_text(mask(text, found), encoding="utf-8")


# ---- the server under concurrent clients -----------------------------------------------------

def serve_load(port: int, texts: list[str], clients: int) -> dict:
    lat: list[float] = []
    refused: collections.Counter[str] = collections.Counter()  # "503 backpressure" → count
    lock = threading.Lock()
    nxt = [0]

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {ff.CLIENT_TOKEN}"}
        mine = []
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= len(texts):
                break
            body = json.dumps({"text": texts[i], "method": "mask"})
            s = time.perf_counter()
            conn.request("POST", "/pii/deidentify", body=body, headers=headers)
            r = conn.getresponse()
            answer = r.read()
            mine.append(time.perf_counter() - s)
            if r.status != 200:
                code = ff.Resp(r.status, {}, answer.decode("utf-8", errors="replace")).code or "?"
                with lock:
                    refused[f"{r.status} {code}"] += 1
        conn.close()
        with lock:
            lat.extend(mine)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t
    lat.sort()
    # Only the notes de-identified count: a note shed with 503 is not throughput.
    return {"clients": clients, "notes_s": (len(texts) - sum(refused.values())) / wall,
            "p50_ms": lat[len(lat) // 2] * 1e3, "p99_ms": lat[min(len(lat) - 1, round(0.99 * (len(lat) - 1)))] * 1e3,
            "errors": ", ".join(f"{n} × {what}" for what, n in sorted(refused.items())) or "0"}


# wrk script for `--wrk`: the notes' bodies in turn, each answer that is not 200 counted.
# Counters and the body index live in each thread's Lua state and are summed in done().
WRK_NOTES_LUA = ff.WRK_POST_LUA + """
bodies = { %(bodies)s }

function init(args)
  i = 0
  refused = 0
end

function request()
  i = i + 1
  return wrk.format(nil, "/pii/deidentify", nil, bodies[(i - 1) %% #bodies + 1])
end

function response(status, headers, body)
  if status ~= 200 then refused = refused + 1 end
end

function done(summary, latency, requests)
  local r = 0
  for _, t in ipairs(threads) do r = r + t:get("refused") end
  io.write(string.format('BENCH_JSON {"requests": %%d, "duration_us": %%d, "p50_us": %%d, "p99_us": %%d, "refused": %%d, "errors": %%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), r,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
"""


def wrk_load(port: int, texts: list[str], clients: int, seconds: int, workdir: Path) -> dict:
    """`wrk -t1 -cCLIENTS` for SECONDS over the notes in turn: a load generator in C that
    costs the two CPUs almost nothing, beside the Python clients (which share the machine with
    the server as a local EHR tool would)."""
    bodies = [json.dumps({"text": t, "method": "mask"}) for t in texts]
    level = next(n for n in range(1, 64) if not any(f"]{'=' * n}]" in b for b in bodies))
    eq = "=" * level
    lua = workdir / f"notes-{len(texts)}.lua"
    lua.write_text(WRK_NOTES_LUA % {"bodies": ",\n".join(f"[{eq}[{b}]{eq}]" for b in bodies),
                                    "token": ff.CLIENT_TOKEN}, encoding="utf-8")
    r = ff.run_wrk(port, lua, 1, clients, seconds, timeout=30)
    return {"notes_s": (r["requests"] - r["refused"]) / (r["duration_us"] / 1e6),
            "p50_ms": r["p50_us"] / 1e3, "p99_ms": r["p99_us"] / 1e3,
            "errors": f"{r['refused']} refused, {r['errors']} socket errors"
            if r["refused"] or r["errors"] else "0"}


def gpu() -> str:
    return ff.cmd_out(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]) or "?"


def cpu() -> str:
    """The CPU's model and which int8 kernel phiguard's default precision runs on it: the figures
    move with both (AMX tiles where the CPU has AMX-INT8, AVX-512 VNNI otherwise, else AVX2;
    onnxruntime's int8 makes the same choice), so a run says which it was."""
    model = ff.lscpu("Model name") or "?"
    flags = ff.lscpu("Flags").split()
    if "amx_int8" in flags:
        return f"{model} (int8 products on AMX-INT8 tiles)"
    if "avx512_vnni" in flags:
        return f"{model} (int8 products on AVX-512 VNNI, no AMX)"
    if "avx2" in flags and "fma" in flags:
        return f"{model} (int8 products on AVX2 `vpmaddubsw`, 7-bit weights; no AVX-512 VNNI)"
    return f"{model} (neither AVX-512 VNNI nor AVX2: the int8 setting runs f32)"


def vm_hwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--clients", default="1,4,16,64")
    p.add_argument("--phiguard", default=str(ROOT / "target" / "release" / "phiguard"))
    p.add_argument("--model", type=Path, default=MODEL, help="model folder every engine runs (default: models/phiguard-deid)")
    p.add_argument("--onnx-dir", type=Path, default=None, help="folder tools/export_onnx.py wrote for --model")
    p.add_argument("--skip-torch", action="store_true")
    p.add_argument("--skip-onnx", action="store_true", help="no onnxruntime peers (no --onnx-dir needed)")
    p.add_argument("--wrk", type=int, default=0, metavar="SECONDS",
                   help="also load the server with wrk (C, one thread) for SECONDS a pass, beside the Python clients")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                   help="cuda: phiguard and transformers on the GPU, each beside its CPU run")
    p.add_argument("--peer-device", default="cpu", help=argparse.SUPPRESS)
    p.add_argument("--onnx", default=None, help=argparse.SUPPRESS)
    p.add_argument("--peer", default=None, help=argparse.SUPPRESS)
    p.add_argument("--files", default=None, help=argparse.SUPPRESS)
    p.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.peer:  # child process: one peer over one file list
        files = Path(args.files).read_text().splitlines()
        if args.peer == "onnx":
            peer_onnx(files, Path(args.out), args.threads, args.model, args.onnx)
        else:
            peer_torch(files, Path(args.out), args.threads, args.model, args.peer_device)
        return 0
    # Checked here, not in the timed peers: the export exists and was made from --model.
    onnx_files = {} if args.skip_onnx else export_onnx.exported(args.onnx_dir, args.model)
    model_dir = str(args.model.resolve())

    atexit.register(ff.stop_all)
    work = Path(tempfile.mkdtemp(prefix="bench-product-"))
    sets = write_sets(work)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("PHIGUARD_", "OPENMED_"))}
    base_env.update(PHIGUARD_INFERENCE_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads))
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(args.model / "tokenizer.json"))

    torch_engines = [] if args.skip_torch else ["transformers"]
    if args.device == "cuda":
        engines = ["phiguard-cuda", "phiguard-int8", *onnx_files] + [f"{e}-cuda" for e in torch_engines] + torch_engines
    else:
        engines = ["phiguard-int8", "phiguard-f32", *onnx_files] + torch_engines
    gpu_line = f" GPU: {gpu()}." if args.device == "cuda" else ""
    lines = [f"Machine: {cpu()}, {os.cpu_count()} CPUs, {args.threads} threads for every engine; load average "
             f"at start {os.getloadavg()[0]:.1f}; commit {ff.cmd_out(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT)}."
             f"{gpu_line}", ""]
    for name, files in sets.items():
        tokens = sum(len(tok.encode(f.read_text(encoding='utf-8')).ids) for f in files)
        listing = work / f"{name}.list"
        listing.write_text("\n".join(str(f) for f in files))
        walls: dict[str, list[float]] = {e: [] for e in engines}
        rss: dict[str, list[float]] = {e: [] for e in engines}
        failed: dict[str, str] = {}
        for run in range(args.runs):
            for engine in engines:
                if engine in failed:  # a peer that failed once is not run again
                    continue
                out = work / f"out-{name}-{engine}-{run}"
                out.mkdir()
                env = dict(base_env)
                if engine.startswith("phiguard"):
                    home = work / f"home-{name}-{engine}-{run}"
                    home.mkdir()
                    # The bundled model from --model, so phiguard runs the peers' weights.
                    # On the GPU the model runs f32 whatever the setting (int8 is a CPU kernel).
                    on_gpu = engine == "phiguard-cuda"
                    env.update(PHIGUARD_HOME=str(home), PHIGUARD_BUNDLED_MODEL_DIR=model_dir,
                               PHIGUARD_MODEL_PRECISION="f32" if on_gpu else engine.split("-")[1],
                               PHIGUARD_DEVICE="cuda" if on_gpu else "cpu")
                    cmd = [args.phiguard, "deid", "--method", "mask", "--out", str(out), str(files[0].parent)]
                else:
                    cmd = [sys.executable, __file__, "--peer", "onnx" if engine in onnx_files else "torch",
                           "--files", str(listing), "--out", str(out), "--threads", str(args.threads),
                           "--model", model_dir, "--peer-device", "cuda" if engine.endswith("-cuda") else "cpu"] + (
                               ["--onnx", str(onnx_files[engine])] if engine in onnx_files else [])
                try:
                    wall, peak = timed(cmd, env)
                except Failed as e:
                    if engine.startswith("phiguard"):
                        raise SystemExit(f"{engine} failed: {e}") from None
                    failed[engine] = str(e)
                    continue
                walls[engine].append(wall)
                rss[engine].append(peak)
        lines += [f"### `deid`, {name} notes: {len(files)} files, {tokens} tokens", "",
                  f"| engine | wall s (each run) | files/s (best) | peak RSS MB | {engines[0]} speed-up |",
                  "|---|---|---|---|---|"]
        best = {e: min(w) for e, w in walls.items() if w}
        for e in engines:
            if e not in best:
                lines.append(f"| {e} | failed: {failed.get(e, '?')} | | | |")
                continue
            lines.append(f"| {e} | {' / '.join(f'{w:.2f}' for w in walls[e])} | {len(files) / best[e]:.1f} | "
                         f"{max(rss[e]):.0f} | {best[e] / best[engines[0]]:.2f}× |")
        lines.append("")

    clients = [int(c) for c in args.clients.split(",")]
    home = work / "serve-home"
    home.mkdir()
    # At the service's default log level, as a user runs it: every answer's access line (JSON
    # on stderr, to a file here) is part of the figures.
    srv = ff.start("serve", [args.phiguard, "serve"],
                   ff.phiguard_env(home, PHIGUARD_INFERENCE_THREADS=str(args.threads),
                                   PHIGUARD_BUNDLED_MODEL_DIR=model_dir, PHIGUARD_LOG_LEVEL="info",
                                   PHIGUARD_DEVICE=args.device),
                   work, ROOT)

    def port():
        for line in srv.stdout.read_text(errors="replace").splitlines():
            if line.startswith("listening on http://127.0.0.1:"):
                return int(line.rsplit(":", 1)[1].strip().rstrip("/"))
        return 0

    srv.port = ff.wait_for(srv, "'listening on' line", port, 60)
    ff.wait_for(srv, "200 from /readyz", lambda: ff.probe(srv.port, "/readyz"), 60)
    what = "defaults, int8" if args.device == "cpu" else f"defaults, PHIGUARD_DEVICE={args.device}"
    lines += [f"### `POST /pii/deidentify` (`phiguard serve`, {what})", "",
              "The server logs at its default level (`info`: an access line for every answer, JSON on "
              "stderr, written to a file).", "",
              f"Each row is the best of {args.runs} passes over the notes (as each `deid` row is the best "
              "of its runs), with that pass's latencies and refusals; every pass's notes/s beside it.", "",
              "| notes | clients | notes/s (200s only, best) | each pass | p50 ms | p99 ms | p99/p50 | non-200 |",
              "|---|---|---|---|---|---|---|---|"]
    for name, files in sets.items():
        texts = [f.read_text(encoding="utf-8") for f in files]
        serve_load(srv.port, texts[:16], 2)  # warm: load the model
        for c in clients:
            # As many passes as `deid` has runs, and the best of them, as its rows take the
            # best run: one pass against the best of three made the ratio to the CLI hinge on
            # whether a noisy moment fell on the serving pass.
            passes = [serve_load(srv.port, texts, c) for _ in range(args.runs)]
            r = max(passes, key=lambda p: p["notes_s"])
            each = " / ".join(f"{p['notes_s']:.0f}" for p in passes)
            lines.append(f"| {name} | {c} | {r['notes_s']:.1f} | {each} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | "
                         f"{r['p99_ms'] / r['p50_ms']:.1f} | {r['errors']} |")
    if args.wrk:
        lines += ["", f"The same server under `wrk -t1 -cN -d{args.wrk}s` (one C thread, the notes' bodies in "
                  "turn from a Lua table): a load generator that leaves the CPUs to the server. Best of "
                  f"{args.runs} passes, every pass beside it.", "",
                  "| notes | connections | notes/s (200s only, best) | each pass | p50 ms | p99 ms | p99/p50 | non-200 |",
                  "|---|---|---|---|---|---|---|---|"]
        for name, files in sets.items():
            texts = [f.read_text(encoding="utf-8") for f in files]
            for c in clients:
                passes = [wrk_load(srv.port, texts, c, args.wrk, work) for _ in range(args.runs)]
                r = max(passes, key=lambda p: p["notes_s"])
                each = " / ".join(f"{p['notes_s']:.0f}" for p in passes)
                lines.append(f"| {name} | {c} | {r['notes_s']:.1f} | {each} | {r['p50_ms']:.1f} | "
                             f"{r['p99_ms']:.1f} | {r['p99_ms'] / r['p50_ms']:.1f} | {r['errors']} |")
    lines += ["", f"Server peak RSS (VmHWM) after every run above: {vm_hwm_mb(srv.popen.pid):.0f} MB.", ""]
    ff.stop_all()
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
