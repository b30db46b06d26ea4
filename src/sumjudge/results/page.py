"""The results page of a profile: ``figures/results-<profile>/``, one markdown page per notebook (its tables, its
figures as PNG with the data they plot, its recorded answers) and an index with each notebook's provenance (commit,
model and its weights' sha256, dtype, machine, date, wall time), written by ``make reproduce`` from what the
notebooks saved under ``figures/<notebook>/``. Nothing is computed here but the words on what a table cannot show
(``results_notes``): the page is the notebooks' own tables.

A run of some notebooks (``make reproduce NOTEBOOKS=30``) rewrites those notebooks' pages, answers and provenance
and keeps every other notebook's: ``provenance.json`` holds one record per notebook, and the index is written
from it (``write_index``), so a slow notebook can be recorded on its own, on another machine.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from sumjudge.llm.models import resolve_model
from sumjudge.llm.recording import compress
from sumjudge.paths import project_root, runs_dir
from sumjudge.perf.machine import cpu_name
from sumjudge.report import PAPER_ONLY_ROW
from sumjudge.results.banner import index_banner, notebook_banner
from sumjudge.results.model_files import local_parameters, safetensors_parameters, weights_sha256
from sumjudge.results.notes import kind_of, notes
from sumjudge.results.reading_guides import guide_for, reading_guides
from sumjudge.run.replay import ANSWERS, ANSWERS_PLAIN


def commit() -> str:
    """The checked-out commit, with ``+changes`` when tracked files other than the results pages differ from it
    ("unknown" outside git)."""
    root = project_root()
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()
        # the results pages themselves are left out: a committed page is rewritten by the run that records this
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(exclude)figures/results-*"], cwd=root, capture_output=True, text=True,
                               check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" +changes" if dirty else "")


def engines(runs: Path, profile: str) -> list[dict[str, Any]]:
    """The distinct (backend, model, revision, dtype) the profile's runs recorded in their ``config.json``."""
    seen: dict[tuple, dict[str, Any]] = {}
    for cfg in runs.glob(f"*/{profile}-*/**/config.json"):
        try:
            info = json.loads(cfg.read_text(encoding="utf-8")).get("backend_info") or {}
        except (OSError, ValueError):
            continue
        row = {"backend": info.get("name"), "model": info.get("model"), "revision": info.get("revision"),
               "dtype": (info.get("extra") or {}).get("dtype"), "server": info.get("server") or None}
        if any(row.values()):
            seen.setdefault(tuple(row.values()), row)
    return list(seen.values())


def provenance(profile: str, model: str | None) -> dict[str, Any]:
    """What a run's notebook records share: the commit, the model and its weights, the engines, the machine, the
    date."""

    weights: dict[str, str] = {}
    local = None
    if model:
        try:
            local = Path(resolve_model(model))
            weights = weights_sha256(local) if local.is_dir() else {}
        except (OSError, RuntimeError):
            weights = {}
    used = engines(runs_dir(), profile)
    if weights:  # the profile's own model: its parameter count, from its weights' headers
        for e in used:
            if e["model"] == local.name:
                e["parameters"] = safetensors_parameters(local)
    return {"profile": profile, "commit": commit(), "model": model, "weights_sha256": weights,
            "engines": used,
            "machine": {"cpu": cpu_name(), "cores": os.cpu_count(), "system": platform.platform(),
                        "python": platform.python_version()},
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def notebook_title(nb: Path) -> str:
    """The notebook's first heading (``# 10 · ...``), or its file name."""
    try:
        first = json.loads(nb.read_text(encoding="utf-8"))["cells"][0]
        text = "".join(first["source"]) if isinstance(first["source"], list) else first["source"]
        return text.splitlines()[0].lstrip("# ").strip()
    except (OSError, ValueError, KeyError, IndexError):
        return nb.stem


PAGE_FILES = (".md", ".png")  # what a page shows, in the order the notebook saved them
KEPT_FILES = (".png", ".plot.json")  # copied beside the page
STATE_HEADING = "> **State:**"


def section_files(src: Path, since: float | None = None) -> list[Path]:
    """The tables (Markdown) and figures (PNG) a notebook saved, in the order it saved them; ``since``: only those
    saved from then on (a table an earlier run left in ``src`` is not this run's)."""
    return sorted((p for p in src.glob("*") if p.suffix in PAGE_FILES and not p.name.endswith(".plot.md")
                   and (since is None or p.stat().st_mtime >= since)),
                  key=lambda p: (p.stat().st_mtime, p.name))


PAPER_ONLY = PAPER_ONLY_ROW  # how a row the paper prints and this run does not compute names its experiment


def split_paper_only(md: str) -> tuple[str, str]:
    """(the table without its paper-only rows, a table of those rows alone; either "" where it has none). The words
    a table file holds below its table (``report.label_key``) go with each."""
    lines = md.rstrip().splitlines()
    if len(lines) < 2 or not lines[0].startswith("|"):
        return md.rstrip(), ""
    end = next((i for i, r in enumerate(lines) if not r.startswith("|")), len(lines))
    head, rows, words = lines[:2], lines[2:end], lines[end:]
    only = [r for r in rows if any(c.strip().endswith(PAPER_ONLY) for c in r.strip().strip("|").split("|"))]
    rest = [r for r in rows if r not in only]
    return ("\n".join(head + rest + words) if rest or not only else ""), ("\n".join(head + only + words) if only else "")


def page_body(nb: Path, src: Path, dest: Path | None, since: float | None = None) -> list[str]:
    """A notebook page's sections: its tables inline, its figures as images (copied, with their plotted data, to
    ``dest/<notebook>/`` when ``dest`` is given), each beside its notebook's reading guide (``reading_guides``: the
    words above and below it there). The rows the paper prints and the run does not compute (``PAPER_ONLY``) go to
    an appendix at the end of the page, each table's under its name."""
    lines: list[str] = []
    appendix: list[str] = []
    files = section_files(src, since)
    guides = reading_guides(nb) if nb.exists() else {}
    if not files:
        lines.append("This notebook saved no table or figure under this profile.")
    tables = {f.stem for f in files if f.suffix == ".md"}
    for f in files:
        # a figure drawn from a table of its name: its section says it is the figure
        title = f.stem.replace("_", " ") + (" (figure)" if f.suffix != ".md" and f.stem in tables else "")
        above, below = guide_for(guides, f.name)
        guide_above, guide_below = ([above, ""] if above else []), ([below, ""] if below else [])
        if f.suffix == ".md":
            table, only = split_paper_only(f.read_text(encoding="utf-8"))
            if table:
                lines += [f"## {title}", "", *guide_above, table, "", *guide_below]
            if only:
                appendix += [f"## appendix: {title.removesuffix(' paper only')}, the paper's rows only", "", only, ""]
            continue
        if dest is not None:
            (dest / nb.stem).mkdir(parents=True, exist_ok=True)
            for kept in (f, f.with_name(f.stem + ".plot.json")):
                if kept.exists():
                    shutil.copyfile(kept, dest / nb.stem / kept.name)
        lines += [f"## {title}", "", *guide_above, f"![{f.stem}]({nb.stem}/{f.name})", "", *guide_below]
    if appendix:
        lines += ["## Appendix: what the paper prints and this run does not compute", "",
                  "The paper's rows for evaluators, models or datasets this profile does not run, as printed, for "
                  "reference beside the reproduced rows above.", ""] + appendix
    return lines


def state_word(record: dict[str, Any]) -> str:
    """A notebook's state in a few words, as the index and the README say it."""
    check = record.get("check") or {}
    return {"stale": f"stale since `{check.get('since', '?')}`", "unrecorded": "not recorded"}.get(
        check.get("state"), "recorded" if record.get("answers") else "recorded (no model call)")


def state_lines(record: dict[str, Any]) -> list[str]:
    """The top of a notebook's page: whether a replay of its recorded answers gives this page, and what its tables
    cannot show."""
    check = record.get("check") or {}
    state = check.get("state")
    if state == "stale":
        lines = [f"{STATE_HEADING} stale since `{check.get('since', '?')}`: a replay of the recorded answers at that "
                 "commit no longer gives this page:"] + [f"> - {d}" for d in check.get("differences", [])]
    elif state == "unrecorded":
        lines = [f"{STATE_HEADING} not recorded: this page was written before answers were recorded (commit "
                 f"`{record.get('commit', '?')}`), so no replay can check it; re-record it with `make reproduce "
                 f"NOTEBOOKS={record['notebook'][:2]}`."]
    else:
        rendered = record.get("rendered_at")
        lines = [f"{STATE_HEADING} recorded at `{record.get('commit', '?')}` on {record.get('machine', {}).get('cpu', '?')} "
                 f"({record.get('date', '?')})"
                 + (f"; its tables computed again{' from those answers' if record.get('answers') else ''} at "
                    f"`{rendered}` (`make render-page`)"
                    if rendered else "")
                 + "; `make reproduce REPLAY=1` regenerates these tables "
                 + (f"from [its recorded answers]({record['notebook']}/answers.jsonl.xz) without the model"
                    if record.get("answers") else "without a model (it called none: no answers to record)") + "."]
    cannot = record.get("cannot_show") or []
    if cannot:
        lines += ["", "**What these tables cannot show** (found in the tables themselves):", ""]
        lines += [f"- {c}" for c in cannot]
    return lines + [""]


def page_profile(out: Path) -> str:
    """The profile of a results page folder: its name (``results-<profile>``), else its provenance's."""
    if out.name.startswith("results-"):
        return out.name.removeprefix("results-")
    return load_provenance(out).get("profile") or "?"


def write_notebook_page(nb: Path, src: Path, out: Path, record: dict[str, Any], since: float | None = None) -> Path:
    """``out/<notebook>.md`` from the notebook's saved tables and figures (``src``) and its provenance record: its
    banner (``page_banner``: the model beside the paper's, the n its tables rest on), its state, its sections."""

    body = page_body(nb, src, out, since)
    lines = [f"# {notebook_title(nb)}", ""] + notebook_banner(nb.stem, page_profile(out), record, out,
                                                             body) + state_lines(record)
    if record.get("wall_s") is not None:
        lines += [f"Executed in {record['wall_s']:.0f} s ({record.get('status', '?')}); the notebook itself, with "
                  f"every reading guide: [`notebooks/{nb.name}`](../../notebooks/{nb.name}).", ""]
    lines += body
    page = out / f"{nb.stem}.md"
    page.write_text("\n".join(lines), encoding="utf-8")
    return page


def render_notebook_page(nb: Path, src: Path, out: Path, record: dict[str, Any], at: str) -> dict[str, Any]:
    """Rewrite a recorded notebook's page from its replay's tables and figures (``src``), computed at commit ``at``
    from the answers it recorded: the answers and their provenance (commit, machine, date, wall time, calls) stay;
    the tables, figures and what they cannot show are the replay's. For a change of how tables are computed or
    laid out, which needs no model; a changed prompt is a request the answers do not hold, and needs a real run."""

    keep = out / nb.stem
    for old in keep.glob("*"):  # the figures go; the answers stay
        if old.name.endswith(KEPT_FILES):
            old.unlink()
    record = {**record, "check": {"state": "recorded"}, "cannot_show": notes(src),
              "rendered_at": at, "engines": with_parameters(record)}
    write_notebook_page(nb, src, out, record)
    return record


def with_parameters(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The record's engines, each with its parameter count where the record lacks one and this machine holds the
    recorded weights (their sha256: ``model_files.local_parameters``): counted once, then kept in the record, so
    that every page written from it says the same on every machine."""

    return [{**e, "parameters": e.get("parameters") or local_parameters(e.get("model"), record.get("weights_sha256"))}
            if e.get("model") else e for e in record.get("engines") or []]


def rewrite_state(out: Path, nb_stem: str, record: dict[str, Any]) -> None:
    """Replace the state block at the top of a committed page (the check marks a page stale this way)."""
    page = out / f"{nb_stem}.md"
    if not page.exists():
        return
    lines = page.read_text(encoding="utf-8").splitlines()
    start = next((i for i, x in enumerate(lines) if x.startswith(STATE_HEADING)), None)
    end = next((i for i, x in enumerate(lines) if x.startswith("Executed in ") or x.startswith("## ")), len(lines))
    if start is None:
        start = end = 2
    page.write_text("\n".join(lines[:start] + state_lines(record) + lines[end:]) + "\n", encoding="utf-8")


def load_provenance(out: Path) -> dict[str, Any]:
    f = out / "provenance.json"
    if not f.exists():
        return {"notebooks": {}, "runs": {}}
    prov = json.loads(f.read_text(encoding="utf-8"))
    if isinstance(prov.get("notebooks"), list):  # the page of an earlier layout: one record for the whole run
        old = {k: v for k, v in prov.items() if k not in ("notebooks", "run")}
        prov = {"profile": prov.get("profile"), "notebooks": {
            w["notebook"]: {**old, **w, "check": {"state": "unrecorded"}} for w in prov["notebooks"]},
            "runs": {}}
    return prov


def write_results_page(profile: str, notebooks: list[Path], walls: list[dict[str, Any]], figures: Path,
                       model: str | None = None, time_rows: list[dict[str, Any]] | None = None,
                       run: dict[str, Any] | None = None, recorded_commit: str | None = None) -> Path | None:
    """Write the pages of the ``notebooks`` this run finished (status ``ok`` in ``walls``) into
    ``figures/results-<profile>/``, with their answers, the data of their figures and what their tables cannot show;
    keep every other notebook's page and record, a notebook of this run that failed included (the run's record and
    the index name it); write ``provenance.json`` and the index. None, and nothing written, when no notebook of the
    run finished. ``time_rows`` (``reproduce.notebook_time_profile``) give each notebook's calls
    and backend calls: a notebook replayed from the cache says so. ``run``: the whole command's wall time
    (``wall_s``) and notebooks at a time (``jobs``). ``recorded_commit``: the commit the run started at (a run
    outlives edits to the checkout), else the commit now."""

    out = figures / f"results-{profile}"
    out.mkdir(parents=True, exist_ok=True)
    calls: dict[str, list[int]] = {}
    for r in time_rows or []:
        c = calls.setdefault(r["notebook"], [0, 0])
        c[0] += r.get("calls") or 0
        c[1] += r.get("backend_calls") or 0
    prov = load_provenance(out)
    prov["profile"] = profile
    base = provenance(profile, model)
    if recorded_commit:
        base["commit"] = recorded_commit
    by_name = {w["notebook"]: w for w in walls}
    finished = [nb for nb in notebooks if (by_name.get(nb.stem) or {}).get("status") == "ok"]
    if not finished:  # nothing this run computed: the page stays as it was
        return None
    run_id = base["date"]
    prov.setdefault("runs", {})[run_id] = {
        "commit": base["commit"], "machine": base["machine"], "date": base["date"],
        "notebooks": [w["notebook"] for w in walls],
        "failed": [nb.stem for nb in notebooks if nb not in finished], **(run or {})}
    for nb in finished:  # a notebook that failed keeps its page, answers and record as they were
        w = by_name[nb.stem]
        src = figures / nb.stem
        (out / nb.stem).mkdir(parents=True, exist_ok=True)
        for old in (out / nb.stem).glob("*"):  # this notebook's earlier figures and answers
            old.unlink()
        answers = src / ANSWERS_PLAIN
        recorded = answers.exists() and w.get("start") is not None and answers.stat().st_mtime >= w["start"]
        if recorded:
            compress(answers, out / nb.stem / ANSWERS)
        record = {"notebook": nb.stem, "title": notebook_title(nb), "wall_s": w.get("wall_s"),
                  "status": w.get("status"), "calls": calls.get(nb.stem, [None, None])[0],
                  "backend_calls": calls.get(nb.stem, [None, None])[1], "run": run_id,
                  **{k: base[k] for k in ("commit", "date", "machine", "model", "weights_sha256", "engines")},
                  "answers": f"{nb.stem}/{ANSWERS}" if recorded else None,
                  "check": {"state": "recorded"}, "cannot_show": notes(src)}
        prov["notebooks"][nb.stem] = record
        write_notebook_page(nb, src, out, record, since=w.get("start"))
        if not any((out / nb.stem).iterdir()):
            (out / nb.stem).rmdir()
    (out / "provenance.json").write_text(json.dumps(prov, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return write_index(out, profile)


DRIFT_FILE = "rerun_drift.json"  # how far a fresh rerun moved this page's numbers (``rerun_drift``)


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def drift_lines(page: Path) -> list[str]:
    """The index's section on reruns, from ``rerun_drift.json`` (``rerun_drift`` writes it); none without it."""
    path = page / DRIFT_FILE
    if not path.exists():
        return []
    entries = json.loads(path.read_text(encoding="utf-8"))
    lines = ["", "## How far a fresh rerun moves a number", "",
             "Notebooks run again from an empty cache (`make rerun-drift`: each alone, and three at a time as a "
             "recording runs them) on the recording machine's kind, compared with this page. `answers asked by both`: "
             "the requests both runs sent (the same prompt, settings and model); a request that quotes an earlier "
             "answer (a retry, a debate's next turn) is asked by both only where that answer was the same. "
             "`answered otherwise`: how many of those the model answered with other text. A request decodes greedily "
             "or samples with its own seed, so such an answer differs because bfloat16 sums in another order when a "
             "request shares its "
             "batch with others of other lengths (alone and three at a time batch differently, and so did the "
             "recording). An answer can differ in its explanation and keep its label: `numeric cells` counts every "
             "number both pages show (wall times aside), and a cell moves only when a changed answer changes a label "
             "or a score. Only the notebooks below were rerun: their moves show the kind of change a rerun "
             "makes, not a bound on it for the others, and where one changed answer is quoted by later turns "
             "(a debate, a discussion) every turn after it may change too.", "",
             "| rerun | notebook | machine | answers asked by both | answered otherwise | numeric cells | moved | "
             "largest moves |", "|---|---|---|---|---|---|---|---|"]
    for e in entries:
        m = e.get("machine") or {}
        where = f"{m.get('cpu') or ''}, {m.get('cores') or ''} cores"
        for r in e["notebooks"]:
            a = r["answers"]
            share = f"{a['differ']} ({100 * a['differ'] / a['shared']:.0f}%)" if a["shared"] else "0"
            big = "; ".join(f"{x['row']}: {x['column']} {_fmt(x['page'])} → {_fmt(x['fresh'])}"
                            for x in r["largest"]) or "none"
            lines.append(f"| {e['label']} | [{r['notebook']}]({r['notebook']}.md) | {where} | {a['shared']} | "
                         f"{share} | {r['cells']} | {r['moved']} | {big} |")
    return lines


LABEL_ONE = re.compile(r"^\*Label counts:\*.*; 1 = (.+)\.$")  # ``report.label_key``'s line


def label_lines(out: Path, notebooks: list[str]) -> list[str]:
    """What label 1 stands for on each page (read from its tables' ``*Label counts:*`` lines), so that a reader who
    moves between pages sees that 1 is faithful on most and an error or an ambiguity on others; [] where no page
    counts labels."""
    meanings: dict[str, list[str]] = {}
    for nb in notebooks:
        page = out / f"{nb}.md"
        if page.exists():
            for line in page.read_text(encoding="utf-8").splitlines():
                if (m := LABEL_ONE.match(line)) and nb not in meanings.get(m.group(1), []):
                    meanings.setdefault(m.group(1), []).append(nb)
    if not meanings:
        return []
    return ["", "## What label 1 stands for", "",
            "The tables that count labels (`labels said`, `gold labels`) do not all use one direction: each page says "
            "it below such a table, and here are all of them.", "", "| 1 = | pages |", "|---|---|",
            *[f"| {meaning} | {', '.join(f'[{nb[:2]}]({nb}.md)' for nb in nbs)} |" for meaning, nbs in meanings.items()]]


def write_index(out: Path, profile: str) -> Path:
    """``index.md`` from ``provenance.json`` and the pages: a banner (``page_banner``: the models beside the papers',
    the n the tables rest on), every notebook's state, commit, machine and counts, each recording run's elapsed
    time and what the tables cannot show (the parse rates are each page's own `parsed_%` columns; a run's time profile
    and parse rates per method stay in ``figures/``, beside the run, not on the page)."""

    prov = load_provenance(out)
    records = [prov["notebooks"][k] for k in sorted(prov["notebooks"])]
    lines = [f"# Results of the `{profile}` profile", "",
             "Every table below is a notebook's own output, executed headlessly by `make reproduce"
             f"{'' if profile == 'smoke' else f' PROFILE={profile}'}`; nothing is typed in by hand. Each page "
             "gives the paper's numbers beside ours where the paper has them, and each table says on how many "
             "examples it rests. Each notebook's answers are recorded beside its page: `make reproduce REPLAY=1` "
             "regenerates every table from them without the model, and CI checks that the page is what they give "
             "at each commit (a page they no longer give is marked stale, with what differs).", ""]
    lines += index_banner(profile, out, records)
    lines += ["## Notebooks", "", "| notebook | state | commit | tables computed at | machine | date | wall s | calls | "
              "backend calls |", "|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        state = state_word(r)
        machine = r.get("machine") or {}
        rendered = str(r.get("rendered_at") or r.get("commit", ""))[:7]  # ``make render-page``'s, else the recording's
        lines.append(f"| [{r['notebook']}]({r['notebook']}.md) | {state} | `{str(r.get('commit', ''))[:7]}` | "
                     f"`{rendered}` | "
                     f"{machine.get('cpu', '')}, {machine.get('cores', '')} cores | {r.get('date', '')} | "
                     f"{'' if r.get('wall_s') is None else round(r['wall_s'])} | "
                     f"{'' if r.get('calls') is None else r['calls']} | "
                     f"{'' if r.get('backend_calls') is None else r['backend_calls']} |")
    lines += label_lines(out, [r["notebook"] for r in records])
    cached = [r["notebook"] for r in records if r.get("calls") and r.get("backend_calls") == 0]
    if cached:
        lines += ["", f"{', '.join(cached)} made no backend call when recorded: every answer came from the response "
                  "cache (computed by an earlier run on that machine, by another notebook with the same settings, or "
                  "recorded on this page before from the same weights and taken again by `make reproduce REUSE=1`); "
                  "their wall times are a cache replay's."]
    engines = {json.dumps(e, sort_keys=True): e for r in records for e in r.get("engines") or []}
    if engines:
        lines += ["", "Engines: " + "; ".join(", ".join(f"{k} {v}" for k, v in e.items() if v)
                                              for e in engines.values())]
        revisions = {}
        for e in engines.values():
            revisions.setdefault(e.get("model"), set()).add(e.get("revision"))
        several = sorted(m for m, revs in revisions.items() if m and len(revs) > 1)
        if several:
            lines += ["", f"{', '.join(several)} appears under several revisions: a local model's revision names its "
                      "weights, by their files' sizes and times in earlier recordings and by their content since; "
                      "the weights' sha256 below says which weights every recording ran."]
    models = {(r.get("model"), json.dumps(r.get("weights_sha256") or {}, sort_keys=True)) for r in records if r.get("model")}
    for m, w in sorted(models, key=str):
        lines.append(f"- model `{m}`" + "".join(f"; `{k}` sha256 `{v}`" for k, v in json.loads(w).items()))
    runs = prov.get("runs") or {}
    if runs:
        lines += ["", "## Recording runs", "",
                  "Notebooks of one run ran side by side on one engine (`jobs` at a time), so their own wall times "
                  "overlap: a run's elapsed time is the one below, not the sum of its notebooks'. A whole run is slow "
                  "on a CPU, so notebooks are recorded a few at a time and a page may come from an earlier commit than "
                  "the code: its replay at each commit asks exactly the requests it recorded (a changed prompt or "
                  "setting stops it and marks the page stale), so a page marked recorded is what a run at this commit "
                  "asks, answered as that run answered (a fresh run's answers move as the section below says).", "",
                  "`pages now` names the notebooks whose page this run's answers still make (none: later runs "
                  "recorded them all again).", "",
                  "| run | commit | machine | notebooks | pages now | jobs | elapsed min |",
                  "|---|---|---|---|---|---|---|"]
        for rid, r in sorted(runs.items()):
            now = [rec["notebook"][:2] for rec in records if rec.get("run") == rid and rec.get("notebook")]
            lines.append(f"| {rid} | `{str(r.get('commit', ''))[:7]}` | {(r.get('machine') or {}).get('cpu', '')} | "
                         f"{' '.join(n[:2] for n in r.get('notebooks', []))}"
                         + (f" (failed, page kept: {' '.join(n[:2] for n in r['failed'])})" if r.get("failed") else "")
                         + f" | {' '.join(now) or 'none'} | {r.get('jobs', '')} | "
                         f"{'' if r.get('wall_s') is None else round(r['wall_s'] / 60, 1)} |")
    lines += drift_lines(out)
    cannot = [(r["notebook"], c) for r in records for c in r.get("cannot_show") or []]
    stale = [r for r in records if (r.get("check") or {}).get("state") in ("stale", "unrecorded")]
    lines += ["", "## What this run cannot show", ""]
    if not cannot and not stale:
        lines.append("Every table shows something: no empty table, no row on n = 0, no zero-width interval.")
    for r in stale:
        check = r["check"]
        lines.append(f"- [{r['notebook']}]({r['notebook']}.md): "
                     + ("not recorded: no replay checks it" if check["state"] == "unrecorded" else
                        f"stale since `{check.get('since')}`: " + "; ".join(check.get("differences", []))))
    if cannot:
        lines += ([""] if lines[-1] else []) + [
                  "Each page lists, at its top, every cell its tables cannot show, in sentences; here, how many "
                  "of each page's tables show each kind (the page names them and says why).", "",
                  "| page | what its tables cannot show (tables) |", "|---|---|"]
        kinds: dict[str, dict[str, set[str]]] = {}
        for nb, c in cannot:  # a note opens with its table's name: a kind counts each table once
            table = m.group(1) if (m := re.match(r"^`([^`]+)`", c)) else c
            kinds.setdefault(nb, {}).setdefault(kind_of(c), set()).add(table)
        lines += [f"| [{nb}]({nb}.md) | " + "; ".join(f"{k} ({len(v)})" for k, v in counts.items()) + " |"
                  for nb, counts in kinds.items()]
    (out / "index.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out / "index.md"
