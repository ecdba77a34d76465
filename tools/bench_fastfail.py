"""Side-by-side fast-fail benchmark of phiguard and OpenMed 3.1, plus idle memory.

What it measures, on this machine, with the same load tool (wrk) for both peers:

1. Throughput and latency of `POST /pii/deidentify` while the model's circuit breaker is
   open, i.e. how cheaply each service answers `503 circuit_breaker_open`. This is the
   number that matters when a model keeps failing: the guard must shed load without
   becoming the next bottleneck.
   * phiguard: `target/release/phiguard serve`, built with `--features fault-injection`,
     with `PHIGUARD_FAULTS=infer=fail` (every model call fails) and `PHIGUARD_DEFAULT_MODEL=rules`.
   * OpenMed 3.1.0 (`openmed[service]`, venv `tools/.venv-openmed`): its FastAPI app
     `openmed.service.app:app` under uvicorn (1 worker, access log off, its own JSON
     access log off), launched from a small module written to a temp dir that replaces
     `openmed.service.runtime.ModelLoader` by a subclass whose `create_pipeline` and
     `load_model` raise `RuntimeError` (a retryable infrastructure error for OpenMed's
     resilience layer, the same kind of fault as phiguard's `infer=fail`).
   Each breaker is opened the same way: the same request is sent until a 503 with code
   `circuit_breaker_open` comes back. Both breakers get a recovery timeout of 3600 s
   (OpenMed and phiguard default to 30 s) so that no half-open probe falls inside a run.
   Every response of every run is checked in wrk's Lua `response()` hook: the table counts
   those that were not `503` + `circuit_breaker_open`; a few responses are also sampled
   before and after each run, with their `Retry-After` header.
   * the axum floor (`examples/floor503.rs`): a bare axum handler on the same tokio runtime
     answering every request with the bytes phiguard sent for the same request; phiguard's
     share of its requests per second is what everything besides HTTP costs a refused
     request (goal: at least 0.67). `--no-openmed` runs phiguard and the floor only.
2. Resident memory (`VmRSS` of `/proc/<pid>/status`) of an idle phiguard whose default
   model is the bundled phiguard-deid (`serve` loads it before `/readyz` turns ready, so the
   high-water mark is the load's peak), of the same process after its first request, and of
   an idle OpenMed service started with its own launcher (`python -m
   openmed.service.logging`).

Output: a Markdown report on stdout and in `docs/bench-fastfail.md`.

    python3 tools/bench_fastfail.py [--duration 10] [--threads 2] [--connections 32] \
        [--runs 2] [--rebuild] [--out docs/bench-fastfail.md]

The phiguard binary is built (`cargo build --release --features fault-injection`, default
target dir) when it is missing or with `--rebuild`; a binary without the feature is
detected (`GET /admin/faults` is 404) and refused. The OpenMed venv is created from
`tools/requirements-bench.txt` when missing. `wrk` comes from the Debian package `wrk`.
Only 127.0.0.1 is contacted; every process started here is stopped on exit, also on error.
"""

from __future__ import annotations

import argparse
import atexit
import functools
import http.client
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PHIGUARD = ROOT / "target" / "release" / "phiguard"
FLOOR = ROOT / "target" / "release" / "examples" / "floor503"
VENV = ROOT / "tools" / ".venv-openmed"
REQUIREMENTS = ROOT / "tools" / "requirements-bench.txt"
BODY = json.dumps({"text": "John Smith 03/04/2021"}, separators=(",", ":"))
CLIENT_TOKEN = "bench"
ADMIN_TOKEN = "benchadmin"
HEADERS = {"Content-Type": "application/json", "Authorization": f"Bearer {CLIENT_TOKEN}"}
PATH = "/pii/deidentify"
CBO = "circuit_breaker_open"
RECOVERY_SECONDS = "3600"

# The failing-loader launcher for OpenMed, written to a temp dir and run with the venv's
# Python. Only the loader class is replaced; routing, middleware, resilience (retry and
# breaker) and error envelopes are OpenMed's own code.
OPENMED_LAUNCHER = '''\
"""Runs OpenMed's service with a model loader whose every load fails."""
import sys

import uvicorn

import openmed.service.runtime as runtime
from openmed.core.config import get_config
from openmed.core.models import ModelLoader


class FailingModelLoader(ModelLoader):
    """A ModelLoader whose pipelines and models never load (infrastructure fault)."""

    def __init__(self, config=None):
        # Skips the transformers check of the real constructor; keeps its caches.
        self.config = config or get_config()
        self._models = {}
        self._tokenizers = {}
        self._pipelines = {}

    def create_pipeline(self, *args, **kwargs):
        raise RuntimeError("injected model backend fault")

    def load_model(self, *args, **kwargs):
        raise RuntimeError("injected model backend fault")


runtime.ModelLoader = FailingModelLoader  # read by ServiceRuntime.from_env at start-up

from openmed.service.app import app  # noqa: E402

uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), workers=1,
            access_log=False, log_level="warning")
'''

# The start of every wrk script here: an authenticated JSON POST, and each thread's Lua
# state kept in `threads` so that done() can sum its counters (bench_product uses it too).
WRK_POST_LUA = """\
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer %(token)s"

local threads = {}
function setup(thread)
  table.insert(threads, thread)
end
"""

# wrk script: the same POST for both peers, and a per-response check that tallies every
# answer that is not 503 circuit_breaker_open.
WRK_LUA = WRK_POST_LUA + """
wrk.body = %(body)s

function init(args)
  cbo = 0
  other = 0
  other_status = 0
end

function response(status, headers, body)
  if status == 503 and body and string.find(body, "%(cbo)s", 1, true) then
    cbo = cbo + 1
  else
    other = other + 1
    other_status = status
  end
end

function done(summary, latency, requests)
  local c, o, ost = 0, 0, 0
  for _, t in ipairs(threads) do
    c = c + t:get("cbo")
    o = o + t:get("other")
    if t:get("other_status") ~= 0 then ost = t:get("other_status") end
  end
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%%d,"duration_us":%%d,"p50_us":%%d,"p90_us":%%d,"p99_us":%%d,' ..
    '"max_us":%%d,"mean_us":%%.1f,"connect":%%d,"read":%%d,"write":%%d,"timeout":%%d,' ..
    '"non2xx":%%d,"cbo":%%d,"other":%%d,"other_status":%%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, latency.mean, e.connect, e.read, e.write,
    e.timeout, e.status, c, o, ost))
end
"""


class BenchError(Exception):
    """A step of the benchmark could not be carried out."""


# ---------------------------------------------------------------------------------------
# processes


@dataclass
class Proc:
    """A started server process and the files its output goes to."""

    name: str
    popen: subprocess.Popen
    stdout: Path
    stderr: Path
    port: int = 0


_STARTED: list[Proc] = []


def stop(p: Proc) -> None:
    """Stops one process started here: SIGTERM, then SIGKILL after 10 s."""
    if p.popen.poll() is None:
        p.popen.send_signal(signal.SIGTERM)
        try:
            p.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.popen.kill()
            p.popen.wait(timeout=10)
    if p in _STARTED:
        _STARTED.remove(p)


def stop_all() -> None:
    for p in list(_STARTED):
        try:
            stop(p)
        except Exception as e:  # keep stopping the others
            print(f"warning: could not stop {p.name} (pid {p.popen.pid}): {e}", file=sys.stderr)


def _on_signal(signum, _frame):
    stop_all()
    sys.exit(128 + signum)


def start(name: str, cmd: list[str], env: dict[str, str], workdir: Path, cwd: Path) -> Proc:
    out, err = workdir / f"{name}.out", workdir / f"{name}.err"
    popen = subprocess.Popen(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                             stdout=out.open("wb"), stderr=err.open("wb"))
    p = Proc(name, popen, out, err)
    _STARTED.append(p)
    return p


def tail(path: Path, n: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def wait_for(p: Proc, what: str, check, timeout: float):
    """Polls `check()` until it returns a truthy value; fails if the process exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if p.popen.poll() is not None:
            raise BenchError(f"{p.name} exited with {p.popen.returncode} while waiting for {what}:\n"
                             f"{tail(p.stderr)}\n{tail(p.stdout)}")
        v = check()
        if v:
            return v
        time.sleep(0.1)
    raise BenchError(f"{p.name}: no {what} within {timeout:.0f}s:\n{tail(p.stderr)}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(rest.split()[0])
    return out


# ---------------------------------------------------------------------------------------
# HTTP


@dataclass
class Resp:
    status: int
    headers: dict[str, str]
    body: str

    @property
    def code(self) -> str | None:
        try:
            return json.loads(self.body).get("error", {}).get("code")
        except (ValueError, AttributeError):
            return None

    @property
    def is_cbo(self) -> bool:
        return self.status == 503 and self.code == CBO


def request(port: int, method: str, path: str, body: str | None = None,
            headers: dict[str, str] | None = None, timeout: float = 30.0) -> Resp:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        data = r.read().decode("utf-8", errors="replace")
        return Resp(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
    finally:
        conn.close()


def probe(port: int, path: str) -> bool:
    try:
        return request(port, "GET", path, timeout=2).status == 200
    except OSError:
        return False


def open_breaker(port: int, limit: int = 30) -> list[int]:
    """Sends the bench request until it gets 503 circuit_breaker_open; returns the statuses."""
    seen = []
    for _ in range(limit):
        r = request(port, "POST", PATH, BODY, HEADERS)
        seen.append(r.status)
        if r.is_cbo:
            return seen
    raise BenchError(f"breaker did not open after {limit} requests (statuses {seen})")


def sample(port: int, n: int = 5) -> str:
    """Sends n requests; all must be 503 circuit_breaker_open with Retry-After."""
    got = []
    for _ in range(n):
        r = request(port, "POST", PATH, BODY, HEADERS)
        if not r.is_cbo or "retry-after" not in r.headers:
            raise BenchError(f"sampled response is not 503 {CBO} with Retry-After: "
                             f"status {r.status}, code {r.code}")
        got.append(r.headers["retry-after"])
    return f"{n}/{n} 503 {CBO} (Retry-After {', '.join(sorted(set(got)))})"


# ---------------------------------------------------------------------------------------
# peers


def phiguard_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PHIGUARD_", "OPENMED_"))}
    env.update(PHIGUARD_HOME=str(home), PHIGUARD_PORT="0", PHIGUARD_AUTH_TOKEN=CLIENT_TOKEN,
               PHIGUARD_ADMIN_TOKEN=ADMIN_TOKEN, PHIGUARD_LOG_LEVEL="off")
    env.update(extra)
    return env


def start_phiguard(name: str, workdir: Path, **extra: str) -> Proc:
    home = workdir / f"{name}-home"
    home.mkdir()
    p = start(name, [str(PHIGUARD), "serve"], phiguard_env(home, **extra), workdir, ROOT)

    def port():
        for line in p.stdout.read_text(errors="replace").splitlines():
            if line.startswith("listening on http://127.0.0.1:"):
                return int(line.rsplit(":", 1)[1].strip().rstrip("/"))
        return 0

    p.port = wait_for(p, "'listening on' line", port, 60)
    wait_for(p, "200 from /readyz", lambda: probe(p.port, "/readyz"), 60)
    return p


# Headers hyper writes itself, for the floor as for phiguard.
HYPER_HEADERS = ("date", "content-length")


def floor_headers(resp: "Resp") -> list[str]:
    """phiguard's response headers as floor503's `--header` arguments (the request id
    keeps its length; hyper adds `date` and `content-length` to both)."""
    args = []
    for k, v in resp.headers.items():
        if k not in HYPER_HEADERS:
            args += ["--header", f"{k}: {v}"]
    return args


def start_floor(workdir: Path, envelope: Path, headers: list[str]) -> Proc:
    """The HTTP floor (examples/floor503.rs): bare axum answering phiguard's 503 bytes."""
    p = start("floor", [str(FLOOR), "--body-file", str(envelope), "--retry-after", RECOVERY_SECONDS, *headers],
              dict(os.environ), workdir, ROOT)

    def port():
        for line in p.stdout.read_text(errors="replace").splitlines():
            if line.startswith("listening on http://127.0.0.1:"):
                return int(line.rsplit(":", 1)[1].strip())
        return 0

    p.port = wait_for(p, "'listening on' line", port, 30)
    return p


def openmed_python() -> Path:
    return VENV / "bin" / "python"


def openmed_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PHIGUARD_", "OPENMED_"))}
    env.update(OPENMED_SERVICE_LOG_LEVEL="off", PYTHONDONTWRITEBYTECODE="1")
    return env


def start_openmed_failing(workdir: Path) -> Proc:
    launcher = workdir / "om_failing_launcher.py"
    launcher.write_text(OPENMED_LAUNCHER)
    env = openmed_env()
    env["OPENMED_SERVICE_CIRCUIT_BREAKER_RECOVERY_TIMEOUT_SECONDS"] = RECOVERY_SECONDS
    port = free_port()
    p = start("openmed", [str(openmed_python()), str(launcher), str(port)], env, workdir, workdir)
    p.port = port
    wait_for(p, "200 from /readyz", lambda: probe(port, "/readyz"), 120)
    return p


def start_openmed_plain(workdir: Path) -> Proc:
    port = free_port()
    p = start("openmed-idle", [str(openmed_python()), "-m", "openmed.service.logging",
                               "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
              openmed_env(), workdir, workdir)
    p.port = port
    wait_for(p, "200 from /readyz", lambda: probe(port, "/readyz"), 120)
    return p


# ---------------------------------------------------------------------------------------
# load


@dataclass
class Run:
    peer: str
    index: int
    load_before: float
    res: dict
    before: str
    after: str

    @property
    def rps(self) -> float:
        return self.res["requests"] / (self.res["duration_us"] / 1e6)


def wrk(port: int, lua: Path, args: argparse.Namespace) -> dict:
    return run_wrk(port, lua, args.threads, args.connections, args.duration, PATH, timeout=5)


def run_wrk(port: int, lua: Path, threads: int, connections: int, duration: int, path: str = "",
            timeout: int = 5) -> dict:
    """Runs `lua` under wrk against 127.0.0.1:PORT and returns its `BENCH_JSON` line."""
    cmd = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s",
           "--timeout", f"{timeout}s", "-s", str(lua), f"http://127.0.0.1:{port}{path}"]
    workdir = lua.parent
    p = start("wrk", cmd, dict(os.environ), workdir, workdir)  # stopped on error like the servers
    try:
        p.popen.wait(timeout=duration + 60)
    except subprocess.TimeoutExpired:
        raise BenchError("wrk did not finish in time") from None
    finally:
        stop(p)
    for line in p.stdout.read_text(errors="replace").splitlines():
        if line.startswith("BENCH_JSON "):
            return json.loads(line[len("BENCH_JSON "):])
    raise BenchError(f"wrk gave no result (rc {p.popen.returncode}): {tail(p.stderr, 5)}")


def bench_run(peer: str, index: int, port: int, lua: Path, args) -> Run:
    before = sample(port)
    load = os.getloadavg()[0]
    res = wrk(port, lua, args)
    after = sample(port)
    if res["other"]:
        raise BenchError(f"{peer} run {index}: {res['other']} responses were not 503 {CBO} "
                         f"(last status {res['other_status']})")
    if res["requests"] == 0:
        raise BenchError(f"{peer} run {index}: wrk completed no request")
    run = Run(peer, index, load, res, before, after)
    print(f"  {peer} run {index}: {run.rps:,.0f} req/s, p50 {res['p50_us'] / 1000:.2f} ms, "
          f"p99 {res['p99_us'] / 1000:.2f} ms, {res['requests']} responses all {CBO}",
          file=sys.stderr)
    return run


# ---------------------------------------------------------------------------------------
# set-up


def rel(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return p.name


def ensure_phiguard(rebuild: bool) -> None:
    if PHIGUARD.exists() and not rebuild:
        return
    env = {k: v for k, v in os.environ.items() if k != "CARGO_TARGET_DIR"}
    print("building phiguard: cargo build --release --features fault-injection", file=sys.stderr)
    res = subprocess.run(["cargo", "build", "--release", "--features", "fault-injection"],
                         cwd=ROOT, env=env)
    if res.returncode != 0 or not PHIGUARD.exists():
        raise BenchError("release build failed (cargo build --release --features fault-injection)")


def ensure_floor(rebuild: bool) -> None:
    if FLOOR.exists() and not rebuild:
        return
    env = {k: v for k, v in os.environ.items() if k != "CARGO_TARGET_DIR"}
    print("building the floor: cargo build --release --example floor503", file=sys.stderr)
    res = subprocess.run(["cargo", "build", "--release", "--example", "floor503"], cwd=ROOT, env=env)
    if res.returncode != 0 or not FLOOR.exists():
        raise BenchError("release build of the floor failed (cargo build --release --example floor503)")


def ensure_venv() -> None:
    if openmed_python().exists():
        return
    print(f"creating {rel(VENV)} from {rel(REQUIREMENTS)}", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    # Keeps the venv out of `git add -A` without touching the repo's .gitignore.
    (VENV / ".gitignore").write_text("*\n")
    subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", "-r", str(REQUIREMENTS)], check=True)


def ensure_wrk() -> None:
    if shutil.which("wrk"):
        return
    raise BenchError("wrk is not installed (Debian package `wrk`: apt-get install -y wrk)")


def check_fault_feature(p: Proc) -> None:
    r = request(p.port, "GET", "/admin/faults", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    if r.status == 404:
        raise BenchError("target/release/phiguard was built without the fault-injection feature; "
                         "rerun with --rebuild")
    if r.status != 200:
        raise BenchError(f"GET /admin/faults answered {r.status}")


def cmd_out(cmd: list[str], **kw) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, **kw)
        return (r.stdout + r.stderr).strip()
    except (OSError, subprocess.TimeoutExpired):
        return "?"


@functools.lru_cache(maxsize=1)
def _lscpu_output() -> str:
    return cmd_out(["lscpu"])


def lscpu(field: str) -> str:
    """One field of `lscpu` ("Model name", "Flags"), or "" when it has none (one run of
    `lscpu` per process)."""
    return next((l.split(":", 1)[1].strip() for l in _lscpu_output().splitlines()
                 if l.startswith(field + ":")), "")


def versions(args) -> dict[str, str]:
    model = lscpu("Model name") or "?"
    mem_kib = next((int(l.split()[1]) for l in Path("/proc/meminfo").read_text().splitlines()
                    if l.startswith("MemTotal")), 0)
    commit = cmd_out(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT)
    dirty = cmd_out(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT)
    built = PHIGUARD.stat().st_mtime
    try:
        stale = built < int(cmd_out(["git", "log", "-1", "--format=%ct"], cwd=ROOT))
    except ValueError:
        stale = False
    built_at = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(built))
    info = {
        "cpu": f"{model}, {os.cpu_count()} logical CPUs (shared with other builds)",
        "memory": f"{mem_kib / 1048576:.0f} GiB",
        "os": f"{platform.system()} {platform.release()} {platform.machine()}",
        "phiguard": f"{cmd_out([str(PHIGUARD), '--version'])}, release, features fault-injection; "
                    f"binary built {built_at}, checkout at commit {commit}"
                    f"{' with uncommitted changes' if dirty else ''}"
                    f"{' (binary older than that commit)' if stale else ''}",
        "rustc": cmd_out(["rustc", "--version"]),
        "axum floor": "examples/floor503.rs (axum and tokio as locked in Cargo.lock)",
        "wrk": cmd_out(["wrk", "-v"]).splitlines()[0] if shutil.which("wrk") else "?",
    }
    if args.no_openmed:
        return info
    return info | {
        "openmed": "openmed " + cmd_out([str(openmed_python()), "-c",
                                         "import openmed; print(openmed.__version__)"]),
        "python (OpenMed)": cmd_out([str(openmed_python()), "--version"]),
        "fastapi / uvicorn": cmd_out([str(openmed_python()), "-c",
                                      "import fastapi, uvicorn; print(fastapi.__version__, '/', uvicorn.__version__)"]),
    }


# ---------------------------------------------------------------------------------------
# report


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def log_stats(path: Path) -> dict:
    """What phiguard's JSON log held after the runs: lines, bytes, the 503 access lines
    written one by one, and the refusals counted into `requests refused` lines."""
    text = path.read_text(errors="replace")
    st = {"lines": 0, "bytes": len(text.encode()), "each": 0, "summaries": 0, "counted": 0}
    for line in text.splitlines():
        if not line.strip():
            continue
        st["lines"] += 1
        try:
            e = json.loads(line)
        except ValueError:
            continue
        f = e.get("fields", {})
        if e.get("target") != "phiguard::access" or f.get("status") != 503:
            continue
        if f.get("message") == "requests refused":
            st["summaries"] += 1
            st["counted"] += int(f.get("count", 0))
        else:
            st["each"] += 1
    return st


def log_summary(st: dict) -> str:
    return (f"Over the whole run phiguard's log held {st['lines']:,} lines ({st['bytes'] / 1024:,.1f} KiB): "
            f"{st['each']:,} access lines of a `503`, one by one, and {st['summaries']:,} `requests refused` "
            f"lines counting {st['counted']:,} more (the first refusal of a kind in each ten seconds is "
            "logged in full, the rest are counted, `src/server/refusals.rs`).")


def report(args, runs: list[Run], opened: dict[str, list[int]], rss: dict[str, dict],
           first_ms: float, ver: dict[str, str], log: dict) -> str:
    pg = [r for r in runs if r.peer == "phiguard"]
    quiet = args.log_level == "off"
    om = [r for r in runs if r.peer == "OpenMed"]
    fl = [r for r in runs if r.peer == "axum floor"]
    lines = [
        "# Fast-fail benchmark: phiguard vs the HTTP floor" + ("" if args.no_openmed else " and OpenMed 3.1"),
        "",
        "Generated by `tools/bench_fastfail.py`. Every peer answers `POST /pii/deidentify`",
        "with `503 circuit_breaker_open`: phiguard and OpenMed because the model's circuit",
        "breaker is open, the *axum floor* (`examples/floor503.rs`, a bare axum handler on",
        "the same tokio runtime) because that is all it does, with the very bytes phiguard",
        "sent: " + ("its body, content type and `Retry-After` (`--floor-body-only`)." if args.floor_body_only
                    else "its status, headers (the request id a fixed one of the same length) and body."),
        "The floor is what HTTP costs on this machine; phiguard's share of it is the",
        "cost of everything else a refused request goes through. Same wrk command",
        f"(`-t{args.threads} -c{args.connections} -d{args.duration}s`) and Lua script for every peer, runs interleaved.",
        "wrk runs on the same cores as the server under test, and the machine is shared with",
        "other builds (see the load average column): absolute figures are depressed and noisy,",
        "the ratio between peers measured back to back is the figure to read.",
        ("phiguard logs nothing in these runs (`PHIGUARD_LOG_LEVEL=off`), as OpenMed's runs log nothing."
         if quiet else
         f"phiguard logs at `{args.log_level}` in these runs, as the service does by default (JSON on "
         "stderr, written to a file), so its log is part of each refusal's cost; OpenMed's runs log "
         "nothing (its service log and uvicorn's access log off), which favours OpenMed. " + log_summary(log)),
        "",
        "## Machine and versions",
        "",
        "| item | value |",
        "|---|---|",
    ]
    lines += [f"| {k} | {v} |" for k, v in ver.items()]
    lines += [
        "",
        "## 503 fast-fail throughput (breaker open)",
        "",
        "| peer | run | responses | req/s | p50 ms | p90 ms | p99 ms | max ms | not 503 cbo | socket errors | load avg (1 min) before |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        x = r.res
        sock = x["connect"] + x["read"] + x["write"] + x["timeout"]
        lines.append(f"| {r.peer} | {r.index} | {x['requests']:,} | {r.rps:,.0f} | {x['p50_us'] / 1000:.2f} | "
                     f"{x['p90_us'] / 1000:.2f} | {x['p99_us'] / 1000:.2f} | {x['max_us'] / 1000:.1f} | "
                     f"{x['other']} | {sock} | {r.load_before:.2f} |")
    share = mean([r.rps for r in pg]) / mean([r.rps for r in fl])
    lines += [
        "",
        f"**phiguard / axum floor: {share:.2f}** (mean req/s over the runs; per run: "
        + ", ".join(f"{p.rps / f.rps:.2f}" for p, f in zip(pg, fl)) + "). Goal ≥ 0.67: "
        f"{'met' if share >= 0.67 else 'not met'}.",
    ]
    if om:
        ratio = mean([r.rps for r in pg]) / mean([r.rps for r in om])
        worst = min(r.rps for r in pg) / max(r.rps for r in om)
        lines += [
            "",
            f"**phiguard / OpenMed: {ratio:.1f}×** (mean req/s over the runs; the slowest phiguard run",
            f"against the fastest OpenMed run gives {worst:.1f}×). Goal ≥ 30×: "
            f"{'met' if worst >= 30 else ('met on the means only' if ratio >= 30 else 'not met')}.",
        ]
    lines += [
        "",
        "Checks: every response of every run was tallied by the Lua `response()` hook",
        "(column *not 503 cbo* counts the others); before and after each run 5 requests were",
        "sampled:",
        "",
    ]
    for r in runs:
        lines.append(f"- {r.peer} run {r.index}: before {r.before}; after {r.after}")
    lines += [
        "",
        "How each breaker was opened (statuses of the sequential requests until the first 503):",
        "",
    ]
    for peer, seen in opened.items():
        lines.append(f"- {peer}: {', '.join(map(str, seen))}")
    lines += [
        "",
        "## Resident memory (VmRSS from /proc/PID/status)",
        "",
        "| process | state | VmRSS MiB | VmHWM MiB |",
        "|---|---|---|---|",
    ]
    if not rss:
        lines.append("| (not measured: `--no-openmed`) | | | |")
    for label, v in rss.items():
        lines.append(f"| {label.split(' | ')[0]} | {label.split(' | ')[1]} | {v['VmRSS'] / 1024:.1f} | {v['VmHWM'] / 1024:.1f} |")
    lines += [
        "",
        f"The first request took {first_ms:.0f} ms (phiguard-deid was loaded before `/readyz` turned ready; "
        "the high-water mark of the idle process is that load's peak)." if first_ms else "",
        "OpenMed was installed with the `service` extra only, as pinned in",
        "`tools/requirements-bench.txt`; it has no `transformers`/`torch`, which OpenMed needs",
        "to serve any model (`openmed[hf]`), so its idle figure is a lower bound for a working",
        "OpenMed service.",
        "",
        "## Commands",
        "",
        "```sh",
        "apt-get install -y wrk",
        "cargo build --release --features fault-injection",
        "cargo build --release --example floor503",
        "python3 -m venv tools/.venv-openmed",
        "tools/.venv-openmed/bin/pip install -r tools/requirements-bench.txt",
        f"python3 tools/bench_fastfail.py --duration {args.duration} --threads {args.threads} "
        f"--connections {args.connections} --runs {args.runs}"
        + ("" if args.log_level == "info" else f" --log-level {args.log_level}"),
        "",
        "# what the script starts (<tmp> is a fresh temp dir, PORT a free port)",
        "PHIGUARD_HOME=<tmp>/home PHIGUARD_PORT=0 PHIGUARD_AUTH_TOKEN=bench PHIGUARD_ADMIN_TOKEN=benchadmin \\",
        f"  PHIGUARD_FAULTS=infer=fail PHIGUARD_LOG_LEVEL={args.log_level} PHIGUARD_DEFAULT_MODEL=rules \\"
        + ("" if quiet else "   # stderr (the JSON log) to a file"),
        f"  PHIGUARD_BREAKER_RECOVERY_TIMEOUT_SECONDS={RECOVERY_SECONDS} target/release/phiguard serve",
        f"target/release/examples/floor503 --body-file <tmp>/envelope.json --retry-after {RECOVERY_SECONDS}"
        + ("" if args.floor_body_only else " --header 'NAME: VALUE' ...   # each header phiguard sent but date, content-length"),
        f"OPENMED_SERVICE_LOG_LEVEL=off OPENMED_SERVICE_CIRCUIT_BREAKER_RECOVERY_TIMEOUT_SECONDS={RECOVERY_SECONDS} \\",
        "  tools/.venv-openmed/bin/python <tmp>/om_failing_launcher.py PORT   # uvicorn, 1 worker, access log off",
        f"wrk -t{args.threads} -c{args.connections} -d{args.duration}s --timeout 5s -s <tmp>/post.lua "
        f"http://127.0.0.1:PORT{PATH}",
        "",
        "# memory",
        "PHIGUARD_HOME=<tmp>/home PHIGUARD_PORT=0 PHIGUARD_AUTH_TOKEN=bench PHIGUARD_ADMIN_TOKEN=benchadmin \\",
        "  PHIGUARD_LOG_LEVEL=off PHIGUARD_DEFAULT_MODEL=phiguard-deid target/release/phiguard serve",
        "OPENMED_SERVICE_LOG_LEVEL=off tools/.venv-openmed/bin/python -m openmed.service.logging \\",
        "  --host 127.0.0.1 --port PORT --workers 1",
        "```",
        "",
        f"Request body: `{BODY}` with `Authorization: Bearer bench` and",
        "`Content-Type: application/json` (OpenMed's auth is off by default; it ignores the header).",
        "",
    ]
    if om:
        lines += [
            "OpenMed's model loader was made to fail by a launcher module that replaces",
            "`openmed.service.runtime.ModelLoader` (read by `ServiceRuntime.from_env` at start-up)",
            "with a subclass whose `create_pipeline` and `load_model` raise `RuntimeError`, then runs",
            "`openmed.service.app:app` with uvicorn. With OpenMed's defaults (3 attempts per request,",
            "threshold 3) three requests fail with 500 and the fourth gets 503 circuit_breaker_open.",
            "",
        ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=int, default=10, help="seconds per wrk run (default 10)")
    ap.add_argument("--threads", type=int, default=2, help="wrk threads (default 2)")
    ap.add_argument("--connections", type=int, default=32, help="wrk connections (default 32)")
    ap.add_argument("--runs", type=int, default=2, help="runs per peer, interleaved (default 2)")
    ap.add_argument("--rebuild", action="store_true", help="run the release build even if the binary exists")
    ap.add_argument("--out", default="docs/bench-fastfail.md", help="report path, relative to the repo")
    ap.add_argument("--floor-body-only", action="store_true",
                    help="the floor sends phiguard's body with only content-type and Retry-After "
                         "(the earlier floor), not all of phiguard's headers")
    ap.add_argument("--log-level", default="info",
                    help="phiguard's log level in the fast-fail runs (default info, the service's default: "
                         "JSON on stderr, written to a file and summarised in the report; `off` logs nothing, "
                         "as OpenMed's runs and the floor)")
    ap.add_argument("--no-openmed", action="store_true",
                    help="phiguard and the axum floor only (no OpenMed venv, no memory section)")
    args = ap.parse_args()
    if not (1 <= args.duration <= 120 and args.runs >= 1 and args.threads >= 1
            and args.connections >= args.threads):
        ap.error("need 1 <= duration <= 120, runs >= 1, connections >= threads >= 1")

    atexit.register(stop_all)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    ensure_wrk()
    ensure_phiguard(args.rebuild)
    ensure_floor(args.rebuild)
    if not args.no_openmed:
        ensure_venv()

    with tempfile.TemporaryDirectory(prefix="bench-fastfail-") as tmp:
        work = Path(tmp)
        lua = work / "post.lua"
        lua.write_text(WRK_LUA % {"body": json.dumps(BODY), "token": CLIENT_TOKEN, "cbo": CBO})
        try:
            rss: dict[str, dict] = {}
            first_ms = 0.0
            # Memory first, on quiet processes.
            if not args.no_openmed:
                first_ms = memory(work, rss)

            print("fast-fail: starting the peers and opening their breakers", file=sys.stderr)
            pg = start_phiguard("phiguard", work, PHIGUARD_FAULTS="infer=fail",
                                PHIGUARD_DEFAULT_MODEL="rules", PHIGUARD_LOG_LEVEL=args.log_level,
                                PHIGUARD_BREAKER_RECOVERY_TIMEOUT_SECONDS=RECOVERY_SECONDS)
            check_fault_feature(pg)
            opened = {"phiguard": open_breaker(pg.port)}
            # The floor sends the very bytes phiguard sends for this request.
            envelope = work / "envelope.json"
            refused = request(pg.port, "POST", PATH, BODY, HEADERS)
            envelope.write_text(refused.body)
            fl = start_floor(work, envelope, [] if args.floor_body_only else floor_headers(refused))
            peers = [("phiguard", pg), ("axum floor", fl)]
            if not args.no_openmed:
                om = start_openmed_failing(work)
                opened["OpenMed"] = open_breaker(om.port)
                peers.append(("OpenMed", om))
            runs = []
            for i in range(1, args.runs + 1):
                for name, p in peers:
                    runs.append(bench_run(name, i, p.port, lua, args))
            rss["phiguard serve | after the fast-fail runs (rules, breaker open)"] = rss_kib(pg.popen.pid)
            if not args.no_openmed:
                rss["OpenMed service | after the fast-fail runs (breaker open)"] = rss_kib(om.popen.pid)
            for _, p in peers:
                if p.popen.poll() is not None:
                    raise BenchError(f"{p.name} exited during the benchmark")
                stop(p)
            # Read after the stop: phiguard writes its last `requests refused` lines as it exits.
            log = log_stats(pg.stderr)
        finally:
            stop_all()

    text = report(args, runs, opened, rss, first_ms, versions(args), log)
    print(text)
    out = ROOT / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"written to {rel(out)}", file=sys.stderr)
    return 0


def memory(work: Path, rss: dict[str, dict]) -> float:
    """Idle phiguard (its default model loaded at start-up), the same after one request, idle
    OpenMed; returns the first request's ms."""
    print("memory: phiguard idle, then after one phiguard-deid request", file=sys.stderr)
    pm = start_phiguard("phiguard-rss", work, PHIGUARD_DEFAULT_MODEL="phiguard-deid")
    time.sleep(2)
    rss["phiguard serve | idle, phiguard-deid loaded at start-up"] = rss_kib(pm.popen.pid)
    t0 = time.monotonic()
    r = request(pm.port, "POST", PATH, BODY, HEADERS, timeout=120)
    first_ms = (time.monotonic() - t0) * 1000
    if r.status != 200:
        raise BenchError(f"phiguard with phiguard-deid answered {r.status} ({r.code})")
    time.sleep(1)
    rss["phiguard serve | after its first request"] = rss_kib(pm.popen.pid)
    stop(pm)
    print("memory: OpenMed idle", file=sys.stderr)
    om_idle = start_openmed_plain(work)
    time.sleep(2)
    rss["OpenMed service | idle"] = rss_kib(om_idle.popen.pid)
    stop(om_idle)
    return first_ms


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        stop_all()
        print(f"bench_fastfail: {e}", file=sys.stderr)
        sys.exit(1)
