"""The `calibration` stage: the judge's agreement with the hand labels per group, from its samples."""

from __future__ import annotations

from collections.abc import Sequence

from kindgi_eval.rules import GROUPS, CalibrationFile, Group, agree_by_group, with_samples
from kindgi_eval.steps.judge_samples import graded_items
from kindgi_eval.store import CalibrationRow, SampleRow


def calibration_rows(
    judge: str | None, samples: Sequence[SampleRow], calibration_file: CalibrationFile, groups: Sequence[Group] = GROUPS
) -> list[CalibrationRow]:
    """One row per calibration group of the suite's kind (`groups`, in order), with its samples' invalid causes
    counted; none without a judge."""
    if judge is None:
        return []
    graded = graded_items(samples)
    agreement = agree_by_group(graded, calibration_file="items" if graded else calibration_file, groups=tuple(groups))
    reasons = {
        group: [s.invalid_reason for s in samples if s.subject == "calibration" and s.group == group]
        for group in agreement
    }
    return [
        CalibrationRow(**with_samples(a, reasons[group]).model_dump(), judge=judge) for group, a in agreement.items()
    ]
