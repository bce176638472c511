"""The JSON Schemas of the ``--json`` documents, and ``hlo-workbench schema [COMMAND]`` that prints them.

Each command declares the fields of its own document where it is defined (``command_parser(...,
result=SCHEMA)``), built with the small helpers here (``record``, ``rows``, ``string``, ...). ``document_schema``
wraps it in what every document shares: ``schema`` (the version, 1), ``command``, ``exit``, and the other
form a document can take, that of a command that could not do its work (``exit`` 2 and ``error``).

    hlo-workbench schema drift > drift.schema.json     # one command's schema (draft 2020-12)
    hlo-workbench schema                               # the commands that have one

The ``schema`` command, ``json_schema(NAME)`` and ``validate_document(doc)`` are cli.py's: they need every
command registered, which building the parser does.
"""
from __future__ import annotations

from typing import Any

from .cli_common import EXIT_FOUND, EXIT_OK, EXIT_TROUBLE, JSON_VERSION

__all__ = ["any_value", "array", "boolean", "check_document", "document_schema", "integer", "maybe", "number",
           "record", "rows", "string", "STAGE_ROW", "STAGE_FAILURE"]

DRAFT = "https://json-schema.org/draft/2020-12/schema"
ID = "https://hlo-workbench.invalid/cli/{}.schema.json"


# -- building a schema ---------------------------------------------------------------------------------------


def string(**kw) -> dict:
    return {"type": "string", **kw}


def integer(**kw) -> dict:
    return {"type": "integer", **kw}


def number(**kw) -> dict:
    return {"type": "number", **kw}


def boolean(**kw) -> dict:
    return {"type": "boolean", **kw}


def any_value(**kw) -> dict:
    """Any JSON value (a table cell whose type varies by row)."""
    return dict(kw)


def maybe(schema: dict) -> dict:
    """``schema`` or null."""
    return {"anyOf": [schema, {"type": "null"}]}


def array(items: dict, **kw) -> dict:
    return {"type": "array", "items": items, **kw}


def record(required: dict[str, dict], optional: dict[str, dict] | None = None, description: str = "",
           closed: bool = True) -> dict:
    """An object with these ``required`` fields (and these ``optional`` ones); ``closed``: no other field."""
    out: dict[str, Any] = {"type": "object", "required": list(required),
                           "properties": {**required, **(optional or {})}}
    if closed:
        out["additionalProperties"] = False
    if description:
        out["description"] = description
    return out


def rows(columns: dict[str, dict], description: str = "") -> dict:
    """A table as JSON: an array of objects, one per row, each with every column (a missing value is null)."""
    return array(record({c: (s if "anyOf" in s or not s else maybe(s)) for c, s in columns.items()}),
                 **({"description": description} if description else {}))


# Shared parts: a row of a stage table (Exploration.table()) and a stage that failed.
STAGE_ROW = record({"stage": string(), "group": string(), "changed": boolean(), "lines": integer(),
                    "ms": maybe(number()), "cached": boolean(), "error": string(), "produced_by": string()})
STAGE_FAILURE = maybe(record({"stage": string(), "message": string()},
                             description="the stage that failed and its error's short form (null: none failed)"))


# -- the whole schema of one command ---------------------------------------------------------------------------


def _trouble(name: str) -> dict:
    return record({"schema": {"const": JSON_VERSION}, "command": {"const": name}, "exit": {"const": EXIT_TROUBLE},
                   "error": record({"type": string(description="the error's class, e.g. UnknownNameError; "
                                                           "UsageError: a command line argparse refused; "
                                                           "InternalError: a bug of ours"),
                                    "message": string(description="what stderr says, without 'hlo-workbench: '")})},
                  description="the command could not do its work (exit status 2)")


def document_schema(name: str, result: dict) -> dict:
    """The JSON Schema (draft 2020-12) of ``hlo-workbench NAME --json``'s document, whose own fields ``result``
    describes: that result, or the document of a command that could not do its work."""
    envelope = {"schema": {"const": JSON_VERSION, "description": "the version of this document's form"},
                "command": {"const": name}, "exit": {"enum": [EXIT_OK, EXIT_FOUND]}}
    done = {**result, "required": ["schema", "command", "exit", *result.get("required", [])],
            "properties": {**envelope, **result.get("properties", {})}}
    return {"$schema": DRAFT, "$id": ID.format(name),
            "title": f"hlo-workbench {name} --json, schema {JSON_VERSION}",
            "oneOf": [done, _trouble(name)]}


def check_document(doc: Any, schema: dict) -> None:
    """ValueError naming the field where ``doc`` (a parsed --json document) breaks ``schema`` (``document_schema``'s)."""
    import jsonschema

    name = schema["oneOf"][0]["properties"]["command"]["const"]
    branch = schema["oneOf"][1 if isinstance(doc, dict) and doc.get("exit") == EXIT_TROUBLE else 0]
    errors = sorted(jsonschema.Draft202012Validator(branch).iter_errors(doc), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.path) or "(the top)"
        raise ValueError(f"not an hlo-workbench {name} --json document at {where}: {e.message[:300]}")
