"""The banner at the top of every results page and of the index, written from what the recording holds: the model
that answered (name, parameter count, dtype) beside the paper's (``model`` in each paper's ``results.yaml``), the
range of ``n`` the page's tables rest on, and, where the model is not the paper's, what the page is for; and why
its tables show or leave out the ``difference`` column (``profiles.paper_setting``: only in the paper's own setting).

The banner stands above the page's ``## `` sections, so the page check (which compares those sections with a
replay's) never reads it; it is written again whenever the page is (``results_page.write_notebook_page``,
``write_index``).
"""

from __future__ import annotations

import json
import lzma
import re
from pathlib import Path
from typing import Any

from sumjudge import profiles
from sumjudge.llm.models import QUANTISED_SOURCES
from sumjudge.paths import project_root
from sumjudge.profiles.paper_setting import PAPER_PROFILE, answered_by_papers_model, paper_model, paper_of, papers
from sumjudge.run.notebooks import notebook_defaults, parameter_comments


def parameters_text(n: Any) -> str:
    if isinstance(n, int) and n > 0:
        return f"{n:,} parameters ({n / 1e9:.2g}B)"
    return "parameters unknown"


def recorded_engines(page: Path, record: dict[str, Any]) -> list[dict[str, Any]]:
    """The engines that answered a notebook (model, revision, dtype, parameters where recorded): those its recorded
    answers name, else the engines its record names."""
    answers = record.get("answers")
    found: list[dict[str, Any]] = []
    if answers and (page / answers).exists():
        with lzma.open(page / answers, "rt", encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                if d.get("type") == "engine":
                    info = d.get("info") or {}
                    found.append({"backend": d.get("backend"), "model": info.get("model") or d.get("model"),
                                  "revision": info.get("revision"), "dtype": (info.get("extra") or {}).get("dtype")})
                elif d.get("type") not in ("format", "engine"):
                    break
    by_key = {(e.get("model"), e.get("revision")): e for e in record.get("engines") or []}
    engines = found or [dict(e) for e in record.get("engines") or []]
    for e in engines:  # a parameter count the record holds for the same model (never this machine's files: the
        # banner says the same wherever the page is written; ``results_page.with_parameters`` records a count)
        e["parameters"] = e.get("parameters") or (by_key.get((e.get("model"), e.get("revision"))) or {}).get(
            "parameters")
    return engines


def model_words(engines: list[dict[str, Any]]) -> str:
    """Each model once, with its parameters and the dtypes it ran in."""
    by_model: dict[str, dict[str, Any]] = {}
    for e in engines:
        m = by_model.setdefault(e.get("model") or "?", {"parameters": None, "dtypes": []})
        m["parameters"] = m["parameters"] or e.get("parameters")
        dtype = e.get("dtype") or "dtype not recorded"
        if dtype not in m["dtypes"]:
            m["dtypes"].append(dtype)
    return ", ".join(f"`{name}` ({parameters_text(m['parameters'])}; {', '.join(m['dtypes'])}"
                     + (f"; dequantised from its {QUANTISED_SOURCES[name]}" if name in QUANTISED_SOURCES else "") + ")"
                     for name, m in by_model.items()) or "none recorded"


def paper_model_words(paper: str, others: bool = True) -> str:
    """The paper's model as its page names it (with the other models the paper reports where ``others``)."""
    m = paper_model(paper)
    if not m:
        return f"{paper}: not recorded"
    params = m.get("parameters")
    return (f"{m.get('paper') or paper}: {m['name']}"
            + (f" ({params} parameters)" if params and params != "not published" else " (parameters not published)")
            + (f"; the paper also reports {m['others']}" if others and m.get("others") else ""))


# --- what the tables rest on -----------------------------------------------------------------------------------

def page_tables(lines: list[str]) -> list[tuple[list[str], list[list[str]]]]:
    """(header, rows) of each Markdown table a page shows under its ``## `` sections (the appendix of the paper's
    own rows left out: they rest on nothing this run computed)."""
    tables: list[tuple[list[str], list[list[str]]]] = []
    section, current = None, None
    for line in "\n".join(lines).splitlines():
        if line.startswith("## "):
            section, current = line[3:].strip(), None
            continue
        if section is None or section.lower().startswith("appendix") or not line.startswith("|"):
            current = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if current is None:
            current = (cells, [])
            tables.append(current)
        elif not re.match(r"^\|[\s:|-]+\|$", line.strip()):
            current[1].append(cells)
    return tables


def n_columns(lines: list[str]) -> tuple[list[float], int, int]:
    """(every number in the ``n`` columns of a page's tables, tables with an ``n`` column, tables)."""
    values, with_n, tables = [], 0, page_tables(lines)
    for header, rows in tables:
        if "n" not in header:
            continue
        with_n += 1
        i = header.index("n")
        for r in rows:
            try:
                v = float(r[i]) if i < len(r) else float("nan")
            except ValueError:
                continue
            if v == v:
                values.append(v)
    return values, with_n, len(tables)


def n_range(lines: list[str]) -> tuple[float | None, float | None, int, int]:
    """(smallest n, largest n, tables with an ``n`` column, tables) over a page's tables."""
    values, with_n, tables = n_columns(lines)
    return (min(values) if values else None), (max(values) if values else None), with_n, tables


def _num(v: float) -> str:
    return f"{v:g}"


def groups_words(lines: list[str]) -> str:
    """What a page's correlations rest on where its tables of results have a ``groups`` column (per-document
    correlations, beside ``n`` and ``reproduced``): '' elsewhere (a table of datasets counts their groups, and
    computes nothing). Its ``n`` counts texts; a correlation is the mean over that many groups."""
    values = []
    for header, rows in page_tables(lines):
        if {"groups", "n", "reproduced"} <= set(header):
            i = header.index("groups")
            values += [float(r[i]) for r in rows if i < len(r) and re.fullmatch(r"\d+(\.\d+)?", r[i])]
    values = [v for v in values if v > 0]
    if not values:
        return ""
    low, high = min(values), max(values)
    return (f" **Groups:** {_num(low)}" + ("" if low == high else f" to {_num(high)}") + " (the `groups` column: "
            "each correlation is the mean of one correlation per document or context, over that many of them, "
            "and its interval resamples them: the `n` texts are not independent examples).")


def n_words(low: float | None, high: float | None, with_n: int, tables: int, where: str) -> str:
    if not with_n:
        return f"no table {where} has an `n` column"  # e.g. a notebook that counts datasets
    share = (f"the `n` column of {with_n} of the {tables} tables {where}" if with_n < tables else
             f"the `n` column of the {tables} tables {where}" if tables > 1 else
             f"the `n` column of the only table {where}")
    if low is None:
        return f"no number in {share}"
    return f"{_num(low)}" + ("" if low == high else f" to {_num(high)}") + f" ({share})"


CLASS_COUNT = re.compile(r"(\d+) × [01]\b")
ENOUGH_OF_A_CLASS = 10  # what a headline cell should rest on, of each gold class


def fewest_of_a_class(lines: list[str]) -> int | None:
    """The fewest examples of one gold class any cell of a page rests on (its tables' ``gold labels`` column,
    ``run_metrics.said_column``, or ``support``); None where no table states a class count."""
    counts = []
    for header, rows in page_tables(lines):
        for column in ("gold labels", "support"):
            if column in header:
                i = header.index(column)
                for r in rows:
                    cell = r[i] if i < len(r) else ""
                    counts += [int(c) for c in CLASS_COUNT.findall(cell)] if column == "gold labels" else (
                        [int(float(cell))] if re.fullmatch(r"\d+(\.0+)?", cell) else [])
    return min(counts) if counts else None


def few_examples_words(lines: list[str], record: dict[str, Any], profile: str) -> list[str]:
    """Why a page's cells rest on fewer than ``ENOUGH_OF_A_CLASS`` examples of a gold class, with what its recording
    took (measured): [] where every stated class count reaches it, or no table states one."""
    fewest, what = fewest_of_a_class(lines), "of one gold class (the `gold labels` or `support` column)"
    if fewest is None:  # no class count stated: the smallest n a cell rests on, all classes together
        low = min((v for v in n_columns(lines)[0] if v > 0), default=None)  # n = 0 is named by the notes apart
        fewest, what = (None, "") if low is None else (int(low), "in all (the `n` column; no table states its classes)")
    if fewest is None or fewest >= ENOUGH_OF_A_CLASS:
        return []
    took = record.get("wall_s")
    cpu = (record.get("machine") or {}).get("cpu")
    if record.get("calls") and record.get("backend_calls") == 0:  # every answer read from the cache
        cost = ("; this page's recording read every answer from the response cache (an earlier run had asked them), "
                "so its wall time does not measure what they cost")
    elif took:
        cost = (f"; this page's recording took {took / 60:.0f} min" + (f" on {cpu}" if cpu else "")
                + " for its model calls, and that cost grows with the examples")
    else:
        cost = ""
    # a count of one class needs ENOUGH of it; a count of all examples, ENOUGH of each of the two classes at least
    wanted = ENOUGH_OF_A_CLASS * (1 if what.startswith("of one") else 2)
    more = (f"at least {wanted / fewest:.2g} times the examples" if fewest else "examples of a class it has "
            "none of")
    return [f"> Some cells rest on {fewest} example{'s' if fewest != 1 else ''} {what}: {ENOUGH_OF_A_CLASS} of each "
            f"gold class would take {more}{cost}. The `{profile}` profile keeps "
            "its samples small so that every page can be recorded on a laptop's CPU; read a rate over one class (FPR, "
            "FNR, F1) here as an example of the computation, not as an estimate.", ">"]


# --- the setting the page ran in ------------------------------------------------------------------------------

PLUMBING = {"profile", "backend", "model", "base_url", "seed", "plan", "page", "replay_profile"}  # not a setting
SETTING_FIELDS = {"n": "all", "context_length": "the model's own"}  # profile fields a notebook's tables rest on
# (field: what None means)
REPLAYS_ANOTHER = "replay_profile"  # a parameter of a notebook that replays another's recording (the lab): its
# settings are that notebook's, said on its page
LIST_AT_MOST = 6  # a longer list of the paper setting's (judges, datasets) is said as how many of them are kept


MEANS = {("max_steps", -1): "the configured epochs"}  # a value that stands for something, as the banner says it
ITEM_MEANS = {("window_sizes", 0): "0 (one sentence)", ("window_sizes", None): "None (the whole summary)"}  # in a list


def _setting(name: str, v: Any) -> str:
    """A setting's value as the banner says it: None as what it means (a count of examples: all of them)."""
    if isinstance(v, (int, str)) and (name, v) in MEANS:
        return MEANS[(name, v)]
    if v is None or v == "":
        return SETTING_FIELDS.get(name) or ("all" if re.search(r"(^|_)n$", name) else "unset")
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(ITEM_MEANS.get((name, x), str(x)) if isinstance(x, (int, str, type(None))) else str(x)
                               for x in v) + "]" if v else "none"
    return str(v)


def _change(name: str, mine: Any, theirs: Any) -> str:
    """``name`` here "instead of" the paper setting's; a long list as how many of the paper setting's it keeps."""
    if isinstance(mine, list) and isinstance(theirs, list) and len(theirs) > LIST_AT_MOST and set(mine) <= set(theirs):
        return f"`{name}` {len(mine)} of its {len(theirs)}"
    paper = "all" if theirs is None and isinstance(mine, list) else _setting(name, theirs)  # None: the whole list
    return f"`{name}` {_setting(name, mine)} instead of {paper}"


def setting_changes(notebook: str, profile: str) -> list[tuple[str, Any, Any]]:
    """(name, this profile's value, the paper setting's) for each setting ``profile`` runs ``notebook`` with that the
    ``paper`` profile does not: the profile fields its tables rest on (``SETTING_FIELDS``) and the notebook's
    parameters (the paper setting's: the ``paper`` profile's, else the notebook's own default). [] for the
    ``paper`` profile, a name that is no profile (a page folder named otherwise), or a notebook that is not in
    ``notebooks/``."""
    nb = project_root() / "notebooks" / f"{notebook}.ipynb"
    if profile == PAPER_PROFILE or profile not in profiles.available() or not nb.exists():
        return []
    defaults = notebook_defaults(nb)
    if REPLAYS_ANOTHER in defaults:
        return []
    mine, paper = profiles.load(profile, notebook=notebook), profiles.load(PAPER_PROFILE, notebook=notebook)
    out = [(f, getattr(mine, f), getattr(paper, f)) for f in SETTING_FIELDS if getattr(mine, f) != getattr(paper, f)]
    for k, v in mine.parameters.items():
        if k in defaults and k not in PLUMBING and k not in SETTING_FIELDS:
            theirs = paper.parameters.get(k, defaults[k])
            if v != theirs:
                out.append((k, v, theirs))
    return out


# how a notebook's parameter cell says of a parameter that, given, it sets the examples in n's place (unlike one that
# only defaults to n)
STANDS_IN_FOR_N = "in place of n"


def stand_ins_for_n(notebook: str, profile: str) -> list[str]:
    """The notebook's parameters whose comment says ``STANDS_IN_FOR_N`` and that ``profile`` gives a value: where
    they apply, ``n`` does not."""
    nb = project_root() / "notebooks" / f"{notebook}.ipynb"
    if profile not in profiles.available() or not nb.exists():
        return []
    mine = profiles.load(profile, notebook=notebook).parameters
    return [k for k, c in parameter_comments(nb).items() if STANDS_IN_FOR_N in c and mine.get(k) is not None]


def setting_words(notebook: str, profile: str) -> list[str]:
    """The banner's line on the setting: what ``profile`` changed from the paper setting for this notebook (each
    name, its value here and the paper setting's; beside ``n``, the parameters that take its place here), so that a
    reader does not take a paper's number beside ours for the same experiment; [] where nothing is changed."""
    changes = setting_changes(notebook, profile)
    if not changes:
        return []
    subs = stand_ins_for_n(notebook, profile)
    instead = (f" (`{'` and `'.join(subs)}` {'takes' if len(subs) == 1 else 'take'} its place where "
               f"{'it applies' if len(subs) == 1 else 'they apply'})") if subs else ""
    said = ", ".join(_change(k, v, p) + (instead if k == "n" else "") for k, v, p in changes)
    return [f"> **Setting:** the `{profile}` profile runs this notebook with {said} (the paper setting's value: the "
            f"`{PAPER_PROFILE}` profile's, else the notebook's own default). A paper's number "
            "beside ours was measured in the paper's setting, and two pages that run one judge with other settings "
            "show two numbers for it.", ">"]


# --- the banners -----------------------------------------------------------------------------------------------

NOT_EVIDENCE = ("shows each protocol running and how to read its tables; it is not evidence for or against the "
                "paper's claim")
NOT_EVIDENCE_OF_ANY = ("shows each paper's judge running on the same examples and how to read its tables; it is not "
                       "evidence for or against any paper's claim, nor a ranking of the papers' judges")


def difference_words(profile: str, papers_model: bool, subject: str = "Its tables") -> str:
    """Why the tables show a ``difference`` column, or why they leave it out."""
    if profile == PAPER_PROFILE and papers_model:
        return ("The model and the data are the paper's (the `paper` profile): each table's `difference` column is "
                "reproduced minus the paper's number.")
    why = ([] if papers_model else ["another model than the paper's"]) + (
        [] if profile == PAPER_PROFILE else [f"the `{profile}` profile's subsets of the data"])
    return (f"{subject} leave out the `difference` column (reproduced minus the paper's number): it means something "
            f"only with the paper's model on the paper's data (the `{PAPER_PROFILE}` profile), and here it would mix "
            f"the method with {' and '.join(why)}.")


def notebook_banner(notebook: str, profile: str, record: dict[str, Any], page: Path,
                    lines: list[str]) -> list[str]:
    """The banner of a notebook's page: ``lines`` are the page's sections (``results_page.page_body``), ``page`` its
    folder (where its recorded answers lie)."""
    paper = paper_of(notebook)
    n = n_words(*n_range(lines), where="this page computes") + "." + groups_words(lines)
    if not record.get("calls") and not record.get("answers"):
        return [f"> **Model:** none: this notebook called no model. **n:** {n}", ""]
    engines = recorded_engines(page, record)
    theirs = (f"**the paper's model** ({paper_model_words(paper)})" if paper else
              "**the papers' models** (" + "; ".join(paper_model_words(p, others=False) for p in papers()) + ")")
    nb = project_root() / "notebooks" / f"{notebook}.ipynb"
    replays = nb.exists() and REPLAYS_ANOTHER in notebook_defaults(nb)  # the lab: most rows are another page's
    mine = model_words(engines) + (" for the judges this notebook runs (the rows it replays from another notebook's "
                                   "recording were answered as that notebook's page says)" if replays else "")
    out = [f"> **Model:** {mine}, beside {theirs}. **n:** {n}", ">"]
    papers_model = answered_by_papers_model(paper, [e.get("model") for e in engines])
    if not papers_model:
        out += [f"> The model is not the paper's, so this page {NOT_EVIDENCE}." if paper else
                f"> The model is none of the papers', so this page {NOT_EVIDENCE_OF_ANY}.", ">"]
    out += setting_words(notebook, profile)
    out += few_examples_words(lines, record, profile)
    return out + [f"> {difference_words(profile, papers_model)}", ""]


def index_banner(profile: str, out: Path, records: list[dict[str, Any]]) -> list[str]:
    """The index's banner: every model that answered, the papers' models, the range of n over every page's tables
    (each page as written)."""
    engines, lows, highs, with_n, tables, others, called = [], [], [], 0, 0, 0, 0
    for r in records:
        page = out / f"{r['notebook']}.md"
        low, high, w, t = n_range(page.read_text(encoding="utf-8").splitlines() if page.exists() else [])
        lows += [low] if low is not None else []
        highs += [high] if high is not None else []
        with_n, tables = with_n + w, tables + t
        if r.get("calls") or r.get("answers"):
            used = recorded_engines(out, r)
            engines += used
            called += 1
            others += not answered_by_papers_model(paper_of(r["notebook"]), [e.get("model") for e in used])
    n = n_words(min(lows) if lows else None, max(highs) if highs else None, with_n, tables,
                where=f"on the {len(records)} pages")
    theirs = "; ".join(paper_model_words(p, others=False) for p in papers())
    lines = [f"> **Models:** {model_words(engines)}, beside **the papers' models** ({theirs}). **n:** {n}.", ">"]
    if others:
        which = "every page that called a model" if others == called else f"{others} of the {called} pages"
        lines += [f"> On {which}, the model is not that page's paper's: such a page {NOT_EVIDENCE}.", ">"]
    subject = ("The tables of a page whose model is not its paper's" if profile == PAPER_PROFILE and others < called
               else "Every page's tables")
    return lines + [f"> {difference_words(profile, not others, subject)}", ""]
