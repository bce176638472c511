"""What the searches (bisect, reduce, the pattern scans) need of an exploration: the ``Explored`` Protocol.

The facade's ``Exploration`` satisfies it (tests/test_architecture.py checks that it has every member);
analysis code is written against this, so nothing here imports the facade above it.
"""
from __future__ import annotations

from typing import Any, Protocol, Sequence, runtime_checkable

from ...stages import Stage, Staged

__all__ = ["Explored"]


@runtime_checkable
class Explored(Staged, Protocol):
    """Every stage of one program through one pipeline (see ``workbench.Exploration`` for each member):
    its stages as built (``Staged``), and what the searches ask of it besides."""

    @property
    def xla_passes(self) -> list[str]: ...

    def stage(self, key: Any) -> Stage: ...

    def default_run_stage(self) -> Stage: ...

    def reference_stage(self) -> Stage: ...

    def run(self, stage: Any = None, device: str | None = None, repeat: int = 20, args: Any = None,
            check: bool = True, **kwargs: Any) -> Any: ...

    def with_xla(self, disable: Sequence[str] = (), enable: Sequence[str] = (), **options: Any) -> Explored: ...

    def with_only_patterns(self, names: Sequence[str]) -> Explored: ...

    def diff(self, a: Any, b: Any = None) -> Any: ...

    def reproducer(self, directory: Any, stage: Any = None, predicate: Any = None) -> Any: ...
