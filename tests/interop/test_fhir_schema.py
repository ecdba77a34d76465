"""`/fhir/deidentify` answers checked with someone else's FHIR models.

The real `phiguard serve` (bundled model, default profile) de-identifies a transaction
Bundle shaped like HL7's published examples and the same resources as NDJSON; every answer
must validate with `fhir.resources` (its R4B models: R4's resources with R4B's fixes, the
closest release the package carries), keep no PHI value of the input anywhere, and keep
the Bundle's references resolving.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import httpx
from fhir.resources.R4B import get_fhir_model_class

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "fhir" / "transaction-bundle.json"

PHI = [
    "Chalmers", "Peter", "Windsor", "Jim", "Bénédicte", "Marché", "Dietrich", "Voorhuis",
    "Marie", "534 Erewhon", "PleasantVille", "Rainbow", "05401", "555-6473", "555-6485",
    "998327", "jim.chalmers", "12345678", "1974-12-25", "12/25/1974", "61ebe359", "88f151c0",
    "chalmers-discharge",
]


def validate(resource: dict) -> None:
    get_fhir_model_class(resource["resourceType"]).model_validate(resource)


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
    found: list[str] = []
    strings(value, found)
    return [p for p in PHI if any(p in s for s in found)]


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
