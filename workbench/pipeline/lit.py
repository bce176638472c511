"""What the pipeline does with a compiler test file (a lit file; ``ir/lit.py`` cuts it and reads its RUN lines):
the words a text of several modules or ``// -----`` chunks is described with when read as one module
(``titled``), and the chunks run one by one as ``--split-input-file`` runs them (``run_chunks``).

``pipeline="RUN"`` (``wb.opt``, ``wb.explore_text``, ``wb.explore_texts``) is the pipeline the file's first
RUN line gives its opt tool (``"RUN:2"``: the second such line), and that line's ``--split-input-file``
(``ir.lit.run_line_pipeline``).
"""
from __future__ import annotations

from ..errors import InputKindError, LitFileError, MlirSyntaxError, StageError
from ..ir.lit import SPLIT_MARKER, Piece, has_split_marker, split_input_file

__all__ = ["read_as_one", "in_piece", "titled", "run_chunks"]


def read_as_one(text: str, modules: list[str]) -> str:
    """Words for a text that MLIR reads as one module although it holds several pieces ("" when it holds one):
    its modules side by side (``modules``: their names), or its ``// -----`` chunks (read without
    ``--split-input-file``, where the marker is a comment)."""
    chunks = len(split_input_file(text)) if has_split_marker(text) else 1
    if modules:
        said = f"{len(modules)} modules read as one"
        return said + (f", in {chunks} `// -----` chunks" if chunks > 1 else "")
    if chunks > 1:
        return f"{chunks} `// -----` chunks read as one"
    return ""


def titled(text: str, title: str, runner) -> str:
    """``text`` parsed as MLIR reads it, one module (``runner.check_module``), and ``title`` -- the default,
    "text" -- saying what it held ("text: 3 modules read as one"). A text of ``// -----`` chunks that does
    not parse as one is refused with where to go instead (MlirSyntaxError)."""
    try:
        modules = runner.check_module(text, several=True)
    except MlirSyntaxError as e:
        if not has_split_marker(text):
            raise
        raise MlirSyntaxError(f"{e}\nthe text holds {len(split_input_file(text))} `// -----` chunks, which this "
                              "reads as one module, as mlir-opt does without --split-input-file; "
                              "wb.explore_texts(text) explores each chunk on its own, and "
                              "wb.opt(text, pipeline, split_input_file=True) runs them as the flag does",
                              e.diagnostics, e.line, e.column) from None
    said = read_as_one(text, modules)
    return f"text: {said}" if said and title == "text" else title


def run_chunks(runner, text: str, passes: str, timeout: float | None) -> str:
    """``passes`` run on each ``// -----`` chunk of ``text`` on its own (``runner``: a StepRunner), the outputs
    joined by ``// -----`` lines as mlir-opt joins them. Every chunk runs; then LitFileError names each that
    failed with the line it starts at, the others' outputs in its ``results``."""
    outputs, failed = [], []
    for piece in split_input_file(text):
        try:
            runner.check_module(piece.text, several=True)
            outputs.append(runner.run("opt", piece.text, passes, timeout=timeout, source="input").text)
        except MlirSyntaxError as e:
            failed.append((piece.label, in_piece(e, piece)))
            outputs.append(None)
        except (StageError, InputKindError) as e:
            failed.append((piece.label, e))
            outputs.append(None)
    if failed:
        raise LitFileError("`// -----` chunks", tuple(failed), tuple(outputs))
    return f"\n{SPLIT_MARKER}\n".join(outputs)


def in_piece(error: MlirSyntaxError, piece: Piece) -> MlirSyntaxError:
    """``error`` (a piece's parse error, its lines counted in the piece, as MLIR counts a chunk's) with the
    file's line said first."""
    if error.line is None:
        return error
    where = f"(the {piece.kind}'s line {error.line} is line {piece.file_line(error.line)} of the file) "
    return MlirSyntaxError(where + str(error), error.diagnostics, error.line, error.column)
