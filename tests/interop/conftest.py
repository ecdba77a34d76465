"""Shared fixtures for the interoperability checks: a real `phiguard serve` process.

The server is the built binary (`target/debug/phiguard`, or `$PHIGUARD_BIN`), started with a
temporary home, port 0 and explicit tokens, exactly as a user would run it. Nothing here
fakes a response: every check talks to the real process over HTTP.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]


def phiguard_binary() -> Path:
    """Where the binary is: `$PHIGUARD_BIN`, `$CARGO_TARGET_DIR/debug`, or `target/debug`."""
    if os.environ.get("PHIGUARD_BIN"):
        return Path(os.environ["PHIGUARD_BIN"])
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    if not target.is_absolute():
        target = REPO / target
    return target / "debug" / "phiguard"


class RunningServer:
    """A `phiguard serve` child process and what a client needs to reach it."""

    def __init__(self, extra_env: dict[str, str] | None = None) -> None:
        binary = phiguard_binary()
        if not binary.exists():
            raise RuntimeError("phiguard binary not built; run `cargo build` first")
        self.home = tempfile.mkdtemp(prefix="phiguard-interop-")
        self.client_token = secrets.token_urlsafe(24)
        self.admin_token = secrets.token_urlsafe(24)
        env = dict(os.environ)
        env.update(
            {
                "PHIGUARD_HOME": self.home,
                "PHIGUARD_PORT": "0",
                "PHIGUARD_AUTH_TOKEN": self.client_token,
                "PHIGUARD_ADMIN_TOKEN": self.admin_token,
                "PHIGUARD_METRICS_ENABLED": "true",
                "RUST_LOG": env.get("RUST_LOG", "warn"),
            }
        )
        env.update(extra_env or {})
        self.proc = subprocess.Popen(
            [str(binary), "serve"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.base_url = self._wait_for_address()
        # Drain stderr so a chatty log never blocks the child.
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()
        self._wait_ready()

    def _wait_for_address(self) -> str:
        deadline = time.monotonic() + 120
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                if self.proc.poll() is not None:
                    err = self.proc.stderr.read() if self.proc.stderr else ""
                    raise RuntimeError(f"phiguard exited early: {err[-2000:]}")
                continue
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                return m.group(1)
        raise RuntimeError("phiguard did not print its address")

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.base_url + "/readyz", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("phiguard did not become ready")

    @property
    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.client_token}"}

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.home, ignore_errors=True)


@pytest.fixture(scope="session")
def server():
    srv = RunningServer()
    yield srv
    srv.stop()
