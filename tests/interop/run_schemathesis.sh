#!/usr/bin/env bash
# schemathesis against a running `phiguard serve`: every operation of /openapi.json, with the
# client token, bounded by --max-examples. Checks: no 5xx, every status documented, responses
# match their schemas, content types documented. Starts its own server (temp home, port 0).
#
# Usage: tests/interop/run_schemathesis.sh [extra schemathesis args]
# Env:   PHIGUARD_BIN (default: $CARGO_TARGET_DIR or target, /debug/phiguard)
#        SCHEMATHESIS_MAX_EXAMPLES (default 60), SCHEMATHESIS_SEED (default 1)
#        INTEROP_VENV (default tests/interop/.venv)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$(cd "${INTEROP_VENV:-$here/.venv}" && pwd)"
target="${CARGO_TARGET_DIR:-$repo/target}"
bin="${PHIGUARD_BIN:-$target/debug/phiguard}"
case "$bin" in /*) ;; *) bin="$repo/$bin" ;; esac
max_examples="${SCHEMATHESIS_MAX_EXAMPLES:-60}"
seed="${SCHEMATHESIS_SEED:-1}"

home="$(mktemp -d)"
log="$home/serve.log"
token="$("$venv/bin/python" -c 'import secrets; print(secrets.token_urlsafe(24))')"
admin="$("$venv/bin/python" -c 'import secrets; print(secrets.token_urlsafe(24))')"
cleanup() {
    if [[ -n "${pid:-}" ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    rm -rf "$home"
}
trap cleanup EXIT

# schemathesis sends wrong tokens on purpose (its authentication checks); with the per-peer
# limit of failed authentications in force, every later request from 127.0.0.1 would be a
# 429 and the run would test little else. The limit has its own tests (tests/service).
PHIGUARD_HOME="$home" PHIGUARD_PORT=0 PHIGUARD_AUTH_TOKEN="$token" PHIGUARD_ADMIN_TOKEN="$admin" \
    PHIGUARD_AUTH_FAILURE_BURST=1000000 \
    PHIGUARD_METRICS_ENABLED=true RUST_LOG="${RUST_LOG:-warn}" "$bin" serve >"$log" 2>&1 &
pid=$!
base=""
for _ in $(seq 1 600); do
    base="$(sed -n 's/.*listening on \(http:\/\/[^ ]*\).*/\1/p' "$log" | head -n1)"
    [[ -n "$base" ]] && break
    kill -0 "$pid" 2>/dev/null || { echo "phiguard exited early:" >&2; tail -n 40 "$log" >&2; exit 1; }
    sleep 0.2
done
[[ -n "$base" ]] || { echo "phiguard did not print its address" >&2; exit 1; }
"$venv/bin/python" - "$base" <<'PY'
import sys, time, httpx
for _ in range(600):
    try:
        if httpx.get(sys.argv[1] + "/readyz", timeout=5).status_code == 200:
            sys.exit(0)
    except httpx.HTTPError:
        pass
    time.sleep(0.2)
sys.exit("phiguard did not become ready")
PY

report_dir="${SCHEMATHESIS_REPORT_DIR:-$here/schemathesis-report}"
mkdir -p "$report_dir"
# --request-timeout: schemathesis gives up after 10 s by default; a large generated note through
# the model on a debug build and two shared cores can legitimately take longer than that.
# schemathesis keeps its example database in the working directory: use the temp home.
cd "$home"
status=0
"$venv/bin/schemathesis" run "$base/openapi.json" \
    --header "Authorization: Bearer $token" \
    --checks not_a_server_error,status_code_conformance,response_schema_conformance,content_type_conformance \
    --max-examples "$max_examples" --seed "$seed" --workers 2 \
    --phases examples,coverage,fuzzing \
    --report junit --report-dir "$report_dir" \
    --suppress-health-check too_slow \
    --request-timeout 120 \
    "$@" || status=1

# schemathesis reports two kinds of trouble: <failure> (a check found the server at fault) and
# <error> (schemathesis or Hypothesis broke while generating, e.g. CPython 3.11's "AST
# constructor recursion depth mismatch" inside Hypothesis's lambda descriptions, seen once in
# CI on POST /pii/deidentify/stream). A failure always fails the run. Operations with only
# errors get one more run with another seed; an error or failure there fails the run too.
if [[ $status -ne 0 ]]; then
    errored="$("$venv/bin/python" - "$report_dir" <<'PY'
import glob, os, re, sys
import xml.etree.ElementTree as ET
report = max(glob.glob(os.path.join(sys.argv[1], "junit-*.xml")), key=os.path.getmtime)
names, failures = [], 0
for case in ET.parse(report).iter("testcase"):
    tags = {child.tag for child in case}
    failures += "failure" in tags
    if "error" in tags:
        names.append(case.get("name", ""))
if failures or not names:
    sys.exit(0)  # nothing to retry: a real failure, or no report
print("^(" + "|".join(re.escape(n) for n in names) + ")$")
PY
)"
    if [[ -n "$errored" ]]; then
        echo "== schemathesis: one more run of the operations that hit an internal error =="
        status=0
        "$venv/bin/schemathesis" run "$base/openapi.json" \
            --header "Authorization: Bearer $token" \
            --include-name-regex "$errored" \
            --checks not_a_server_error,status_code_conformance,response_schema_conformance,content_type_conformance \
            --max-examples "$max_examples" --seed "$((seed + 1))" --workers 2 \
            --phases examples,coverage,fuzzing \
            --suppress-health-check too_slow \
            --request-timeout 120 \
            "$@" || status=1
    fi
fi

# The admin routes above only see a client token (401/403). With the admin token, fuzz the
# ones that read: writes would change settings, tokens and models under the run, and
# /admin/events is an endless event stream.
echo "== schemathesis: read-only admin routes with the admin token =="
"$venv/bin/schemathesis" run "$base/openapi.json" \
    --header "Authorization: Bearer $admin" \
    --include-name-regex '^GET /admin/(status|settings|tokens|models)$' \
    --checks not_a_server_error,status_code_conformance,response_schema_conformance,content_type_conformance \
    --max-examples "$max_examples" --seed "$seed" \
    --phases examples,coverage,fuzzing \
    --suppress-health-check too_slow \
    --request-timeout 120 \
    "$@" || status=1
exit "$status"
