"""``sumjudge plan`` against what runs on the tiny model make: the same calls and prompt tokens for a protocol whose
calls do not depend on the answers, an upper bound for a debate that stops when its agents agree."""

import json

import pytest

from sumjudge.llm import NullCache
from sumjudge.llm.engine import LLM
from sumjudge.perf.plan import Rates, measured_completions, plan_run
from sumjudge.run.folder import RunConfig
from sumjudge.run.runs import run


def actual(tiny_backend, tmp_path, method, dataset, level, limit, settings):
    rc = RunConfig(method=method, dataset=dataset, level=level, limit=limit, backend="hf", model="tiny",
                   settings=settings)
    m = run(rc, tmp_path / method, llm=LLM(tiny_backend, cache=NullCache(), parse_retries=0), progress=False)
    return m["engine"]


@pytest.mark.slow
def test_plan_counts_what_a_run_makes(tiny_backend, tiny_model_dir, tmp_path):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    common = dict(profile="ci", tokenizer=tok, model="tiny", context_length=tiny_backend.capabilities.context_length,
                  rates=Rates(tokens_per_s=100.0, prefill_tokens_per_s=1000.0, price_in=1.0, price_out=2.0))
    spec = {"method": "zero-shot", "dataset": "tofueval-meetingbank", "level": "sentence"}
    p = plan_run("zero-shot", spec, limit=5, **common)
    a = actual(tiny_backend, tmp_path, "zero-shot", "tofueval-meetingbank", "sentence", 5, {"max_new_tokens": 16})
    assert (p.calls, p.prompt_tokens) == (a["calls"], a["prompt_tokens"])  # deterministic: equal
    assert p.completion_tokens_at_most == 16 * p.calls >= a["completion_tokens"]
    assert p.dollars == pytest.approx(p.prompt_tokens / 1e6 + 2 * p.completion_tokens_at_most / 1e6, abs=0.01)
    assert p.hours == pytest.approx((p.prompt_tokens / 1000 + p.completion_tokens_at_most / 100) / 3600, abs=0.01)

    spec = {"method": "madisse", "dataset": "tofueval-meetingbank", "level": "sentence"}
    p = plan_run("madisse", spec, limit=3, **common)
    a = actual(tiny_backend, tmp_path, "madisse", "tofueval-meetingbank", "sentence", 3, {"max_new_tokens": 16})
    assert p.unreadable == 0 and a["calls"] <= p.calls  # the debate stops early when its agents agree: bounded
    # the longest path: 3 examples x (4 agents asked twice against their stance in round 1, 4 in each of rounds 2-3,
    # 3 adjudicators)
    assert p.calls == 3 * (4 * 2 + 4 * 2 + 3)


def test_plan_command_prints_a_row_per_run_and_a_total(capsys):
    from sumjudge.cli import main as cli

    assert cli.main(["plan", "--runs", "zero-shot", "--limit", "3", "--price-in", "1"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.strip().splitlines()]
    assert [r["run"] for r in rows] == ["zero-shot", "total"] and rows[0]["calls"] == 3 and rows[0]["prompt_tokens"] > 0
    assert cli.main(["plan", "--runs", "nope"]) == cli.EXIT_USAGE


def test_replicas_and_prefix_hits_divide_the_hours_not_the_work(capsys):
    """``--replicas N`` shares the tokens over N servers (wall hours / N, server hours the same); a prefix-hit share
    takes that share of the prompt tokens out of the prefill; the assumption is said."""
    from sumjudge.cli import main as cli
    from sumjudge.errors import ConfigError
    from sumjudge.perf.plan import Rates

    rates = Rates(tokens_per_s=1000, prefill_tokens_per_s=10000, replicas=4, prefix_hit_share=0.5)
    assert rates.hours(72_000_000, 3_600_000) == pytest.approx((3600 + 3600) / 3600 / 4)
    for bad in (dict(replicas=0), dict(prefix_hit_share=1.0), dict(prefix_hit_share=-0.1)):
        with pytest.raises(ConfigError):
            Rates(**bad)
    args = ["plan", "--runs", "zero-shot", "--limit", "3"]
    assert cli.main(args) == 0
    one = json.loads(capsys.readouterr().out.splitlines()[0])
    assert cli.main(args + ["--replicas", "4", "--prefix-hit-share", "0.5"]) == 0
    out = capsys.readouterr()
    four = json.loads(out.out.splitlines()[0])
    assert (four["calls"], four["prompt_tokens"], four["dollars"]) == (one["calls"], one["prompt_tokens"],
                                                                     one["dollars"])
    assert four["server_hours"] <= one["server_hours"] and "4 server(s)" in out.err and "50%" in out.err


@pytest.mark.slow
def test_completion_tokens_come_from_a_real_run_where_one_answered_the_same_requests(tiny_backend, tiny_model_dir,
                                                                                       tmp_path):
    """With the calls.jsonl of a real run of the same requests, the plan's completion tokens are that run's, call by
    call; requests no run answered keep the cap."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    a = actual(tiny_backend, tmp_path, "zero-shot", "tofueval-meetingbank", "sentence", 3, {"max_new_tokens": 16})
    measured = measured_completions(tmp_path)
    assert len(measured) == a["calls"] == 3
    common = dict(profile="ci", tokenizer=tok, model="tiny", context_length=tiny_backend.capabilities.context_length)
    spec = {"method": "zero-shot", "dataset": "tofueval-meetingbank", "level": "sentence"}
    p = plan_run("zero-shot", spec, limit=3, measured=measured, **common)
    assert p.completion_measured_calls == 3 and p.completion_tokens_at_most == a["completion_tokens"]
    more = plan_run("zero-shot", spec, limit=5, measured=measured, **common)  # two requests no run answered
    assert more.completion_measured_calls == 3
    assert more.completion_tokens_at_most == a["completion_tokens"] + 2 * 16


def test_a_planned_notebook_runs_on_the_planner_in_its_own_folders(tmp_path, monkeypatch):
    """What ``sumjudge plan --notebooks`` sets (SUMJUDGE_PLAN) makes a notebook's session plan: its engine is the
    planner, reading measured answers from the profile's own run folders of the notebook; its runs go to the plan's
    folder, its tables to SUMJUDGE_FIGURES; unset, nothing changes."""
    import dataclasses

    from sumjudge import notebook, paths
    from sumjudge.llm.types import ChatRequest
    from sumjudge.perf import plan

    monkeypatch.setattr(notebook, "project_root", lambda: tmp_path)
    monkeypatch.setattr(paths, "project_root", lambda: tmp_path)  # where paths.runs_dir() puts the run folders
    real = notebook.Session("00_quickstart", profile="ci").runs_dir()
    assert real.is_relative_to(tmp_path / "build" / "runs")
    req = ChatRequest(messages=[{"role": "user", "content": "Is it consistent?"}], max_new_tokens=16)
    real.mkdir(parents=True)
    (real / "run-1").mkdir()
    (real / "run-1" / "calls.jsonl").write_text(json.dumps(
        {"event": "chat", "request": req.to_json(), "response": {"completion_tokens": 7}}) + "\nnot json\n")
    setting = plan.PlanSetting(tokenizer=None, model="planned-model", context_length=8192,
                               runs_dir=str(tmp_path / "planned"))
    monkeypatch.setenv("SUMJUDGE_FIGURES", str(tmp_path / "figs"))
    s = notebook.Session("00_quickstart", profile="ci", planner=json.dumps(dataclasses.asdict(setting)))
    assert s.runs_dir().is_relative_to(tmp_path / "planned") and paths.figures_dir() == tmp_path / "figs"
    assert s.llm.backend.info.name == "plan" and s.llm_for("mesa") is s.llm
    assert s.llm.backend.measured == {plan.answer_key(req): 7}
    monkeypatch.delenv("SUMJUDGE_FIGURES")
    assert notebook.Session("00_quickstart", profile="ci").runs_dir() == real
    assert paths.figures_dir() == paths.project_root() / "figures"


@pytest.mark.slow
def test_plan_notebooks_plans_each_run_of_a_notebook_and_leaves_no_trace(tiny_model_dir, tiny_backend):
    """Notebook 00 executed on the planner (ci profile, the tiny model's tokenizer): a row for its zero-shot run with
    the calls and prompt tokens ``plan_run`` gives for the same run, a notebook total and a grand total; nothing
    written to figures/ or the notebook's run folders."""
    from transformers import AutoTokenizer

    from sumjudge.paths import project_root
    from sumjudge.perf.plan import plan_notebooks

    before = sorted(p for p in (project_root() / "figures").rglob("*") if "00_quickstart" in str(p))
    ctx = tiny_backend.capabilities.context_length
    shown = []
    rows = plan_notebooks("00", profile="ci", tokenizer=str(tiny_model_dir), model="tiny", context_length=ctx,
                          limit=2, measured=False, on_rows=shown.append)
    assert shown == [rows[:2], rows[2:]]  # the notebook's rows as soon as it is planned, then the total
    assert [r["run"].split("-")[0] for r in rows] == ["zero", "00_quickstart total", "total"] and "error" not in rows[0]
    spec = {"method": "zero-shot", "dataset": "tofueval-meetingbank", "level": "summary"}
    p = plan_run("zero-shot", spec, profile="ci", tokenizer=AutoTokenizer.from_pretrained(str(tiny_model_dir)),
                 model="tiny", context_length=ctx, limit=2)
    assert (rows[0]["calls"], rows[0]["prompt_tokens"], rows[0]["examples"]) == (p.calls, p.prompt_tokens, 2)
    assert rows[1]["calls"] == rows[2]["calls"] == p.calls
    assert rows[0]["notebook"] == rows[1]["notebook"] == "00_quickstart" and rows[2]["notebook"] == ""
    assert sorted(p for p in (project_root() / "figures").rglob("*") if "00_quickstart" in str(p)) == before
    assert not list((project_root() / "build" / "plan").iterdir())


def test_each_reading_guide_quotes_its_notebooks_plan_as_the_docs_table_gives_it():
    """The notebooks' opening cells quote the paper-setting plan of docs/benchmark.md's per-notebook table (what
    ``sumjudge plan --notebooks`` printed): the same calls and dollars, so the two cannot drift apart unnoticed."""
    import re

    import nbformat

    from sumjudge.paths import project_root

    root = project_root()
    table = [line.split("|")[1:-1] for line in (root / "docs" / "benchmark.md").read_text().splitlines()
             if re.match(r"\| \d\d_\w+ \| \d+ \|", line)]
    assert len(table) >= 13
    for cells in table:
        name, calls, dollars = cells[0].strip(), cells[2].strip(), cells[8].strip()
        intro = nbformat.read(root / "notebooks" / f"{name}.ipynb", as_version=4).cells[0].source
        assert f"counts {calls} model calls" in intro, name
        d = float(dollars.replace(",", ""))
        assert (f"${d:,.2f} at" if d < 10 else f"${round(d):,} at") in intro, name


def test_a_notebook_is_planned_with_the_context_its_profile_gives_it(monkeypatch):
    """The smoke profile cuts prompts to each notebook's context (1,024 tokens; 3,264 for MESA): planned without
    --context-length, each notebook's prompts are cut as its run cuts them; a given context wins; a profile with
    none plans with 131,072."""

    from sumjudge.perf.plan import plan_notebooks
    from sumjudge.run import notebooks as notebook_jobs

    seen: list[int] = []
    monkeypatch.setattr(notebook_jobs, "execute", lambda nb, profile, out, n=None, plan=None: seen.append(
        json.loads(plan)["context_length"]))
    plan_notebooks("00 30", profile="smoke", model="m")
    plan_notebooks("00", profile="smoke", model="m", context_length=4096)
    plan_notebooks("00", profile="paper", model="m")
    assert seen == [1024, 5376, 4096, 131072]


def test_every_session_of_a_notebook_is_given_the_plan():
    """The planner reaches a notebook only as its ``plan`` parameter: each notebook that opens a Session declares
    it and passes it to every Session it opens (no setting read from the environment)."""
    import re

    from sumjudge.run.notebooks import notebook_parameters, notebooks

    for nb in notebooks(""):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        opened = re.findall(r"notebook\.Session\((?:[^()]|\([^()]*\))*\)", code)
        if opened:
            assert "plan" in notebook_parameters(nb), nb.name
            assert all("planner=plan" in s for s in opened), (nb.name, [s for s in opened if "planner" not in s])


def test_the_docs_plan_table_is_the_committed_plan():
    """docs/benchmark.md's plan of the paper profile's runs is ``plan.plan_table`` of the committed
    figures/scale/plan-paper.jsonl (``make scale`` writes it), not numbers typed."""
    import json

    from sumjudge.paths import project_root
    from sumjudge.perf.plan import plan_table

    root = project_root()
    rows = [json.loads(x) for x in (root / "figures" / "scale" / "plan-paper.jsonl").read_text().splitlines() if x]
    assert [r["run"] for r in rows] == ["zero-shot", "self-consistency", "madisse", "mesa", "total"]
    assert plan_table(rows) in (root / "docs" / "benchmark.md").read_text()
