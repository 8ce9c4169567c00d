"""The row of every stored table: field names are column names, one model per asset."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from kindgi_eval.rules import Assertion, GroupAgreement


class StoredRow(BaseModel):
    """The base of every stored table's row: frozen, no field it does not declare, its docstrings its columns' docs."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)
    former_columns: ClassVar[frozenset[str]] = frozenset()
    """Columns the model no longer has that files written before still hold and its validator reads (into the
    fields that replaced them)."""


class SuiteRow(StoredRow):
    """One parsed case or calibration item of the suite, as it was when the run read it."""

    former_columns: ClassVar[frozenset[str]] = frozenset(
        {
            "baseline_run",
            "benchmark_name",
            "benchmark_version",
            "benchmark_hash",
            "variant_a",
            "variant_b",
            "variant_a_label",
            "variant_b_label",
            "rubric",
            "reviewer_role",
        }
    )
    """The columns that held a kind's parameters before `params`."""

    kind: str
    """`case` (a case under test), `scenario` (a conversation played turn by turn; `text` is its first move, empty for
    a contact model's), `calibration` (a hand-labelled calibration item), or an item the suite's kind read
    from a file of its own: `handler`, a custom suite's handler (one row; `id` is its `module:entrypoint`, `body` the
    handler with its source)."""
    id: str
    """The item's id, unique within its file."""
    line: int
    """The line of its file it was read from."""
    text: str
    """The contact's message."""
    nudge: bool
    """A follow-up turn with no contact message."""
    funnel_stage: str | None
    """The funnel stage a case enters at, if it names one."""
    course: str | None
    """The contact's course, if the case names one."""
    review: list[str]
    """Review criteria (cases) or the one labelled criterion (calibration items)."""
    body: str
    """The item as canonical JSON, enough to rebuild it exactly."""
    tenant: str
    """The tenant whose configuration the suite runs against."""
    eval_dir: str
    """The suite folder, as given."""
    suite_hash: str
    """Content hash of the suite's files, or for a registered suite the registry's hash of the version."""
    config_hash: str
    """Content hash of the tenant configuration."""
    suite_id: str | None = None
    """The registered suite's id, when the suite was read from the registry; None for a suite folder."""
    suite_version: str | None = None
    """The registered version evaluated; None for a suite folder."""
    suite_kind: str = "conversation"
    """The suite's kind: `conversation`, `accuracy`, `regression` or `benchmark` (a registered suite's; a folder's
    own is a conversation suite)."""
    params: str = "{}"
    """The kind's parameters as the run resolved them, a JSON object: a regression suite's `baseline_run`, a
    benchmark suite's `benchmark_name`, `benchmark_version` and `benchmark_hash`, a pairwise suite's `variant_a` and
    `variant_b` (the model or URL each was asked as) with `variant_a_label` and `variant_b_label` (agent id and version),
    a human-review suite's `rubric` and `reviewer_role`; `{}` for a kind with none. Rows stored before kept each of
    these as a column of its own; they are read into this."""

    @model_validator(mode="before")
    @classmethod
    def _params_from_columns(cls, stored: Any) -> Any:
        """A row stored with the parameters as columns of their own (and a compacted month's rows, which have both the
        columns and `params`, null where a row had not): the columns folded into `params`."""
        former = cls.former_columns
        if not isinstance(stored, dict) or not former & stored.keys():
            return stored
        row = {k: v for k, v in stored.items() if k not in former}
        if row.get("params") is None:
            row["params"] = params_json({k: stored[k] for k in former if stored.get(k) is not None})
        return row

    def param(self, name: str) -> Any:
        """One of the kind's parameters (None when it has no such parameter)."""
        return json.loads(self.params).get(name)


def params_json(params: Mapping[str, Any]) -> str:
    """A kind's parameters as `SuiteRow.params` holds them: canonical JSON of those it has a value for, so equal
    parameters are equal text."""
    return json.dumps({k: v for k, v in params.items() if v is not None}, sort_keys=True, separators=(",", ":"))


class TurnRow(StoredRow):
    """One turn of a scenario: the contact's message, who wrote it, and what the agent answered."""

    turn: int
    """Its place in the conversation, from 1."""
    contact_by: str
    """Who wrote the contact's message: `script` (a move) or the contact model's name."""
    contact_text: str
    """The contact's message, verbatim (a contact model's is untrusted, as any contact's)."""
    messages: list[str]
    """The agent's messages; empty when the agent failed."""
    escalate: bool | None
    """Whether the agent handed over to a person; None when it failed."""
    reason: str | None
    """The escalation reason it gave."""
    latency_ms: float
    """Wall time of the agent's answer to this turn."""
    prompt_tokens: int
    """Tokens sent to the agent's model."""
    completion_tokens: int
    """Tokens the agent's model returned."""
    cost_usd: float
    """What the agent's answer cost; 0 when unknown."""
    cost_known: bool
    """False when the agent model's price is unknown."""
    error: str | None
    """Why the agent gave no usable answer; the conversation ends there."""
    contact_usd: float = 0.0
    """What the contact model's message cost (0 for a move, and for a message reused from an earlier run)."""


class ReplyRow(StoredRow):
    """What the agent answered one case, what it cost and how long it took; for a scenario, its last turn's answer
    (and the sums of its turns' tokens and cost), the turns themselves in `turns`."""

    case_id: str
    """The case."""
    agent: str
    """The agent as provider:model or URL."""
    messages: list[str]
    """The reply's messages; empty when the agent failed."""
    escalate: bool | None
    """Whether it handed over to a person; None when the agent failed."""
    reason: str | None
    """The escalation reason it gave."""
    latency_ms: float
    """Wall time of the agent's answer."""
    prompt_tokens: int
    """Tokens sent to the model."""
    completion_tokens: int
    """Tokens the model returned."""
    cost_usd: float
    """Dollars; 0 when unknown."""
    cost_known: bool
    """False when the model's price is unknown."""
    error: str | None
    """Why there is no usable reply; such a case fails (an error never counts as a pass)."""
    raw: str | None
    """The agent's raw output when it could not be read as a reply."""
    cached_tokens: int = 0
    """Of the tokens sent, those the provider read from its cache of a repeated prefix, billed at its cached price; 0
    in runs recorded before it was kept."""
    turns: list[TurnRow] | None = None
    """A scenario's turns, in order; None for a case (the `turns` view unnests them)."""
    ended: str | None = None
    """Why a scenario's conversation ended: `escalated`, `agent_error`, `moves` (the script ran out), `contact` (the
    contact model said the contact is done), `max_turns`, or `contact_error` (the contact model gave no message);
    None for a case, and for a conversation a killed run left unfinished."""
    contact_usd: float = 0.0
    """What the contact model cost over a scenario's conversation (its messages reused from the cache cost nothing);
    0 for a case."""


class HandlerRow(StoredRow):
    """What a custom suite's handler made of one reply, run in its sandbox."""

    verdict: Literal["pass", "fail", "error", "skipped"]
    """Its answer's pass or fail; error when it gave no valid answer (timeout, memory, crash, garbage), which is
    never a pass; skipped when the agent gave no reply to grade."""
    score: float | None
    """The score it answered, if it gave one."""
    reason: str | None
    """Its reason, when it answered."""
    error: str | None
    """What went wrong, when it did not answer or was not run."""
    duration_ms: float | None
    """How long it ran in the sandbox; None when it was not run."""


class OutcomeRow(StoredRow):
    """One deterministic assertion of one case: held or failed, and why."""

    case_id: str
    """The case."""
    assertion: Assertion
    """Which assertion."""
    held: bool
    """True when it held."""
    detail: str
    """A sentence saying what was checked and, on failure, what the reply did."""
    handler: HandlerRow | None = None
    """A custom suite's handler verdict in full, on its `custom_handler` or `handler_error` row; None on the others."""


class SampleRow(StoredRow):
    """One judge sample on one criterion of one case or calibration item."""

    subject: Literal["case", "calibration"]
    """Whether a case's reply or a calibration item's reply was judged."""
    subject_id: str
    """The case or calibration item."""
    source: Literal["rubric", "review"]
    """A fixed rubric dimension, or one of the case's review entries."""
    criterion: str
    """The dimension's name or the criterion's text."""
    group: str
    """The calibration group it counts in."""
    sample: int
    """1, 2 or 3."""
    label: Literal["pass", "fail"] | None
    """A calibration item's hand label; None for a case."""
    turn: int | None = None
    """The scenario turn whose reply was graded; None for a case, a calibration item, and a scenario's review entry
    (graded over the whole transcript)."""
    vote: Literal["pass", "fail", "invalid"]
    """The sample's vote; invalid counts toward neither side."""
    evidence: str
    """The quoted span of the reply."""
    reason: str
    """The judge's reason."""
    invalid_reason: str | None
    """Why the sample is invalid, when it is."""
    raw: str | None
    """The judge's raw answer."""
    judge: str
    """The judge model."""
    latency_ms: float
    """Wall time of the judge call (never charged to the case)."""
    prompt_tokens: int
    """Tokens sent."""
    completion_tokens: int
    """Tokens received."""
    cost_usd: float
    """Dollars; 0 when unknown."""
    cost_known: bool
    """False when the judge's price is unknown (or its cached price, for a sample with cached tokens)."""
    cached_tokens: int = 0
    """Of the tokens sent, those the provider read from its cache of a repeated prefix (the catalogue, the
    conversation), billed at its cached price; 0 in runs recorded before it was kept."""


class CalibrationRow(GroupAgreement):
    """Agreement of the judge with the hand labels of one calibration group in one run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    judge: str
    """The judge model."""


class CriterionRow(StoredRow):
    """The verdict on one criterion of one case."""

    source: Literal["rubric", "review"]
    """A fixed rubric dimension, or one of the case's review entries."""
    criterion: str
    """The dimension's name or the criterion's text."""
    group: str
    """The calibration group it counts in."""
    verdict: Literal["pass", "fail", "ungraded"]
    """The majority verdict, or ungraded (no judge, no calibration, or no two agreeing samples)."""
    split: bool
    """True when the verdict stands 2-1."""
    votes: list[str]
    """The samples' votes."""
    evidence: str
    """The quoted span of a failure."""
    reason: str
    """The judge's reason for the verdict."""
    turn: int | None = None
    """In a scenario: the turn graded (a rubric dimension), or the turn the evidence was quoted from (a review entry);
    None for a case."""


class StatusRow(StoredRow):
    """One case's final status, with everything a reader of the run needs to see why."""

    case_id: str
    """The case."""
    status: Literal["passed", "failed", "judged-fail", "judged-pass", "reviewed"]
    """One of the five statuses (docs/design.md#statuses)."""
    failures: list[str]
    """The assertions that failed, as sentences."""
    messages: list[str]
    """The agent's reply."""
    escalate: bool | None
    """Whether the agent escalated."""
    reason: str | None
    """The escalation reason it gave."""
    latency_ms: float
    """Wall time of the agent's answer."""
    error: str | None
    """The agent's error, if any."""
    review: list[str]
    """The case's review criteria."""
    criteria: list[CriterionRow]
    """Verdicts on the review entries and rubric dimensions."""
    turns: list[TurnRow] | None = None
    """A scenario's transcript, turn by turn; None for a case."""


class ReviewRow(StoredRow):
    """One label a person gave one reply on one rubric item, as one import read it; every import is kept."""

    import_id: str
    """The import that read it: one id per `kindgi-eval review import`."""
    imported_at: str
    """When it was imported (UTC, ISO 8601 with microseconds); of one item's labels the latest import's counts."""
    source: str
    """The file it was read from, as given."""
    line: int
    """The line of that file its row starts on."""
    run_id: str
    """The run whose reply was labelled."""
    suite: str
    """That run's suite partition."""
    case_id: str
    """The case."""
    rubric_item: str
    """The rubric item."""
    reviewer_role: str
    """The role the suite names for the reviewer."""
    reviewer: str | None
    """Who labelled it, when the file says."""
    label: Literal["pass", "fail"]
    """The person's verdict."""
    note: str
    """Why, in the reviewer's words; may be empty."""


class RunRow(StoredRow):
    """One run: what ran against what, and how it ended."""

    tenant: str
    """The tenant."""
    eval_dir: str
    """The suite folder."""
    suite_hash: str
    """Content hash of the suite."""
    config_hash: str
    """Content hash of the tenant configuration."""
    agent: str
    """The agent as provider:model or URL."""
    judge: str | None
    """The judge model, or None."""
    judge_prompt_hash: str | None
    """Hash of the judge's prompt template, or None without a judge."""
    code_version: str
    """The kindgi-eval version and a hash of its source."""
    replies_from: str
    """The run whose replies were judged: this run, or the source of a replay."""
    started_at: str
    """When the suite was read (UTC, ISO 8601)."""
    finished_at: str
    """When the statuses were written (UTC, ISO 8601)."""
    cases: int
    """Cases in the suite."""
    passed: int
    """Cases passed."""
    failed: int
    """Cases failed."""
    judged_fail: int
    """Cases judged-fail."""
    judged_pass: int
    """Cases judged-pass."""
    reviewed: int
    """Cases reviewed."""
    ungraded: int
    """Criteria left ungraded."""
    agent_usd: float
    """What the agent cost."""
    judge_usd: float
    """What the judge cost."""
    cost_unknown: bool
    """True when some model's price was unknown, so the costs are lower bounds."""
    contact_usd: float | None = None
    """What the contact model cost over the run's persona scenarios, apart from the agent's and the judge's; None in
    runs stored before scenarios existed."""
    stages: list[str]
    """The funnel stages the tenant configuration names."""
    uncovered: list[str]
    """Stages no case enters at."""
    resumed_from: str | None = None
    """The killed run this run finished (`kindgi-eval run --resume`, or Dagster's re-execution from failure), whose
    recorded replies and judge samples it reused; None for a run that started afresh, and in runs stored before
    resuming existed (their files lack the column, which reads as NULL)."""
    agent_calls_saved: int | None = None
    """Agent calls the killed run had recorded, so the agent was not asked them again: a case's reply, a scenario's
    turns; 0 for a fresh run."""
    judge_calls_saved: int | None = None
    """Judge samples the killed run had recorded, so the judge was not asked them again; 0 for a fresh run."""
    suite_id: str | None = None
    """The registered suite the run evaluated (`registry = ...` in the tenants file, or `run --suite`); None for
    a suite folder."""
    suite_version: str | None = None
    """The version of it in force when the run started."""
    suite_kind: str = "conversation"
    """The suite's kind."""
    params: str | None = None
    """The kind's parameters as the run resolved them, a JSON object of text values (a regression suite's
    `baseline_run`, a pairwise suite's `variant_a` and `variant_b`, a custom suite's `handler_name`, ...); `{}` for a
    conversation suite. Its kind's view (`regression_runs`, ...) gives each its own column. None in runs stored
    before the kinds' figures moved to `run_metrics`: those keep their figures and parameters as columns of their own."""


class MetricRow(StoredRow):
    """One figure of a run's kind, in the one shape every kind's figures share: a count, a rate with its interval,
    a p-value. Its kind's view (`accuracy_runs`, ...) gives each figure the column it has always had."""

    name: str
    """The figure's name within its kind, e.g. `accuracy`, `wins`, `pass_rate_change`."""
    value: float | None
    """Its value; None when there is nothing to measure (no item graded, no prompt both variants answered)."""
    low: float | None = None
    """The lower bound of its interval, when it has one."""
    high: float | None = None
    """The upper bound of its interval."""
    method: str | None = None
    """How the value or its interval was computed, e.g. `wilson 95%`, `bootstrap 95%`, `mcnemar exact`; None for a count."""
    group: str | None = None
    """The calibration group a judged rate is of (`judged_fail_rate`, `judged_fail_rate_corrected`); None for a figure of
    the whole run."""
    criterion: str | None = None
    """The criterion a judged rate is of; None for a figure of a whole group or of the whole run."""
    count: int | None = None
    """Of a rate: what was counted (the replies the judge failed; of `pass_rate_corrected`, the cases passed or
    judged-pass)."""
    out_of: int | None = None
    """Of a rate: out of how many (the replies the judge graded; of `pass_rate_corrected`, every case)."""
    note: str | None = None
    """What the figure rests on, or why it has no value (nothing graded, a correction that does not exist)."""


class RunEndRow(StoredRow):
    """A run that failed or was stopped before it stored its summary: the row `runs` shows for it, with how it ended."""

    tenant: str
    """The tenant, as the suite partition names it."""
    state: Literal["failed", "stopped"]
    """`failed` (a step raised, or its process died) or `stopped` (someone stopped it)."""
    error: str | None
    """What failed it, in its own words; None when nothing said."""
    started_at: str
    """When it started (UTC, ISO 8601)."""
    finished_at: str
    """When it ended (UTC, ISO 8601)."""
