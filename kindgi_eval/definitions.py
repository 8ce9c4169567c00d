"""The Dagster definitions `dagster dev -w workspace.yaml` loads: the asset chain, its store and settings."""

import dagster as dg

from kindgi_eval.assets import CHAIN
from kindgi_eval.io_manager import ParquetStore
from kindgi_eval.resources import EvalSettings

defs = dg.Definitions(
    assets=CHAIN,
    resources={"io_manager": ParquetStore(), "eval_settings": EvalSettings()},
    executor=dg.in_process_executor,
)
