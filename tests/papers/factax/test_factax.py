"""FacTax: windows, label parsing, alignment, the metrics of Tables 2, 6, 7 and Figure 2, and the method's
protocol with the *scripted* backend (a rule-driven test double, not a model)."""

import pytest

from sumjudge.data.error_taxonomy import ADDITION, ENTITY, PREDICATE
from sumjudge.data.records import FaithExample
from sumjudge.judges.settings import make_config
from sumjudge.llm import NullCache, ParseError, run_sync
from sumjudge.llm.engine import LLM
from sumjudge.llm.scripted import ScriptedBackend
from sumjudge.metrics import error_type_criteria, error_type_f1, length_buckets, pooled_balanced_accuracy
from sumjudge.papers.factax.alignment import align, sentence_scores
from sumjudge.papers.factax.protocol import parse_factax
from sumjudge.papers.factax.windows import sentences, windows
from sumjudge.run.methods import get_method


def test_sentences_respect_abbreviations_initials_and_numbers():
    text = "Mr. Smith met Dr. J. Doe at 3.5 p.m. in the U.S. office. They agreed! Did they sign? \"Yes.\" Then lunch"
    assert sentences(text) == ["Mr. Smith met Dr. J. Doe at 3.5 p.m. in the U.S. office.", "They agreed!",
                               "Did they sign?", "\"Yes.\"", "Then lunch"]
    assert sentences("no punctuation at all") == ["no punctuation at all"] and sentences("  ") == []
    assert sentences("lowercase dialogue summary. second one.") == ["lowercase dialogue summary.", "second one."]


def test_windows_keep_whole_sentences_and_never_cut_a_long_one():
    s = ["a " * 10, "b " * 15, "c " * 10, "d " * 40, "e " * 5]
    s = [x.strip() for x in s]
    w = windows(s, 30)
    assert w == [s[0] + " " + s[1], s[2], s[3], s[4]]  # 10+15 fit; +10 would be 35; 40 alone; then 5
    assert all(any(x in win for win in w) for x in s) and " ".join(w).split() == " ".join(s).split()
    assert windows(s, 0) == s  # one sentence per window
    assert windows(s, None) == [" ".join(s)]  # the whole summary
    assert windows(s, 1000) == [" ".join(s)] and windows([], 30) == []
    # a pronoun-only sentence stays with its antecedent when the window allows (no coreference split)
    assert windows(["Anna bought a car.", "She paid cash."], 30) == ["Anna bought a car. She paid cash."]


@pytest.mark.parametrize("text,labels", [
    ("- Reasoning: fine.\n- Label: Factually_Correct", ["Factually_Correct"]),
    ("- Reasoning: two problems.\n- Label: Entity_Error, Predicate_Error", ["Entity_Error", "Predicate_Error"]),
    ("**Reasoning:** x\n**Label:** entity error; addition errors", ["Entity_Error", "Addition_Error"]),
    ("Reasoning: the label could be Entity_Error.\n- Labels: Circumstantial Error", ["Circumstantial_Error"]),
    ("- Label: Coreference_Error\n(second thought)\n- Label: Factually Correct", ["Factually_Correct"]),
])
def test_label_parsing_single_multiple_and_formats(text, labels):
    assert parse_factax(text)[0] == labels


@pytest.mark.parametrize("text", ["The summary is fine.", "- Reasoning: ok\n- Label: ...", "- Label: Wrong_Error"])
def test_malformed_labels_are_parse_errors(text):
    with pytest.raises(ParseError):
        parse_factax(text)


def test_alignment_retrieves_the_sentences_with_the_best_rouge_recall():
    doc = ("The weather was mild. The council approved the budget of ten million. Dogs bark at night. "
           "The mayor said the budget funds new schools. Nothing else happened.")
    summary = "The council approved a budget that funds new schools."
    scores = sentence_scores(sentences(doc), summary)
    assert scores.index(max(scores)) in (1, 3) and scores[2] == 0
    ctx, info = align(doc, summary, n=2)
    assert ctx == "The council approved the budget of ten million. The mayor said the budget funds new schools."
    assert info["selected"] == [1, 3]
    ctx, info = align(doc, summary, max_tokens=9)  # budget in words here: the 8-word sentence fits, the 9-word one not after
    assert info["context_tokens"] <= 9 and ctx in ("The council approved the budget of ten million.",
                                                   "The mayor said the budget funds new schools.")
    assert align("short doc.", summary, max_tokens=100) == ("short doc.", {"aligned": False, "doc_tokens": 2})


def test_macro_is_the_mean_of_domain_scores_pooled_within_a_domain():
    from sumjudge.papers.factax.tables import macro

    # CNN/DM: two datasets pooled (micro); XSum: one; Reports: a Pearson score
    cnn_a = ([1, 1, 0, 0], [1, 0, 0, 0])  # tp(consistent)... pooled below
    cnn_b = ([1, 0], [1, 1])
    pooled = pooled_balanced_accuracy([cnn_a, cnn_b])
    # pooled: y = 1 1 0 0 1 0, p = 1 0 0 0 1 1 -> recall on 1 = 2/3, on 0 = 2/3 -> 2/3
    assert pooled == pytest.approx(2 / 3)
    xsum = pooled_balanced_accuracy([([1, 0, 1, 0], [1, 0, 0, 0])])  # 1/2 and 1 -> 0.75
    assert xsum == pytest.approx(0.75)
    assert macro({"CNN/DM": pooled, "XSum": xsum, "Reports": 0.40}) == pytest.approx((2 / 3 + 0.75 + 0.40) / 3)
    assert macro({"CNN/DM": pooled, "XSum": None}) == pytest.approx(2 / 3)  # a missing domain is not a zero


def test_error_type_f1_and_the_four_criteria_on_hand_worked_sets():
    gold = [[ENTITY], [ENTITY, PREDICATE], [], [ADDITION], [PREDICATE]]
    pred = [[ENTITY], [ENTITY], [ENTITY], [], [PREDICATE, ADDITION]]
    f1 = error_type_f1(gold, pred, [ENTITY, PREDICATE, ADDITION])
    assert f1[ENTITY]["f1"] == pytest.approx(2 * 2 / (2 * 2 + 1 + 0))  # tp 2, fp 1 (the correct summary), fn 0
    assert f1[PREDICATE]["f1"] == pytest.approx(2 * 1 / (2 + 0 + 1))
    assert f1[ADDITION]["f1"] == pytest.approx(0.0) and f1[ADDITION]["support"] == 1
    c = error_type_criteria(gold, pred)  # the four incorrect summaries
    assert c["n"] == 4
    assert c["exact"] == pytest.approx(25.0)  # only the first
    assert c["subset"] == pytest.approx(50.0)  # first, second (empty prediction is not a subset answer)
    assert c["overlap"] == pytest.approx(75.0)  # first, second, fifth
    assert c["superset"] == pytest.approx(50.0)  # first, fifth


def test_length_buckets():
    rows = length_buckets([5, 15, 25, 60], [1, 0, 1, 1], [1, 1, None, 1], [0, 10, 50])
    assert [(r["bucket"], r["n"], r["accuracy"]) for r in rows] == [("0-9", 1, 1.0), ("10-49", 1, 0.0), ("50+", 1, 1.0)]


EX = FaithExample(id="e1", dataset="t", document="Anna bought a red car on Monday. She paid cash.",
                  summary="Anna bought a blue car on Monday. She paid cash. " + "It was a very nice day for everyone. " * 3,
                  label=0, error_types=[ENTITY])


def judge(backend, method="factax-wd", **cfg):
    llm = LLM(backend, cache=NullCache())
    spec = get_method(method)
    return run_sync(spec.judge(EX, llm, make_config(spec.config_cls, cfg))), backend


def verdicts(r):
    return "- Reasoning: colour.\n- Label: Entity_Error" if "blue" in r.messages[-1]["content"].split("### Statement")[1] \
        else "- Reasoning: fine.\n- Label: Factually_Correct"


def test_windows_reach_the_backend_together_and_any_error_makes_the_summary_wrong():
    j, be = judge(ScriptedBackend().add("### Statement", verdicts), window_words=12)
    wins = [w["window"] for w in j.details["windows"]]
    assert j.details["n_windows"] == 4 and len(set(wins)) == 2  # identical windows share one call
    assert be.batches == [2]  # every distinct window in one batch
    assert j.label == 0 and j.details["predicted_types"] == [ENTITY]
    assert j.score == pytest.approx((j.details["n_windows"] - 1) / j.details["n_windows"])
    prompts = [r.messages[-1]["content"] for r in be.requests]
    assert all(EX.document in p for p in prompts) and all("Now you are one of the greatest" in p for p in prompts)
    j, be = judge(ScriptedBackend().add("### Statement", verdicts), method="factax")
    assert len(be.requests) == 1 and j.label == 0 and j.details["n_windows"] == 1


def test_an_unreadable_window_leaves_the_summary_without_label_unless_another_window_errs():
    def some_unreadable(r):
        return "I cannot tell." if "nice day" in r.messages[-1]["content"].split("### Statement")[1] else verdicts(r)

    j, _ = judge(ScriptedBackend().add("### Statement", some_unreadable), window_words=12)
    assert j.label == 0  # the first window says Entity_Error: wrong whatever the unreadable ones say
    ok = FaithExample(**{**EX.__dict__, "summary": "She paid cash. It was a nice day."})
    llm = LLM(ScriptedBackend().add("### Statement", some_unreadable), cache=NullCache(), parse_retries=1)
    spec = get_method("factax-wd")
    j = run_sync(spec.judge(ok, llm, make_config(spec.config_cls, {"window_words": 0})))
    assert j.label is None and not j.parsed and llm.usage.parse_failures == 1


def test_long_documents_are_aligned_per_window():
    long_doc = " ".join(f"Filler sentence number {i} about weather." for i in range(300)) + " Anna bought a red car."
    ex = FaithExample(id="long", dataset="t", document=long_doc, summary="Anna bought a red car.", label=1)
    be = ScriptedBackend().add("### Statement", "- Label: Factually_Correct")
    spec = get_method("factax-wd")
    j = run_sync(spec.judge(ex, LLM(be, cache=NullCache()), make_config(spec.config_cls, {"align_over": 500})))
    w = j.details["windows"][0]
    assert w["alignment"]["aligned"] and len(w["alignment"]["selected"]) == 5
    assert "Anna bought a red car." in be.requests[0].messages[-1]["content"]
    assert be.requests[0].messages[-1]["content"].count("Filler") == 4


def test_star_and_g_eval_consistency_baselines_threshold_their_scores():
    be = ScriptedBackend().add("stars", "Stars: 4")
    j, _ = judge(be, method="star")
    assert (j.score, j.label) == (4.0, 1)
    j, _ = judge(ScriptedBackend().add("stars", "**2 stars**"), method="star")
    assert (j.score, j.label) == (2.0, 0)
    be = ScriptedBackend(options=lambda r: {o: (0.6 if o == "5" else 0.1) for o in r.options})
    j, _ = judge(be, method="g-eval-consistency")
    assert j.score == pytest.approx(0.6 * 5 + 0.1 * (1 + 2 + 3 + 4)) and j.label == 1


def test_a_types_f1_is_shown_beside_what_saying_the_type_to_every_summary_gives():
    """Page 42: Predicate Error on 8 of 20 summaries; a judge that says it everywhere reaches F1 2·8/28 = 57.1."""
    from sumjudge.papers.factax.tables import all_yes_f1

    assert round(all_yes_f1(8, 20), 1) == 57.1 and all_yes_f1(0, 20) == 0 and all_yes_f1(0, 0) is None


def test_a_macro_over_fewer_domains_than_the_papers_names_the_papers_mean_over_the_same_columns():
    """Page 40: XSum (qags-xsum standing in for Wang'20) and Dialogues: the paper's own cells of those two columns,
    per domain and then averaged, as `paper_same_columns`; a column the paper does not print gives none."""
    from sumjudge.papers.factax.tables import Part, macro_note, papers_cells_present, present_columns
    from sumjudge.report import paper_value

    parts = [Part(name="qags-xsum", dataset="qags-xsum", column="wang20", domain="XSum", run=None),
             Part(name="diasumfact", dataset="diasumfact", column="diasumfact", domain="Dialogues", run=None)]
    same = papers_cells_present(parts, "table2", "FACTAX")
    cells = [paper_value("factax", "table2", "FACTAX", c) for c in ("wang20", "diasumfact")]
    assert same == pytest.approx({"XSum": cells[0], "Dialogues": cells[1], "MACRO": sum(cells) / 2})
    said = macro_note(["XSum", "Dialogues"], present_columns(parts))
    assert said.startswith("MACRO over the 2 domains present here (XSum, Dialogues)")
    assert "`paper_same_columns` averages the paper's own cells of the columns present here (wang20, diasumfact)" in said
    assert papers_cells_present(parts + [Part(name="x", dataset="x", column="nope", domain="XSum", run=None)],
                                "table2", "FACTAX") is None
    assert "paper_same_columns" not in macro_note(["XSum"])
