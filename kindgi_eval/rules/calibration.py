"""Whether the judge has earned the right to grade: agreement with hand labels, per group
(docs/design.md#calibration)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from kindgi_eval.rules.cases import Label
from kindgi_eval.rules.criteria import GROUPS, Group
from kindgi_eval.rules.intervals import wilson
from kindgi_eval.rules.judged_rates import JudgeError
from kindgi_eval.rules.verdicts import FinalVerdict, counted, invalid_cause

CalibrationFile = Literal["absent", "empty", "items"]
"""What the suite folder holds for calibration: no calibration.jsonl, one without items, or one with items."""

THRESHOLD = 1.0
"""Agreement a group needs to be graded: unanimous until a real calibration run is recorded in docs/judge.md."""


class GroupAgreement(BaseModel):
    """How one calibration group's judge verdicts compared with the hand labels, and whether it may grade."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    group: Group
    """The fixed dimension, or `free_text` for every free-text criterion together."""
    agreement: float | None
    """Fraction of items whose majority verdict equals the label (ungraded disagrees); None without items."""
    kappa: float | None
    """Cohen's kappa between labels and verdicts, ungraded its own category; None where undefined."""
    items: int = Field(ge=0)
    """Calibration items in the group."""
    pass_labels: int = Field(ge=0)
    """Items labelled pass."""
    fail_labels: int = Field(ge=0)
    """Items labelled fail."""
    calibrated: bool
    """True when this run may count the judge's verdicts in this group."""
    note: str
    """Why the group is or is not calibrated, in a sentence for the summary's reader."""
    agreement_low: float | None = None
    """The Wilson 95% lower bound of the agreement, for how little a few labels prove (the gate stays
    agreement at the threshold, docs/design.md#calibration); None without items."""
    samples: int = Field(default=0, ge=0)
    """Judge samples drawn on the group's items."""
    invalid_samples: int = Field(default=0, ge=0)
    """Of those, the invalid ones (an error, unparseable, an unquoted failure)."""
    invalid_causes: list[str] = Field(default_factory=list)
    """Each invalid sample's cause (`invalid_cause`): `missing credentials`, `unparseable`, ..."""
    sensitivity: float | None = None
    """Of the items labelled fail that the judge graded, the share its majority failed (`caught / fails_graded`); None
    without one. An item left ungraded counts in neither this nor `specificity`, as an ungraded reply counts in no
    judged rate."""
    caught: int = Field(default=0, ge=0)
    """Items labelled fail whose majority verdict was fail."""
    fails_graded: int = Field(default=0, ge=0)
    """Items labelled fail that the judge graded, pass or fail."""
    specificity: float | None = None
    """Of the items labelled pass that the judge graded, the share its majority passed (`cleared / passes_graded`); None
    without one."""
    cleared: int = Field(default=0, ge=0)
    """Items labelled pass whose majority verdict was pass."""
    passes_graded: int = Field(default=0, ge=0)
    """Items labelled pass that the judge graded, pass or fail."""

    @property
    def judge_error(self) -> JudgeError:
        """The judge's majority against the labels, as the correction of a judged rate reads it."""
        return JudgeError(self.caught, self.fails_graded, self.cleared, self.passes_graded)


class Graded(NamedTuple):
    """One calibration item as graded: its hand label beside the judge's majority verdict."""

    group: Group
    """The item's calibration group."""
    label: Label
    """What the person who wrote the item said."""
    verdict: FinalVerdict
    """What the judge's three samples decided."""
    item: str = ""
    """The calibration item's id, so a note can name the items the judge missed."""
    split: bool = False
    """True when the verdict stands 2-1 against a valid opposing sample: agreement the judge barely reached."""


def agree_by_group(
    graded: Sequence[Graded],
    *,
    threshold: float = THRESHOLD,
    calibration_file: CalibrationFile = "items",
    groups: Sequence[Group] = GROUPS,
) -> dict[Group, GroupAgreement]:
    """Agreement for every one of `groups`, in order; a group grades only with both labels and enough agreement."""
    return {
        group: _agree(group, [item for item in graded if item.group == group], threshold, calibration_file)
        for group in groups
    }


def cohen_kappa(labels: Sequence[str], verdicts: Sequence[str]) -> float | None:
    """Cohen's kappa of paired ratings; None when there are none or chance agreement is certain.

    kappa = (p_o - p_e) / (1 - p_e), computed in whole counts so the undefined case is exact:
    (n * agreed - S) / (n**2 - S), where S sums, over each category, how many labels and how many
    verdicts fell in it, multiplied. `ungraded` is a category of its own that no label ever takes.
    """
    agreed = sum(label == verdict for label, verdict in zip(labels, verdicts, strict=True))
    n = len(labels)
    if n == 0:
        return None
    label_counts, verdict_counts = Counter(labels), Counter(verdicts)
    by_chance = sum(label_counts[k] * verdict_counts[k] for k in label_counts)
    if by_chance == n * n:
        return None
    return (n * agreed - by_chance) / (n * n - by_chance)


def _agree(group: Group, items: list[Graded], threshold: float, calibration_file: CalibrationFile) -> GroupAgreement:
    labels = [item.label for item in items]
    verdicts = [item.verdict for item in items]
    agreed = sum(label == verdict for label, verdict in zip(labels, verdicts))
    passes, fails = labels.count("pass"), labels.count("fail")
    calibrated = False
    if calibration_file == "absent":
        note = "No calibration file beside the suite, so the judge grades nothing here."
    elif calibration_file == "empty":
        note = "The calibration file beside the suite holds no items, so the judge grades nothing here."
    elif not items:
        note = "No calibration items; the group needs at least one pass and one fail item."
    elif not passes:
        note = "No item labelled pass; the group needs at least one pass and one fail item."
    elif not fails:
        note = "No item labelled fail; the group needs at least one pass and one fail item."
    else:
        calibrated = agreed / len(items) >= threshold
        note = (
            (
                f"The judge agreed with {agreed} of {len(items)} labels ({agreed / len(items):.2f}), "
                f"{'meeting' if calibrated else 'below'} the threshold of {threshold:.2f}."
            )
            + _missed(items)
            + _split(items)
        )
    interval = wilson(agreed, len(items))
    error = JudgeError(
        caught=sum(i.label == i.verdict == "fail" for i in items),
        fail_labels=sum(i.label == "fail" and i.verdict != "ungraded" for i in items),
        cleared=sum(i.label == i.verdict == "pass" for i in items),
        pass_labels=sum(i.label == "pass" and i.verdict != "ungraded" for i in items),
    )
    return GroupAgreement(
        sensitivity=error.sensitivity,
        caught=error.caught,
        fails_graded=error.fail_labels,
        specificity=error.specificity,
        cleared=error.cleared,
        passes_graded=error.pass_labels,
        group=group,
        agreement=agreed / len(items) if items else None,
        agreement_low=interval.low if interval else None,
        kappa=cohen_kappa(labels, verdicts),
        items=len(items),
        pass_labels=passes,
        fail_labels=fails,
        calibrated=calibrated,
        note=note,
    )


MISSED_SHOWN = 10
"""The most item ids a note names as missed; the count of the rest follows."""


def _missed(items: Sequence[Graded]) -> str:
    """The items whose verdict is not their label, by id and what the judge said (` Missed: good (ungraded), ...`)."""
    missed = [f"{i.item} ({i.verdict}, labelled {i.label})" for i in items if i.verdict != i.label and i.item]
    if not missed:
        return ""
    more = f", and {len(missed) - MISSED_SHOWN} more" if len(missed) > MISSED_SHOWN else ""
    return f" Missed: {', '.join(missed[:MISSED_SHOWN])}{more}."


def _split(items: Sequence[Graded]) -> str:
    """The items whose verdict stood 2-1, by id (` Split 2-1: good (pass, labelled pass).`): a person should look."""
    split = [f"{i.item} ({i.verdict}, labelled {i.label})" for i in items if i.split and i.item]
    if not split:
        return ""
    more = f", and {len(split) - MISSED_SHOWN} more" if len(split) > MISSED_SHOWN else ""
    return f" Split 2-1: {', '.join(split[:MISSED_SHOWN])}{more}."


def with_samples(agreement: GroupAgreement, invalid_reasons: Sequence[str | None]) -> GroupAgreement:
    """`agreement` with the samples drawn on its items (each one's invalid reason, None for a valid sample) counted
    into it: a group whose every sample was invalid says so with the causes, since its judge was not measured and
    did not disagree."""
    invalid = [r for r in invalid_reasons if r is not None]
    if not invalid_reasons:
        return agreement
    causes = [invalid_cause(r) for r in invalid]
    note = agreement.note
    if len(invalid) == len(invalid_reasons):
        note = f"Not calibrated: {len(invalid)} of {len(invalid)} samples invalid: {counted(causes)}."
    elif invalid:
        note = f"{note} {len(invalid)} of {len(invalid_reasons)} samples invalid: {counted(causes)}."
    return agreement.model_copy(
        update={
            "samples": len(invalid_reasons),
            "invalid_samples": len(invalid),
            "invalid_causes": causes,
            "note": note,
        }
    )


def judge_was_down(groups: Sequence[GroupAgreement]) -> bool:
    """Whether no sample of the run's calibration was valid, so the judge was never heard from
    (docs/design.md#fail-closed: a run whose judge was down cannot pass itself off as judged)."""
    drawn = [g for g in groups if g.samples]
    return bool(drawn) and all(g.invalid_samples == g.samples for g in drawn)
