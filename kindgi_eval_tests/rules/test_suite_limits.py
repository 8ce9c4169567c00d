"""A suite's limits: which cases are over them, and how many model calls a run of a suite may make."""

import pytest

from kindgi_eval.rules import (
    DEFAULT_LIMITS,
    AccuracyCase,
    Case,
    Grader,
    PlannedCalls,
    SuiteLimits,
    budget_problem,
    case_problems,
    planned_calls,
)

SMALL = SuiteLimits(cases=3, criteria_per_case=2, criterion_chars=10, model_calls=100)


def case(n: int = 0, review: tuple[str, ...] | None = None) -> Case:
    return Case.model_validate(
        {
            "id": f"c{n}",
            "text": "How much?",
            "expect": {"escalate": False},
            **({"review": list(review)} if review else {}),
        }
    )


@pytest.mark.parametrize(
    ("cases", "over"),
    [
        ([case(n) for n in range(3)], []),  # at the count: held
        (
            [case(n) for n in range(5)],
            [(3, "is case 4 of the suite, which may hold 3 (5 in all)")],
        ),  # the first past it, once
        ([case(0, ("a", "b"))], []),  # two criteria of a case: held
        ([case(0, ("a", "b", "c"))], [(0, "gives the judge 3 criteria, more than the 2 a case may")]),
        ([case(0, ("x" * 10,))], []),  # ten characters: held
        ([case(0, ("x" * 11,))], [(0, "has a criterion of 11 characters")]),
        # a case with both too many and too long criteria is named for each
        (
            [case(0), case(1, ("x" * 11, "b", "c"))],
            [(1, "gives the judge 3 criteria"), (1, "has a criterion of 11 characters")],
        ),
    ],
    ids=["at-count", "over-count", "at-criteria", "over-criteria", "at-length", "over-length", "both"],
)
def test_the_cases_over_a_limit_are_each_named(cases, over) -> None:
    found = case_problems(SMALL, cases)
    assert [o.index for o in found] == [index for index, _ in over]
    for o, (_, said) in zip(found, over, strict=True):
        assert said in o.message and "[tenant.limits]" in o.message


def test_the_fixed_dimensions_are_no_tenants_criteria() -> None:
    # a case that does not escalate gets the framework's dimensions from the rubric; only the tenant's own count
    plain = case(0, ("a",))
    assert len(plain.criteria()) > 1 and case_problems(SuiteLimits(criteria_per_case=1), [plain]) == []


def test_the_defaults_are_what_the_docs_say() -> None:
    assert DEFAULT_LIMITS == SuiteLimits(cases=5_000, criteria_per_case=50, criterion_chars=2_000, model_calls=100_000)


def test_a_run_counts_an_agent_call_a_case_and_with_a_judge_each_sample_of_each_criterion() -> None:
    cases = [
        case(0, ("a", "b")),
        case(1, ("c",)),
    ]  # neither escalates: each its review entries, plus what the rubric adds
    criteria = sum(len(c.criteria()) for c in cases)
    assert planned_calls(cases, 4, 3, 0, judged=False) == PlannedCalls(2, 0)
    # 3 samples of each criterion and each of the 4 calibration items
    assert planned_calls(cases, 4, 3, 0, judged=True) == PlannedCalls(2, 3 * (criteria + 4))
    # a kind whose own stage judges each case twice (a pair in both orders)
    assert planned_calls(cases, 0, 3, 2, judged=True) == PlannedCalls(2, 3 * criteria + 4)


def test_an_accuracy_item_graded_by_the_judge_has_one_criterion() -> None:
    judged = AccuracyCase(id="i", text="q", expected_output="$450", grader=Grader(adapter="judge"))
    exact = AccuracyCase(id="j", text="q", expected_output="$450")
    assert planned_calls([judged, exact], 0, 3, 0, judged=True) == PlannedCalls(2, 3)


@pytest.mark.parametrize(("agent", "judge", "refused"), [(40, 60, False), (40, 61, True), (101, 0, True)])
def test_a_run_over_its_budget_is_refused_before_its_first_call(agent: int, judge: int, refused: bool) -> None:
    problem = budget_problem(SMALL, PlannedCalls(agent, judge))
    assert (problem is not None) == refused
    if problem:
        assert f"may make {agent + judge:,} model calls ({agent:,} to the agent, {judge:,} to the judge)" in problem
        assert "nothing was called" in problem and "(model_calls)" in problem
