"""What a suite kind is to the shared chain and its reports: one record of the kind's own functions, in a few groups
whose fields default to what a conversation suite does. Pure."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol

from pydantic import BaseModel

from kindgi_eval.agents import Sandbox
from kindgi_eval.inputs import KindFilesReader, RunSettings, Suite
from kindgi_eval.registry import Consumer
from kindgi_eval.rules import (
    GROUPS,
    AgentReply,
    AssertionResult,
    CalibrationItem,
    Case,
    Group,
    Tenant,
    check_case,
    group_of,
)
from kindgi_eval.store import (
    FigureColumn,
    MetricRow,
    OutcomeRow,
    ReplyRow,
    RunRow,
    StatusRow,
    StorePath,
    SuiteRow,
    Table,
)


class KindRows(NamedTuple):
    """A run's rows a kind sums up into its figures: the suite and replies every run has, and the rows of the kind's
    own stage (empty for a kind without one)."""

    suite: Sequence[SuiteRow]
    replies: Sequence[ReplyRow]
    own: Sequence[BaseModel] = ()


class StageInputs(NamedTuple):
    """What a kind's own stage is given: the run's shared rows, the store, and a way to pay the judge."""

    suite: Sequence[SuiteRow]
    replies: Sequence[ReplyRow]
    outcomes: Sequence[OutcomeRow]
    statuses: Sequence[StatusRow]
    root: StorePath
    """The store the run reads and writes (a baseline's statuses are read from it)."""
    judged: Callable[..., list] | None
    """`judged(step, *inputs)` runs a stage that pays the judge, `step(judge, *inputs, calibration, catalogue=...,
    concurrency=..., ...)`, each row recorded as it arrives so a resumed run pays only for what it lacks; None when
    the run has no judge."""


class Stage(NamedTuple):
    """A kind's own stage: one more asset of the chain, stored as its own table, computed after `statuses`."""

    table: str
    """The asset, its stored table and its view (`accuracy`, `regressions`, ...), one name for all three."""
    row: type[BaseModel]
    """The row of its table: its columns, declared in the kind's own folder."""
    compute: Callable[[StageInputs], list]
    """Its rows, for a suite of its kind."""
    about: Callable[[Sequence[BaseModel]], Mapping[str, object]] = lambda rows: {}
    """What its asset's metadata shows beside the kind's figures."""
    recorded_key: Callable[[BaseModel], object] | None = None
    """For a stage that pays the judge: a row's key in its recordings, so a resumed run counts what it reused."""
    judge_calls_per_row: int = 0
    """How many judge calls one of its rows took (a pair judged in both orders: 2)."""

    @property
    def stored(self) -> Table:
        """Its table in the store."""
        return Table(self.table, self.table, self.row)


class Pinning(NamedTuple):
    """What a kind resolves once, as a run starts, and pins to the run: against what run, with which agents."""

    root: StorePath
    tenant: Tenant
    suite: Suite
    settings: RunSettings
    pinned: Pins
    """What an earlier start of this run pinned already (a resume, a re-execution): kept, never resolved again."""
    mock: bool | None
    """The command line's `--mock`, whose agents are checked before anything runs; None inside a Dagster run."""


class Pins(NamedTuple):
    """What a run is pinned to: a regression suite's baseline run, a pairwise suite's two agents."""

    baseline: str | None = None
    variants: tuple[str, str] | None = None
    note: str | None = None
    """What the command line tells the user of them, if anything (that --mock answers for both variants)."""


class KindResult(NamedTuple):
    """A stored run as its kind reads it back: the row every run has, and the kind's figures and parameters by the
    names of its view's columns (`accuracy`, `accuracy_low`, `baseline_run`, ...), typed as those columns are."""

    run: RunRow
    figures: Mapping[str, object]


JUDGE_USD = "judge_usd"
"""The figure a kind whose own stage pays the judge reports that cost under; the run's `judge_usd` adds it."""


class Items(NamedTuple):
    """The items behind a kind's figure, as a table the HTML report lists."""

    caption: str
    headers: tuple[str, ...]
    rows: list[tuple[str, ...]]


class Assertions(Protocol):
    """Every deterministic assertion of one case against its reply (None when the agent failed), in a fixed order."""

    def __call__(
        self, case: Case, reply: AgentReply | None, *, error: str | None, latency_ms: float, max_latency_ms: float
    ) -> list[AssertionResult]: ...


class Starter(NamedTuple):
    """The starter suite `kindgi-eval init --kind` writes for a kind: the files of its folder, and what comes next."""

    folder: Path
    """The kind's own `starter/` folder; each file in it is written as it is."""
    next: tuple[str, ...]
    """What to do with the folder written, one line each, `{folder}` standing for it: how to check and run it, and
    what a run of it needs beyond its files (a registry, a sandbox, agents the tenants file declares)."""


def published_starter(folder: Path, *needs: str) -> Starter:
    """The starter of a kind a run reads from the registry: its `suite.json`, checked by `validate`, then published
    and run by id; `needs` says what else a run of it needs."""
    return Starter(
        folder,
        (
            "check it: kindgi-eval validate {folder}",
            "it runs from a suite registry: kindgi-eval suites publish {folder}/suite.json (KINDGI_REGISTRY_URL and "
            "KINDGI_REGISTRY_TOKEN name it; kindgi-eval serve runs one), then kindgi-eval run --mock --suite ID "
            "--config-dir YOUR_CONFIG",
            *needs,
        ),
    )


Askings = Callable[[RunSettings, Sequence[SuiteRow]], list[tuple[RunSettings, list[SuiteRow]]]]


def _one_agent(settings: RunSettings, suite: Sequence[SuiteRow]) -> list[tuple[RunSettings, list[SuiteRow]]]:
    return [(settings, list(suite))]


def _nothing(_: object) -> dict:
    return {}


def _no_pins(pinning: Pinning) -> Pins:
    return pinning.pinned


def _no_params(suite: Suite, pins: Pins) -> dict:
    return {}


def _no_metrics(_: KindRows) -> list[MetricRow]:
    return []


def _no_lines(_: KindResult) -> list[str]:
    return []


def _no_items(_: KindRows) -> Items | None:
    return None


def _the_agent(result: KindResult) -> str:
    return result.run.agent


def _never(_: KindResult) -> bool:
    return False


def _needs_nothing(suite: Suite, settings: RunSettings) -> None:
    return None


class RepliesGiven(NamedTuple):
    """What a kind's check of every reply is given in the `outcomes` stage: the stored suite, its cases, the agent's
    replies, the run's settings, and a way to open the run's sandbox."""

    suite: Sequence[SuiteRow]
    cases: Sequence[Case]
    replies: Sequence[ReplyRow]
    settings: RunSettings
    sandbox: Callable[[], Sandbox]
    """Opens a sandbox with the run's limits, to use as a context manager (removed after); InputError when this
    machine has none."""


class ReplyChecks(NamedTuple):
    """What a kind's check of every reply adds to the `outcomes` stage."""

    outcomes: Mapping[str, Sequence[OutcomeRow]]
    """The outcomes it adds, by case id, each case's after its assertions; a case not named gets none."""
    about: Mapping[str, object] = {}
    """What the `outcomes` asset's metadata shows of them."""


@dataclass(frozen=True)
class Reading:
    """What a suite of the kind holds and how its folder is read."""

    case_model: type[Case] = Case
    """What its suite's cases are read as, from its folder and from the stored suite."""
    calibration_model: type[BaseModel] = CalibrationItem
    """What its suite's calibration items are read as, from its folder."""
    files: KindFilesReader | None = None
    """What it reads from files of its own beside the cases, in a folder the registry wrote (a custom suite's
    `handler.json`), each problem naming the file; None: it keeps none."""


@dataclass(frozen=True)
class Checking:
    """How a suite of the kind is asked and checked: who answers which cases, what each reply is held to, and how the
    judge is calibrated on it."""

    askings: Askings = _one_agent
    """Who answers which cases in the `agent_replies` stage: the run's agent every case, unless the kind says."""
    assertions: Assertions = check_case
    """What its cases are held to in the `outcomes` stage: a conversation case's assertions (docs/design.md#assertions) unless the
    kind says."""
    replies: Callable[[RepliesGiven], ReplyChecks] | None = None
    """Its own check of every reply, run in the `outcomes` stage after the assertions (a custom suite's handler, each
    call in a sandbox), whose outcomes join each case's; None: it has none."""
    judged_by_case: bool = True
    """Whether the `judge_samples` stage samples its cases' criteria; a kind judged otherwise (in pairs) says no."""
    groups: tuple[Group, ...] = GROUPS
    """The calibration groups its judge is calibrated on, in the order reports list them."""
    item_group: Callable[[str], Group] = group_of
    """The group a calibration item of its suite counts in, from the item's criterion."""
    reviewed_by_people: bool = False
    """Whether its runs queue their replies for people to label (`kindgi-eval review export`, `import`, `promote`)."""


@dataclass(frozen=True)
class RunStart:
    """What is checked and resolved once as a run of the kind's suite starts (by the command line, else by the
    `suite` stage), and stored with the suite."""

    needs: Callable[[Suite, RunSettings], None] = _needs_nothing
    """What a run of its suite needs of this machine, checked before the agent is asked anything: InputError saying
    what is missing."""
    pins: Callable[[Pinning], Pins] = _no_pins
    """What a run of its suites is pinned to."""
    stored_params: Callable[[Suite, Pins], Mapping[str, object]] = _no_params
    """Its parameters as a run resolves them, from the suite and what the run is pinned to: stored with the suite
    (`SuiteRow.params`), where its stage, its metrics and `params` read them back."""


@dataclass(frozen=True)
class Reporting:
    """How a run of the kind is reported: its figures and parameters, its view, and what it adds to the printed
    report, the `--json` summary and the HTML report."""

    metrics: Callable[[KindRows], list[MetricRow]] = _no_metrics
    """Its figures of a run, from its rows: stored in `run_metrics`, one row each."""
    params: Callable[[Sequence[SuiteRow]], Mapping[str, str | None]] = _nothing
    """Its parameters as the run resolved them, from the stored suite: stored in `runs.params`."""
    figures: tuple[FigureColumn, ...] = ()
    """The typed columns of its view (`<kind>_runs`), from its figures and parameters; none gives it no view."""
    lines: Callable[[KindResult], list[str]] = _no_lines
    """Its lines in the printed report, beneath the counts."""
    summary: Callable[[KindResult], Mapping[str, object]] = _nothing
    """Its key of the `--json` summary (`{"accuracy": {...}}`), or nothing."""
    marks: Callable[[KindRows], Mapping[str, str]] = _nothing
    """The line it adds under a case's head in the printed report, by case id (an item's grade, a case's move)."""
    items: Callable[[KindRows], Items | None] = _no_items
    """The items behind its figure, for the HTML report to list; None when it lists none."""
    against: Callable[[KindResult], str] = _the_agent
    """What the report's header says the suite ran against."""
    failed: Callable[[KindResult], bool] = _never
    """Whether the kind's own result fails the run (exit 1) whatever its cases' statuses."""
    enters_funnel: bool = True
    """Whether its cases are conversations entering the tenant's funnel; if not, the report shows no coverage (it
    would read like a failure)."""


@dataclass(frozen=True)
class SuiteKind:
    """One kind of suite: its name, and what it adds to a run, in groups; a kind fills in the groups where it differs
    from a conversation suite, and keeps the defaults of the rest."""

    name: str
    """The kind as the registry and `runs.suite_kind` spell it: `conversation`, `human-review`, …"""
    reading: Reading = Reading()
    """What its suite holds and how its folder is read."""
    checking: Checking = Checking()
    """How its suite is asked and checked."""
    start: RunStart = RunStart()
    """What a run of its suite checks, pins and stores as it starts."""
    report: Reporting = Reporting()
    """How its runs are reported."""
    stage: Stage | None = None
    """Its own stage, if it has one."""
    consumer: Consumer | None = None
    """What the registry checks a published suite of its kind with and writes it out as; None for a kind the
    registry does not take."""
    starter: Starter | None = None
    """The starter suite `kindgi-eval init --kind` writes for it, from its own folder; None: it offers none."""
