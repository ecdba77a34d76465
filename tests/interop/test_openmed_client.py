"""OpenMed's own Python client (`openmed.service.client.OpenMedClient`, openmed 3.1.0) against
a real phiguard process.

"Works unchanged but for a token header": the client is constructed with
`headers={"Authorization": "Bearer <token>"}` and nothing else differs. Every JSON response
is rebuilt with OpenMed's own result classes (`PredictionResult`/`EntityPrediction`,
`DeidentificationResult`/`PIIEntity`, `OpenMedSpan`): a missing or mistyped field fails the
constructor, and an unknown field fails unless it is one of phiguard's documented additions.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from openmed.core.pii import DeidentificationResult, PIIEntity
from openmed.core.schemas.span import OpenMedSpan
from openmed.processing.outputs import EntityPrediction, PredictionResult
from openmed.service.client import (
    OpenMedAPIError,
    OpenMedClient,
    PIIDeidentifyRequest,
)

TEXT = (
    "Patient John Smith, born 01/02/1980, email john.smith@example.com, "
    "phone (555) 123-4567, seen on 03/04/2024 at 12 Main Street."
)
# Values that must not survive de-identification with any method.
DIRECT_IDENTIFIERS = ["john.smith@example.com", "(555) 123-4567"]

# Top-level fields phiguard adds to OpenMed's shapes (degraded mode, docs/errors.md; the
# resolved model id on de-identify). Anything else unknown is a compatibility bug.
PHIGUARD_EXTRAS = {"degraded", "model_name"}


def build(cls: type, payload: dict[str, Any], extras: set[str] = frozenset(), **override):
    """Rebuilds `payload` as OpenMed's dataclass `cls`, rejecting unknown keys."""
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(payload) - names - set(extras)
    assert not unknown, f"{cls.__name__}: fields OpenMed does not know: {sorted(unknown)}"
    required = {
        f.name
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    missing = required - set(payload)
    assert not missing, f"{cls.__name__}: required fields missing: {sorted(missing)}"
    kwargs = {k: v for k, v in payload.items() if k in names}
    kwargs.update(override)
    return cls(**kwargs)


def check_offsets(text: str, start: int, end: int, surface: str | None) -> None:
    assert 0 <= start < end <= len(text)
    if surface is not None:
        assert text[start:end] == surface


def as_prediction(resp: dict[str, Any]) -> PredictionResult:
    entities = [build(EntityPrediction, e) for e in resp["entities"]]
    result = build(PredictionResult, resp, PHIGUARD_EXTRAS, entities=entities)
    for e in result.entities:
        assert isinstance(e.confidence, float) and 0.0 <= e.confidence <= 1.0
        assert isinstance(e.metadata, dict)
        check_offsets(result.text, e.start, e.end, e.text)
    datetime.fromisoformat(result.timestamp)
    # OpenMed's own serialiser must not produce a key phiguard lacks.
    assert set(result.to_dict()) <= set(resp)
    return result


def as_deidentification(resp: dict[str, Any]) -> DeidentificationResult:
    entities = [build(PIIEntity, e) for e in resp["pii_entities"]]
    result = build(
        DeidentificationResult,
        resp,
        PHIGUARD_EXTRAS | {"num_entities_redacted"},
        pii_entities=entities,
        timestamp=datetime.fromisoformat(resp["timestamp"]),
    )
    assert resp["num_entities_redacted"] == len(entities)
    assert resp["audit_report"] is None
    for e in entities:
        check_offsets(result.original_text, e.start, e.end, e.text)
        assert e.action and e.redacted_text is not None and e.surrogate == e.redacted_text
    redone = result.to_dict()
    assert set(redone) <= set(resp)
    for mine, theirs in zip(resp["pii_entities"], redone["pii_entities"]):
        assert set(theirs) <= set(mine)
    return result


@pytest.fixture()
def client(server):
    with OpenMedClient(server.base_url, headers=server.auth_headers, timeout=120) as c:
        yield c


def test_health_probes_answer_without_token(server):
    with OpenMedClient(server.base_url) as anonymous:
        health = anonymous._request("GET", "/health")
        assert health["status"] == "ok" and health["service"] == "openmed-rest"
        assert anonymous._request("GET", "/livez") == {"status": "ok", "service": "openmed-rest"}
        assert anonymous._request("GET", "/readyz")["status"] == "ready"


def test_missing_token_is_the_documented_401(server):
    with OpenMedClient(server.base_url) as anonymous:
        with pytest.raises(OpenMedAPIError) as err:
            anonymous.extract_pii(TEXT)
    assert err.value.status_code == 401
    assert err.value.code == "authentication_required"


def test_extract_pii_parses_in_openmed_models(client):
    resp = client.extract_pii(TEXT, confidence_threshold=0.0)
    result = as_prediction(resp)
    assert result.text == TEXT
    found = {e.text for e in result.entities}
    for ident in DIRECT_IDENTIFIERS:
        assert ident in found, f"direct identifier not found: {ident!r} in {sorted(found)}"
    # `detector_sources` lists every detector that found an entity, the model first, as
    # OpenMed's ["ml", "locale_rule"]: the name is the model's (rules alone do not find it),
    # and the e-mail both detectors'.
    sources = {e["text"]: e["metadata"]["detector_sources"] for e in resp["entities"]}
    assert all(s and s == sorted(set(s), key=["ml", "rule"].index) for s in sources.values())
    assert "ml" in sources["John"], sources
    assert sources["john.smith@example.com"] == ["ml", "rule"], sources


def test_extract_pii_strips_text_and_offsets_follow(client):
    resp = client.extract_pii("   " + TEXT + "\n\n", confidence_threshold=0.0)
    result = as_prediction(resp)
    assert result.text == TEXT


@pytest.mark.parametrize("method", ["mask", "remove", "replace", "hash", "shift_dates"])
def test_deidentify_each_method(client, method):
    kwargs: dict[str, Any] = {"method": method, "confidence_threshold": 0.0}
    if method == "shift_dates":
        kwargs["date_shift_days"] = 10
    resp = client.deidentify(TEXT, **kwargs)
    result = as_deidentification(resp)
    assert result.method == method
    assert result.original_text == TEXT
    for ident in DIRECT_IDENTIFIERS:
        assert ident not in result.deidentified_text
    if method == "mask":
        assert "[email]" in result.deidentified_text
    if method == "shift_dates":
        assert "01/12/1980" in result.deidentified_text


def test_deidentify_shift_dates_alias_and_mapping(client):
    resp = client.deidentify(TEXT, shift_dates=True, date_shift_days=-1, keep_mapping=True)
    result = as_deidentification(resp)
    assert result.method == "shift_dates"
    assert isinstance(result.mapping, dict) and result.mapping
    for replacement, original in result.mapping.items():
        assert isinstance(replacement, str) and original in TEXT


def test_deidentify_with_policy(client):
    resp = client.deidentify(TEXT, policy="hipaa_safe_harbor", confidence_threshold=0.0)
    result = as_deidentification(resp)
    assert result.metadata["policy"]["name"] == "hipaa_safe_harbor"
    for ident in DIRECT_IDENTIFIERS:
        assert ident not in result.deidentified_text


def test_deidentify_rejects_conflicting_fields(client):
    with pytest.raises(OpenMedAPIError) as err:
        client.deidentify(TEXT, method="mask", date_shift_days=3)
    assert err.value.status_code == 422 and err.value.code == "validation_error"
    assert err.value.details and err.value.details[0]["field"] == "body"


def test_unknown_lang_is_a_validation_error_with_request_id(client):
    # A UUID-shaped id is echoed. Unlike OpenMed, which echoes any value, phiguard replaces an
    # id of any other shape (it could carry a name into every log line): see docs/errors.md.
    sent = "5b0c0b0e-2f7c-4d0e-9a55-3c1f2b0b7d41"
    with pytest.raises(OpenMedAPIError) as err:
        client.extract_pii(TEXT, lang="xx", request_id=sent)
    assert err.value.status_code == 422 and err.value.code == "validation_error"
    assert err.value.request_id == sent
    assert [d["field"] for d in err.value.details] == ["body.lang"]
    with pytest.raises(OpenMedAPIError) as err:
        client.extract_pii(TEXT, lang="xx", request_id="Jane-Doe-MRN-1234")
    assert err.value.request_id != "Jane-Doe-MRN-1234" and len(err.value.request_id) == 36


def test_extract_pii_stream_events(client):
    events = list(client.extract_pii_stream(TEXT, confidence_threshold=0.0, chunk_size=16))
    assert events and events[-1]["type"] == "final"
    emits = [e for e in events if e["type"] == "emit"]
    assert {e["type"] for e in events} <= {"emit", "retract", "final"}
    text_bytes = TEXT.encode("utf-8")
    for e in emits:
        span = e["span"]
        assert e["entity_id"] == span["id"] and span["id"].startswith("ent_")
        check_offsets(TEXT, span["start"], span["end"], span["text"])
        assert text_bytes[span["byte_start"] : span["byte_end"]].decode() == span["text"]
        assert "text" not in e["audit"]["span"] and "text_hash" in e["audit"]["span"]
    assert [e["span"] for e in emits] == events[-1].get("final_spans", [])
    assert any(e["span"]["text"] == "john.smith@example.com" for e in emits)
    one_shot = {(x["start"], x["end"]) for x in client.extract_pii(TEXT, confidence_threshold=0.0)["entities"]}
    assert {(e["span"]["start"], e["span"]["end"]) for e in emits} == one_shot


def test_extract_pii_stream_without_text(client):
    events = list(client.extract_pii_stream(TEXT, confidence_threshold=0.0, include_text=False))
    assert all("text" not in e["span"] for e in events if e["type"] == "emit")


@dataclass(frozen=True)
class _DeidentifyStreamRequest(PIIDeidentifyRequest):
    """`PIIDeidentifyStreamRequest` of the contract (the 3.1.0 client has no wrapper)."""

    chunk_size: int = 1024


def test_deidentify_stream_matches_one_shot(client):
    req = _DeidentifyStreamRequest(text=TEXT, confidence_threshold=0.0, chunk_size=7)
    lines = list(client._post_lines("/pii/deidentify/stream", req))
    assert lines[-1]["type"] == "final"
    chunks = [line for line in lines[:-1] if line["type"] == "chunk"]
    assert [c["index"] for c in chunks] == list(range(len(chunks)))
    streamed = "".join(c["redacted_text"] for c in chunks)
    one_shot = client.deidentify(TEXT, confidence_threshold=0.0)["deidentified_text"]
    assert streamed == one_shot
    final = lines[-1]
    spans = [OpenMedSpan.from_dict(s) for s in final["spans"]]
    assert spans, "no spans in the final event"
    for s in spans:
        check_offsets(TEXT, s.start, s.end, None)
    assert final["audit"]["span_count"] == len(spans)


def test_analyze_default_model_is_not_served(client):
    with pytest.raises(OpenMedAPIError) as err:
        client.analyze("Patient has diabetes and hypertension.")
    assert err.value.status_code == 422
    assert err.value.code == "model_not_served"
    # OpenMed's message, then the ids that would work (phiguard names them).
    assert err.value.message.startswith("Requested model is not served")
    assert "OpenMed/OpenMed-PII-SuperClinical-Small-44M-v1" in err.value.message


def test_models_loaded_and_unload(client):
    client.extract_pii(TEXT)
    loaded = client.loaded_models()
    for key in (
        "default_keep_alive_seconds",
        "max_resident_models",
        "memory_budget_bytes",
        "resident_memory_bytes",
        "pending_memory_bytes",
        "memory_admission_wait_seconds",
        "warm_models",
        "models",
        "served_models",
        "model_policy",
    ):
        assert key in loaded, key
    assert "OpenMed/OpenMed-PII-SuperClinical-Small-44M-v1" in loaded["served_models"]
    assert loaded["served_models"] == sorted(loaded["served_models"])
    assert loaded["models"], "a model should be resident after a request"
    for info in loaded["models"].values():
        assert {"active_requests", "resident", "loading", "footprint_bytes"} <= set(info)

    one = client.unload_model("OpenMed/OpenMed-PII-SuperClinical-Small-44M-v1")
    assert {"unloaded", "model_name", "active_requests", "loading", "released"} <= set(one)
    assert isinstance(one["unloaded"], bool)
    everything = client.unload_all_models()
    assert {"unloaded", "released", "active_models"} <= set(everything)

    with pytest.raises(OpenMedAPIError) as err:
        client.unload_model("no/such-model")
    assert err.value.status_code == 422 and err.value.code == "model_not_served"
