"""The `conversation` kind: multi-turn cases held to assertions and, with a calibrated judge, to criteria. It adds
nothing of its own to the shared chain; its consumer is the registry's own, whose suite folder format every kind
writes its folder in."""

from pathlib import Path

from kindgi_eval.kinds.kind import Starter, SuiteKind
from kindgi_eval.registry import CONVERSATION

STARTER = Starter(
    Path(__file__).parent / "starter",
    (
        "check it: kindgi-eval validate {folder} --config-dir {folder}",
        "run it: kindgi-eval run --mock --eval-dir {folder} --config-dir {folder}",
    ),
)

KIND = SuiteKind(name="conversation", consumer=CONVERSATION, starter=STARTER)
