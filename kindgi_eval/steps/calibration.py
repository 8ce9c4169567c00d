"""The `calibration` stage: the judge's agreement with the hand labels per group, from its samples."""

from __future__ import annotations

from collections.abc import Sequence

from kindgi_eval.spec import CalibrationFile, agree_by_group, groups_of
from kindgi_eval.steps.judge_samples import graded_items
from kindgi_eval.store import CalibrationRow, SampleRow


def calibration_rows(
    judge: str | None, samples: Sequence[SampleRow], calibration_file: CalibrationFile, kind: str = "conversation"
) -> list[CalibrationRow]:
    """One row per calibration group of the suite's kind, in order; none without a judge."""
    if judge is None:
        return []
    graded = graded_items(samples)
    agreement = agree_by_group(graded, calibration_file="items" if graded else calibration_file, groups=groups_of(kind))
    return [CalibrationRow(**a.model_dump(), judge=judge) for a in agreement.values()]
