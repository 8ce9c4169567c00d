"""A custom suite's handler: the tenant's grading code as published, and what is made of what it did when it ran.

The handler is untrusted code (it runs sandboxed, see `agents.sandbox`), so its answer is read like a model's
(docs/design.md#model-output-is-untrusted): a JSON object `{"pass": bool, "score"?: number, "reason": str}` on its
standard output and nothing else; anything else, and a timeout, a memory limit, a crash or a kill, is an `error` verdict
recorded with what happened, never a pass (docs/design.md#fail-closed). Pure: reads no file, starts no process.
"""

from __future__ import annotations

import json
import math
import re
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kindgi_eval.rules.assertions import AssertionResult, quote
from kindgi_eval.rules.text import clip, is_text

HANDLER_CHECK = "custom_handler"
"""The assertion a handler's verdict is recorded as."""
HANDLER_ERROR = "handler_error"
"""The assertion recorded when the handler gave no verdict (timeout, memory, crash, garbage): it never holds."""
SOURCE_LIMIT = 256 * 1024
"""The largest handler source, in UTF-8 bytes: one module, well inside the registry's 1 MiB body."""
ANSWER_LIMIT = 64 * 1024
"""The most of a handler's standard output that is read; an answer is one small JSON object."""
REASON_CHARS = 500
"""The longest reason kept of a handler's answer."""
ERROR_CHARS = 300
"""The longest stretch of a handler's standard error quoted in an error."""
MEMORY_EXIT = 3
"""The exit status the sandbox's harness gives when the handler raised MemoryError."""
RAISED_EXIT = 4
"""The exit status the harness gives when the handler could not be loaded or raised."""

_PART = r"[A-Za-z_][A-Za-z0-9_]*"
_MODULE_PATH = re.compile(rf"(?:{_PART}/)*{_PART}\.py")
_ENTRYPOINT = re.compile(rf"{_PART}(?:\.{_PART})*")

Verdict = Literal["pass", "fail", "error", "skipped"]
"""A handler's verdict on one reply: pass or fail as it answered, error when it gave no valid answer, skipped when
there was no reply to grade (the agent failed)."""


class Handler(BaseModel):
    """A custom suite's handler as published: the module's path and source, and the function that grades."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    modulePath: str = Field(max_length=200)
    """The module's file, relative, `/`-separated, each part an identifier, ending in `.py` (`graders/tone.py`);
    the sandbox holds the source under this name and nothing beside it."""
    entrypointPath: str = Field(max_length=200)
    """The function in the module that grades, dotted for one inside a class or object (`grade`, `Tone.grade`);
    it is called with the case and the reply, each a JSON object, and returns the answer object."""
    source: str = Field(min_length=1)
    """The module's Python source, carried in the published spec, so the code a run executes is the version that
    was published: immutable, and covered by the version's content hash."""

    @field_validator("modulePath")
    @classmethod
    def _relative_module(cls, value: str) -> str:
        if not _MODULE_PATH.fullmatch(value):
            raise ValueError(
                "must be a relative path of identifiers ending in .py, such as graders/tone.py (no .., no leading /)"
            )
        return value

    @field_validator("entrypointPath")
    @classmethod
    def _dotted_name(cls, value: str) -> str:
        if not _ENTRYPOINT.fullmatch(value):
            raise ValueError("must be a function's name in the module, dotted for a method (grade, Tone.grade)")
        return value

    @field_validator("source")
    @classmethod
    def _bounded_source(cls, value: str) -> str:
        if not is_text(value):
            raise ValueError("holds a lone surrogate; it must be Unicode text")
        size = len(value.encode("utf-8"))
        if size > SOURCE_LIMIT:
            raise ValueError(
                f"is {size} bytes, over the {SOURCE_LIMIT // 1024} KiB a handler may be; split out what it does not need"
            )
        return value

    @property
    def name(self) -> str:
        """How a run names the handler: `graders/tone.py:grade`."""
        return f"{self.modulePath}:{self.entrypointPath}"


class Answer(BaseModel):
    """A handler's answer as it must be given; unknown keys are dropped, as a judge's are."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True, populate_by_name=True)

    passed: bool = Field(alias="pass")
    """Whether the reply passes the handler's check."""
    score: float | None = None
    """A number the handler grades the reply with, if it gives one; finite."""
    reason: str
    """Why, in a sentence."""

    @field_validator("score", mode="before")
    @classmethod
    def _finite_number(cls, value: object) -> object:
        if isinstance(value, bool) or (value is not None and not isinstance(value, int | float)):
            raise ValueError("must be a number")
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return None if value is None else float(value)


class HandlerExit(NamedTuple):
    """What one sandboxed run of a handler did, as the sandbox saw it from outside."""

    returncode: int | None
    """The exit status; negative for a signal (as `subprocess` gives it); None when it was stopped at the limit."""
    stdout: bytes
    """Its standard output, at most ANSWER_LIMIT + 1 bytes of it."""
    stderr: bytes
    """The end of its standard error."""
    duration_ms: float
    """Wall time from start to exit (or to the kill)."""
    timed_out: bool = False
    """True when it ran past the time limit and was killed."""
    timeout_s: float = 0.0
    """The time limit it ran under."""
    memory_mib: int = 0
    """The memory limit it ran under."""
    refused: str | None = None
    """Why it could not be started at all (no sandbox on this machine), when it could not."""
    memory_killed: bool = False
    """True when the kernel killed it for memory: its call's group, its run's calls together, or every run's handlers
    on the machine held what their bound allows."""


class HandlerVerdict(NamedTuple):
    """A handler's verdict on one reply, as stored: the validated answer, or the error that stands for it."""

    verdict: Verdict
    score: float | None
    reason: str | None
    """The handler's reason, when it answered."""
    error: str | None
    """What went wrong, when it did not."""
    duration_ms: float | None
    """How long it ran; None when it did not run."""


def read_answer(stdout: bytes) -> Answer | str:
    """The handler's answer on its standard output, or why it is not one (a sentence)."""
    if len(stdout) > ANSWER_LIMIT:
        return f"answered over {ANSWER_LIMIT // 1024} KiB; an answer is one small JSON object"
    try:
        text = stdout.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"answered with bytes that are not UTF-8 text (byte {e.start})"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        shown = quote(text.strip()) if text.strip() else "nothing"
        return f"answered with something that is not JSON ({e.msg} at column {e.colno}): it printed {shown}"
    if not isinstance(data, dict):
        return f'answered a JSON {_json_type(data)}, not an object {{"pass": bool, "score"?: number, "reason": str}}'
    try:
        answer = Answer.model_validate(data)
    except ValidationError as e:
        wrong = "; ".join(f"{'.'.join(map(str, err['loc'])) or 'answer'}: {err['msg']}" for err in e.errors())
        return f'answered an object that is not {{"pass": bool, "score"?: number, "reason": str}} ({wrong})'
    if not is_text(answer.reason):
        return "answered a reason holding a lone surrogate; it must be Unicode text"
    return answer


def _json_type(value: object) -> str:
    names = {str: "string", bool: "boolean", int: "number", float: "number", list: "array", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def judge_exit(run: HandlerExit) -> HandlerVerdict:
    """The verdict of one sandboxed run: its answer when it exited 0 with a valid one, else an error saying why."""
    if run.refused is not None:
        return HandlerVerdict("error", None, None, f"the handler could not run: {run.refused}", None)
    took = round(run.duration_ms, 3)
    oversize = len(run.stdout) > ANSWER_LIMIT and not run.timed_out  # it was cut off there, whatever it did next
    error = read_answer(run.stdout) if oversize else _failure(run)
    if error is None:
        answer = read_answer(run.stdout)
        if isinstance(answer, Answer):
            reason = clip(answer.reason, REASON_CHARS)
            return HandlerVerdict("pass" if answer.passed else "fail", answer.score, reason, None, took)
        error = answer
    return HandlerVerdict("error", None, None, f"the handler {error}", took)


def _failure(run: HandlerExit) -> str | None:
    """Why a run that exited gave no answer to read; None when it exited 0."""
    said = _last_line(run.stderr)
    if run.timed_out:
        return f"ran past its time limit of {run.timeout_s:g} s and was killed"
    if run.returncode == MEMORY_EXIT:
        return f"exhausted its memory limit of {run.memory_mib} MiB (MemoryError)"
    if run.memory_killed:
        return (
            f"was killed for memory: past {run.memory_mib} MiB on its own or with its run's other calls at once, or "
            "past the machine's bound on every run's handlers"
        )
    if run.returncode == RAISED_EXIT:
        return f"crashed: {said}" if said else "crashed"
    if run.returncode is not None and run.returncode < 0:
        signal = -run.returncode
        hint = " (a process over its memory limit is often killed so)" if signal in (6, 9, 11) else ""
        return f"was killed by signal {signal}{hint}" + (f": {said}" if said else "")
    if run.returncode != 0:
        return f"exited with status {run.returncode}" + (f": {said}" if said else "")
    return None


def _last_line(stderr: bytes) -> str:
    lines = [line for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    return clip(lines[-1], ERROR_CHARS) if lines else ""


def check_handler(verdict: HandlerVerdict) -> AssertionResult | None:
    """A handler's verdict as the case's check: `custom_handler` holds on pass; an error is `handler_error`, which
    never holds (docs/design.md#fail-closed); a skipped reply adds nothing (its agent error is the case's failure)."""
    if verdict.verdict == "skipped":
        return None
    if verdict.verdict == "error":
        return AssertionResult(assertion=HANDLER_ERROR, held=False, detail=f"{verdict.error}; never a pass")
    held = verdict.verdict == "pass"
    score = f" (score {verdict.score:g})" if verdict.score is not None else ""
    return AssertionResult(
        assertion=HANDLER_CHECK,
        held=held,
        detail=f"the custom handler {'passed' if held else 'failed'} the reply{score}: {verdict.reason}",
    )


def out_of_time(budget_s: float) -> HandlerVerdict:
    """The verdict of a case the handler was not run on because the run's handler time was spent: an error, never
    a pass (docs/design.md#fail-closed), saying which setting bounds it."""
    return HandlerVerdict(
        "error",
        None,
        None,
        f"not run: the handler's {budget_s:g} s for the whole run (EVAL_HANDLER_RUN_S) "
        "were spent on the cases before this one; ungraded",
        None,
    )


def skipped(error: str | None) -> HandlerVerdict:
    """The verdict of a case the handler was not run on: the agent gave no reply."""
    return HandlerVerdict(
        "skipped", None, None, f"not run: the agent gave no reply ({clip(error or 'no reply', ERROR_CHARS)})", None
    )
