"""Reading what a sandboxed handler did: only a JSON answer of the right shape on a clean exit is a verdict; anything
else is an error saying what happened, never a pass (docs/design.md#model-output-is-untrusted,
docs/design.md#fail-closed)."""

from __future__ import annotations

import pytest

from kindgi_eval.rules import (
    HandlerExit,
    HandlerVerdict,
    check_handler,
    judge_exit,
    read_answer,
    skipped,
)
from kindgi_eval.rules.custom import ANSWER_LIMIT, Answer


def ran(stdout: bytes = b"", returncode: int | None = 0, stderr: bytes = b"", **fields) -> HandlerExit:
    return HandlerExit(returncode, stdout, stderr, 12.5, timeout_s=2.0, memory_mib=2048, **fields)


@pytest.mark.parametrize(
    ("stdout", "verdict"),
    [
        (b'{"pass": true, "reason": "ok"}', HandlerVerdict("pass", None, "ok", None, 12.5)),
        (
            b'{"pass": false, "score": 0.25, "reason": "too long", "debug": [1]}',
            HandlerVerdict("fail", 0.25, "too long", None, 12.5),
        ),  # unknown keys dropped
        (b'{"pass": true, "score": 3, "reason": "int score"}', HandlerVerdict("pass", 3.0, "int score", None, 12.5)),
    ],
)
def test_a_valid_answer_is_the_verdict(stdout, verdict) -> None:
    assert judge_exit(ran(stdout)) == verdict


@pytest.mark.parametrize(
    ("stdout", "error"),
    [
        (b"", "answered with something that is not JSON (Expecting value at column 1): it printed nothing"),
        (b"PASS", 'answered with something that is not JSON (Expecting value at column 1): it printed "PASS"'),
        (b'"yes"', 'answered a JSON string, not an object {"pass": bool, "score"?: number, "reason": str}'),
        (b"true", "answered a JSON boolean, not an object"),
        (
            b'{"pass": "true", "reason": "a string is not a bool"}',
            "answered an object that is not",
        ),  # strict: "true" is no bool
        (b'{"pass": 1, "reason": "1 is not a bool"}', "pass: Input should be a valid boolean"),
        (b'{"pass": true}', "reason: Field required"),
        (b'{"reason": "no verdict"}', "pass: Field required"),
        (b'{"pass": true, "score": true, "reason": "a bool is no score"}', "score: Value error, must be a number"),
        (b'{"pass": true, "score": NaN, "reason": "nan"}', "score: Value error, must be a finite number"),
        (b'{"pass": true, "score": "0.9", "reason": "string score"}', "score: Value error, must be a number"),
        (b'{"pass": true, "reason": "ok"} trailing', "answered with something that is not JSON (Extra data"),
        (b"\xff\xfe", "answered with bytes that are not UTF-8 text (byte 0)"),
        (b'{"pass": true, "reason": "\\ud800"}', "answered a reason holding a lone surrogate"),
        (b" " * (ANSWER_LIMIT + 1), "answered over 64 KiB"),
    ],
)
def test_anything_else_on_stdout_is_an_error_never_a_pass(stdout, error) -> None:
    verdict = judge_exit(ran(stdout))
    assert verdict.verdict == "error" and verdict.score is None and verdict.reason is None
    assert verdict.error.startswith("the handler ") and error in verdict.error, verdict.error


@pytest.mark.parametrize(
    ("run", "error"),
    [
        (
            ran(b'{"pass": true, "reason": "late"}', None, timed_out=True),
            "the handler ran past its time limit of 2 s and was killed",
        ),  # an answer after the limit is not read
        (ran(b"", 3, b"MemoryError\n"), "the handler exhausted its memory limit of 2048 MiB (MemoryError)"),
        (ran(b"", 4, b"Traceback ...\nValueError: boom\n"), "the handler crashed: ValueError: boom"),
        (
            ran(b'{"pass": true, "reason": "then died"}', -11),
            "the handler was killed by signal 11 (a process over its memory limit is often killed so)",
        ),
        (
            ran(b'{"pass": true, "reason": "held"}', 137, memory_killed=True),
            "the handler was killed for memory: past 2048 MiB on its "
            "own or with its run's other calls at once, or past the machine's bound on every run's handlers",
        ),  # bubblewrap's 128 + 9
        (
            ran(b'{"pass": true, "reason": "exit 1"}', 1, b"bwrap: setting up uid map: Permission denied\n"),
            "the handler exited with status 1: bwrap: setting up uid map: Permission denied",
        ),
        (
            ran(b"x" * (ANSWER_LIMIT + 1), 4, b"BrokenPipeError: [Errno 32] Broken pipe\n"),
            "the handler answered over 64 KiB; an answer is one small JSON object",
        ),  # cut off at the limit, then it broke
        (
            ran(refused="the sandbox did not start (no bwrap)"),
            "the handler could not run: the sandbox did not start (no bwrap)",
        ),
    ],
)
def test_a_run_that_did_not_exit_cleanly_is_an_error_whatever_it_printed(run, error) -> None:
    verdict = judge_exit(run)
    assert verdict.verdict == "error" and verdict.error == error


def test_a_long_reason_is_clipped_to_one_line() -> None:
    verdict = judge_exit(ran(b'{"pass": true, "reason": "line one\\nline two ' + b"x" * 1000 + b'"}'))
    assert (
        verdict.reason.startswith("line one line two x") and len(verdict.reason) == 500 and verdict.reason.endswith("…")
    )


def test_the_verdict_is_the_cases_check() -> None:
    passed = check_handler(HandlerVerdict("pass", 0.5, "fine", None, 1.0))
    failed = check_handler(HandlerVerdict("fail", None, "rude", None, 1.0))
    error = check_handler(HandlerVerdict("error", None, None, "the handler crashed: X", 1.0))
    assert (passed.assertion, passed.held, passed.detail) == (
        "custom_handler",
        True,
        "the custom handler passed the reply (score 0.5): fine",
    )
    assert (failed.assertion, failed.held, failed.detail) == (
        "custom_handler",
        False,
        "the custom handler failed the reply: rude",
    )
    assert (error.assertion, error.held, error.detail) == (
        "handler_error",
        False,
        "the handler crashed: X; never a pass",
    )
    assert check_handler(skipped("timeout")) is None  # the agent's error already fails the case


def test_the_answer_model_reads_pass_by_its_published_name() -> None:
    assert read_answer(b'{"pass": false, "reason": "r"}') == Answer.model_validate({"pass": False, "reason": "r"})
