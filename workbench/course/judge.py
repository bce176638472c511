"""Verdicts on a student's answer, and the judges that compare an answer with the workbench's own.

A judge never raises on what a student wrote: an answer of the wrong kind, a name that does not exist,
a pipeline that does not parse or a predicate that raises is a "wrong" verdict whose hint says why.
A blank answer (None, ``...`` or an empty string) is "not answered yet". A verdict says nothing of which
exercise it judges: ``course.exercises.Exercise`` stamps its id on it.
"""
from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from dataclasses import dataclass

from markupsafe import Markup

__all__ = ["Verdict", "AnswerError", "from_answer", "is_blank", "blank", "right", "close", "wrong", "judge_number", "judge_names",
           "judge_choice", "names_of", "as_number"]

RIGHT, CLOSE, WRONG, BLANK = "right", "close", "wrong", "not answered yet"
_COLOURS = {RIGHT: "#1a7f37", CLOSE: "#9a6700", WRONG: "#cf222e", BLANK: "#57606a"}


@dataclass(frozen=True)
class Verdict:
    """What ``course.check`` says: ``status`` is "right", "close", "wrong" or "not answered yet";
    ``message`` says what was compared, ``hint`` where to look next. True only when right. A judge
    leaves ``qid`` blank: the exercise that asked stamps its id on the verdict."""

    status: str
    message: str
    hint: str = ""
    qid: str = ""

    @property
    def right(self) -> bool:
        return self.status == RIGHT

    @property
    def answered(self) -> bool:
        return self.status != BLANK

    def __bool__(self) -> bool:
        return self.right

    def __str__(self) -> str:
        text = f"{self.qid}: {self.status}. {self.message}"
        return text + (f"\n  hint: {self.hint}" if self.hint else "")

    __repr__ = __str__

    def _repr_html_(self) -> str:
        colour = _COLOURS.get(self.status, "#57606a")
        hint = Markup("<br><i>hint:</i> {}").format(self.hint) if self.hint else ""
        return str(Markup('<div style="border-left:4px solid {colour};padding:2px 8px"><b>{qid}: '
                          '<span style="color:{colour}">{status}</span></b>. {message}{hint}</div>').format(
            colour=colour, qid=self.qid, status=self.status, message=self.message, hint=hint))


def is_blank(answer) -> bool:
    return answer is None or answer is Ellipsis or (isinstance(answer, str) and not answer.strip())


def blank(what: str) -> Verdict:
    return Verdict(BLANK, f"write your answer ({what}) in place of None, and run the cell again")


def right(message: str, hint: str = "") -> Verdict:
    return Verdict(RIGHT, message, hint)


def close(message: str, hint: str = "") -> Verdict:
    return Verdict(CLOSE, message, hint)


def wrong(message: str, hint: str = "") -> Verdict:
    return Verdict(WRONG, message, hint)


def as_number(answer) -> float | int | None:
    """A number the student wrote: an int or float as it is, or a string such as "1,024" or "2.5e6"
    (None: not a number; True and False are not numbers here)."""
    if isinstance(answer, bool) or isinstance(answer, complex):
        return None
    if isinstance(answer, (int, float)):
        return answer  # an int stays exact
    try:
        return float(str(answer).replace(",", "").replace("_", ""))
    except ValueError:
        return None


def judge_number(answer, expected: float, *, what: str, rel_close: float = 0.1, rel_right: float = 0.0,
                 near: dict[float, str] | None = None, near_within: float = 0.0, hint: str = "") -> Verdict:
    """A predicted count or amount. Right when within ``rel_right`` of ``expected`` (exact by default),
    close within ``rel_close``; ``near`` maps values that a known misunderstanding gives (say, a loop
    body counted once) to the hint that explains it, and an answer within ``near_within`` of such a
    value (relative; equal but for rounding by default) is close, with that hint. An answer that is
    ``-expected`` or ``1/expected`` (within 1%, or ``rel_right`` if larger: as rounded) is close too, and the message
    says that the sign is flipped or that the ratio is inverted, where it would say "higher"/"lower"."""
    number = as_number(answer)
    if number is None:
        return wrong(f"{answer!r} is not a number", f"the answer is {what}, as a number")
    answer = number
    if math.isnan(answer):
        return wrong("the answer is NaN", f"the answer is {what}, as a number")
    off = abs(answer - expected) / max(abs(expected), 1e-30)
    shown = _num(answer)
    if off <= rel_right or answer == expected:
        return right(f"{shown} is {what}" + ("" if answer == expected else f" (the workbench: {_num(expected)})"))
    for value, why in (near or {}).items():
        if value != expected and abs(answer - value) <= max(abs(value) * near_within, max(abs(value), 1) * 1e-9):
            return close(f"{shown} is not {what}, but it is what you get when {why}", hint)
    if off <= rel_close:
        return close(f"{shown} is within {100 * rel_close:.0f}% of {what}, not exactly it", hint)
    mistake = _sign_or_inverse(answer, expected, max(rel_right, 0.01))
    if mistake:
        return close(f"{shown} is not {what}: {mistake}", hint)
    return wrong(f"{shown} is not {what}: the right answer is {'lower' if answer > expected else 'higher'}", hint)


def _sign_or_inverse(answer: float, expected: float, within: float) -> str:
    """What a known slip explains ``answer`` (within ``within``, relative): the sign flipped (-expected), or
    the ratio taken the other way round (1/expected); "" when neither does."""
    if expected == 0 or answer == 0:
        return ""
    if abs(answer + expected) <= within * abs(expected):
        return "the sign is flipped: its size is right"
    if abs(expected) != 1 and abs(answer * expected - 1) <= within:
        return "that is the inverse ratio: you divided the other way round"
    return ""


def _num(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:,.6g}"


def names_of(answer) -> list[str] | None:
    """A name or a collection of names as a list of stripped strings (None: not names)."""
    if isinstance(answer, str):
        parts = [p.strip() for p in answer.replace(";", ",").split(",")]
        return [p for p in parts if p]
    if isinstance(answer, Iterable) and not isinstance(answer, (bytes, dict)):
        try:
            items = list(answer)
        except TypeError:  # an Iterable that is not (a 0-d array)
            return None
        if all(isinstance(a, str) for a in items):
            return [a.strip() for a in items if a.strip()]
    return None


def judge_names(answer, expected: Iterable[str], *, what: str, known: Iterable[str] = (),
                kind: str = "name", hint: str = "") -> Verdict:
    """A name or a set of names (patterns, passes, ops). Right when the set equals ``expected``; close
    when it overlaps or holds part of it; a name outside ``known`` (when given) gets its nearest names."""
    names = names_of(answer)
    if names is None:
        return wrong(f"{answer!r} is not a {kind} or a list of them", f"the answer is {what}")
    known = set(known)
    unknown = [n for n in names if known and n not in known]
    if unknown:
        near = difflib.get_close_matches(unknown[0], sorted(known), n=3, cutoff=0.5)
        more = f"; did you mean {', '.join(map(repr, near))}?" if near else ""
        return wrong(f"{unknown[0]!r} is not a {kind} here{more}", hint)
    got, want = set(names), set(expected)
    if got == want:
        return right(f"{', '.join(sorted(got))}: {what}")
    if got & want:
        missing, extra = want - got, got - want
        say = []
        if missing:
            say.append(f"{len(missing)} of the answer's {kind}s missing")
        if extra:
            say.append(f"{', '.join(sorted(extra))} not part of it")
        return close(f"part of {what} ({'; '.join(say)})", hint)
    return wrong(f"{', '.join(sorted(got)) or 'nothing'} is not {what}" + ("" if len(want) < 4 else
                                                                                f" ({len(want)} {kind}s)"), hint)


def judge_choice(answer, expected, choices: Iterable, *, what: str, hint: str = "",
                 why: str = "") -> Verdict:
    """One of a few answers (a direction, True/False, "compute" or "memory")."""
    choices = list(choices)
    norm = (lambda v: v.strip().lower()) if all(isinstance(c, str) for c in choices) else (lambda v: v)
    value = norm(answer) if isinstance(answer, str) else answer
    scalar = isinstance(value, (str, bool, int, float)) and not isinstance(value, complex)
    if not scalar or not any(type(value) is type(norm(c)) and value == norm(c) for c in choices):
        return wrong(f"{answer!r} is not one of {', '.join(map(repr, choices))}", f"the answer is {what}")
    if value == norm(expected):
        return right(f"{expected!r}: {what}" + (f". {why}" if why else ""))
    return wrong(f"{answer!r} is not {what}", hint)


class AnswerError(Exception):
    """What went wrong with the student's answer itself (a pipeline that does not parse, a predicate
    that raises): ``course.check`` turns it into a "wrong" verdict with this message and hint."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.message, self.hint = message, hint


def from_answer(what: str, fn, *args, hint: str = "", **kwargs):
    """``fn(*args, **kwargs)`` on behalf of the student's answer: whatever it raises is the answer's
    fault, reported as ``AnswerError`` ("your pipeline failed: ...")."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 -- any failure of the student's own code or input is their answer's
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise AnswerError(f"{what} failed: {type(e).__name__}: {first[:400]}", hint) from e
