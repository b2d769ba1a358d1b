"""Validation of SARIF output against the official OASIS schema (SARIF 2.1.0, errata 01),
kept verbatim in tests/data so that a checkout anywhere validates against it."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

SARIF_SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"


def validate_sarif(document: dict) -> None:
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.validators.validator_for(schema)
    validator.check_schema(schema)
    validator(schema).validate(document)
