"""The golden set: the demo tenant's suite, `evals/golden` in the repository, shipped inside the package (its
`golden` folder is that folder, so the two never differ) so that the defaults work from any folder. Reads whether a
folder exists, nothing else."""

from __future__ import annotations

from pathlib import Path

from kindgi_eval.inputs.settings import DEFAULT_EVAL_DIR

GOLDEN_DIR = Path(__file__).parents[1] / "golden"
"""The golden set this package ships: cases.jsonl and calibration.jsonl."""


def default_eval_dir(cwd: Path | None = None) -> str:
    """The suite folder a run takes when neither EVAL_DIR nor --eval-dir names one: `evals/golden` where the working
    folder has one (a checkout of the repository), else the golden set this package ships."""
    if ((cwd or Path.cwd()) / DEFAULT_EVAL_DIR).is_dir():
        return DEFAULT_EVAL_DIR
    return str(GOLDEN_DIR)


def is_packaged_golden(eval_dir: str | Path) -> bool:
    """Whether `eval_dir` is the golden set this package ships (not a folder of the working folder)."""
    return Path(eval_dir) == GOLDEN_DIR
