"""The rules and shapes the specs define: pure, importing only pydantic and the standard library."""

from kindgi_eval.spec.agent_protocol import (
    Agent,
    AgentAnswer,
    AgentReply,
    AgentTurn,
    Completion,
    Judge,
    ReplyError,
    Usage,
)
from kindgi_eval.spec.assertions import Assertion, check_case, joined_reply
from kindgi_eval.spec.calibration import THRESHOLD, CalibrationFile, Graded, GroupAgreement, agree_by_group
from kindgi_eval.spec.cases import CalibrationItem, Case, Label, Role, Turn
from kindgi_eval.spec.criteria import DIMENSION_RULES, GROUPS, Criterion, criteria_for, group_of
from kindgi_eval.spec.errors import InputError, Problem, problems_from_validation
from kindgi_eval.spec.model_names import ModelRef, checked_model, parse_model
from kindgi_eval.spec.statuses import FAILING, STATUSES, Status, case_status
from kindgi_eval.spec.tenant import Course, CrossReferenceError, Escalation, Prohibition, Slug, Tenant
from kindgi_eval.spec.text import clip, safe
from kindgi_eval.spec.verdicts import SAMPLES, Majority, decide, read_sample

__all__ = ["Agent", "AgentAnswer", "AgentReply", "AgentTurn", "Assertion", "CalibrationFile", "CalibrationItem", "Case", "Completion", "Course", "Criterion", "CrossReferenceError", "DIMENSION_RULES", "Escalation", "FAILING", "GROUPS", "Graded", "GroupAgreement", "InputError", "Judge", "Label", "Majority", "ModelRef", "Problem", "Prohibition", "ReplyError", "Role", "SAMPLES", "STATUSES", "Slug", "Status", "THRESHOLD", "Tenant", "Turn", "Usage", "agree_by_group", "case_status", "check_case", "checked_model", "clip", "criteria_for", "decide", "group_of", "joined_reply", "parse_model", "problems_from_validation", "read_sample", "safe"]
