"""A run's model-call budget, held as it starts: the calls a suite of a kind may make, counted from its cases before
the first call, against its tenant's `SuiteLimits.model_calls`. Pure: reads no file."""

from __future__ import annotations

from kindgi_eval.inputs import Suite
from kindgi_eval.kinds.kind import SuiteKind
from kindgi_eval.rules import SAMPLES, InputError, PlannedCalls, Problem, budget_problem, planned_calls


def run_calls(kind: SuiteKind, suite: Suite, judged: bool) -> PlannedCalls:
    """At most how many model calls a run of `suite` makes: an agent call a case and, with a judge, its samples of
    every criterion and calibration item, and the calls of the kind's own judged stage (counted per case)."""
    stage = kind.stage.judge_calls_per_row if kind.stage is not None else 0
    return planned_calls(suite.cases, len(suite.calibration), SAMPLES, stage, judged)


def hold_budget(kind: SuiteKind, suite: Suite, judged: bool) -> None:
    """InputError naming the suite, before any model call, when a run of it may make more calls than its tenant's
    budget allows: the run stops whole, never cut short."""
    problem = budget_problem(suite.limits, run_calls(kind, suite, judged))
    if problem is not None:
        raise InputError([Problem(suite.eval_dir, None, None, problem)])
