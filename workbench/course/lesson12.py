"""Lesson 12, a real model: a Flax NNX training step (an MLP, SGD with momentum from optax) as ``@main``'s
arguments, what Enzyme-JaX's patterns do to it, where its time goes by the lesson's lines, and drift finding a
planted optimizer bug (notebooks/12_a_real_model)."""
from __future__ import annotations

from functools import cache
from pathlib import Path

import jax
import optax
from flax import nnx

import workbench as wb

from .common import last_mlir
from .exercises import exercise
from .judge import close, judge_names, names_of, right, wrong

LEARNING_RATE, MOMENTUM, BATCH = 0.1, 0.9, 8


class MLP(nnx.Module):
    """16 features in, 4 classes out, through a hidden layer of 32 ReLUs."""

    def __init__(self, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(16, 32, rngs=rngs)
        self.out = nnx.Linear(32, 4, rngs=rngs)

    def __call__(self, x):
        return self.out(nnx.relu(self.hidden(x)))


def loss_fn(model, batch):
    logits = model(batch["x"])
    return optax.softmax_cross_entropy_with_integer_labels(logits, batch["y"]).mean()


@nnx.jit
def train_step(model, optimizer, batch):
    loss, grads = nnx.value_and_grad(loss_fn)(model, batch)
    optimizer.update(model, grads)
    return loss


def setup(learning_rate=LEARNING_RATE):
    """``train_step``'s arguments: a fresh model, its optimizer (SGD with momentum, ``learning_rate`` as given)
    and a batch of 8 examples with their labels."""
    model = MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(learning_rate, momentum=MOMENTUM), wrt=nnx.Param)
    kx, ky = jax.random.split(jax.random.key(1))
    batch = {"x": jax.random.normal(kx, (BATCH, 16)), "y": jax.random.randint(ky, (BATCH,), 0, 4)}
    return model, optimizer, batch


@cache
def explore(learning_rate=LEARNING_RATE):
    """``wb.explore(train_step, *setup(learning_rate))``, on JAX's default device."""
    return wb.explore(train_step, *setup(learning_rate))


def buggy():
    """The planted bug: the learning rate given as -0.1, by someone who thought that optax adds the gradient
    (optax's sgd already scales the gradient by minus the learning rate): the step climbs the loss."""
    return explore(-LEARNING_RATE)


def arguments(ex):
    """``@main``'s arguments in order (``%arg0``, ``%arg1``, ...): where each sits in ``train_step``'s
    arguments (``[0]`` the model, ``[1]`` the optimizer, ``[2]`` the batch), its dtype and shape, as the
    exploration's signature names them."""
    import pandas as pd

    return pd.DataFrame([dict(argument=f"%arg{i}", path=leaf.path, type=leaf.words())
                         for i, leaf in enumerate(ex.spec.signature.leaves)])


def patterns_stage(ex):
    """The first ``enzyme-hlo-patterns`` stage and its parent, the module the patterns were given."""
    st = next(s for s in ex.stages if s.name.startswith("enzyme-hlo-patterns"))
    return ex.parent_of(st.name).name, st.name


def measured_by_line(ex, prof=None):
    """The measured time of a call of the last MLIR stage per line of this lesson's code that has some
    (``ex.source_map`` with ``measured=``: a library line's time counts at the lesson's line that called it),
    the most first;
    ``prof`` the profile to read (default: the last ``ex.profile()``, else a new one)."""
    table = ex.source_map(measured=True if prof is None else prof)
    mine = table[(table.your_file.map(lambda f: Path(str(f)).name) == Path(__file__).name) & (table.measured_us > 0)]
    out = (mine.groupby("your_line", as_index=False)
           .agg(code=("your_code", "first"), function=("your_function", "first"), measured_us=("measured_us", "sum"),
                measured_share=("measured_share", "sum"))
           .rename(columns={"your_line": "line"}))
    return out.sort_values("measured_us", ascending=False, ignore_index=True)


@cache
def planted_drift():
    """The buggy step's module against the correct one's: ``explore().drift(buggy()["stablehlo"])``."""
    return explore().drift(buggy()["stablehlo"])


def line_number(where: str) -> int | None:
    """The line number of a place as the workbench writes it ("lesson12.py:41 (optax/...)"), or None."""
    head = str(where).split(" (")[0].strip()
    number = head.rsplit(":", 1)[-1]
    return int(number) if number.isdigit() else None


def _given_line(answer) -> int | None:
    """A line of this lesson the student named: 41, "41" or "lesson12.py:41" (None: not a line of it)."""
    if isinstance(answer, bool):
        return None
    if isinstance(answer, int):
        return answer
    if isinstance(answer, str):
        text = answer.strip()
        if ":" in text:
            file, _, number = text.rpartition(":")
            if Path(file.strip()).name != Path(__file__).name:
                return None
            text = number
        return int(text) if text.strip().isdigit() else None
    return None


def _line_words(line: int) -> str:
    import inspect

    source = inspect.getsource(inspect.getmodule(MLP)).splitlines()
    if not 0 < line <= len(source):
        return "no line of lesson12.py"
    return source[line - 1].strip() or "a blank line"


@exercise("l12.q1")
def q1(answer):
    rows = arguments(explore())
    step = rows[rows.path.str.endswith(".step.value")]
    want = int(step.index[0])
    if isinstance(answer, str) and answer.strip().lstrip("%").startswith("arg"):
        answer = answer.strip().lstrip("%")[3:]
    if isinstance(answer, bool) or not (isinstance(answer, int) or (isinstance(answer, str) and answer.isdigit())):
        return wrong(f"{answer!r} is not an argument's number", "give N of %argN, as a number: 3 for %arg3")
    given = int(answer)
    if given == want:
        return right(f"%arg{want} is the optimizer's step counter ({step.path.iloc[0]}, {step.type.iloc[0]})")
    hint = "lesson.arguments(ex) lists them in @main's order; the counter is the only unsigned integer"
    if given == want + 1:
        return close(f"%arg{given} is {rows.path[given]}; the counter is the {given}th argument counted from 1, but "
                     f"@main numbers its arguments from %arg0", hint)
    if 0 <= given < len(rows):
        return wrong(f"%arg{given} is {rows.path[given]} ({rows.type[given]}), not the step counter", hint)
    return wrong(f"@main has {len(rows)} arguments, %arg0 to %arg{len(rows) - 1}: %arg{given} is none of them", hint)


@exercise("l12.q2")
def q2(answer):
    ex = explore()
    before, after = patterns_stage(ex)
    delta = ex.diff(before, after).ops_delta()
    most = delta.delta.min()
    want = list(delta[delta.delta == most].op)
    known = set(delta.op) | set(ex.diff("stablehlo", after).ops_delta().op)
    names = names_of(answer) or []
    hint = f"ex.diff({before!r}, {after!r}).ops_delta(): the most negative delta"
    if len(names) == 1 and names[0] in known and names[0] not in want:
        row = delta[delta.op == names[0]]
        change = int(row.delta.iloc[0]) if len(row) else 0
        if change > 0:
            hint = (f"{names[0]} grew by {change}: the patterns made more of them. Look for the largest decrease")
        elif change == 0:
            hint = (f"the patterns did not change the number of {names[0]}: inline and canonicalize removed "
                    f"those before the patterns ran. Compare the patterns' stage with its parent, {before!r}")
    return judge_names(answer, want, what=f"the op the patterns of {after} removed most of ({most})", known=known,
                       kind="op", hint=hint)


@exercise("l12.q3")
def q3(answer):
    ex = explore()
    table = measured_by_line(ex, ex.profiles.get("run"))
    given = _given_line(answer)
    if given is None:
        return wrong(f"{answer!r} is not a line of lesson12.py",
                     "give the line number of lesson12.py, as the profile's your_lines writes it: 30 or 'lesson12.py:30'")
    top = table.iloc[0]
    if given == int(top.line):
        return right(f"line {given} ({top.code.strip()}): {top.measured_us:.1f} us of a call, "
                     f"{100 * top.measured_share:.0f}% of it")
    mine = table[table.line == given]
    hint = "lesson.measured_by_line(ex) sums the measured time of every line of this lesson, the most first"
    if len(mine):
        row = mine.iloc[0]
        if row.measured_us >= 0.9 * top.measured_us:
            return close(f"line {given} measured {row.measured_us:.1f} us, within 10% of the most "
                         f"({top.measured_us:.1f} us at line {int(top.line)}): profile again to tell them apart", hint)
        return wrong(f"line {given} ({_line_words(given)}) measured {row.measured_us:.1f} us, and another line of "
                     f"the lesson {top.measured_us / max(row.measured_us, 1e-9):.1f} times as much", hint)
    return wrong(f"line {given} of lesson12.py ({_line_words(given)}) has no measured time", hint)


@exercise("l12.q4")
def q4(answer):
    d = planted_drift()
    want = line_number(d.line)
    given = _given_line(answer)
    if given is None:
        return wrong(f"{answer!r} is not a line of lesson12.py",
                     "give the line number of lesson12.py that d.line names: 30 or 'lesson12.py:30'")
    if given == want:
        return right(f"line {want} ({_line_words(want)}): {d.line}, where the values first differ")
    hint = "d.line is the line of yours that drift names; d.table() lists every value compared"
    words = _line_words(given)
    if "loss_fn)(model" in words or "model(batch" in words or "nnx.relu" in words:
        hint = ("the loss and the gradients are computed before the optimizer's update, and they agree on both "
                "sides: drift compared them and went on. " + hint)
    elif "sgd(" in words:
        hint = ("that line is where the bug was written, in setup; drift names the line of train_step where the "
                "values of the two steps first differ. " + hint)
    return wrong(f"line {given} ({words}) is not the line drift blames", hint)


def stages_with(ex, names):
    """The stages of ``ex`` among ``names``, and its last MLIR stage: the rows of the cost table the lesson shows."""
    table = ex.cost()
    keep = [*names, last_mlir(ex).name]
    return table[table.stage.isin(keep)][["stage", "ops", "flops", "bytes"]]
