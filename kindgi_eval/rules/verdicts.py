"""Reading one judge sample, and the three-sample majority that turns samples into a verdict
(docs/design.md#three-samples-and-the-majority)."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from kindgi_eval.rules.cases import Label
from kindgi_eval.rules.text import clip, is_text

Vote = Literal["pass", "fail", "invalid"]
FinalVerdict = Literal["pass", "fail", "ungraded"]

SAMPLES = 3
"""Samples per criterion: the smallest odd count that lets one stray sample be outvoted."""

_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL)
_DETAIL_CHARS = 200
"""The longest error or parse problem kept in a sample's invalid reason."""


class Verdict(BaseModel):
    """One judge sample's answer on one criterion: all three keys given, each a string; a failure quotes the reply.

    Unknown keys are dropped, not refused, as docs/design.md#verdicts-and-evidence says.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)

    verdict: Label
    """Whether the reply meets the criterion."""
    evidence: str
    """A verbatim span of the reply; must be non-empty on `fail`, may be empty on `pass`."""
    reason: str
    """Why, in a sentence."""


VERDICT_SCHEMA = {
    "name": "verdict",
    "strict": True,
    "schema": {
        **{k: v for k, v in Verdict.model_json_schema().items() if k != "description"},
        "additionalProperties": False,
    },
}
"""The Verdict object as a response schema (OpenAI's `json_schema` form): what a judge's answer is asked to be where
the model supports structured output. The answer is read as untrusted all the same (`read_sample`)."""


class Sample(BaseModel):
    """One judge sample on one criterion, as read: a vote, or invalid with the reason it was refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    vote: Vote
    """The sample's verdict, or `invalid` when it counts toward neither side."""
    evidence: str = ""
    """The span of the reply the judge quoted; kept on an unquoted failure so a reader sees the claim."""
    reason: str = ""
    """The judge's own reason, in its words."""
    invalid_reason: str | None = None
    """Why the sample was refused (`unparseable: ...`, `unquoted failure: ...`, `error: ...`); None when valid."""

    @model_validator(mode="after")
    def _reason_iff_invalid(self) -> Sample:
        if (self.vote == "invalid") != (self.invalid_reason is not None):
            raise ValueError("invalid_reason is given exactly when the vote is invalid")
        return self


class Majority(NamedTuple):
    """The verdict three samples reach on one criterion."""

    verdict: FinalVerdict
    """`pass` or `fail` when two valid samples agree, else `ungraded`."""
    split: bool
    """True when the verdict stands 2-1 against a valid opposing sample, so a person should look."""


def read_sample(content: str | None, reply_text: str, error: str | None = None) -> Sample:
    """Read one judge answer as untrusted input (docs/design.md#model-output-is-untrusted); anything but a well-formed,
    quoted verdict is invalid.

    `content` is the answer's text or the offered tool call's arguments: one JSON object holding
    `verdict` ("pass" or "fail"), `evidence` and `reason`, all strings, alone or inside one markdown code
    fence (```json or ```); a missing key or a value of the wrong type is unparseable, an unknown key is
    ignored. `reply_text` is the reply's messages joined with a space, the text `must_contain` checks,
    so a failure's evidence is held to the same substring rule.
    `error` is a timeout, rate limit or provider error met while asking: it never counts as a vote
    (docs/design.md#fail-closed). Never raises.
    """
    if error is not None:
        return _invalid(f"error: {clip(error, _DETAIL_CHARS) or 'no detail given'}")
    if content is None:
        return _invalid("unparseable: the answer has no content")
    body = content.strip()
    fenced = _FENCE.fullmatch(body)
    if fenced:
        body = fenced.group(1)
    try:
        found = json.loads(body, object_pairs_hook=_refuse_duplicate_keys)
    except (ValueError, RecursionError) as exc:
        return _invalid(f"unparseable: not a JSON object ({clip(str(exc), _DETAIL_CHARS)})")
    if not isinstance(found, dict):
        return _invalid("unparseable: JSON, but not an object")
    try:
        verdict = Verdict.model_validate(found)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'object'}: {e['msg']}" for e in exc.errors())
        return _invalid(f"unparseable: {clip(problems, _DETAIL_CHARS)}")
    untext = [name for name in ("evidence", "reason") if not is_text(getattr(verdict, name))]
    if untext:  # JSON may escape half a surrogate pair: not a character, and no store can hold it
        return _invalid(
            f"unparseable: {' and '.join(untext)} holds a lone surrogate escape, which is not a Unicode character"
        )
    if verdict.verdict == "fail" and not verdict.evidence:
        return _invalid("unquoted failure: no evidence given", verdict)
    if verdict.verdict == "fail" and verdict.evidence not in reply_text:
        return _invalid("unquoted failure: the evidence is not in the reply", verdict)
    return Sample(vote=verdict.verdict, evidence=verdict.evidence, reason=verdict.reason)


def majority(votes: Sequence[Vote]) -> Majority:
    """Two valid samples that agree decide; a 2-1 verdict stands and is split; anything less is ungraded."""
    if len(votes) != SAMPLES:
        raise ValueError(f"a criterion is decided by {SAMPLES} samples, got {len(votes)}")
    passes, fails = votes.count("pass"), votes.count("fail")
    if passes >= 2:
        return Majority("pass", split=fails == 1)
    if fails >= 2:
        return Majority("fail", split=passes == 1)
    return Majority("ungraded", split=False)


def decide(samples: Sequence[tuple[int, Vote]]) -> tuple[list[Vote], Majority]:
    """One criterion's votes in sample order, given as (sample number, vote), and the verdict they reach: the
    majority of SAMPLES samples; a criterion with fewer samples recorded is ungraded."""
    votes = [vote for _, vote in sorted(samples)]
    return votes, majority(votes) if len(votes) == SAMPLES else Majority("ungraded", False)


def _invalid(why: str, verdict: Verdict | None = None) -> Sample:
    if verdict is None:
        return Sample(vote="invalid", invalid_reason=why)
    return Sample(vote="invalid", evidence=verdict.evidence, reason=verdict.reason, invalid_reason=why)


def _refuse_duplicate_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    # A key given twice would be read as its last value here and perhaps its first elsewhere: refuse it.
    found = dict(pairs)
    if len(found) != len(pairs):
        raise ValueError("a key is given twice")
    return found


NO_CREDENTIALS = "Missing credentials"
"""What the OpenAI client says, through litellm, of a call made with no key at all (and so a model call's error)."""
REFUSED_CREDENTIALS = "refused the credentials"
"""What a model call's error says when the provider refused its key (`llm.calls`)."""


def invalid_cause(reason: str) -> str:
    """An invalid sample's cause in a few words, for counting: `missing credentials`, `refused credentials`,
    `timeout`, `provider error`, `unparseable` or `unquoted failure`."""
    if not reason.startswith("error: "):
        return reason.split(":", 1)[0]
    if NO_CREDENTIALS in reason:
        return "missing credentials"
    if REFUSED_CREDENTIALS in reason:
        return "refused credentials"
    if "timeout" in reason or "no answer within" in reason:
        return "timeout"
    return "provider error"


def counted(causes: Sequence[str]) -> str:
    """Causes counted, most first, then by name: `15 missing credentials, 2 unparseable`."""
    counts = Counter(causes)
    return ", ".join(f"{n} {cause}" for cause, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
