"""The JSON Schema of `.trainspotter.yml` (`config_schema`, shipped as
`schemas/config.schema.json`), generated from the settings and the live registries, and
the wording of every top-level key (`DESCRIPTIONS`) that the schema, the commented file
`trainspotter init` writes (`init_file.py`) and, through the schema, the reference in
docs/configuration.md (`reference.py`) all say.

Checking a config never needs this module (the gate does not import it).
`python -m trainspotter.config --write` regenerates the shipped schema; a test fails
when it is stale.
"""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any, Literal

from trainspotter import names
from trainspotter.config.params import detector_params, param_pairs, param_ranges
from trainspotter.config.settings import (
    ARTIFACT_NAME_FORBIDDEN,
    DEFAULT_ARTIFACT_NAME,
    DEFAULT_OUTPUTS,
    DEFAULT_REPORT_DIR,
    GATE_OUTPUTS,
    SEVERITY_LABELS,
)
from trainspotter.detectors import DETECTORS
from trainspotter.model import Severity
from trainspotter.readers import READERS

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schemas" / "config.schema.json"

DESCRIPTIONS = {
    "paths": "Glob patterns of the training logs to check, relative to the working folder. "
    "`**` matches any number of folders; a matched folder counts when a reader finds a log "
    "in it (a TensorBoard run folder, a Hugging Face output folder). Patterns given on the "
    "command line (or the Action's `paths` input) replace these.",
    "format": "Force a log format instead of detecting it from the content: one reader id "
    "for every log, or a mapping of glob pattern -> reader id.",
    "fail_on": "The gate fails (exit code 1) when an unsuppressed finding is at or above "
    "this severity.",
    "allow_empty": "When true, a pattern that matches no log is not an error.",
    "detectors": "Per detector: `enabled`, `severity` (replaces the detector's own "
    "severity for all its findings) and any of its parameters (see `trainspotter explain "
    "ID`). `ID: false` disables a detector.",
    "metrics": "How metric names are read.",
    "metrics.aliases": "Your metric name -> trainspotter's canonical name ("
    + ", ".join(f"`{name}`" for name in names.CANONICAL)
    + ").",
    "ignore": "Suppressions. A matching finding is still reported, marked suppressed with "
    "the reason, and no longer counts towards the gate.",
    "ignore.detector": "A detector id, or `*` for any detector.",
    "ignore.metric": "A metric name or fnmatch pattern (`eval/*`); default: any metric.",
    "ignore.steps": "`[first, last]` (inclusive; `null` for open-ended) or one step: the "
    "finding's step range must lie within it; default: any step.",
    "ignore.path": "A glob the log's path must match; default: any log.",
    "ignore.reason": "Why this finding is acceptable (required; shown in every report).",
    "report": "What the gate writes, and how the GitHub Action publishes it.",
    "report.outputs": "Which outputs the gate produces: " + ", ".join(GATE_OUTPUTS) + ".",
    "report.directory": "The folder (relative to the working folder) for the HTML reports, "
    "the JSON, the summary and the comment.",
    "report.artifact_name": "The name of the GitHub Actions artifact holding the reports.",
    "report.comment": "Post (and update) one pull-request comment with the summary.",
    "baseline": "A stored run (a log file or folder, e.g. main's `trainer_state.json`) "
    "the gate compares every log with, as `trainspotter compare LOG --baseline PATH` does: "
    "`regression` findings for worse eval metrics, a worse loss curve, slower steps and "
    "new findings. Default: no baseline.",
    "rules": "Absolute bounds on final values, for gating on a number: each rule names a "
    "`metric` and a `max`, a `min` or both. A failed rule (or a metric the log does not "
    "have) is a `regression` error.",
    "rules.metric": "The metric (its canonical name, e.g. `eval/loss`, or as logged).",
    "rules.max": "Fail when the metric's last finite value is above this.",
    "rules.min": "Fail when the metric's last finite value is below this.",
    "detector.enabled": "Run this detector.",
    "detector.severity": "Replace the severity of all this detector's findings; null keeps "
    "the detector's own.",
}


def _type_schema(hint: Any) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_type_schema(a) for a in args]}
    if hint is type(None):
        return {"type": "null"}
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (tuple, list):
        if origin is tuple and args and args[-1] is not Ellipsis:
            return {
                "type": "array",
                "prefixItems": [_type_schema(a) for a in args],
                "minItems": len(args),
                "maxItems": len(args),
            }
        return {"type": "array", "items": _type_schema(args[0]) if args else {}}
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    return {"type": simple[hint]} if hint in simple else {}


def json_default(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [json_default(v) for v in value]
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return str(value)
    return value


def _detector_schema(detector_id: str) -> dict[str, Any]:
    detector = DETECTORS[detector_id]
    properties: dict[str, Any] = {
        "enabled": {
            "type": "boolean",
            "default": True,
            "description": DESCRIPTIONS["detector.enabled"],
        },
        "severity": {
            "enum": [*SEVERITY_LABELS, None],
            "default": None,
            "description": DESCRIPTIONS["detector.severity"],
        },
    }
    ranges = param_ranges(detector_id)
    pairs = param_pairs(detector_id)
    for spec in detector_params(detector_id):
        schema = _type_schema(spec.hint)
        if spec.name in ranges:
            bounds = ranges[spec.name].schema()
            arms = schema.get("anyOf", [schema])
            for arm in arms:
                if arm.get("type") in ("integer", "number"):
                    arm.update(bounds)
        schema["default"] = json_default(spec.default)
        doc = spec.doc
        for low, high in pairs:
            if spec.name == low:
                doc = f"{doc} At most `{high}`.".strip()
            elif spec.name == high:
                doc = f"{doc} At least `{low}`.".strip()
        if doc:
            schema["description"] = doc
        properties[spec.name] = schema
    return {
        "description": detector.summary,
        "anyOf": [
            {"type": "boolean"},
            {"type": "object", "additionalProperties": False, "properties": properties},
        ],
    }


_REGEX_CLASS_ESCAPES = {"\\": "\\\\", "\r": "\\r", "\n": "\\n", "]": "\\]", "^": "\\^", "-": "\\-"}


def _artifact_name_pattern() -> str:
    """A regex matching a name that holds none of `ARTIFACT_NAME_FORBIDDEN`."""
    forbidden = "".join(_REGEX_CLASS_ESCAPES.get(c, c) for c in ARTIFACT_NAME_FORBIDDEN)
    return f"^[^{forbidden}]+$"


def config_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of `.trainspotter.yml`, from the live registries."""
    readers = list(READERS)
    glob_string = {"type": "string", "minLength": 1}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "trainspotter configuration (.trainspotter.yml)",
        "description": "Settings of the trainspotter CI gate. Generated from the detector "
        "and reader registries by `python -m trainspotter.config --write`.",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "paths": {
                "description": DESCRIPTIONS["paths"],
                "anyOf": [glob_string, {"type": "array", "items": glob_string}],
                "default": [],
            },
            "format": {
                "description": DESCRIPTIONS["format"],
                "anyOf": [
                    {"enum": readers},
                    {"type": "object", "additionalProperties": {"enum": readers}},
                    {"type": "null"},
                ],
                "default": None,
            },
            "fail_on": {
                "description": DESCRIPTIONS["fail_on"],
                "enum": list(SEVERITY_LABELS),
                "default": Severity.ERROR.label,
            },
            "allow_empty": {
                "description": DESCRIPTIONS["allow_empty"],
                "type": "boolean",
                "default": False,
            },
            "detectors": {
                "description": DESCRIPTIONS["detectors"],
                "type": "object",
                "additionalProperties": False,
                "properties": {name: _detector_schema(name) for name in DETECTORS},
                "default": {},
            },
            "metrics": {
                "description": DESCRIPTIONS["metrics"],
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "aliases": {
                        "description": DESCRIPTIONS["metrics.aliases"],
                        "type": "object",
                        "additionalProperties": {"type": "string", "minLength": 1},
                        "default": {},
                    }
                },
            },
            "ignore": {
                "description": DESCRIPTIONS["ignore"],
                "type": "array",
                "default": [],
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["detector", "reason"],
                    "properties": {
                        "detector": {
                            "description": DESCRIPTIONS["ignore.detector"],
                            "enum": ["*", *DETECTORS],
                        },
                        "metric": {"description": DESCRIPTIONS["ignore.metric"], **glob_string},
                        "steps": {
                            "description": DESCRIPTIONS["ignore.steps"],
                            "anyOf": [
                                {"type": "integer"},
                                {
                                    "type": "array",
                                    "prefixItems": [
                                        {"type": ["integer", "null"]},
                                        {"type": ["integer", "null"]},
                                    ],
                                    "minItems": 2,
                                    "maxItems": 2,
                                },
                            ],
                        },
                        "path": {"description": DESCRIPTIONS["ignore.path"], **glob_string},
                        "reason": {"description": DESCRIPTIONS["ignore.reason"], **glob_string},
                    },
                },
            },
            "baseline": {
                "description": DESCRIPTIONS["baseline"],
                "anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}],
                "default": None,
            },
            "rules": {
                "description": DESCRIPTIONS["rules"],
                "type": "array",
                "default": [],
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["metric"],
                    "anyOf": [{"required": ["max"]}, {"required": ["min"]}],
                    "properties": {
                        "metric": {"description": DESCRIPTIONS["rules.metric"], **glob_string},
                        "max": {"description": DESCRIPTIONS["rules.max"], "type": "number"},
                        "min": {"description": DESCRIPTIONS["rules.min"], "type": "number"},
                    },
                },
            },
            "report": {
                "description": DESCRIPTIONS["report"],
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "outputs": {
                        "description": DESCRIPTIONS["report.outputs"],
                        "type": "array",
                        "items": {"enum": list(GATE_OUTPUTS)},
                        "default": list(DEFAULT_OUTPUTS),
                    },
                    "directory": {
                        "description": DESCRIPTIONS["report.directory"],
                        "type": "string",
                        "minLength": 1,
                        "default": DEFAULT_REPORT_DIR,
                    },
                    "artifact_name": {
                        "description": DESCRIPTIONS["report.artifact_name"],
                        "type": "string",
                        "minLength": 1,
                        "pattern": _artifact_name_pattern(),
                        "default": DEFAULT_ARTIFACT_NAME,
                    },
                    "comment": {
                        "description": DESCRIPTIONS["report.comment"],
                        "type": "boolean",
                        "default": True,
                    },
                },
            },
        },
    }


def schema_text() -> str:
    """The schema as the shipped file holds it (stable formatting, trailing newline)."""
    return json.dumps(config_schema(), indent=2, ensure_ascii=False) + "\n"


__all__ = ["DESCRIPTIONS", "SCHEMA_PATH", "config_schema", "json_default", "schema_text"]
