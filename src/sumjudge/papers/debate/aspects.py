"""The templates DEBATE scores SummEval's and Topical-Chat's aspects with (Appendix G.2 and its format: G-Eval's
prompts), registered with the shared aspects (``judges.aspects``), and the 1-5 fluency prompt DEBATE's own
judges use instead of G-Eval's 1-3 one (Table 2, Appendix H.1)."""

from __future__ import annotations

from sumjudge.judges.aspects import register_templates

register_templates("summeval", {
    "coherence": "debate/g2_summeval_coherence",
    "consistency": "debate/g2_format_summeval_consistency",
    "fluency": "debate/g2_format_summeval_fluency",
    "relevance": "debate/g2_format_summeval_relevance",
})
register_templates("topical-chat", {
    "naturalness": "debate/g2_format_topical_chat_naturalness",
    "coherence": "debate/g2_format_topical_chat_coherence",
    "engagingness": "debate/g2_format_topical_chat_engagingness",
    "groundedness": "debate/g2_format_topical_chat_groundedness",
})
# DEBATE and MultiAgent score SummEval fluency on 1-5 (DEBATE Table 2, Appendix H.1); G-Eval keeps its 1-3 prompt
# (dataset -> aspect -> template: the overrides of ``judges.aspects.aspects_for``)
DEBATE_TEMPLATES: dict[str, dict[str, str]] = {"summeval": {"fluency": "debate/g2_format_summeval_fluency_1to5"}}
