"""The page check holds on every CPU kind: what it compares (tables, what they cannot show, figures' data) is
compared at the precision the page shows, so a replay whose floats differ from the recording's in their last bits
(another CPU's kernels sum in another order) verifies the page, and a real change still fails it."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from sumjudge import report  # noqa: E402
from sumjudge.reproduce import record as reproduce
from sumjudge.reproduce.check import notebook_differences, same_as_shown  # noqa: E402
from sumjudge.results.notes import notes  # noqa: E402
from sumjudge.results.page import write_notebook_page  # noqa: E402

# values a replay on another CPU can give a few units in the last place apart; 0.1235 lies on a rounding boundary
# of the 3 significant digits a table shows (0.12349999999999999 shows 0.123, 0.12350000000000003 shows 0.124)
R = 0.21004472894723314
VALUES = {"r": [R] * 10, "bacc": [0.1235, 0.5, 68.75, 0.0, 1 / 3, 2 / 3, 56.05, 12.0, 0.999, 1e-4],
          "n": list(range(10, 20))}


def nudge(x, ulps: int):
    for _ in range(abs(ulps)):
        x = math.nextafter(x, math.inf if ulps > 0 else -math.inf)
    return x


def save(notebook: str, values: dict, ulps: int) -> None:
    """What the notebook saves (a table, its CSV and a figure of it), with every float moved ``ulps`` units."""
    moved = {k: [nudge(v, ulps) if isinstance(v, float) else v for v in col] for k, col in values.items()}
    df = pd.DataFrame([{"setting": f"s{i}", "metric": metric, "value": moved[metric][i], "n": moved["n"][i]}
                       for metric in ("r", "bacc") for i in range(10)])
    report.save_table(df, notebook, "figure2_settings")
    fig, ax = plt.subplots()
    ax.bar([f"s{i}" for i in range(10)], moved["bacc"])
    ax.plot(range(10), moved["r"], label="r")
    ax.set_title("settings")
    report.save_figure(fig, notebook, "settings")
    plt.close(fig)


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """A page recorded from the tables above (the recording machine), its record as the page keeps it."""
    nb = reproduce.notebooks("21")[0]
    monkeypatch.setenv("SUMJUDGE_FIGURES", str(tmp_path / "recorded"))
    save(nb.stem, VALUES, 0)
    src = tmp_path / "recorded" / nb.stem
    page = tmp_path / "page"
    page.mkdir()
    record = {"notebook": nb.stem, "check": {"state": "recorded"}, "cannot_show": notes(src)}
    write_notebook_page(nb, src, page, record)
    return nb, page, record, tmp_path, monkeypatch


@pytest.mark.parametrize("ulps", [1, 3, -2, 7])
def test_a_replay_whose_floats_differ_in_their_last_bits_verifies_the_page(recorded, ulps):
    nb, page, record, tmp_path, monkeypatch = recorded
    assert any("same value" in c for c in record["cannot_show"])  # the note that printed 17 digits
    monkeypatch.setenv("SUMJUDGE_FIGURES", str(tmp_path / f"replayed{ulps}"))
    save(nb.stem, VALUES, ulps)
    replayed = tmp_path / f"replayed{ulps}" / nb.stem
    # a table rounds a float to 12 digits before it shows 3 (report.shown_number), so the boundary value, which ".3g"
    # alone shows as 0.124 once nudged up, shows as it was recorded
    assert format(nudge(0.1235, abs(ulps)), ".3g") == "0.124"
    assert " 0.123 " in (replayed / "figure2_settings.md").read_text()
    assert notebook_differences(nb, page, replayed, record) == []


def test_a_real_change_still_fails_the_check(recorded):
    nb, page, record, tmp_path, monkeypatch = recorded
    for column, value, said in (("bacc", 0.13, "value 0.123 on the page, 0.13 regenerated"), ("n", 11, "n 10 on the page, 11"),
                                ("r", 0.25, "what the tables cannot show differs")):
        changed = {k: list(v) for k, v in VALUES.items()}
        changed[column][0] = value
        if column == "r":
            changed["r"] = [value] * 10
        monkeypatch.setenv("SUMJUDGE_FIGURES", str(tmp_path / f"changed-{column}"))
        save(nb.stem, changed, 0)
        diffs = notebook_differences(nb, page, tmp_path / f"changed-{column}" / nb.stem, record)
        assert any(said in d for d in diffs), diffs


def test_numbers_are_alike_at_the_precision_shown():
    assert same_as_shown("0.123", "0.124", raw="0.12350000000000003")  # a boundary: the unrounded value rounds to both
    assert not same_as_shown("0.123", "0.124", raw="0.1241")
    assert same_as_shown("[36.1, 79.4]", "[36.1, 79.5]") and not same_as_shown("[36.1, 79.4]", "[36.1, 79.6]")
    assert not same_as_shown("0.5", "0.4") and not same_as_shown("12", "13") and not same_as_shown("1014", "1015")
    assert not same_as_shown("all 0", "all 1") and not same_as_shown("n = 12", "n = 12 (4 of one class)")
    assert same_as_shown("same value (0.21)", "same value (0.21)") and same_as_shown("0", "-1.2e-17")


def test_the_check_names_the_cpu_and_the_kernels_its_replay_ran_on():
    import os

    from sumjudge.perf.machine import cpu_name
    from sumjudge.reproduce.check import HELD_TO_AVX2, HELD_TO_SSE42, lower_kernels, replay_kernels

    held = lower_kernels()
    assert held in (HELD_TO_AVX2, HELD_TO_SSE42)
    line = replay_kernels({**os.environ, **held})
    assert line.startswith(cpu_name()) and "NumPy" in line and f"OPENBLAS_CORETYPE={held['OPENBLAS_CORETYPE']}" in line
    assert "X86_V4" not in line.split("NumPy", 1)[1].split(";", 1)[0]  # AVX-512 dispatch held off
    if "torch" in line:
        assert ("torch AVX2" if held is HELD_TO_AVX2 else "torch DEFAULT") in line


def test_the_kernels_held_follow_the_cpus_flags(monkeypatch):
    """AVX2 on an AVX-512 CPU (or one whose flags cannot be read), SSE4.2 elsewhere; the machine record names the
    instruction sets of ``CPU_FEATURES`` among the same flags."""
    from sumjudge.perf import machine
    from sumjudge.reproduce import check

    for flags, held in ((["sse4_2", "avx2", "avx512f"], check.HELD_TO_AVX2), (["sse4_2", "avx2"], check.HELD_TO_SSE42),
                        ([], check.HELD_TO_AVX2)):
        monkeypatch.setattr(check, "cpu_flags", lambda flags=flags: flags)
        assert check.lower_kernels() == held
    monkeypatch.setattr(machine, "cpu_flags", lambda: ["fpu", "avx2", "amx_bf16", "avx512_bf16"])
    assert machine.cpu_features() == ["avx2", "avx512_bf16", "amx_bf16"]


def test_a_large_float_is_shown_whole_and_checked_at_its_units():
    """A table shows a float of more digits than its 3 significant ones whole (a count of 1,005 test examples in a
    column of ratios reads 1005, not 1.01e+03); the check reads such a cell at its units where the replay's float is
    known, and a count exactly."""
    df = pd.DataFrame({"metric": ["train", "t_ratio", "test", "none"], "paper": [16400.0, 37.7, 1030.0, float("nan")],
                       "reproduced": [690, 49.25, 1005.0, 0.12345], "note": ["a", 1370.45, None, 999.7]})
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in report.markdown_table(df).splitlines()[2:]]
    assert rows == [["train", "16400", "690", "a"], ["t_ratio", "37.7", "49.2", "1370"], ["test", "1030", "1005", ""],
                    ["none", "nan", "0.123", "1000"]]
    assert report.markdown_table(df).splitlines()[1] == "|:---------|--------:|-------------:|:-------|"
    assert [report.shown_number(v) for v in (999.6, 116000.0, -2500.2, 1.2345e-05)] == ["1000", "116000", "-2500", "1.23e-05"]
    assert same_as_shown("1372", "1371", raw="1371.4999999999998")  # a float at a rounding edge, shown whole
    assert not same_as_shown("1370", "1371", raw="1371.2") and not same_as_shown("1014", "1015", raw="1015")
    assert not same_as_shown("1372", "1371")  # no float known: whole numbers are compared exactly
