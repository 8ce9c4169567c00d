"""The `conversation` kind: multi-turn cases held to assertions and, with a calibrated judge, to criteria. It adds
nothing of its own to the shared chain."""

from kindgi_eval.kinds.kind import SuiteKind

KIND = SuiteKind(name="conversation")
