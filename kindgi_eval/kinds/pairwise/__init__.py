"""The `pairwise` kind: two agent variants answer the same prompts and a calibrated judge compares them in both orders."""

from collections.abc import Mapping

from kindgi_eval.kinds.kind import KindRows, SuiteKind
from kindgi_eval.kinds.pairwise.report import both_variants, pairwise_lines, pairwise_summary_json
from kindgi_eval.kinds.pairwise.stage import agreement_of, judge_pairwise, pair_key, pairwise_askings, pairwise_columns
from kindgi_eval.spec import PairwiseCase


def _columns(rows: KindRows) -> Mapping[str, object]:
    return pairwise_columns(rows.suite[0], rows.pairwise)


KIND = SuiteKind(name="pairwise", case_model=PairwiseCase, enters_funnel=False, askings=pairwise_askings, columns=_columns,
                 lines=pairwise_lines, summary=pairwise_summary_json, against=both_variants)

__all__ = ["KIND", "agreement_of", "judge_pairwise", "pair_key", "pairwise_columns"]
