"""FacTax's supervised paradigm: the pair builder (both completion kinds, settings, ratio control, no test
leakage) and a tiny training run that lowers the loss and whose saved model reloads and predicts through
the engine (hf backend)."""

import json

import pytest

from sumjudge.data.error_taxonomy import ADDITION, ENTITY, UNMAPPED
from sumjudge.data.records import FaithExample
from sumjudge.llm import ConfigError
from sumjudge.papers.factax.sft import pairs as factax_pairs


def ex(i, label, types=(), dataset="one", doc=None):
    return FaithExample(id=f"{dataset}{i}", dataset=dataset, document=doc or f"Document {i}: Anna bought a red car.",
                        summary=f"Summary {i}.", label=label, error_types=list(types))


SET_I = [ex(0, 1), ex(1, 0, [ENTITY]), ex(2, 0, [ENTITY, ADDITION]), ex(3, 0, [UNMAPPED]), ex(4, 1),
         ex(5, 0, dataset="untyped"), ex(6, 1, dataset="untyped", doc="The test document.")]
SET_II = [ex(i, i % 2, dataset="synthetic") for i in range(10)]
TEST = [ex(99, 1, dataset="test", doc="The test document.")]


def test_settings_build_both_completion_kinds_and_keep_test_documents_out():
    b = factax_pairs.build("I-Binary", SET_I, TEST)
    assert {p.kind for p in b.pairs} == {"binary"} and len(b.pairs) == 6 and b.dropped_test_documents == 1
    assert all("The test document." not in p.prompt for p in b.pairs)
    t = factax_pairs.build("I-Taxonomy", SET_I, TEST)
    typed = [p for p in t.pairs if p.kind == "taxonomy"]
    assert [p.completion for p in typed] == [" Factually_Correct", " Entity_Error", " Entity_Error, Addition_Error",
                                             " Factually_Correct"]  # the unmapped one and untyped datasets get none
    assert t.no_type_pair == 1 and all("Entity_Error:" in p.prompt for p in typed)
    assert [p.completion for p in t.pairs if p.example_id == "one1"] == [" Factually_Incorrect", " Entity_Error"]
    both = factax_pairs.build("I&II-Taxonomy", SET_I, TEST, SET_II, t_ratio=0.2, seed=1)
    n_typed = sum(p.kind == "taxonomy" for p in both.pairs)
    assert len(both.pairs) == 16 and n_typed == 3  # the total stays the binary pairs (6 + 10); 20% of it typed
    assert not any(p.dataset == "synthetic" and p.kind == "taxonomy" for p in both.pairs)
    s = both.stats(test_size=len(TEST))
    assert s["train"] == len(both.pairs) and s["t_ratio"] == pytest.approx(100 * n_typed / len(both.pairs))
    with pytest.raises(ConfigError):
        factax_pairs.build("I-Everything", SET_I, TEST)


def test_ratio_control_keeps_table5s_total_at_twenty_percent_typed():
    binary = [factax_pairs.Pair(f"b{i}", " Factually_Correct", "binary", f"b{i}", "d") for i in range(1000)]
    typed = [factax_pairs.Pair(f"t{i}", " Entity_Error", "taxonomy", f"t{i}", "d") for i in range(60)]
    b, t = factax_pairs.ratio_control(binary, typed, 0.2, seed=0)
    assert len(b) + len(t) == 1000 and len(t) == 200  # Table 5: 116,393 pairs, 20% of them typed
    assert len({p.example_id for p in t}) == 60 and {p.example_id for p in b} <= {p.example_id for p in binary}
    assert [p.example_id for p in b] == sorted((p.example_id for p in b), key=lambda x: int(x[1:]))  # order kept
    b2, t2 = factax_pairs.ratio_control(binary, typed * 10, 0.2, seed=0)
    assert len(t2) == 200 and len(b2) == 800  # enough typed pairs: sampled without replacement
    with pytest.raises(ConfigError):
        factax_pairs.ratio_control(binary, typed, 1.0)


def test_leakage_check_compares_letters_and_digits_only():
    test = [ex(0, 1, dataset="test", doc="Tom: See you at 5 🙂\nAnn: OK!")]
    train = [ex(1, 1, doc="tom: see you at 5\nann:  ok"), ex(2, 0, doc="Tom: See you at 6\nAnn: OK!")]
    b = factax_pairs.build("I-Binary", train, test)
    assert b.dropped_test_documents == 1 and [p.example_id for p in b.pairs] == ["one2"]


def test_an_over_long_document_is_cut_inside_the_prompt_keeping_summary_and_assistant_header(tiny_model_dir):
    from transformers import AutoTokenizer

    from sumjudge.papers.factax.sft.train import fit_pair, tokenize_pair

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    doc = " ".join(f"Sentence number {i} says the council met on day {i}." for i in range(400))
    long = ex(0, 0, [ENTITY], doc=doc)
    long.summary = "The council never met on the final day of the session."
    for pair in (factax_pairs.binary_pair(long), factax_pairs.taxonomy_pair(long)):
        row = tokenize_pair(tok, pair, max_length=256)
        assert len(row["input_ids"]) <= 256
        prompt = [t for t, lab in zip(row["input_ids"], row["labels"]) if lab == -100]
        completion = tok.decode([t for t in row["labels"] if t != -100])
        text = tok.decode(prompt)
        assert long.summary in text and "Sentence number 0 says" in text and "day 399." not in text
        header = tok.apply_chat_template([{"role": "user", "content": "x"}], add_generation_prompt=True, tokenize=False)
        assert text.endswith(header.split("x")[-1])  # the assistant header, then the completion
        assert completion.startswith(pair.completion.strip()) or pair.completion.strip() in completion
        ids, cut = fit_pair(tok, pair, 256 - 8)
        assert cut > 0 and len(ids) <= 248
    with pytest.raises(ConfigError, match="instruction and summary alone"):
        fit_pair(tok, factax_pairs.binary_pair(long), 20)


def test_a_completion_ends_as_the_chat_templates_turn_ends_and_a_base_model_gets_eos(tiny_model_dir):
    from transformers import AutoTokenizer

    from sumjudge.papers.factax.sft.train import completion_ids, tokenize_pair

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)  # Llama-3's: a turn ends with <|eot_id|>
    ids = completion_ids(tok, " Factually_Correct")
    assert tok.decode(ids) == "Factually_Correct<|eot_id|>" and ids[-1] == tok.convert_tokens_to_ids("<|eot_id|>")
    row = tokenize_pair(tok, factax_pairs.binary_pair(ex(0, 1)), max_length=512)
    assert [t for t in row["labels"] if t != -100] == ids == row["input_ids"][-len(ids):]
    tok.chat_template = None  # a base model: the paper's bare completion and the end of the sequence
    bare = completion_ids(tok, " Factually_Correct")
    assert tok.decode(bare) == " Factually_Correct" + tok.eos_token and bare[-1] == tok.eos_token_id


def test_gradient_accumulation_reaches_the_papers_effective_batch_and_paper_refuses_the_tiny_model(tmp_path):
    from sumjudge.papers.factax.sft.train import CONFIGS, accumulation_steps, base_model_for

    assert accumulation_steps(CONFIGS["paper"], 1) == 8 and accumulation_steps(CONFIGS["paper"], 8) == 1
    assert accumulation_steps(CONFIGS["paper"], 2) == 4
    with pytest.raises(ConfigError):
        accumulation_steps(CONFIGS["paper"], 3)
    with pytest.raises(ConfigError, match="base_model"):
        base_model_for("", "paper", tmp_path)
    assert base_model_for("meta-llama/Meta-Llama-3-8B", "paper", tmp_path) == ("meta-llama/Meta-Llama-3-8B", False)


def test_a_trained_model_is_reused_only_for_the_same_base_pairs_and_config(tiny_model_dir, tmp_path):
    from sumjudge.papers.factax.sft.train import CONFIGS, trained_before, training_key

    pairs = factax_pairs.build("I-Binary", SET_I, TEST).pairs
    key = training_key(str(tiny_model_dir), pairs, CONFIGS["lora"], 1)
    assert key == training_key(str(tiny_model_dir), list(pairs), CONFIGS["lora"], 1)
    others = [training_key(str(tiny_model_dir), pairs[:-1], CONFIGS["lora"], 1),
              training_key(str(tiny_model_dir), pairs, CONFIGS["paper"], 1),
              training_key(str(tiny_model_dir), pairs, CONFIGS["lora"], 2),
              training_key("org/another-base", pairs, CONFIGS["lora"], 1)]
    assert key not in others and len(set(others)) == 4
    out = tmp_path / "sft"
    out.mkdir()
    (out / "sumjudge_sft.json").write_text(json.dumps({"key": key, "losses": [1.0]}))
    assert trained_before(out, key) is None  # no model files: not whole
    (out / "config.json").write_text("{}")
    assert trained_before(out, key)["losses"] == [1.0] and trained_before(out, others[0]) is None


def test_training_sets_from_files_docnli_format_and_typed_set_one(tmp_path):
    """Training Set II from a DocNLI-format file: per-dataset sampling, test documents never sampled;
    Training Set I from a file with an error_types column feeds Error Type Completion."""
    from sumjudge.data import registry

    docnli = tmp_path / "train.json"
    rows = [{"premise": "The test document." if i == 0 else f"Premise {i}.", "hypothesis": f"Claim {i}.",
             "label": "entailment" if i % 2 else "not_entailment"} for i in range(30)]
    docnli.write_text(json.dumps(rows))
    spec = f"file:{docnli}?document=premise&summary=hypothesis&labels=entailment:1,not_entailment:0"
    two = factax_pairs.sample_set_two({"docnli": registry.load(spec), "small": SET_II}, TEST, per_dataset=12, seed=3)
    assert len(two) == 12 + 10 and not any(e.document == "The test document." for e in two)
    assert two == factax_pairs.sample_set_two({"docnli": registry.load(spec), "small": SET_II}, TEST, per_dataset=12,
                                              seed=3)  # seeded
    frank = tmp_path / "frank.csv"
    frank.write_text("document,summary,label,types\nD1.,S1.,0,Entity Error; addition_error\nD2.,S2.,1,\n")
    one = registry.load(f"file:{frank}?error_types=types")
    assert [e.error_types for e in one] == [[ADDITION, ENTITY], []]
    t = factax_pairs.build("I-Taxonomy", one, TEST)
    assert [p.completion for p in t.pairs if p.kind == "taxonomy"] == [" Entity_Error, Addition_Error",
                                                                      " Factually_Correct"]
    bad = tmp_path / "bad.csv"
    bad.write_text("document,summary,label,types\nD1.,S1.,0,Typo Error\n")
    from sumjudge.data.sources import DataFormatError

    with pytest.raises(DataFormatError, match=r"bad.csv, row 2, field 'types': unknown error type 'Typo Error'"):
        registry.load(f"file:{bad}?error_types=types")


@pytest.mark.slow
def test_a_few_cpu_steps_lower_the_loss_and_the_model_reloads_and_predicts(tiny_model_dir, tmp_path):
    from sumjudge.judges.settings import make_config
    from sumjudge.llm import NullCache, run_sync
    from sumjudge.llm.engine import LLM
    from sumjudge.llm.hf import HFBackend
    from sumjudge.papers.factax.sft.train import train
    from sumjudge.run.methods import get_method

    pairs = factax_pairs.build("I-Taxonomy", SET_I, TEST).pairs[:4]
    out = tmp_path / "sft"
    info = train(str(tiny_model_dir), pairs, out, "lora", max_steps=12, learning_rate=5e-3, epochs=1,
                 effective_batch_size=1)
    losses = info["losses"]
    assert len(losses) == 12 and sum(losses[-3:]) / 3 < sum(losses[:3]) / 3  # the loss goes down
    assert json.loads((out / "sumjudge_sft.json").read_text())["config"]["lora"] is True
    # the same base, pairs and config again: the model is kept, its files untouched (its answers stay cached)
    stamp = (out / "model.safetensors").stat().st_mtime_ns
    again = train(str(tiny_model_dir), pairs, out, "lora", max_steps=12, learning_rate=5e-3, epochs=1,
                  effective_batch_size=1)
    assert again["reused"] and not info["reused"] and again["losses"] == losses
    assert (out / "model.safetensors").stat().st_mtime_ns == stamp
    llm = LLM(HFBackend(str(out)), cache=NullCache())  # the merged model loads like any model folder
    spec = get_method("factax-sft")
    for mode in ("binary", "taxonomy"):
        j = run_sync(spec.judge(SET_I[1], llm, make_config(spec.config_cls, {"inference": mode,
                                                                            "fallback": "option_scores"})))
        assert j.label in (0, 1) and j.details["inference"] == mode


@pytest.mark.slow
def test_a_cpu_computing_bfloat16_natively_trains_in_mixed_precision_under_its_own_key(tiny_model_dir, tmp_path,
                                                                                        monkeypatch):
    from sumjudge.papers.factax.sft import train as training
    from sumjudge.papers.factax.sft.train import train

    pairs = factax_pairs.build("I-Binary", SET_I, TEST).pairs[:2]
    opts = dict(max_steps=2, learning_rate=5e-3, epochs=1, effective_batch_size=1)
    out = tmp_path / "sft"
    monkeypatch.setattr(training, "cpu_has_native_bf16", lambda: False)  # where the training reads it
    full = train(str(tiny_model_dir), pairs, out, "lora", **opts)
    monkeypatch.setattr(training, "cpu_has_native_bf16", lambda: True)
    mixed = train(str(tiny_model_dir), pairs, out, "lora", **opts)
    # another precision is another model: trained again, not reused; bf16 autocast moves the losses
    assert (full["precision"], mixed["precision"]) == ("fp32", "bf16") and not mixed["reused"]
    assert mixed["key"] != full["key"] and mixed["losses"] != full["losses"]
    assert all(abs(a - b) < 0.1 * abs(a) for a, b in zip(full["losses"], mixed["losses"]))


def test_a_named_base_model_is_resolved_as_the_engine_resolves_it(tmp_path, monkeypatch, tiny_model_dir):
    from sumjudge.llm import models
    from sumjudge.papers.factax.sft.train import base_model_for

    monkeypatch.setattr(models, "prepare_smoke_model", lambda dest=None: tmp_path / "smoke-folder")
    assert base_model_for("smoke", "smoke", tmp_path) == (str(tmp_path / "smoke-folder"), False)
    assert base_model_for(str(tiny_model_dir), "smoke", tmp_path) == (str(tiny_model_dir), False)


def test_table4_compares_the_base_zero_shot_with_the_papers_base_and_gives_intervals(tmp_path):
    from sumjudge.papers.factax import tables as factax_tables

    def cell(name, pairs):
        d = tmp_path / name
        d.mkdir()
        rows = [{"example": {"label": y, "meta": {}}, "judgement": {"label": p}} for y, p in pairs]
        (d / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        metrics = {"n": len(pairs), "unparsed": sum(p is None for _, p in pairs), "bacc": None}
        (d / "metrics.json").write_text(json.dumps(metrics))
        return metrics, d

    right = [(1, 1), (0, 0)] * 10
    grid = {(factax_tables.ZERO_SHOT_BASE, "diasumfact"): cell("zs", [(1, 1), (0, 1), (1, 0), (0, 0)] * 5),
            ("I-Binary + INF-Binary", "diasumfact"): cell("sft", right[:-1] + [(0, None)])}
    rows = {(r["evaluator"], r["dataset"]): r for r in factax_tables.table4_rows(grid, "m")}
    zs, sft = rows[(factax_tables.ZERO_SHOT_BASE, "diasumfact")], rows[("I-Binary + INF-Binary", "diasumfact")]
    assert zs["experiment"] == "Table 4" and zs["paper"] == 62.8 and zs["reproduced"] == pytest.approx(50.0)
    assert rows[(factax_tables.ZERO_SHOT_BASE, "[MACRO]")]["paper"] == 62.4
    assert sft["paper"] == 72.6 and sft["reproduced"] == pytest.approx(100.0) and sft["unparsed"] == 1
    assert (sft["n"], sft["n_examples"]) == (19, 20)  # the readable labels the value rests on, of the examples
    assert zs["ci"] is not None and zs["ci"][0] < 50.0 < zs["ci"][1]


def test_table4_names_the_model_that_answered_each_row_from_its_run(tmp_path):
    """The base zero-shot row names the base model its run used; a fine-tuned row names the base plus the adapter
    its run's model folder holds; no row is named by the profile."""
    from sumjudge.papers.factax import tables as factax_tables
    from sumjudge.papers.factax.sft.steps import trained_folder

    def cell(name, model):
        d = tmp_path / name
        d.mkdir()
        (d / "results.jsonl").write_text("".join(json.dumps({"example": {"label": y, "meta": {}},
                                                             "judgement": {"label": y}}) + "\n" for y in (1, 0) * 5))
        return {"n": 10, "unparsed": 0, "bacc": 1.0, "engine": {"model": model}}, d

    grid = {(factax_tables.ZERO_SHOT_BASE, "diasumfact"): cell("zs", "base-0.5b"),
            ("I-Binary + INF-Binary", "diasumfact"): cell("b", trained_folder("I-Binary", "lora")),
            ("I&II-Taxonomy + INF-Taxonomy", "diasumfact"): cell("t", trained_folder("I&II-Taxonomy", "paper"))}
    models = {r["evaluator"]: r["model"] for r in factax_tables.table4_rows(grid, "smoke")}
    assert models == {factax_tables.ZERO_SHOT_BASE: "base-0.5b",
                      "I-Binary + INF-Binary": "base-0.5b + LoRA adapter I-Binary (sft-I-Binary-lora)",
                      "I&II-Taxonomy + INF-Taxonomy": "base-0.5b + fine-tune (paper) I&II-Taxonomy "
                                                      "(sft-I&II-Taxonomy-paper)"}


def test_the_warm_up_reaches_the_trainer_as_a_fraction_of_its_steps(tiny_model_dir, tmp_path, monkeypatch):
    """transformers 5.2 removed ``warmup_ratio`` (5.17 refuses it): the ratio goes in as ``warmup_steps`` below 1,
    which the trainer reads as a fraction of its steps; a ratio of 1 or more (it would be read as steps) is refused."""
    import transformers

    from sumjudge.papers.factax.sft.train import SFTConfig, train, warmup_fraction

    seen = []
    real = transformers.TrainingArguments

    class Args(real):  # what a transformers without ``warmup_ratio`` accepts
        def __init__(self, *a, **kw):
            if "warmup_ratio" in kw:
                raise TypeError("TrainingArguments.__init__() got an unexpected keyword argument 'warmup_ratio'")
            super().__init__(*a, **kw)
            seen.append(self)

    monkeypatch.setattr(transformers, "TrainingArguments", Args)
    pairs = factax_pairs.build("I-Taxonomy", SET_I, TEST).pairs[:2]
    train(str(tiny_model_dir), pairs, tmp_path / "sft", "lora", max_steps=2, epochs=1, effective_batch_size=1)
    assert seen and seen[0].warmup_steps == 0.05 and seen[0].get_warmup_steps(100) == 5
    assert warmup_fraction(SFTConfig(warmup_ratio=0.0)) == 0.0
    with pytest.raises(ConfigError, match=r"warmup_ratio 1.5 is not a fraction in \[0, 1\)"):
        warmup_fraction(SFTConfig(warmup_ratio=1.5))
