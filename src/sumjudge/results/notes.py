"""What a table cannot show, said in words: read from the tables a notebook saved (``figures/<notebook>/*.csv``).

A cell that shows nothing looks like a result. ``notes`` names each such cell, one sentence per table and kind (the
count and one example; a row worse than chance, one each); the results page prints them at the top of the notebook's
page and the index gathers them under "What this run cannot show". The kinds (``RULES``, in the order the sentences
come):

- a table with no row, a row with no number (NaN or empty; a paper's row, whose note says so, is left alone), a row
  resting on n = 0;
- a number resting on fewer than ``FEW_EXAMPLES`` examples (``n``; a table of one row per example: its rows), or on
  fewer than ``FEW_OF_A_CLASS`` examples of one gold class (``gold labels``: ``run_metrics.said_column``; ``support``,
  an error type's count), or a correlation averaged over fewer than ``FEW_GROUPS`` groups (documents: ``groups``);
- a number reported though more than half the answers were unreadable (``unreadable_samples`` as "bad/total",
  ``unreadable_share``, ``parsed_%``);
- a judge that said one label to every example (its ``labels said`` column), an interval of zero width (such a judge
  has BAcc 50 [50, 50]), a balanced accuracy whose whole interval lies under chance;
- two settings or judges identical in every result cell (with the reason where the table states it: a Critic that
  never objected, ``no_issue_pct`` 100), or, in a table without settings, every row of a metric alike (a metric fixed
  by design, ``FIXED_BY_DESIGN``, such as a test set's size, is left alone);
- a paper's number measured on another dataset than the row's (``same_dataset_as_paper`` False);
- a judge shown less than half of each document (a ``*_kept_%`` column: the document cut to fit the context);
- a score distribution in which a scorer gave every text one score (``score`` and ``who`` columns: 100 at a point);
- a paper's number inside our interval (``paper``): the table cannot tell the two apart there.

Every number a note prints and every comparison a rule makes is the value as the page shows it (``shown``: 3
significant digits, as ``report.save_table`` writes the tables), so that a replay on another CPU kind, whose floats
differ in their last bits, gives the same notes. Every count a sentence says is read from the table.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import NamedTuple

from sumjudge.report import shown_number
from sumjudge.run.metrics import GOLD_COLUMN, SAID_COLUMN, one_label_said

LABEL_COLUMNS = ("experiment", "evaluator", "judge", "detector", "method", "setting", "stances", "prompts", "subset",
                 "dataset", "level", "aspect", "bucket", "rounds", "sessions", "vote", "metric", "protocol")
VALUE_COLUMNS = ("reproduced", "bacc", "BAcc", "mean_bacc", "value", "accuracy")
RESULT_COLUMNS = VALUE_COLUMNS + ("k_alpha", "fpr", "fnr")  # with the interval columns: the cells a setting shows
WHERE_COLUMNS = ("experiment", "dataset", "level", "aspect", "bucket", "metric", "subset")  # where, not who
NAMED_COLUMNS = ("rounds", "sessions")  # a bare number says nothing: named ("rounds 2")
FIXED_BY_DESIGN = ("test",)  # metrics the same in every row by design (a supervised table's test-set size)
FEW_EXAMPLES, FEW_OF_A_CLASS, FEW_GROUPS = 10, 5, 5
NAME_AT_MOST = 4  # settings alike: named all where there are no more, else two of them as an example
_CI = re.compile(r"^\[\s*(-?[\d.eE+-]+|nan),\s*(-?[\d.eE+-]+|nan)\]$")
_COUNTS = re.compile(r"^(\d+) × 1, (\d+) × 0$")


def shown(v: str | float | None) -> str | None:
    """A number as the page's tables show it (``report.shown_number``: 3 significant digits, a larger number whole; an
    integer cell as an integer), so that a note reads, and a rule compares, what the page shows, not the last bits of
    a float (which differ from one CPU kind to another); None for an empty cell, text or NaN."""
    text = str(v).strip() if v is not None else ""
    if re.fullmatch(r"-?\d+", text):
        return str(int(text))
    try:
        f = float(text)
    except ValueError:
        return None
    return None if f != f else shown_number(f)


def number(v: str | float | None) -> float | None:
    """A table cell as the number the page shows (``shown``; None for an empty cell, text or NaN)."""
    s = shown(v)
    return None if s is None else float(s)


class Table(NamedTuple):
    """One saved table: its name (the file's stem), its rows (cells as the CSV has them) and its columns."""

    name: str
    rows: list[dict[str, str]]
    columns: list[str]

    @property
    def value(self) -> str | None:
        """The column holding each row's number."""
        return next((c for c in VALUE_COLUMNS if c in self.columns), None)

    def has_number(self, row: dict[str, str]) -> bool:
        return self.value is not None and number(row.get(self.value)) is not None

    def paper_row(self, row: dict[str, str]) -> bool:
        """A row the paper prints and this run does not compute (no number, its note says so): blank by design."""
        return not self.has_number(row) and "paper" in (row.get("note") or "").lower()


def _name(row: dict[str, str], columns: tuple[str, ...] | list[str]) -> str:
    """A row's name from its ``columns`` (a value a previous one already says, as "paper" after "G-Eval (paper
    protocol)", left out)."""
    parts: list[str] = []
    for c in columns:
        v = row.get(c) or ""
        part = f"{c} {v}" if c in NAMED_COLUMNS else v
        if v and not any(re.search(rf"(?<!\w){re.escape(part)}(?!\w)", p) for p in parts):
            parts.append(part)
    return " / ".join(parts)


def _label(row: dict[str, str], skip: tuple[str, ...] = ()) -> str:
    return _name(row, [c for c in LABEL_COLUMNS if c not in skip]) or next((v for v in row.values() if v), "a row")


def _rows_note(t: Table, hits: list[tuple[dict[str, str], str]], what: str, why: str, of: int | None = None) -> str:
    """One sentence for the rows ``hits`` (a row and what it shows, the first one the example) out of ``of`` rows
    (default: the table's own rows, its paper's printed rows aside, so that every note on one table counts alike)."""
    row, detail = hits[0]
    total = len([r for r in t.rows if not t.paper_row(r)]) if of is None else of
    return (f"`{t.name}`: {len(hits)} of {total} rows {what} (e.g. {_label(row)}{': ' + detail if detail else ''}): "
            f"{why}")


def _interval(row: dict[str, str]) -> tuple[float, float] | None:
    for low, high in (("bacc_ci_low", "bacc_ci_high"), ("mean_bacc_ci_low", "mean_bacc_ci_high"),
                      ("ci_low", "ci_high")):
        lo, hi = number(row.get(low)), number(row.get(high))
        if lo is not None and hi is not None:
            return lo, hi
    for col in ("95% CI", "ci", "bacc_ci", "95% CI (BAcc)", "bacc_95%_ci"):
        m = _CI.match((row.get(col) or "").strip())
        if m:
            lo, hi = number(m.group(1)), number(m.group(2))
            if lo is not None and hi is not None:
                return lo, hi
    return None


def _ci_text(ci: tuple[float, float]) -> str:
    return f"[{shown(ci[0])}, {shown(ci[1])}]"


def _cell(v: str | None) -> str:
    """A cell as the page shows it: a number or each end of an interval ``shown``, text as it is."""
    m = _CI.match((v or "").strip())
    return f"[{shown(m.group(1))}, {shown(m.group(2))}]" if m else shown(v) or (v or "")


def _is_interval(column: str) -> bool:
    return "ci" in re.split(r"[\s_]+", column.lower())


def _why_empty(row: dict[str, str]) -> str:
    """What the row says about its missing number: its undefined groups, its note, a count of 0."""
    groups, undefined = number(row.get("groups")), number(row.get("undefined_groups"))
    if undefined and not groups:
        return f"no group defined, {shown(undefined)} undefined"
    note = row.get("note") or ""
    if note and note != "nan":
        return note
    zero = next((c for c in ("runs", "scored_runs") if number(row.get(c)) == 0), None)
    return f"{zero} 0" if zero else ""


def no_number(t: Table) -> list[str]:
    """Rows whose number is NaN or empty (a paper's row, or one on n = 0, named elsewhere, left alone)."""
    if t.value is None:
        return []
    own = [r for r in t.rows if not t.paper_row(r)]
    hits = [(r, _why_empty(r)) for r in own if not t.has_number(r) and number(r.get("n")) != 0]
    if not hits:
        return []
    hits.sort(key=lambda h: not h[1])  # the first example one that says why
    if len(hits) == len(own) == len(t.rows):
        row, why = hits[0]
        return [f"`{t.name}` shows no number: none of its {len(hits)} rows was computed (e.g. {_label(row)}"
                f"{': ' + why if why else ''}): the table is empty, not a result"]
    return [_rows_note(t, hits, "show no number", "nothing could be computed there; a blank is not a result")]


def on_zero(t: Table) -> list[str]:
    hits = [(r, "") for r in t.rows if number(r.get("n")) == 0]
    return [_rows_note(t, hits, "rest on n = 0", "nothing was measured there")] if hits else []


def few_examples(t: Table) -> list[str]:
    """Numbers on fewer than ``FEW_EXAMPLES`` examples: ``n``, or a table of one row per example."""
    if "n" not in t.columns and "example" in t.columns:
        k = len({r.get("example") for r in t.rows})
        if k >= FEW_EXAMPLES:
            return []
        return [f"`{t.name}` rests on {k} example{'s' if k > 1 else ''} (one per row): what so few examples show "
                "says little about the others"]
    hits = [(r, f"n = {shown(r.get('n'))}") for r in t.rows
            if 0 < (number(r.get("n")) or 0) < FEW_EXAMPLES and t.has_number(r)]
    return [_rows_note(t, hits, f"rest on fewer than {FEW_EXAMPLES} examples",
                       "each example weighs more than a tenth in such a number: one changed answer moves it a "
                       "long way")] if hits else []


def _fewest_of_a_class(row: dict[str, str]) -> str | None:
    """The cell stating a gold class with fewer than ``FEW_OF_A_CLASS`` examples, as the page shows it."""
    m = _COUNTS.match((row.get(GOLD_COLUMN) or "").strip())
    if m and min(int(m.group(1)), int(m.group(2))) < FEW_OF_A_CLASS:
        return f"{GOLD_COLUMN} {m.group(0)}"
    support = number(row.get("support"))
    if support is not None and support < FEW_OF_A_CLASS:
        return f"support {shown(support)}"
    return None


def few_of_a_class(t: Table) -> list[str]:
    hits = [(r, c) for r in t.rows if t.has_number(r) and (c := _fewest_of_a_class(r))]
    why = "each of them weighs more than a fifth in a rate over that class (FPR, FNR, recall, F1)"
    return [_rows_note(t, hits, f"rest on fewer than {FEW_OF_A_CLASS} examples of one gold class", why)] if hits else []


def few_groups(t: Table) -> list[str]:
    """Correlations averaged over fewer than ``FEW_GROUPS`` groups (documents)."""
    hits = []
    for r in t.rows:
        g, ci = number(r.get("groups")), _interval(r)
        if t.has_number(r) and g is not None and 0 < g < FEW_GROUPS:
            hits.append((r, f"{shown(g)} group{'s' if g != 1 else ''}" + (f", interval {_ci_text(ci)}" if ci else "")))
    return [_rows_note(t, hits, f"average a correlation over fewer than {FEW_GROUPS} groups (documents)",
                       "a correlation within so few documents is no measure of agreement, and its interval only "
                       "resamples those few")] if hits else []


def _unreadable(row: dict[str, str]) -> str | None:
    """The cell saying more than half of a row's answers were unreadable."""
    m = re.match(r"^(\d+)/(\d+)$", (row.get("unreadable_samples") or "").strip())
    if m and 2 * int(m.group(1)) > int(m.group(2)):
        return f"unreadable_samples {m.group(0)}"
    share, parsed = number(row.get("unreadable_share")), number(row.get("parsed_%"))
    if share is not None and share > 0.5:
        return f"unreadable_share {shown(share)}"
    if parsed is not None and parsed < 50:
        return f"parsed_% {shown(parsed)}"
    return None


def mostly_unreadable(t: Table) -> list[str]:
    hits = [(r, c) for r in t.rows if t.has_number(r) and (c := _unreadable(r))]
    return [_rows_note(t, hits, "report a number though more than half the answers were unreadable",
                       "the number rests on the few answers read (or on what the unreadable ones were scored), "
                       "not on the judge's answers")] if hits else []


def one_label(t: Table) -> list[str]:
    said: dict[str, str] = {}
    values: list[float] = []  # the cells' BAcc, to say chance on the table's own scale (50, or 0.5 as a share)
    for r in t.rows:  # a judge's rows of several metrics say the same: named once
        one = one_label_said(r.get(SAID_COLUMN))
        if one is not None:
            said.setdefault(_label(r, skip=("metric",)), one)
            if t.value and (v := number(r.get(t.value))) is not None:
                values.append(v)
    if not said:
        return []
    first, label = next(iter(said.items()))
    accuracy = "accuracy" in t.columns or any((r.get("metric") or "").lower() == "accuracy" for r in t.rows)
    chance = "0.5" if values and all(abs(v) <= 1.0 for v in values) else "50"
    means = ("its accuracy there is the share of the examples whose gold label is that one, whatever the examples"
             if accuracy else f"BAcc there is {chance} by construction, whatever the examples")
    if any("k_alpha" in c for c in t.columns) or any((r.get("metric") or "").lower() == "k-alpha" for r in t.rows):
        means += ("; its K-alpha is set by the gold labels alone, 1 − (2n − 1) / (2n − d) with d the examples of the "
                  "other gold label, below 0 once d > 1: the mark of a judge that says nothing, not of one that "
                  "disagrees")
    return [f"`{t.name}`: in {len(said)} cell{'s' if len(said) > 1 else ''} a judge said one label to every "
            f"readable example (e.g. {first}: all {label}): {means}"]


def _zero_width(row: dict[str, str]) -> bool:
    ci = _interval(row)
    return ci is not None and shown(ci[0]) == shown(ci[1])


def zero_width(t: Table) -> list[str]:
    flat = [(r, ci) for r in t.rows if _zero_width(r) and (ci := _interval(r))]
    if not flat:
        return []
    r, ci = flat[0]
    return [f"`{t.name}`: {len(flat)} interval{'s' if len(flat) > 1 else ''} of zero width (e.g. {_label(r)}: "
            f"{_ci_text(ci)}): every resampling gives the same value, as when a judge gives one label to every "
            "example"]


def under_chance(t: Table) -> list[str]:
    out = []
    for r in t.rows:
        ci, v = _interval(r), number(r.get(t.value)) if t.value else None
        if v is None or ci is None or not ("bacc" in t.value.lower() or "bacc" in (r.get("metric") or "").lower()):
            continue
        chance = 50.0 if max(abs(v), abs(ci[1])) > 1.0 else 0.5
        if ci[1] < chance:
            out.append(f"`{t.name}`: {_label(r)} is worse than chance (BAcc {shown(v)}, interval {_ci_text(ci)} "
                       f"wholly under {shown(chance)}): check the labels' direction")
    return out


def _settings(t: Table) -> tuple[list[str], dict[tuple, list[dict[str, str]]]]:
    """The columns naming a setting or judge (labels that say not where it is measured) and each setting's rows."""
    who = [c for c in LABEL_COLUMNS if c in t.columns and c not in WHERE_COLUMNS]
    groups: dict[tuple, list[dict[str, str]]] = {}
    for r in t.rows:
        if who and not t.paper_row(r):
            groups.setdefault(tuple(r.get(c) or "" for c in who), []).append(r)
    return who, groups


def _never_objected(rows: list[dict[str, str]]) -> str:
    """The reason a debate's settings cannot differ, where the table states it: the Critic found no issue in every
    debate (``no_issue_pct`` or ``setting_no_issue_pct`` 100 in every row that states it)."""
    for col, every in (("setting_no_issue_pct", 100.0), ("no_issue_pct", 100.0)):
        said = [number(r.get(col)) for r in rows if number(r.get(col)) is not None]
        if said and all(v == every for v in said):
            return (f"; the Critic never objected ({col} {shown(every)} in every row that states it), so every "
                    "debate stopped at the Scorer's first score")
    return ""


def identical_settings(t: Table) -> list[str]:
    """Settings or judges whose result cells (``RESULT_COLUMNS`` and intervals) are the same in every row."""
    who, groups = _settings(t)
    cells = [c for c in t.columns if c in RESULT_COLUMNS or _is_interval(c)]
    alike: dict[tuple, list[tuple]] = {}
    for key, rows in groups.items():
        sig = tuple(sorted((tuple(r.get(c) or "" for c in WHERE_COLUMNS),
                            tuple(_cell(r.get(c)) for c in cells)) for r in rows))
        if any(t.has_number(r) and not _zero_width(r) for r in rows):  # not one named as of zero width already
            alike.setdefault(sig, []).append(key)
    same = [keys for keys in alike.values() if len(keys) > 1]
    if not same:
        return []
    names = [_name(dict(zip(who, k)), who) for k in same[0]]
    m = len(groups[same[0][0]])
    each = f"{m} row{'s' if m > 1 else ''} each"
    pair = f"{names[0]} and {names[1]}"
    what = " and ".join(f"`{c}`" for c in cells)  # the result cells compared: other columns may differ
    if len(same) == 1 and len(names) == 2:
        head = f"{pair} show the same {what} in every row ({each})"
    elif len(same) == 1 and len(names) <= NAME_AT_MOST:  # one set, short enough to name whole
        head = (f"{len(names)} settings, {', '.join(names[:-1])} and {names[-1]}, show the same {what} in every row "
                f"({each})")
    else:
        count = f"{len(same)} sets of settings" if len(same) > 1 else f"{len(names)} settings"
        head = f"{count} show the same {what} in every row (e.g. {pair}, {each})"
    rows = [r for keys in same for k in keys for r in groups[k]]
    return [f"`{t.name}`: {head}: the table cannot tell them apart{_never_objected(rows)}"]


def alike_rows(t: Table) -> list[str]:
    """In a table without settings (or whose settings differ), every row of a metric with the same value."""
    if t.value is None or identical_settings(t):
        return []
    groups: dict[str, list[str | None]] = {}
    for r in t.rows:
        if (r.get("metric") or "") not in FIXED_BY_DESIGN:
            groups.setdefault(r.get("metric") or "", []).append(shown(r.get(t.value)))
    return [f"`{t.name}`: every one of its {len(vals)} rows{f' ({metric})' if metric else ''} has the same value "
            f"({vals[0]}): the table cannot tell its rows apart"
            for metric, vals in groups.items() if len(vals) >= 3 and len(set(vals)) == 1 and vals[0] is not None]


def paper_on_another_dataset(t: Table) -> list[str]:
    """Rows whose paper number was measured on another dataset than ours (``same_dataset_as_paper`` False, the
    paper's in ``paper_dataset``)."""
    hits = [(r, f"ours on {r.get('dataset') or '?'}, the paper's on {r.get('paper_dataset') or '?'}") for r in t.rows
            if (r.get("same_dataset_as_paper") or "").strip().lower() == "false" and t.has_number(r)]
    return [_rows_note(t, hits, "put the paper's number from another dataset beside ours",
                       "the two are not one experiment; read ours against the other rows of this table, not against "
                       "the paper's")] if hits else []


KEPT = re.compile(r"_kept_%$")  # the share of each document a judge was shown (a cut to fit its context)


def little_of_the_document(t: Table) -> list[str]:
    """Rows whose judge was shown less than half of each document (a ``*_kept_%`` column under 50)."""
    hits = [(r, f"{c} {shown(r.get(c))}") for r in t.rows for c in t.columns
            if KEPT.search(c) and (number(r.get(c)) is not None and number(r.get(c)) < 50)]
    return [_rows_note(t, hits, "rest on judgements that saw less than half of each document",
                       "the document was cut to fit the context; an error only the cut part shows is invisible to "
                       "the judge, and the paper's judge read all of it")] if hits else []


def one_score(t: Table) -> list[str]:
    """A score distribution (one row per ``score`` point, its share in percent) where a scorer gave every text the
    same score: 100 at one point."""
    if "score" not in t.columns or "who" not in t.columns or t.value is None:
        return []
    keys = [c for c in LABEL_COLUMNS if c in t.columns and c not in ("metric",)] + ["who"]
    dists: dict[tuple, list[dict[str, str]]] = {}
    for r in t.rows:
        dists.setdefault(tuple(r.get(c) or "" for c in keys), []).append(r)
    hits = [(rows[0], next(r for r in rows if number(r.get(t.value)) == 100))
            for rows in dists.values() if any(number(r.get(t.value)) == 100 for r in rows)]
    if not hits:
        return []
    first, at = hits[0]
    name = _name(first, [c for c in keys if c != "experiment"])
    return [f"`{t.name}`: in {len(hits)} of its {len(dists)} distributions one scorer gave every text the same score "
            f"(e.g. {name}: all {shown(at.get('score'))}): such a scorer orders no text above another, so its "
            "correlations with the human scores are undefined, and its distribution has no spread to compare with the "
            "humans' or the paper's"]


PAPER_COLUMNS = ("paper", "paper_bacc", "published")  # the column holding the paper's number beside ours
SAME_COLUMNS = "paper_same_columns"  # where a row has it: the paper's number comparable with ours, not ``paper``'s


def _comparable_paper(row: dict[str, str], col: str) -> float | None:
    """The paper's number of a row comparable with ours: none from another dataset (``same_dataset_as_paper``
    False); ``paper_same_columns`` where the row has one."""
    if (row.get("same_dataset_as_paper") or "").strip().lower() == "false":
        return None
    same = number(row.get(SAME_COLUMNS))
    return same if same is not None else number(row.get(col))


def paper_inside_interval(t: Table) -> list[str]:
    """Rows whose own interval (not of zero width, named already) holds the paper's comparable number: there the
    table cannot tell ours from the paper's, so nearness to it is no reproduction, and distance inside the interval
    no failure."""
    col = next((c for c in PAPER_COLUMNS if c in t.columns), None)
    if col is None or t.value is None:
        return []
    rows = [(r, p, ci) for r in t.rows if t.has_number(r) and (p := _comparable_paper(r, col)) is not None
            and (ci := _interval(r)) is not None and not _zero_width(r)]
    inside = [(r, "".join(f"{c} {r[c]}, " for c in ("score", "who") if r.get(c))  # a distribution's point
               + f"paper {shown(p)}, ours {shown(r.get(t.value))} {_ci_text(ci)}") for r, p, ci in rows
              if ci[0] <= p <= ci[1]]
    return [_rows_note(t, inside, "with a paper number hold it inside our 95% interval",
                       "there the table cannot tell ours from the paper's: being near the paper's number is no "
                       "reproduction, and being further off inside the interval is no failure",
                       of=len(rows))] if inside else []


RULES = (no_number, on_zero, few_examples, few_of_a_class, few_groups, mostly_unreadable, one_label, zero_width,
         under_chance, identical_settings, alike_rows, paper_on_another_dataset, little_of_the_document, one_score,
         paper_inside_interval)


KINDS = (  # a note's kind, from the words its rule writes (first match), for the index's count per page
    ("is empty: no row", "an empty table"), ("shows no number", "rows with no number"),
    ("show no number", "rows with no number"),
    ("rest on n = 0", "rows on n = 0"), ("examples of one gold class", "few examples of a gold class"),
    ("rest on fewer than", "few examples"), ("(one per row)", "few examples"),
    ("average a correlation over fewer", "a correlation over few groups"),
    ("more than half the answers were unreadable", "mostly unreadable answers"),
    ("said one label to every", "a judge that says one label to all"), ("of zero width", "zero-width intervals"),
    ("worse than chance", "worse than chance"), ("the table cannot tell them apart", "settings alike"),
    ("the table cannot tell its rows apart", "rows alike"),
    ("paper's number from another dataset", "a paper number from another dataset"),
    ("less than half of each document", "documents cut to fit"),
    ("gave every text the same score", "one score for every text"),
    ("inside our 95% interval", "a paper number inside our interval"))


def kind_of(note: str) -> str:
    """What kind of thing a note (``table_notes``' sentence) says a table cannot show, in a few words."""
    return next((kind for words, kind in KINDS if words in note), "other")


def table_notes(name: str, rows: list[dict[str, str]], columns: list[str]) -> list[str]:
    """Sentences naming the cells of one table that show nothing (none: every cell shows something)."""
    if not rows:
        return [f"`{name}` is empty: no row was computed"]
    t = Table(name, rows, columns)
    return [s for rule in RULES for s in rule(t)]


def notes(folder: str | Path) -> list[str]:
    """Every table of a notebook's output folder (``figures/<notebook>/``), in name order."""
    out = []
    for f in sorted(Path(folder).glob("*.csv")):
        with f.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            rows = list(reader)
            out += table_notes(f.stem, rows, list(reader.fieldnames or []))
    return out
