"""Reading a suite folder: cases.jsonl and scenarios.jsonl (either or both) and the optional calibration.jsonl, every
problem reported at once."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from kindgi_eval.inputs.file_limits import SUITE_FILE_LIMIT, FileTooLarge, read_limited
from kindgi_eval.inputs.tenant_file import LoadedTenant
from kindgi_eval.inputs.tenant_limits import limits_of
from kindgi_eval.rules import (
    DEFAULT_LIMITS,
    CalibrationItem,
    Case,
    InputError,
    Problem,
    Scenario,
    SuiteLimits,
    case_problems,
    problems_from_validation,
)

CASES_FILE = "cases.jsonl"
SCENARIOS_FILE = "scenarios.jsonl"
"""Beside (or instead of) the cases of a conversation suite: conversations played turn by turn against the agent."""
CALIBRATION_FILE = "calibration.jsonl"
REGISTRY_FILE = "registry.json"
"""Beside a registered suite version written out as a folder: which suite, version and content it is."""

FOLDER_KIND = "conversation"
"""The kind of a folder of one's own (no registry.json): its cases are conversations."""

Item = TypeVar("Item", bound=BaseModel)


class KindFile(NamedTuple):
    """An item a kind reads from a file of its own beside the cases (a custom suite's handler), kept as one row of the
    stored suite so the chain runs what the folder held."""

    kind: str
    """The row's kind in the stored suite (`handler`)."""
    id: str
    body: str
    """The item as canonical JSON."""


KindFilesReader = Callable[[Path, "RegisteredAs", list[Problem]], tuple[KindFile, ...]]
"""How a kind reads its own files in a folder written from the registry: the items, each problem appended to the list."""


class SuiteModels(NamedTuple):
    """What a kind's suite folder is read with: the model of its cases and of its calibration items, and the reader
    of the files it keeps beside them (None: it keeps none)."""

    case: type[Case]
    calibration: type[BaseModel]
    files: KindFilesReader | None = None


ModelsOf = Callable[[str], SuiteModels]
"""A suite kind's models by its name (`kinds.models_of`); KeyError for a kind not installed. Asked only for a folder
written from the registry: a folder of one's own is read with `FOLDER_MODELS`."""

FOLDER_MODELS = SuiteModels(Case, CalibrationItem)
"""What a folder of one's own (no registry.json, so of `FOLDER_KIND`) is read with: conversation cases and calibration
items, as the conversation kind reads them."""


class Lined(NamedTuple):
    """An item and the 1-based line it was read from."""

    line: int
    item: BaseModel


class Place(NamedTuple):
    """Where one item was read: a line of a suite file, or an index in a list of items (a registry suite's `spec`)."""

    file: str
    """The file as the user named it, or the document holding the list (`spec`)."""
    line: int | None
    """1-based line, for an item read from a file."""
    index: str | None = None
    """The item's path in its document, e.g. `cases[3]`, for an item read from a list."""
    scope: str = "a file"
    """What its id must be unique in, as a message says it."""

    def problem(self, field: str | None, message: str) -> Problem:
        """A problem of this item; the field is named below the item's own path (`cases[3].must_contain`)."""
        path = ".".join(part for part in (self.index, field) if part)
        return Problem(self.file, self.line, path or None, message)

    @property
    def unit(self) -> str:
        """What one item is, in a message: a line of a file, an item of a list."""
        return "line" if self.index is None else "item"

    @property
    def label(self) -> str:
        """How a later item points back at this one: `on line 3`, `as cases[0]`."""
        return f"on line {self.line}" if self.index is None else f"as {self.index}"


class SuiteItems(NamedTuple):
    """The cases and calibration items of a suite given as lists of JSON values, and every problem found in them."""

    cases: tuple[Case, ...]
    """The cases that parsed, in order, each id once."""
    calibration: tuple[CalibrationItem, ...]
    """The calibration items that parsed, in order, each id once."""
    problems: tuple[Problem, ...]
    """Everything wrong, in list order, each naming the item and its field (`cases[3].must_contain`); empty when valid."""


class TenantNames(NamedTuple):
    """The funnel stages and courses of the tenant a suite runs for, which its cases may name."""

    stages: tuple[str, ...]
    """Every funnel stage of the tenant configuration, in its order."""
    courses: tuple[str, ...]
    """Every course id of the tenant's catalogue."""
    config: str
    """How a problem names the configuration, e.g. `the tenant configuration demo_tenant`."""


class RegisteredAs(BaseModel):
    """The registry version a suite folder was written from (its `registry.json`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    FORMER_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {
            "baseline_run_id",
            "baseline_suite_id",
            "baseline_version",
            "benchmark_name",
            "benchmark_version",
            "benchmark_hash",
            "handler_hash",
            "rubric",
            "reviewer_role",
            "variant_a_id",
            "variant_a_version",
            "variant_b_id",
            "variant_b_version",
        }
    )
    """Fields that held a kind's parameters before `params`, still in the `registry.json` of folders written before."""

    suite_id: str
    """The registered suite's id."""
    suite_version: str
    """The version evaluated."""
    registry_hash: str
    """SHA-256 of the version's canonical JSON, as the registry stores it."""
    kind: str = FOLDER_KIND
    """The suite's kind (`conversation`, `accuracy`, `pairwise`, `regression`, `human-review`, `benchmark`, `custom`,
    or one another package installs)."""
    params: dict[str, str | list[str]] = {}
    """What the kind names of the version beyond its files, each a text or a list of texts, as the kind's folder
    writer gave it (a regression's baseline, a benchmark's catalogue entry, a pairwise suite's variants); only the
    kind reads it."""

    @model_validator(mode="before")
    @classmethod
    def _params_from_fields(cls, written: Any) -> Any:
        """A `registry.json` written with the parameters as fields of their own: those with a value moved into `params`."""
        if not isinstance(written, dict) or not cls.FORMER_FIELDS & written.keys():
            return written
        params = {k: v for k, v in written.items() if k in cls.FORMER_FIELDS and v not in (None, [], ())}
        return {**{k: v for k, v in written.items() if k not in cls.FORMER_FIELDS}, "params": params}

    def param(self, name: str) -> Any:
        """One of the kind's parameters (None when the version names none)."""
        return self.params.get(name)


class Suite(NamedTuple):
    """A parsed suite folder and the content hash recorded with every run of it."""

    eval_dir: str
    cases: tuple[Case, ...]
    case_lines: tuple[int, ...]
    calibration: tuple[CalibrationItem, ...]
    has_calibration: bool
    hash: str
    """The content hash: of the files, or for a registered version the registry's hash of its content."""
    registered: RegisteredAs | None = None
    """The registry version the folder holds, when it was written from one."""
    kind_files: tuple[KindFile, ...] = ()
    """What the suite's kind read from its own files beside the cases (a custom suite's handler, as published)."""
    limits: SuiteLimits = DEFAULT_LIMITS
    """The tenant's suite limits its cases were held to, and a run of it is (`SuiteLimits.model_calls`)."""
    scenarios: tuple[Scenario, ...] = ()
    """The scenarios of scenarios.jsonl, in order, each id once and none a case's id."""
    scenario_lines: tuple[int, ...] = ()
    """The line of scenarios.jsonl each scenario was read from."""

    @property
    def kind(self) -> str:
        """The suite's kind: a folder of one's own is a conversation suite."""
        return self.registered.kind if self.registered else FOLDER_KIND


def load_suite(
    eval_dir: str | Path, tenant: TenantNames | None = None, *, models_of: ModelsOf, limits: SuiteLimits | None = None
) -> Suite:
    """Parse `<eval_dir>/cases.jsonl` and, if present, `calibration.jsonl`, each item as its kind's model says, and
    in a folder of one's own `scenarios.jsonl` (which may stand instead of cases.jsonl); InputError lists every problem.
    With `limits`, the cases are held to them (each case over one named at its line).

    With `tenant`, every case that parses is also checked against its funnel stages and courses in the
    same pass, so one run reports schema and tenant problems together, in line order per file.
    """
    folder = _suite_folder(eval_dir)
    cases_path = folder / CASES_FILE
    calibration_path = folder / CALIBRATION_FILE
    problems: list[Problem] = []
    registered = _registered(folder / REGISTRY_FILE)
    case_model, calibration_model, files_of = (
        _models(folder / REGISTRY_FILE, registered.kind, models_of) if registered else FOLDER_MODELS
    )
    kind_files = files_of(folder, registered, problems) if registered and files_of else ()
    scenarios_path = folder / SCENARIOS_FILE
    has_scenarios = not registered and scenarios_path.exists()
    cases_bytes = _read(cases_path, problems, required=not has_scenarios)
    scenarios_bytes = _read(scenarios_path, problems, required=False) if has_scenarios else None
    calibration_bytes = _read(calibration_path, problems, required=False)
    first_place_of: dict[str, Place] = {}
    cases = (
        _parse(
            cases_path,
            cases_bytes,
            case_model,
            problems,
            lambda case, place: _case_problems(case, place, tenant),
            first_place_of,
        )
        if cases_bytes is not None
        else []
    )
    scenarios = (
        _parse(
            scenarios_path,
            scenarios_bytes,
            Scenario,
            problems,
            lambda item, place: _case_problems(item, place, tenant),
            first_place_of,
        )
        if scenarios_bytes is not None
        else []
    )
    calibration = (
        _parse(calibration_path, calibration_bytes, calibration_model, problems)
        if calibration_bytes is not None
        else []
    )
    if cases_bytes is not None and not cases and not scenarios and not problems:
        problems.append(Problem(str(cases_path), None, None, "holds no cases. Write one JSON object per line."))
    if limits is not None:
        problems += [
            Problem(str(cases_path), cases[o.index].line if o.index < len(cases) else None, None, o.message)
            for o in case_problems(limits, [c.item for c in cases])
        ]
    if scenarios_bytes is not None and cases_bytes is None and not scenarios and not problems:
        problems.append(Problem(str(scenarios_path), None, None, "holds no scenarios. Write one JSON object per line."))
    if problems:
        raise InputError(problems)
    return Suite(
        eval_dir=str(eval_dir),
        cases=tuple(c.item for c in cases),  # type: ignore[misc]
        case_lines=tuple(c.line for c in cases),
        calibration=tuple(c.item for c in calibration),  # type: ignore[misc]
        has_calibration=calibration_bytes is not None,
        hash=registered.registry_hash
        if registered
        else folder_hash(
            {CASES_FILE: cases_bytes, CALIBRATION_FILE: calibration_bytes, SCENARIOS_FILE: scenarios_bytes}
        ),
        registered=registered,
        kind_files=kind_files,
        limits=limits or DEFAULT_LIMITS,
        scenarios=tuple(s.item for s in scenarios),  # type: ignore[misc]
        scenario_lines=tuple(s.line for s in scenarios),
    )


class SuiteIdentity(NamedTuple):
    """What is cheap to know of a suite folder without parsing it."""

    kind: str
    """Its kind: its `registry.json`'s, else a conversation suite's."""
    hash: str
    """The content hash a run of it records (`Suite.hash`)."""


def suite_identity(eval_dir: str | Path) -> SuiteIdentity:
    """A suite folder's kind and content hash, from its files' bytes, without parsing or checking a case: what a tick
    may afford for every tenant (the check is the run's, `load_suite`). InputError when the folder, its
    `registry.json` or its `cases.jsonl` (where it holds no `scenarios.jsonl` instead) cannot be read."""
    folder = _suite_folder(eval_dir)
    registered = _registered(folder / REGISTRY_FILE)
    if registered is not None:
        return SuiteIdentity(registered.kind, registered.registry_hash)
    problems: list[Problem] = []
    scenarios = _read(folder / SCENARIOS_FILE, problems, required=False)
    cases = _read(folder / CASES_FILE, problems, required=scenarios is None)
    calibration = _read(folder / CALIBRATION_FILE, problems, required=False)
    if problems:
        raise InputError(problems)
    return SuiteIdentity(
        FOLDER_KIND, folder_hash({CASES_FILE: cases, CALIBRATION_FILE: calibration, SCENARIOS_FILE: scenarios})
    )


def _suite_folder(eval_dir: str | Path) -> Path:
    """`eval_dir` as a folder; InputError when there is none."""
    folder = Path(eval_dir)
    if not folder.is_dir():
        raise InputError(
            [
                Problem(
                    str(folder),
                    None,
                    None,
                    "no such suite folder. Point EVAL_DIR or --eval-dir at a folder holding cases.jsonl.",
                )
            ]
        )
    return folder


def folder_hash(files: Mapping[str, bytes | None]) -> str:
    """The content hash of a suite folder from its files' bytes by name (None: the file is absent): what a run of the
    folder records, and what a catalogue entry is pinned to. A scenarios.jsonl counts only where there is one, so a
    folder without one keeps the hash it always had."""
    digest = hashlib.sha256()
    for name in (CASES_FILE, CALIBRATION_FILE, SCENARIOS_FILE):
        content = files.get(name)
        if name == SCENARIOS_FILE and content is None:
            continue
        digest.update(f"{name}\0{len(content) if content is not None else -1}\0".encode())
        digest.update(content or b"")
    return digest.hexdigest()


def _models(path: Path, kind: str, models_of: ModelsOf) -> SuiteModels:
    try:
        return models_of(kind)
    except KeyError as e:
        raise InputError(
            [
                Problem(
                    str(path),
                    None,
                    "kind",
                    f"{e.args[0]}. Install the package that adds it, or delete the "
                    "folder; the next run writes it again.",
                )
            ]
        ) from None


def _registered(path: Path) -> RegisteredAs | None:
    """The registry version a folder was written from; None for a folder of one's own."""
    try:
        return RegisteredAs.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValidationError) as e:
        raise InputError(
            [
                Problem(
                    str(path),
                    None,
                    None,
                    f"is not the registry's record of this folder ({e}). "
                    "Delete the folder; the next run writes it again.",
                )
            ]
        ) from None


def _read(path: Path, problems: list[Problem], *, required: bool) -> bytes | None:
    try:
        return read_limited(path, SUITE_FILE_LIMIT, "a suite file")
    except FileTooLarge as e:
        problems.append(Problem(str(path), None, None, f"{e}. Split the suite into several suite folders."))
    except FileNotFoundError:
        if required:
            problems.append(Problem(str(path), None, None, "file not found. A suite folder must hold cases.jsonl."))
    except OSError as e:
        problems.append(Problem(str(path), None, None, f"cannot be read: {e.strerror or e}."))
    return None


def _parse(
    path: Path,
    content: bytes,
    model: type[Item],
    problems: list[Problem],
    check: Callable[[Item, Place], list[Problem]] | None = None,
    first_place_of: dict[str, Place] | None = None,
) -> list[Lined]:
    """One item per non-blank line; problems named by file, line and field; ids unique within the file, and across
    the files that share `first_place_of` (where each id was first read).

    `check` adds the problems of an item that parsed (a repeat, a name the tenant lacks), on its line.
    """
    items: list[Lined] = []
    first_place_of = {} if first_place_of is None else first_place_of
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as e:
        problems.append(Problem(str(path), None, None, f"is not UTF-8 text (byte {e.start})."))
        return items
    for number, line, data in json_lines(str(path), text, problems):
        item = _checked_item(data, line, model, Place(str(path), number), first_place_of, problems, check)
        if item is not None:
            items.append(Lined(number, item))
    return items


def json_lines(where: str, text: str, problems: list[Problem]) -> Iterator[tuple[int, str, object]]:
    """Each non-blank line of a JSONL text as (1-based number, the line, its JSON value); a line that is not JSON is
    a problem of `where` at its line, and is skipped."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as e:
            problems.append(Problem(where, number, None, f"not valid JSON: {e.msg} at column {e.colno}."))
            continue
        yield number, line, data


def _checked_item(
    data: object,
    text: str,
    model: type[Item],
    place: Place,
    first_place_of: dict[str, Place],
    problems: list[Problem],
    check: Callable[[Item, Place], list[Problem]] | None,
) -> Item | None:
    """One JSON value (`text` is its JSON) as an item: its problems named at `place`; None unless it parsed with a
    new id. The one rule for a suite file's line and a registry suite's list item alike."""
    if not isinstance(data, dict):
        problems.append(place.problem(None, f"each {place.unit} must be one JSON object."))
        return None
    try:
        item = model.model_validate_json(text)
    except ValidationError as e:
        problems.extend(place.problem(p.field, p.message) for p in problems_from_validation(e, place.file, place.line))
        return None
    item_id = item.id  # type: ignore[attr-defined]
    first = first_place_of.get(item_id)
    if first is not None:
        if first.file == place.file:
            problems.append(
                place.problem(
                    "id", f"duplicate id {item_id!r}, first used {first.label}. Ids must be unique in {place.scope}."
                )
            )
        else:
            problems.append(
                place.problem(
                    "id",
                    f"duplicate id {item_id!r}, first used in {Path(first.file).name} {first.label}. "
                    "Ids must be unique across a suite folder's cases and scenarios.",
                )
            )
    if check is not None:
        problems.extend(check(item, place))
    if first is not None:
        return None
    first_place_of[item_id] = place
    return item


def check_suite_items(
    cases: Sequence[object], calibration: Sequence[object] = (), where: str = "spec", tenant: TenantNames | None = None
) -> SuiteItems:
    """Cases and calibration items given as JSON values (a registered suite's `spec`), checked by the very rules of a
    suite folder's lines; each problem names `where` and the item's path, e.g. `spec` and `cases[3].must_contain`."""
    problems: list[Problem] = []
    parsed_cases = _parse_list(
        where, "cases", cases, Case, problems, lambda case, place: _case_problems(case, place, tenant)
    )
    parsed_calibration = _parse_list(where, "calibration", calibration, CalibrationItem, problems)
    if not cases:
        problems.append(Problem(where, None, "cases", "holds no cases. Give at least one case object."))
    return SuiteItems(parsed_cases, parsed_calibration, tuple(problems))  # type: ignore[arg-type]


def _parse_list(
    where: str,
    name: str,
    values: Sequence[object],
    model: type[Item],
    problems: list[Problem],
    check: Callable[[Item, Place], list[Problem]] | None = None,
) -> tuple[Item, ...]:
    """The list `name` of `where`, item by item, as `_parse` reads a file line by line; ids unique within the list."""
    items = []
    first_place_of: dict[str, Place] = {}
    for index, data in enumerate(values):
        place = Place(where, None, f"{name}[{index}]", f"{where}.{name}")
        try:
            text = json.dumps(data, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as e:
            problems.append(place.problem(None, f"is not JSON: {e}."))
            continue
        item = _checked_item(data, text, model, place, first_place_of, problems, check)
        if item is not None:
            items.append(item)
    return tuple(items)


def suite_key(tenant: str, eval_dir: str | Path) -> str:
    """The partition key of the suite in `eval_dir`, the one name its runs are stored and looked up under: a folder
    written out from the registry (it holds `registry.json`) is its registry suite's (`registry_key`), any other
    folder `<tenant>.<folder name>` (lower case, runs of other characters as one `-`), e.g. `demo-academy.golden`."""
    folder = Path(eval_dir).absolute()
    registered = _registered(folder / REGISTRY_FILE)
    if registered is not None:
        return registry_key(tenant, registered.suite_id)
    return folder_key(tenant, folder.name)


def folder_key(tenant: str, name: str) -> str:
    """The partition key of a suite folder named `name`: `<tenant>.<name>`, lower case, other characters as `-`."""
    return f"{tenant}.{re.sub(r'[^a-z0-9_-]+', '-', name.lower()).strip('-') or 'suite'}"


def registry_key(tenant: str, suite_id: str) -> str:
    """The partition key of a registry suite: `<tenant>@<id in lower case>`, e.g. `acme@acme.sales.pricing`. The `@`
    keeps it apart from every suite folder's key; ids that differ only in case are refused at publish
    (`registry.partition_clash`), so two ids of one tenant never share a partition."""
    return f"{tenant}@{suite_id.lower()}"


def _case_problems(case: Case, place: Place, tenant: TenantNames | None) -> list[Problem]:
    """What is wrong with a case that parsed: a repeated review entry, and, given a tenant, a name it lacks."""
    problems = _repeated_review(case, place)
    if tenant is not None:
        problems += _against_tenant(case, place, tenant)
    return problems


def _against_tenant(case: Case, place: Place, tenant: TenantNames) -> list[Problem]:
    """A case's funnel stage and course must be ones the tenant configuration has."""
    problems = []
    if case.contact is None:
        return problems
    if case.contact.funnel_stage is not None and case.contact.funnel_stage not in tenant.stages:
        known = ", ".join(tenant.stages)
        problems.append(
            place.problem(
                "contact.funnel_stage",
                f"{case.contact.funnel_stage!r} is not a funnel stage of {tenant.config} (stages: {known}).",
            )
        )
    if case.contact.course is not None and case.contact.course not in tenant.courses:
        known = ", ".join(tenant.courses)
        problems.append(
            place.problem(
                "contact.course", f"{case.contact.course!r} is not a course of {tenant.config} (courses: {known})."
            )
        )
    return problems


def _repeated_review(case: Case, place: Place) -> list[Problem]:
    """A review entry given twice in one case would pool six judge samples under one criterion: refuse it."""
    problems = []
    first_index_of: dict[str, int] = {}
    for index, entry in enumerate(case.review_criteria):
        if entry in first_index_of:
            problems.append(
                place.problem(
                    f"review[{index}]",
                    f"duplicate review entry {_short(entry)}, first given as review[{first_index_of[entry]}]. Give each criterion once per case.",
                )
            )
            continue
        first_index_of[entry] = index
    return problems


def _short(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:57] + "...")


def registered_name(tenant: str, suite_id: str) -> str:
    """The folder name of a registered suite: its id without the tenant's prefix (`acme.pricing` -> `pricing`). Its
    partition comes from its id (`registry_key`), never from this name."""
    return suite_id.removeprefix(f"{tenant}.") or suite_id


def has_calibration_file(eval_dir: str | Path) -> bool:
    """Whether the suite folder holds a calibration.jsonl at all (with items or without)."""
    return (Path(eval_dir) / CALIBRATION_FILE).is_file()


def load_checked_suite(eval_dir: str | Path, loaded: LoadedTenant, *, models_of: ModelsOf) -> Suite:
    """The suite, parsed and checked against the tenant it runs for in one pass, its cases held to the tenant's suite
    limits; InputError lists every problem, schema, tenant and limits alike, in line order per file."""
    return load_suite(eval_dir, tenant_names(loaded), models_of=models_of, limits=limits_of(loaded.tenant.tenant))


def tenant_names(loaded: LoadedTenant) -> TenantNames:
    """The funnel stages and courses of a tenant configuration, which a suite's cases may name."""
    tenant = loaded.tenant
    return TenantNames(
        tenant.stage_names(), tuple(c.id for c in tenant.courses), f"the tenant configuration {loaded.config_dir}"
    )
