"""The rules and shapes the specs define: pure, importing only pydantic and the standard library."""

from kindgi_eval.rules.accuracy import (
    ACCURACY_GROUP,
    AccuracyCase,
    GRADERS,
    Grade,
    Grader,
    accuracy_criterion,
    check_accuracy,
    item_grade,
    pattern_problem,
    PatternBudget,
)
from kindgi_eval.rules.agent_protocol import (
    Agent,
    AgentAnswer,
    AgentReply,
    AgentTurn,
    CACHE_BREAKS,
    Completion,
    ContactModel,
    Judge,
    ReplyError,
    Usage,
)
from kindgi_eval.rules.assertions import Assertion, AssertionResult, agent_failure, check_case, joined_reply
from kindgi_eval.rules.calibration import CalibrationFile, Graded, GroupAgreement, THRESHOLD, agree_by_group, judge_was_down, with_samples
from kindgi_eval.rules.cases import CalibrationItem, Case, Contact, Expect, Label, Role, Turn
from kindgi_eval.rules.custom import ANSWER_LIMIT, HANDLER_CHECK, HANDLER_ERROR, Answer, Handler, HandlerExit, HandlerVerdict, MEMORY_EXIT, RAISED_EXIT, check_handler, judge_exit, out_of_time, read_answer, skipped
from kindgi_eval.rules.criteria import Criterion, DIMENSION_RULES, GROUPS, Group, group_of, meant_dimension
from kindgi_eval.rules.errors import InputError, Problem, problems_from_validation
from kindgi_eval.rules.suite_limits import DEFAULT_LIMITS, Over, PlannedCalls, SuiteLimits, budget_problem, case_problems, planned_calls
from kindgi_eval.rules.intervals import Interval, PairedChange, bootstrap_mean, mcnemar_exact, paired_change, wilson
from kindgi_eval.rules.judged_rates import METHOD as CORRECTION_METHOD, CorrectedRate, JudgeError, LabelsNeeded, corrected_rate, labels_to_halve
from kindgi_eval.rules.pairwise import (
    ORDERS,
    PAIRWISE_GROUP,
    Judgement,
    Outcome,
    PairwiseAgreement,
    PairwiseCalibration,
    PairwiseCase,
    Preference,
    Variant,
    WinRate,
    combine,
    pairwise_agreement,
    preferred_variant,
    read_judgement,
    win_rate,
)
from kindgi_eval.rules.night import FINDINGS, WORSE, Finding, FindingKind, RunFacts, RunState, alerted, is_worse, suite_findings, worst_first
from kindgi_eval.rules.model_names import ModelRef, checked_model, parse_model
from kindgi_eval.rules.progress import Progress
from kindgi_eval.rules.scenarios import (
    DEFAULT_MAX_TURNS,
    MOST_TURNS,
    SCRIPT,
    ContactReply,
    PlayedTurn,
    Scenario,
    check_scenario,
    contact_cache_key,
    evidence_turn,
    is_over,
    read_contact_reply,
    read_transcript_sample,
    transcript,
)
from kindgi_eval.rules.statuses import FAILING, STATUSES, Status, case_status, run_failed
from kindgi_eval.rules.tenant import Course, CrossReferenceError, Escalation, Prohibition, Slug, Tenant
from kindgi_eval.rules.text import clip, is_text, safe, unicode_text
from kindgi_eval.rules.verdicts import NO_CREDENTIALS, REFUSED_CREDENTIALS, VERDICT_SCHEMA, Majority, SAMPLES, counted, decide, invalid_cause, read_sample

__all__ = ["CORRECTION_METHOD", "CorrectedRate", "JudgeError", "LabelsNeeded", "corrected_rate", "labels_to_halve", "VERDICT_SCHEMA", "NO_CREDENTIALS", "REFUSED_CREDENTIALS", "counted", "invalid_cause", "judge_was_down", "with_samples", "ANSWER_LIMIT", "HANDLER_CHECK", "HANDLER_ERROR", "Answer", "Handler", "HandlerExit", "HandlerVerdict", "MEMORY_EXIT", "RAISED_EXIT", "check_handler", "judge_exit", "out_of_time", "read_answer", "skipped", "ACCURACY_GROUP", "AccuracyCase", "Agent", "AgentAnswer", "AgentReply", "AgentTurn", "Assertion", "AssertionResult", "CalibrationFile", "CalibrationItem", "Case", "Completion", "Contact", "Course", "Criterion", "CrossReferenceError", "DIMENSION_RULES", "Escalation", "Expect", "FAILING", "GRADERS", "GROUPS", "Grade", "Graded", "Grader", "Group", "GroupAgreement", "InputError", "Interval", "Judge", "Judgement", "Label", "Majority", "ModelRef", "ORDERS", "Outcome", "PAIRWISE_GROUP", "PairedChange", "PairwiseAgreement", "PairwiseCalibration", "PairwiseCase", "Preference", "Progress", "Problem", "Prohibition", "ReplyError", "Role", "SAMPLES", "STATUSES", "Slug", "Status", "THRESHOLD", "Tenant", "Turn", "Usage", "Variant", "WinRate", "accuracy_criterion", "agent_failure", "agree_by_group", "bootstrap_mean", "case_status", "check_accuracy", "check_case", "checked_model", "clip", "combine", "decide", "group_of", "is_text", "meant_dimension", "item_grade", "joined_reply", "mcnemar_exact", "paired_change", "pairwise_agreement", "parse_model", "pattern_problem", "preferred_variant", "problems_from_validation", "read_judgement", "read_sample", "run_failed", "safe", "unicode_text", "wilson", "win_rate", "DEFAULT_LIMITS", "Over", "PlannedCalls", "SuiteLimits", "budget_problem", "case_problems", "planned_calls", "PatternBudget", "CACHE_BREAKS", "FINDINGS", "WORSE", "Finding", "FindingKind", "RunFacts", "RunState", "alerted", "is_worse", "suite_findings", "worst_first", "ContactModel", "DEFAULT_MAX_TURNS", "MOST_TURNS", "SCRIPT", "PlayedTurn", "ContactReply", "contact_cache_key", "read_contact_reply", "Scenario", "check_scenario", "evidence_turn", "is_over", "read_transcript_sample", "transcript"]
