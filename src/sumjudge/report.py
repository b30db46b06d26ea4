"""Paper-vs-reproduced tables, figure/table writers and the transcript viewer used by the notebooks."""

from __future__ import annotations

import html
import json
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any, Iterable

from .paths import figures_dir


@lru_cache(maxsize=None)
def paper_results(paper: str) -> dict[str, Any]:
    import yaml

    f = files("sumjudge.papers").joinpath(paper).joinpath("results.yaml")
    return yaml.safe_load(f.read_text())


def paper_value(paper: str, table: str, row: str, column: str) -> Any:
    """A value as printed in the paper (None where the paper has no such cell)."""
    return paper_results(paper).get(table, {}).get("rows", {}).get(row, {}).get(column)


def comparison(rows: Iterable[dict[str, Any]]):
    """DataFrame with the paper's number beside ours for every row; rows are dicts with at least
    experiment, metric, paper, reproduced (plus any context columns such as model, n)."""
    import pandas as pd

    df = pd.DataFrame(list(rows))
    front = [c for c in ("experiment", "evaluator", "detector", "dataset", "level", "aspect", "metric", "paper", "reproduced")
             if c in df.columns]
    df = df[front + [c for c in df.columns if c not in front]]
    if {"paper", "reproduced"} <= set(df.columns):
        df["difference"] = [
            (r - p) if isinstance(p, (int, float)) and isinstance(r, (int, float)) else None
            for p, r in zip(df["paper"], df["reproduced"])
        ]
    return df


def out_dir(notebook: str) -> Path:
    d = figures_dir() / notebook
    d.mkdir(parents=True, exist_ok=True)
    return d


def save_table(df, notebook: str, name: str) -> Path:
    """Write ``figures/<notebook>/<name>.csv`` and ``.md``; returns the csv path."""
    d = out_dir(notebook)
    df.to_csv(d / f"{name}.csv", index=False)
    (d / f"{name}.md").write_text(df.to_markdown(index=False, floatfmt=".3g") + "\n")
    return d / f"{name}.csv"


def save_figure(fig, notebook: str, name: str) -> Path:
    d = out_dir(notebook)
    fig.savefig(d / f"{name}.png", dpi=150, bbox_inches="tight")
    fig.savefig(d / f"{name}.pdf", bbox_inches="tight")
    return d / f"{name}.png"


def read_calls(run_dir: str | Path) -> list[dict[str, Any]]:
    p = Path(run_dir) / "calls.jsonl"
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def transcript_html(calls: list[dict[str, Any]], scope: str, max_chars: int = 1500) -> str:
    """HTML of every call made for one example (scope = example id), in order: role tag, prompt
    (shortened), answer, tokens, cache hit."""
    esc = html.escape
    parts = [f"<div style='font-family:sans-serif'><h4>Transcript: {esc(scope)}</h4>"]
    seen = set()
    for c in calls:
        if c.get("scope") != scope or c.get("event") not in ("chat", "options") or c["key"] in seen:
            continue
        seen.add(c["key"])
        req, resp = c["request"], c["response"]
        prompt = req["messages"][-1]["content"]
        if len(prompt) > max_chars:
            prompt = prompt[: max_chars // 2] + "\n[...]\n" + prompt[-max_chars // 2:]
        answer = resp.get("text") if c["event"] == "chat" else json.dumps(resp.get("probs"))
        meta = (f"{resp.get('prompt_tokens', '')} prompt / {resp.get('completion_tokens', '')} completion tokens"
                if c["event"] == "chat" else "option scores")
        parts.append(
            f"<details><summary><b>{esc(c.get('tag') or c['event'])}</b> &middot; {esc(meta)}"
            f"{' &middot; cache hit' if c.get('cache_hit') else ''}</summary>"
            f"<pre style='white-space:pre-wrap;background:#f6f6f6'>{esc(prompt)}</pre></details>"
            f"<pre style='white-space:pre-wrap;border-left:3px solid #4a8;padding-left:6px'>{esc(answer or '')}</pre>")
    parts.append("</div>")
    return "".join(parts)


# The paper's columns are LLM-AggreFact's subsets (AggreFact-CNN/-XSum are AggreFact-FtSota's, not QAGS-C/X,
# which have no MADISSE values); TofuEval MeetingBank/MediaSum are the same data as LLM-AggreFact's TofuEval parts.
MADISSE_DATASET_COLUMNS = {"tofueval-meetingbank": "meetingbank", "tofueval-mediasum": "mediasum",
                           "llm-aggrefact-meetingbank": "meetingbank", "llm-aggrefact-mediasum": "mediasum",
                           "llm-aggrefact-cnn": "cnn", "llm-aggrefact-xsum": "xsum"}


def madisse_reported(method: str, dataset: str, level: str) -> tuple[float | None, float | None]:
    """(BAcc %, Krippendorff alpha) the MADISSE paper reports for ``method`` (Llama-3-70B): Table 3 at
    summary level / AggreFact, Table 33 at sentence level. (None, None) where the paper has no cell."""
    table = "table33_sentence" if level == "sentence" else "table3"
    cell = paper_value("madisse", table, method, MADISSE_DATASET_COLUMNS.get(dataset, dataset))
    return (cell[0], cell[1]) if cell else (None, None)


def faithfulness_rows(experiment: str, method: str, metrics: dict[str, Any], **context: Any) -> list[dict[str, Any]]:
    """Two comparison rows (BAcc in %, K-alpha) for a faithfulness run's metrics.json, with the paper's values."""
    p_bacc, p_alpha = madisse_reported(method, metrics["dataset"], metrics["level"])
    bacc = metrics.get("bacc")
    common = {"experiment": experiment, "dataset": metrics["dataset"], "level": metrics["level"], **context,
              "n": metrics["n_examples"], "unparsed": metrics.get("unparsed")}
    return [{**common, "metric": "BAcc (%)", "paper": p_bacc, "reproduced": None if bacc is None else 100 * bacc},
            {**common, "metric": "K-alpha", "paper": p_alpha, "reproduced": metrics.get("k_alpha")}]


def read_results(run_dir: str | Path) -> list[dict[str, Any]]:
    p = Path(run_dir) / "results.jsonl"
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def debate_html(result: dict[str, Any], max_chars: int = 600) -> str:
    """One MADISSE judgement (a results.jsonl row) as HTML: per session the stances, each round's
    labels and explanations, the adjudicators (order seen, label) and the final label beside the human one."""
    esc = html.escape
    ex, j = result["example"], result["judgement"]
    parts = [f"<div style='font-family:sans-serif'><h4>{esc(ex['id'])}</h4>",
             f"<p><b>Summary:</b> {esc(ex['summary'][:max_chars])}</p>",
             f"<p><b>Human label:</b> {ex['label']} &middot; <b>MADISSE:</b> {j['label']} ({esc(j['label_source'])})"
             + (f" &middot; votes {esc(json.dumps(j['scores']))}" if j.get("scores") else "") + "</p>"]
    for s in j["details"].get("sessions", []):
        parts.append(f"<h5>Session {s['index']}: stances {esc(str(s['stances']))}; "
                     f"{'consensus in round %d' % s['consensus_round'] if s['consensus_round'] else 'no consensus'}"
                     f" &rarr; {s['label']} ({esc(s['label_source'])})</h5><table border=1 cellpadding=4>"
                     "<tr><th>round</th><th>agent</th><th>label</th><th>explanation</th></tr>")
        for rnd in s["rounds"]:
            for t in rnd:
                parts.append(f"<tr><td>{t['round']}</td><td>{t['agent']}</td><td>{t['label']}</td>"
                             f"<td>{esc(t['explanation'][:max_chars])}</td></tr>")
        parts.append("</table>")
        for a in s.get("adjudication", []):
            parts.append(f"<p>Adjudicator {a['adjudicator']} (order {a['order']}): <b>{a['label']}</b> "
                         f"{esc(a['explanation'][:max_chars])}</p>")
    parts.append("</div>")
    return "".join(parts)
