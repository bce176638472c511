"""The facade's measured times: ``profile`` (run time per HLO instruction), ``compile_profile`` (compile
time per pass, both pipelines) and ``source_map`` (with ``measured=True``, a measured-time column per
line). A mixin of ``Exploration``: each method is one call down into ``analysis.profile`` or
``analysis.provenance``."""
from __future__ import annotations

from ..analysis.profile import CompileProfile, Profile, compile_profile, measured_by_line, profile_stage
from ..analysis.provenance import source_map
from ..errors import WorkbenchError
from ..stages import STABLEHLO
from .running import refuse_shapes, refuse_unfaithful_hlo

__all__ = ["Measured"]


class Measured:
    def profile(self, stage=None, device: str | None = None, repeat: int = 10, args=None,
                keep: str | None = None) -> Profile:
        """Run ``stage`` (default: the last MLIR stage, the one XLA compiles) ``repeat`` times on ``device``
        under JAX's profiler and return each HLO instruction's measured time (``Profile.table``: median,
        25th/75th percentile, share of a call, XLA's flops and bytes, the roofline time where the device's
        peaks are known, the user's lines, the counterparts in the stage). ``keep``: a folder to keep the
        profiler's trace in (TensorBoard/XProf read it); otherwise it is removed."""
        st = self.default_run_stage() if stage is None else self.stage(stage)
        refuse_shapes(self.spec.traced, st, args)
        device = device or self.spec.device
        refuse_unfaithful_hlo(self, st, device, None if args is None else tuple(args), self._refs)  # as run does
        prof = profile_stage(self, st, device, repeat, args, keep)
        self._profiles["run"] = prof
        return prof

    def _default_profile(self) -> Profile:
        """The run profile of the default stage on the exploration's device: the last ``profile()`` where it
        is that one, else a new one."""
        prof = self._profiles.get("run")
        if prof is None or (prof.stage, prof.device) != (self.default_run_stage().name, self.spec.device):
            prof = self.profile()
        return prof

    @property
    def profiles(self) -> dict:
        """The last ``profile()`` (key "run") and ``compile_profile()`` ("compile") taken on this Exploration;
        the report and ``save(profile=True)`` carry them."""
        return dict(self._profiles)

    def compile_profile(self, keep: str | None = None, patterns: bool = False) -> CompileProfile:
        """Where compile time goes: one row per step of the whole pipeline -- the trace, the lowering, each
        MLIR pass (the workbench's clocks) and each XLA pass and backend step (JAX's profiler, over one more
        compile of the last MLIR stage with the exploration's options) -- with its seconds, share, whether
        it changed the module and the stage it made. ``patterns=True`` adds ``.patterns``: for each
        ``enzyme-hlo-patterns`` stage, the seconds of each pattern group run alone on its input
        (``pattern_timing``; runs of their own, apart from the table's total)."""
        self.stages  # noqa: B018 -- the exploration's own XLA compile first: its seconds are the comparison
        cp = compile_profile(self, keep)
        if patterns:
            import pandas as pd

            parts = []
            for s in self.pipeline_stages:
                if s.name.startswith("enzyme-hlo-patterns") and not s.error and s.parent:
                    df = self.pattern_timing(s.parent, progress=False)
                    parts.append(df.assign(stage=s.name)[["stage", *df.columns]])
            cp.patterns = pd.concat(parts, ignore_index=True) if parts else None
        self._profiles["compile"] = cp
        return cp

    def source_map(self, stage=None, by: str = "line", measured: "bool | Profile" = False):
        """One row per source line (``by="function"``: per function) of the user's code: ``file, line,
        function, code`` and the ops, flops and bytes it accounts for -- by default in ``stablehlo`` (the
        first stage), the last MLIR stage (``mlir_*``) and ``xla:optimized`` (``xla_*``, with the fusions
        that hold it), with ``stage``: in that stage alone. Ops with no location count in a
        ``(no location)`` row, so each stage's column sums to its total. A module without locations
        (``explore_text`` of a stripped one) raises WorkbenchError. ``measured=True`` (the last ``ex.profile()``
        of the default stage where one was taken, else a new one) or a Profile adds ``measured_us``, ``measured_share`` and ``measured_how``: the profiled time of
        the instructions made from each line, an instruction over several lines split by their flops in
        the last MLIR stage (else bytes, else evenly), as ``measured_how`` says."""
        if stage is not None:
            table = source_map({"": self.stage(stage)}, by)
        else:
            first = next(s for s in self.stages if s.is_module)
            chosen = {STABLEHLO: first, "mlir": self._last_module()}
            xla = next((s for s in self.stages if s.name == "xla:optimized" and not s.error), None)
            if xla is not None:
                chosen["xla"] = xla
            table = source_map(chosen, by)
        if measured is False or measured is None:
            return table
        if by != "line":
            raise WorkbenchError("source_map(measured=...) gives measured time per line: use by='line'")
        prof = measured if isinstance(measured, Profile) else self._default_profile()
        last = self._last_module()
        if stage is None:  # the last MLIR stage's costs per line are the table's mlir_ columns
            weights, prefix = table, "mlir_"
        else:
            weights, prefix = (table, "") if self.stage(stage).name == last.name else (source_map({"": last}, "line"), "")
        by_line: dict = {}  # a library's line is a row per line of the user's that reaches it: summed
        for f, n, fl, b in zip(weights["file"], weights["line"], weights[prefix + "flops"], weights[prefix + "bytes"]):
            had = by_line.get((f, int(n)), (0, 0))
            by_line[(f, int(n))] = (had[0] + int(fl or 0), had[1] + int(b or 0))
        per_line = measured_by_line(prof, by_line)
        merged = table.merge(per_line.rename(columns={"function": "_function"}), on=["file", "line"], how="outer")
        merged["function"] = merged["function"].fillna(merged.pop("_function")).fillna("")
        if "code" in merged.columns:
            merged["code"] = merged["code"].fillna("")
        merged["measured_us"] = merged["measured_us"].fillna(0.0)
        merged["measured_share"] = merged["measured_share"].fillna(0.0)
        merged["measured_how"] = merged["measured_how"].fillna("")
        _split_over_call_sites(merged, prefix + "flops" if prefix + "flops" in merged.columns else None)
        for c in merged.columns:
            if c.endswith(("ops", "flops", "bytes")) and str(merged[c].dtype) == "Int64":
                merged[c] = merged[c].fillna(0)
        merged.attrs.update(table.attrs, profile=prof)
        return merged


def _split_over_call_sites(table, flops: str | None) -> None:
    """A library's line reached from several lines of the user's own is a row each (``source_map``) while the
    profile measures it once: its measured time is split over those rows by their flops (``flops``, the
    column of the last MLIR stage), evenly where they have none, and ``measured_how`` says so. In place."""
    import pandas as pd

    sites = table.groupby(["file", "line"])["file"].transform("size")
    many = (sites > 1) & (table["measured_us"] > 0)
    if not many.any():
        return
    weight = (table[flops].astype("float64").fillna(0.0) if flops else pd.Series(0.0, index=table.index))
    total = weight.groupby([table["file"], table["line"]]).transform("sum")
    share = (weight / total).where(total > 0, 1.0 / sites)
    for c in ("measured_us", "measured_share"):
        table.loc[many, c] = table.loc[many, c] * share[many]
    table.loc[many, "measured_how"] = [f"{h}; split over the {n} lines of yours that reach it"
                                       for h, n in zip(table.loc[many, "measured_how"], sites[many])]
