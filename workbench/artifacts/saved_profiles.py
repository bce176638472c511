"""The profiles a ``.hlox`` keeps when saved with ``save(profile=True)``: the last ``ex.profile()`` and
``ex.compile_profile()``, each as its table and figures in the manifest (``manifest.PROFILES``) and the
profiler's own trace file as a member of the zip (``manifest.PROFILE_TRACES``), read back by ``wb.load``
into ``ex.profiles`` (the run profile without the executable's HLO text, which the stages hold).
"""
from __future__ import annotations

from typing import Callable

from ..analysis.profile import CompileProfile, Profile
from ..analysis.profile.capture import TRACE_LIMIT
from .jsonout import table_json
from .manifest import PROFILE_TRACES

__all__ = ["profiles_json", "profiles_from", "trace_members", "TRACE_LIMIT"]


def profiles_json(profiles: dict) -> tuple[dict | None, dict[str, bytes]]:
    """The manifest's ``profiles`` (None when there is none) and the members holding their traces."""
    out: dict = {}
    members: dict[str, bytes] = {}
    run, cp = profiles.get("run"), profiles.get("compile")
    if run is not None:
        out["run"] = {"stage": run.stage, "device": run.device, "call_us": float(run.call_us),
                      "coverage": float(run.coverage), "calls": int(run.calls), "peak": run.peak,
                      "table": table_json(run.table, "the run profile's row"),
                      "lines": {k: [list(f) for f in v] for k, v in run.table.attrs.get("lines", {}).items()},
                      "untraced_call_us": _number(run.untraced_call_us), "overhead": _number(run.overhead)}
        if run.trace is not None:
            out["run"]["trace"] = PROFILE_TRACES[0]
            members[PROFILE_TRACES[0]] = run.trace
    if cp is not None:
        out["compile"] = {"total_s": float(cp.total_s), "explore_s": float(cp.explore_s),
                          "xla_wall_s": float(cp.xla_wall_s), "table": table_json(cp.table, "the compile profile's row"),
                          "patterns": table_json(cp.patterns, "a pattern group's row")}
        if cp.trace is not None:
            out["compile"]["trace"] = PROFILE_TRACES[1]
            members[PROFILE_TRACES[1]] = cp.trace
    return (out or None), members


def _number(value) -> float | None:
    return None if value is None else float(value)


def trace_members(manifest: dict) -> set[str]:
    """The zip members the manifest's profiles name (each must be there, and no other)."""
    profiles = manifest.get("profiles") or {}
    return {p["trace"] for p in profiles.values() if "trace" in p}


def _frame(table: dict):
    import pandas as pd

    return pd.DataFrame(table["rows"], columns=table["columns"])


def profiles_from(saved: dict | None, read: Callable[[str], bytes]) -> dict:
    """``ex.profiles`` of a loaded file: Profile and CompileProfile values from the manifest's ``profiles``,
    their traces read with ``read(member)``."""
    out: dict = {}
    if not saved:
        return out
    if "run" in saved:
        r = saved["run"]
        table = _frame(r["table"])
        table.attrs["lines"] = {k: [tuple(f) for f in v] for k, v in r.get("lines", {}).items()}
        out["run"] = Profile(r["stage"], r["device"], table, r["call_us"], r["coverage"], r["calls"], "",
                             r.get("peak"), None, None, read(r["trace"]) if "trace" in r else None,
                             untraced_call_us=r.get("untraced_call_us"), overhead=r.get("overhead"))
    if "compile" in saved:
        c = saved["compile"]
        patterns = _frame(c["patterns"]) if c.get("patterns") else None
        out["compile"] = CompileProfile(_frame(c["table"]), c["total_s"], c["explore_s"], c["xla_wall_s"], None,
                                        patterns, read(c["trace"]) if "trace" in c else None)
    return out
