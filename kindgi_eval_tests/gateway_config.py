"""The gateway's config, deploy/litellm.yaml, with OpenAI's requests per minute changed: for the tests and benchmarks
that make the gateway's pacing bind. Imports no pytest, so that a benchmark can use it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

GATEWAY_CONFIG = Path(__file__).resolve().parents[1] / "deploy" / "litellm.yaml"


def with_openai_rpm(folder: Path, rpm: int) -> tuple[Path, dict[str, Any]]:
    """deploy/litellm.yaml with OpenAI's `rpm` in place of its own, written as `folder/litellm.yaml`; the file, and
    OpenAI's entry as it now stands (its `litellm_params`)."""
    config = yaml.safe_load(GATEWAY_CONFIG.read_text())
    (openai,) = [m for m in config["model_list"] if m["model_name"] == "openai/*"]
    openai["litellm_params"]["rpm"] = rpm
    path = folder / "litellm.yaml"
    path.write_text(yaml.safe_dump(config))
    return path, openai["litellm_params"]
