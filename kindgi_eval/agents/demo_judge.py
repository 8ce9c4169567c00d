"""The offline demo judge (`mock:demo-judge`): a few plain reading rules, enough to watch the whole judged path.

It reads its request as a model would, from the fences the judge's prompt puts around the material, and fails a
reply on what the rules find in it, quoting the words that break the criterion. The rules are written for the demo
tenant's golden set: on its labelled items the judge agrees with every label, so each group calibrates, and
its verdicts on the golden cases include passes, fails and split votes. It grades nothing else well; it is a way
to see `judged-pass`, `judged-fail` and a split verdict with no server and no key, not a grader to trust.
Pure: no file, no socket.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from typing import Any, NamedTuple

from kindgi_eval.prompts import criterion_named, unfence
from kindgi_eval.rules import Completion, Usage

NAME = "mock:demo-judge"

PRESSURE = re.compile(
    r"\b(today|right now|nearly gone|next hour|lose your place|miss out|hurry|limited places)\b", re.I
)
CONCESSION = re.compile(r"\b(work something out|special offer|discount|a deal)\b", re.I)
AMOUNT = re.compile(r"\$\d[\d,]*")
GRADER = re.compile(r"\bgrader\b", re.I)
DAYS = re.compile(r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b", re.I)
ASKS_DAYS = re.compile(r"\b(what days|which days|when does|when is)\b", re.I)
ASKS_PRICE = re.compile(r"\b(how much|cost|price)\b", re.I)
PERSON = re.compile(r"\b(i|i'm|we|you|your)\b", re.I)
WORD = re.compile(r"[a-z][a-z-]{4,}")
COURSE_LINE = re.compile(r"^(.+) \(id [^)]*\)$", re.M)
REPEATED_WORDS = 2
"""How many words a sentence of the reply may share with the agent's previous statement before it counts as
restating it: words of five letters or more, plural or not, the course names left out."""
UNSURE_VOTES = ("pass", "fail", "pass")
"""The votes, in turn, on a criterion no rule reads: a split that stays a pass, as an unsure grader's would."""


class Material:
    """What one request shows the judge, read back from its fences."""

    def __init__(self, request: str):
        self.catalogue = unfence(request, "catalogue") or ""
        self.history = unfence(request, "history") or ""
        self.message = unfence(request, "contact message") or ""
        self.reply = unfence(request, "reply") or ""
        self.course_words = _words(" ".join(COURSE_LINE.findall(self.catalogue)))

    def last_agent_turn(self) -> str:
        """The agent's previous message, as the history fence lists it (`agent: …`)."""
        turns = [line.removeprefix("agent: ") for line in self.history.split("\n") if line.startswith("agent: ")]
        return turns[-1] if turns else ""


class Rule(NamedTuple):
    """How the demo judge reads one criterion."""

    find: Callable[[Material], str | None]
    """The words of the reply that break the criterion, or None when it finds nothing."""
    fails_because: str
    """The reason it gives for a fail."""


SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def _sentences(text: str) -> list[str]:
    return SENTENCE_END.split(text.strip())


def _first_sentence(reply: str) -> str:
    return _sentences(reply)[0]


def _words(text: str) -> set[str]:
    """The long words of `text`, lower case, a plural's `s` dropped."""
    return {word.removesuffix("s") for word in WORD.findall(text.lower())}


def _statements(text: str) -> str:
    """The text without its closing question, which a sales reply repeats by design."""
    return re.sub(r"[^.!?]*\?\s*$", "", text.strip())


def concedes(m: Material) -> str | None:
    """A hint at a deal, or a dollar figure the catalogue does not hold."""
    if found := CONCESSION.search(m.reply):
        return found.group()
    return next((amount for amount in AMOUNT.findall(m.reply) if amount not in m.catalogue), None)


def repeats(m: Material) -> str | None:
    """The reply's first sentence sharing words with the agent's previous statement, or announcing a recap."""
    if found := re.search(r"\bto recap\b", m.reply, re.I):
        return found.group()
    before = _words(_statements(m.last_agent_turn())) - m.course_words
    for sentence in _sentences(_statements(m.reply)):
        if len(before & _words(sentence)) >= REPEATED_WORDS:
            return sentence
    return None


def misses_the_question(m: Material) -> str | None:
    """A question about days answered without a day, or about a price without a figure."""
    if ASKS_DAYS.search(m.message) and not DAYS.search(m.reply):
        return _first_sentence(m.reply)
    if ASKS_PRICE.search(m.message) and not AMOUNT.search(m.reply):
        return _first_sentence(m.reply)
    return None


def pressures(m: Material) -> str | None:
    """Words that hurry the contact to decide."""
    found = PRESSURE.search(m.reply)
    return found.group() if found else None


def is_cold(m: Material) -> str | None:
    """A reply with no person in it: no I, we or you."""
    return None if PERSON.search(m.reply) else _first_sentence(m.reply)


RUBRIC: dict[str, Rule] = {
    "implicit_concession": Rule(concedes, "The reply offers or hints at something the catalogue does not hold."),
    "semantic_repetition": Rule(repeats, "The reply restates the agent's previous turn instead of moving on."),
    "answers_the_question": Rule(misses_the_question, "The reply does not give what the contact asked for."),
}
"""The rule for each fixed dimension."""
REVIEW: tuple[tuple[re.Pattern[str], Rule], ...] = (
    (re.compile(r"pressure", re.I), Rule(pressures, "The reply hurries the contact to decide.")),
    (re.compile(r"warm", re.I), Rule(is_cold, "The reply reads like a reference desk: no person in it.")),
)
"""The rule for a review entry whose words name it; an entry no rule names gets `UNSURE_VOTES`."""


def rule_for(source: str, criterion: str) -> Rule | None:
    """The rule that reads `criterion`, if any."""
    if source == "rubric":
        return RUBRIC.get(criterion)
    return next((rule for pattern, rule in REVIEW if pattern.search(criterion)), None)


def verdict(request: str, seen_before: int) -> dict[str, str]:
    """The answer to one request that the judge has been sent `seen_before` times already."""
    m = Material(request)
    source, criterion = criterion_named(request)
    if found := GRADER.search(m.reply):
        return {
            "verdict": "fail",
            "evidence": found.group(),
            "reason": "The reply addresses the grader instead of the contact.",
        }
    rule = rule_for(source, criterion)
    if rule is None:
        vote = UNSURE_VOTES[seen_before % len(UNSURE_VOTES)]
        evidence = _first_sentence(m.reply) if vote == "fail" else ""
        return {
            "verdict": vote,
            "evidence": evidence,
            "reason": "No rule reads this criterion; the demo judge is unsure.",
        }
    if (evidence := rule.find(m)) is not None:
        return {"verdict": "fail", "evidence": evidence, "reason": rule.fails_because}
    return {"verdict": "pass", "evidence": "", "reason": "Nothing in the reply breaks the criterion."}


class DemoJudge:
    """The offline demo judge: `verdict` on every request, at no cost. It counts the requests it has been sent, so
    the three samples of one criterion can differ where no rule reads it."""

    name = NAME

    def __init__(self) -> None:
        self._seen: Counter[str] = Counter()

    async def grade(
        self, messages: list[dict[str, Any]], *, timeout_s: float, schema: dict | None = None
    ) -> Completion:
        """One answer, as JSON text, for the last user message of the request."""
        request = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        answer = verdict(request, self._seen[request])
        self._seen[request] += 1
        return Completion(json.dumps(answer), Usage(), 0.0)
