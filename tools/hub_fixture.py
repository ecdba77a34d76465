#!/usr/bin/env python3
"""A local Hugging Face Hub look-alike for the model download tests (standard library only).

It serves `<root>/<org>/<repo>/<file>` with the hub's URL layout and headers:

* `HEAD|GET /{org}/{repo}/resolve/{revision}/{file}`; `revision` is `main` or the fixture
  commit (`--commit`), anything else is 404 with `X-Error-Code: RevisionNotFound`.
* Every answer carries `X-Repo-Commit`. Large-file-storage files (`.safetensors`, `.bin`,
  `.onnx`, `.gguf`) answer `302` to `/_cdn/{sha256}` like the hub's CDN redirect, with
  `X-Linked-Etag` (the sha256) and `X-Linked-Size`; other files answer 200 directly with
  `ETag` = the git blob sha1, as the hub does (`--sha256-etags` sends the sha256 instead).
* `GET` honours `Range: bytes=N-` and `bytes=N-M` (206 + `Content-Range`; 416 past the end).

Fault options for the tests:

* `--cut-after N`: the first body longer than N bytes is cut (socket closed) after N bytes,
  once; later requests are served whole.
* `--wrong-checksum FILE`: advertise a wrong checksum for FILE (its content is unchanged).
* `--throttle BPS`: send bodies at about BPS bytes per second, in small chunks.
* `--token TOKEN`: require `Authorization: Bearer TOKEN` on resolve routes (else 401).
* `--log FILE`: append one JSON line per request: method, path, range, status, bytes sent.
* `--cdn BASE`: large files redirect to `BASE/_cdn/{sha256}` (another server: the hub's CDN
  is another host) instead of this server's `/_cdn/`.
* `--corrupt FILE`: serve FILE with its last byte flipped, consistently: the checksum and
  size announced are those of the changed bytes (a compromised mirror, not a bad transfer).
* `--pad FILE=N`: GET bodies of FILE carry N zero bytes after its content (the announced
  size and checksum stay those of the file), sent in chunks until the client hangs up.
* `--announce-size FILE=N`: a large file announces `X-Linked-Size: N`.
* `--redirect-to BASE`: every resolve request answers `307` to the same path under `BASE`,
  with none of the hub's headers (a mirror that moved).

It prints `listening on http://127.0.0.1:PORT` once ready (`--port 0` picks a free port) and
exits when its standard input closes, so a test that dies does not leave it behind.
"""

import argparse
import hashlib
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

LFS_SUFFIXES = (".safetensors", ".bin", ".onnx", ".gguf", ".h5", ".msgpack")
DEFAULT_COMMIT = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c"
NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


class Options:
    def __init__(self, args: argparse.Namespace) -> None:
        self.root = Path(args.root).resolve()
        self.commit = args.commit
        self.cut_after = args.cut_after
        self.cut_done = False
        self.wrong = set(args.wrong_checksum or [])
        self.throttle = args.throttle
        self.token = args.token
        self.sha256_etags = args.sha256_etags
        self.log_path = args.log
        self.cdn = (args.cdn or "").rstrip("/")
        self.corrupt = set(args.corrupt or [])
        self.pad = dict(kv_int(v) for v in (args.pad or []))
        self.announce_size = dict(kv_int(v) for v in (args.announce_size or []))
        self.redirect_to = (args.redirect_to or "").rstrip("/")
        self.lock = threading.Lock()

    def take_cut(self, body_len: int) -> bool:
        """True once, for the first body longer than the cut point."""
        with self.lock:
            if self.cut_after is None or self.cut_done or body_len <= self.cut_after:
                return False
            self.cut_done = True
            return True

    def log(self, entry: dict) -> None:
        if not self.log_path:
            return
        with self.lock, open(self.log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, sort_keys=True) + "\n")


def kv_int(value: str):
    name, _, n = value.partition("=")
    return name, int(n)


def served_bytes(opts, name: str, data: bytes) -> bytes:
    """The bytes served for a file: its content, or with `--corrupt` its last byte flipped."""
    if name in opts.corrupt and data:
        return data[:-1] + bytes([data[-1] ^ 0x01])
    return data


def git_blob_sha1(data: bytes) -> str:
    h = hashlib.sha1()
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def parse_range(header: str, total: int):
    """Returns (start, end_inclusive) or None for no range; raises ValueError if unsatisfiable."""
    m = re.fullmatch(r"bytes=(\d+)-(\d*)", header.strip())
    if not m:
        return None
    start = int(m.group(1))
    end = int(m.group(2)) if m.group(2) else total - 1
    if start >= total or end < start:
        raise ValueError("unsatisfiable")
    return start, min(end, total - 1)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "hub-fixture/1"
    opts: Options = None  # set in main

    def log_message(self, fmt, *args):  # quiet: the JSON log is the record
        pass

    # -- routing -----------------------------------------------------------------------------

    def do_HEAD(self):
        self.route(head=True)

    def do_GET(self):
        self.route(head=False)

    def route(self, head: bool) -> None:
        path = unquote(urlsplit(self.path).path)
        parts = path.strip("/").split("/")
        if len(parts) == 2 and parts[0] == "_cdn":
            return self.serve_blob(parts[1], head)
        if len(parts) >= 5 and parts[2] == "resolve":
            return self.serve_resolve(parts[0], parts[1], parts[3], "/".join(parts[4:]), head)
        self.simple(404, head, {"X-Error-Code": "EntryNotFound"})

    # -- responses ---------------------------------------------------------------------------

    def simple(self, status: int, head: bool, headers: dict, body: bytes = b"") -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head and body:
            self.wfile.write(body)
        self.record(status, 0 if head else len(body))

    def record(self, status: int, sent: int) -> None:
        self.opts.log({"method": self.command, "path": urlsplit(self.path).path,
                       "range": self.headers.get("Range"), "status": status, "sent": sent,
                       "auth": self.headers.get("Authorization") is not None})

    def file_for(self, org: str, repo: str, name: str):
        if not all(NAME.match(p) for p in (org, repo)) or not all(
                NAME.match(p) for p in name.split("/")):
            return None
        f = self.opts.root / org / repo / name
        return f if f.is_file() else None

    def serve_resolve(self, org, repo, revision, name, head) -> None:
        o = self.opts
        if o.token and self.headers.get("Authorization") != f"Bearer {o.token}":
            return self.simple(401, head, {"X-Error-Code": "GatedRepo"})
        if o.redirect_to:
            return self.simple(307, head, {"Location": o.redirect_to + urlsplit(self.path).path})
        if not (o.root / org / repo).is_dir():
            return self.simple(404, head, {"X-Error-Code": "RepoNotFound"})
        if revision not in ("main", o.commit):
            return self.simple(404, head, {"X-Error-Code": "RevisionNotFound"})
        f = self.file_for(org, repo, name)
        if f is None:
            return self.simple(404, head, {"X-Error-Code": "EntryNotFound",
                                           "X-Repo-Commit": o.commit})
        data = served_bytes(o, name, f.read_bytes())
        sha256 = hashlib.sha256(data).hexdigest()
        advertised = sha256
        if name in o.wrong:
            advertised = hashlib.sha256(data + b"wrong").hexdigest()
        if name.endswith(LFS_SUFFIXES):
            return self.simple(302, head, {
                "Location": f"{o.cdn}/_cdn/{sha256}?name={name}",
                "X-Repo-Commit": o.commit,
                "X-Linked-Etag": f'"{advertised}"',
                "X-Linked-Size": str(o.announce_size.get(name, len(data))),
                "ETag": f'"{advertised}"',
            })
        if o.sha256_etags:
            etag = f'"{advertised}"'
        elif name in o.wrong:
            etag = f'W/"{git_blob_sha1(data + b"wrong")}"'
        else:
            etag = f'W/"{git_blob_sha1(data)}"'
        self.send_body(data, head, {"ETag": etag, "X-Repo-Commit": o.commit},
                       o.pad.get(name, 0))

    def serve_blob(self, sha256: str, head: bool) -> None:
        for f in self.opts.root.rglob("*"):
            if f.is_file() and f.suffix and f.name.endswith(LFS_SUFFIXES):
                data = served_bytes(self.opts, f.name, f.read_bytes())
                if hashlib.sha256(data).hexdigest() == sha256:
                    return self.send_body(data, head, {"ETag": f'"{sha256}"'},
                                          self.opts.pad.get(f.name, 0))
        self.simple(404, head, {})

    def send_body(self, data: bytes, head: bool, headers: dict, pad: int = 0) -> None:
        total = len(data)
        status, start, end = 200, 0, total - 1
        rng = self.headers.get("Range")
        if rng:
            try:
                parsed = parse_range(rng, total)
            except ValueError:
                return self.simple(416, head, {"Content-Range": f"bytes */{total}"})
            if parsed is not None:
                status, (start, end) = 206, parsed
        body = data[start:end + 1]
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body) + (0 if head else pad)))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{total}")
        self.end_headers()
        if head:
            return self.record(status, 0)
        cut = self.opts.take_cut(len(body))
        limit = self.opts.cut_after if cut else len(body)
        sent = self.write_paced(body[:limit])
        if pad and not cut:
            sent += self.write_padding(pad)
        self.record(status, sent)
        if cut:
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)

    def write_padding(self, n: int) -> int:
        """Writes n zero bytes in chunks; stops (and counts what went) when the client leaves."""
        chunk = b"\0" * 65536
        sent = 0
        try:
            while sent < n:
                piece = chunk[:min(len(chunk), n - sent)]
                self.wfile.write(piece)
                sent += len(piece)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        return sent

    def write_paced(self, body: bytes) -> int:
        bps = self.opts.throttle
        if not bps:
            self.wfile.write(body)
            return len(body)
        chunk = max(1, bps // 20)
        sent = 0
        try:
            for i in range(0, len(body), chunk):
                piece = body[i:i + chunk]
                self.wfile.write(piece)
                self.wfile.flush()
                sent += len(piece)
                time.sleep(len(piece) / bps)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        return sent


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parent.parent
    p.add_argument("--root", default=str(here / "tests/fixtures/hub"))
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--commit", default=DEFAULT_COMMIT)
    p.add_argument("--cut-after", type=int, default=None)
    p.add_argument("--wrong-checksum", action="append", metavar="FILE")
    p.add_argument("--throttle", type=int, default=0, metavar="BPS")
    p.add_argument("--token", default=None)
    p.add_argument("--sha256-etags", action="store_true")
    p.add_argument("--log", default=None)
    p.add_argument("--cdn", default=None, metavar="BASE")
    p.add_argument("--redirect-to", default=None, metavar="BASE")
    p.add_argument("--corrupt", action="append", metavar="FILE")
    p.add_argument("--pad", action="append", metavar="FILE=N")
    p.add_argument("--announce-size", action="append", metavar="FILE=N")
    args = p.parse_args()

    Handler.opts = Options(args)
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    print(f"listening on http://{args.host}:{port}", flush=True)

    def watch_stdin():
        try:
            while sys.stdin.buffer.read(4096):
                pass
        finally:
            os._exit(0)

    if not sys.stdin.isatty():
        threading.Thread(target=watch_stdin, daemon=True).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
