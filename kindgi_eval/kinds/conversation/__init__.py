"""The `conversation` kind: multi-turn cases held to assertions and, with a calibrated judge, to criteria. It adds
nothing of its own to the shared chain; its consumer is the registry's own, whose suite folder format every kind
writes its folder in."""

from kindgi_eval.kinds.kind import SuiteKind
from kindgi_eval.registry import CONVERSATION

KIND = SuiteKind(name="conversation", consumer=CONVERSATION)
