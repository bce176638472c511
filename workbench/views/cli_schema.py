"""The JSON Schemas of the ``--json`` documents, and ``hlo-workbench schema [COMMAND]`` that prints them.

Each command declares the fields of its own document where it is defined (``command_parser(...,
result=SCHEMA)``), built with the small helpers here (``record``, ``rows``, ``string``, ...). ``command_schema``
wraps it in what every document shares: ``schema`` (the version, 1), ``command``, ``exit``, and the other
form a document can take, that of a command that could not do its work (``exit`` 2 and ``error``).

    hlo-workbench schema drift > drift.schema.json     # one command's schema (draft 2020-12)
    hlo-workbench schema                               # the commands that have one
"""
from __future__ import annotations

import json
import sys
from typing import Any

from ..errors import UnknownNameError
from .cli_common import EXIT_FOUND, EXIT_OK, EXIT_TROUBLE, JSON_VERSION, RESULTS, command_parser, emit

__all__ = ["add_schema_command", "any_value", "array", "boolean", "command_schema", "integer", "maybe", "number",
           "record", "rows", "string", "validate_document", "STAGE_ROW", "STAGE_FAILURE"]

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
                   "error": record({"type": string(description="the error's class, e.g. UnknownNameError"),
                                    "message": string(description="what stderr says, without 'hlo-workbench: '")})},
                  description="the command could not do its work (exit status 2)")


def command_schema(name: str) -> dict:
    """The JSON Schema (draft 2020-12) of ``hlo-workbench NAME --json``'s document: the command's result, or
    the document of a command that could not do its work. UnknownNameError for a command without --json."""
    _registered()
    if name not in RESULTS:
        raise UnknownNameError("command with --json", name, sorted(RESULTS),
                               known_note="these print JSON: " + ", ".join(sorted(RESULTS)))
    result = RESULTS[name]
    envelope = {"schema": {"const": JSON_VERSION, "description": "the version of this document's form"},
                "command": {"const": name}, "exit": {"enum": [EXIT_OK, EXIT_FOUND]}}
    done = {**result, "required": ["schema", "command", "exit", *result.get("required", [])],
            "properties": {**envelope, **result.get("properties", {})}}
    return {"$schema": DRAFT, "$id": ID.format(name),
            "title": f"hlo-workbench {name} --json, schema {JSON_VERSION}",
            "oneOf": [done, _trouble(name)]}


def validate_document(doc: Any, name: str | None = None) -> None:
    """ValueError naming the field where ``doc`` (a parsed --json document) breaks its command's schema
    (``name``: that command's; default the one the document names)."""
    import jsonschema

    name = name or (doc.get("command") if isinstance(doc, dict) else None)
    if not isinstance(name, str):
        raise ValueError("not an hlo-workbench --json document: it has no 'command'")
    schema = command_schema(name)
    branch = schema["oneOf"][1 if isinstance(doc, dict) and doc.get("exit") == EXIT_TROUBLE else 0]
    errors = sorted(jsonschema.Draft202012Validator(branch).iter_errors(doc), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.path) or "(the top)"
        raise ValueError(f"not an hlo-workbench {name} --json document at {where}: {e.message[:300]}")


def _registered() -> None:
    """Fill ``RESULTS``: each command registers its schema when the parser is built."""
    if not RESULTS:
        from .cli import build_parser

        build_parser()


# -- the command ---------------------------------------------------------------------------------------------


def cmd_schema(ns) -> int:
    _registered()
    if ns.name is None:
        if ns.json:
            return emit(ns, {"commands": sorted(RESULTS)}, EXIT_OK)
        print("commands with --json (hlo-workbench schema COMMAND prints one's JSON Schema):")
        print("  " + " ".join(sorted(RESULTS)))
        return EXIT_OK
    schema = command_schema(ns.name)
    if ns.json:
        return emit(ns, {"commands": sorted(RESULTS), "json_schema": schema}, EXIT_OK)
    json.dump(schema, sys.stdout, indent=1)
    print()
    return EXIT_OK


_HELP = """\
Print the JSON Schema (draft 2020-12) of a command's --json document, e.g. to validate it in a CI job
(check-jsonschema, ajv, Python's jsonschema). Every document has "schema" (its version, 1), "command" and
"exit" (the command's exit status); one with exit 2 has "error" ({"type", "message"}) and nothing else.
Without COMMAND: the commands that print JSON. With --json, the schema (or the list) inside a document of
its own, as every command prints."""


def add_schema_command(sub) -> None:
    sp = command_parser(sub, "schema", "print the JSON Schema of a command's --json document", cmd_schema,
                        description=_HELP, result=record({"commands": array(string())},
                                                         {"json_schema": record({}, closed=False)}))
    sp.add_argument("name", nargs="?", metavar="COMMAND", help="the command (default: list those with --json)")
