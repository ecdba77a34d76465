#!/usr/bin/env bash
# Interoperability checks against the real binary:
#   1. OpenMed 3.1's own Python client (pytest, tests/interop/test_openmed_client.py), and
#      /fhir/deidentify's answers validated against HL7's FHIR R4 JSON schema and with
#      fhir.resources' models (tests/interop/test_fhir_schema.py)
#   2. schemathesis over /openapi.json (tests/interop/run_schemathesis.sh)
# Sets up tests/interop/.venv from requirements.txt (pinned), builds `phiguard`, runs both,
# and exits non-zero when either fails. Called from .ci/run.
#
# Env: PHIGUARD_BIN (the binary; default: `cargo build` here), CARGO_TARGET_DIR (where that
#      build goes), INTEROP_PYTHON (default python3),
#      SCHEMATHESIS_MAX_EXAMPLES (default 60).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$here/.venv"
python="${INTEROP_PYTHON:-python3}"

if [[ ! -x "$venv/bin/python" ]]; then
    "$python" -m venv "$venv"
fi
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
    echo "$want" >"$stamp"
fi

# HL7's FHIR R4 JSON schema and its validator, for test_fhir_schema.py (Node.js is on every
# machine scripts/test runs on: it installs it for the browser tests).
(cd "$here/fhir-r4" && { [[ -d node_modules ]] || npm ci --no-audit --no-fund --silent; })

# PHIGUARD_BIN when given (scripts/test passes the binary its test build made); else the
# debug build, made here.
if [[ -z "${PHIGUARD_BIN:-}" ]]; then
    (cd "$repo" && cargo build --bin phiguard)
    PHIGUARD_BIN="${CARGO_TARGET_DIR:-$repo/target}/debug/phiguard"
fi
case "$PHIGUARD_BIN" in /*) ;; *) PHIGUARD_BIN="$repo/$PHIGUARD_BIN" ;; esac
export PHIGUARD_BIN

status=0
echo "== OpenMed 3.1 client against phiguard =="
(cd "$repo" && "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/interop) || status=1

echo "== schemathesis against /openapi.json =="
INTEROP_VENV="$venv" "$here/run_schemathesis.sh" || status=1

exit "$status"
