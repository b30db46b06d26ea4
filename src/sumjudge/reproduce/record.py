"""``make reproduce``: execute every numbered notebook headlessly with papermill.

Parameters injected into each notebook's ``parameters`` cell: profile, backend, model, base_url,
n, seed (empty values keep the profile's). Executed copies go to ``build/notebooks/<profile>/``;
the notebooks write their tables and figures under ``figures/<notebook>/``.

With the hf backend the model is loaded once, in a shared engine (``llm.shared_engine``), and ``--jobs``
notebooks run at a time (each in a worker process of its own), so that their requests fill one decoding
batch: a debate waiting for its next round leaves its places to another notebook's rows. Requests two
notebooks send together are decoded once; those sent after another notebook's are cache hits. Every
notebook still writes its own runs, cache entries and tables, and resumes on its own.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sumjudge import profiles
from sumjudge.errors import ConfigError
from sumjudge.llm.cache import ResponseCache
from sumjudge.llm.hf import cpu_has_native_bf16
from sumjudge.llm.models import resolve_model
from sumjudge.llm.shared_engine import get_json
from sumjudge.paths import figures_dir, project_root, runs_dir
from sumjudge.report import markdown_rows
from sumjudge.reproduce.check import main as check_main
from sumjudge.reproduce.reuse import reuse_recorded_answers
from sumjudge.results.page import commit, write_results_page
from sumjudge.results.parse_rates import write_parse_rates
from sumjudge.run.notebooks import execute, notebook_parameters, notebooks, recording_order, run_workers  # noqa: F401

TIME_COLUMNS = ("notebook", "wall_s", "model", "calls", "cache_hits", "backend_calls", "waves", "rows_per_wave",
                "own_prompt_tokens", "own_prefill_s", "own_answers", "own_decode_tokens", "own_decode_s",
                "own_option_sets", "own_score_s",
                "prefill_s", "prefill_tokens_per_s", "decode_s", "decode_tokens_per_s", "rows_per_decode_step",
                "underfilled_share")


def notebook_time_profile(notebook: str, wall_s: float, since: float) -> list[dict]:
    """The engines' time profiles a notebook wrote during this execution (``Session.write_time_profile``): a row
    per engine with the notebook's wall time."""

    rows = []
    for f in sorted((runs_dir() / notebook).glob("*/time_profile.json")):
        if f.stat().st_mtime >= since:
            rows += [{"notebook": notebook, "wall_s": round(wall_s, 1), **e} for e in json.loads(f.read_text())]
    return rows or [{"notebook": notebook, "wall_s": round(wall_s, 1)}]


def model_time_by_notebook(rows: list[dict]) -> list[tuple[str, float]]:
    """(notebook, seconds of the model's time that were its own: prefill, decode and scoring of its rows), the
    heaviest first; notebooks that used no local model are left out."""
    own: dict[str, float] = {}
    for r in rows:
        if "own_prefill_s" in r:
            spent = sum(r.get(k) or 0.0 for k in ("own_prefill_s", "own_decode_s", "own_score_s"))
            own[r["notebook"]] = own.get(r["notebook"], 0.0) + spent
    return sorted(((nb, s) for nb, s in own.items() if s > 0), key=lambda x: -x[1])


def write_time_profile(rows: list[dict], profile: str, out_dir: Path, totals: dict | None = None,
                       jobs: int = 1) -> Path:
    """``figures/time_profile_<profile>.md``: where each notebook's time went (calls, waves, rows per wave,
    prefill and decode seconds, the share of decode time with an under-filled micro-batch); with a shared
    engine (``totals``: its counters at the end) the decoder columns are the engine's over each notebook's
    span, every notebook then running included, and the engine's totals close the page."""

    out_dir.mkdir(parents=True, exist_ok=True)
    lines = markdown_rows(rows, TIME_COLUMNS)
    head = f"# Where the time went: profile {profile}\n\n"
    at_a_time = min(jobs, len({r["notebook"] for r in rows}))
    served = bool(totals) and any(v for v in (totals.get("decode") or {}).values())
    if totals and not served:
        head += ("A shared engine was started and answered none of these notebooks' requests (each loaded its own "
                 "model: another model or dtype than the engine's), so every column is the notebook's own.\n\n")
        totals = None
    elif totals:
        head += (f"{at_a_time} notebook{'s' if at_a_time != 1 else ''} ran at a time on one shared engine. The "
                 "`own_*` columns are the notebook's own "
                 "share of the engine's work (its rows' prompt tokens; prefill seconds of an admission split among "
                 "its rows by prompt length, decode seconds of a step split equally among the rows it decoded; its "
                 "answers and their tokens; the option sets it had scored and their seconds): the notebooks' add up "
                 "to about the engine's totals. The other prefill and decode columns are the engine's while that notebook ran, the "
                 "other notebooks' rows included (they overlap; their sum is not the run's). The engine's own "
                 "totals are at the end.\n\n")
    tail = ""
    if totals and totals.get("decode"):
        d = totals["decode"]
        tail = ("\n## The shared engine, all notebooks together\n\n"
                + "\n".join(f"- {k}: {round(v, 2) if isinstance(v, float) else v}" for k, v in sorted(d.items()))
                + f"\n- requests decoded once for two notebooks: {totals.get('coalesced', 0)}\n")
    path = out_dir / f"time_profile_{profile}.md"
    path.write_text(head + "\n".join(lines) + "\n" + tail, encoding="utf-8")
    return path


JOBS_SHARED = 3  # notebooks at a time on a shared engine (2 cores: more only pads the batch with long caches)
ENGINE_START_S = 1800  # the shared engine's first start may convert the smoke model (minutes)


def start_shared_engine(profile: str, model: str, work: Path):
    """(process, base URL) of a shared engine holding the profile's hf model (``model``: another one), started
    once its model is loaded. Its log is ``work/shared_engine.log``."""


    prof = profiles.load(profile)
    model = model or prof.model
    cmd = [sys.executable, "-m", "sumjudge.llm.shared_engine", "--model", model, "--ready-file", str(work / "url"),
           "--parent-pid", str(os.getpid())]  # a killed recording takes its engine with it
    if prof.dtype:
        cmd += ["--dtype", prof.dtype]
    if prof.token_budget:
        cmd += ["--token-budget", str(prof.token_budget)]
    work.mkdir(parents=True, exist_ok=True)
    (work / "url").unlink(missing_ok=True)
    with (work / "shared_engine.log").open("w") as log:  # the child keeps its own handle
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    t0 = time.time()
    while not (work / "url").exists():
        if proc.poll() is not None or time.time() - t0 > ENGINE_START_S:
            proc.kill()
            tail = (work / "shared_engine.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the shared engine did not start (exit {proc.returncode}):\n{tail}")
        time.sleep(0.5)
    return proc, (work / "url").read_text().strip()


def engine_totals(url: str) -> dict:
    """The shared engine's decoder counters (all notebooks together) and the requests it decoded once for two."""

    try:
        return get_json(url, "/stats")
    except Exception:  # noqa: BLE001 - a report line, not a reason to fail the run
        return {}


def longest_first(nbs: list[Path], hint: list[str] | None = None) -> list[Path]:
    """The order workers take notebooks in: the longest first, so that the run does not end on one long notebook
    alone. By this machine's last time profile of a run that asked the model more than it read from the cache (a
    replay's times say what was cached, not what a run costs); else by the profile's measured ``hint`` (notebook
    numbers, longest first); the numbered order for notebooks neither knows."""


    seen: dict[str, float] = {}
    for f in figures_dir().glob("time_profile_*.md"):
        rows = re.findall(r"^\| (\d\d_\w+) \| ([\d.]+) \|(.*)$", f.read_text(), re.M)
        counts = [re.match(r"[^|]*\|\s*(\d*)\s*\|\s*(\d*)\s*\|\s*(\d*)\s*\|", rest) for _, _, rest in rows]
        hits = sum(int(m.group(2) or 0) for m in counts if m)  # model | calls | cache_hits | backend_calls
        asked = sum(int(m.group(3) or 0) for m in counts if m)
        if hits > asked:
            continue
        for name, wall, _ in rows:
            seen[name] = max(seen.get(name, 0.0), float(wall))
    if seen:
        return sorted(nbs, key=lambda nb: -seen.get(nb.stem, 0.0))
    rank = {str(k): i for i, k in enumerate(hint or [])}
    return sorted(nbs, key=lambda nb: rank.get(nb.stem[:2], len(rank)))


def cpu_speed_note(dtype: str | None) -> str | None:
    """A word before a long run where the profile asks for the CPU's native dtype and this CPU has no native
    bfloat16 (no AVX512-BF16 or AMX): the model then runs in float32, and a whole run on a few cores takes hours.
    None elsewhere (a GPU, another dtype, a CPU with native bfloat16)."""

    if dtype != "cpu-native" or cpu_has_native_bf16():
        return None
    try:
        import torch

        if torch.cuda.is_available():
            return None
    except ImportError:
        return None
    return ("note: this CPU computes no bfloat16 natively (no AVX512-BF16 or AMX): the model runs in float32; "
            "expect hours, not minutes, for the smoke profile on a few cores (the results index gives each "
            "recording run's elapsed time and machine; `sumjudge plan --profile smoke --notebooks` counts its "
            "tokens)")


KERNEL_TRIES = 3  # a kernel that dies before running a cell (a loaded machine) is started again, this often


def execute_with_retries(nb: Path, profile: str, out_dir: Path, params: dict[str, Any],
                         tries: int = KERNEL_TRIES) -> str:
    """Execute one notebook: "ok", or "FAILED: ..." with the error. An error raised by a cell (papermill's, with the
    cell's ``ename``) is the notebook's and is not retried; one without (the kernel died or did not start) is the
    machine's, and the notebook is executed again, up to ``tries`` times in all, each retry said."""
    for attempt in range(1, tries + 1):
        try:
            execute(nb, profile, out_dir, **params)
            return "ok"
        except Exception as e:  # papermill raises PapermillExecutionError with the cell's traceback
            status = f"FAILED: {getattr(e, 'ename', type(e).__name__)}: {getattr(e, 'evalue', e)}"
            if hasattr(e, "ename") or attempt == tries:
                return status
            print(f"{nb.name}: {status}; executing it again ({attempt + 1} of {tries})", flush=True)
    return "FAILED: not executed"


def main(argv: list[str] | None = None) -> int:
    """``record`` with Ctrl-C said in one line (exit 130): an interrupted recording writes nothing to the page, and
    each notebook's runs resume where they stopped."""
    try:
        return record(argv)
    except KeyboardInterrupt:
        print("interrupted: the results page is unchanged; run the same command again to resume (finished calls "
              "are read from the cache)", file=sys.stderr, flush=True)
        return 130


def reuse_page_answers(profile: str, model: str, backend: str) -> str:
    """``--reuse-answers``: the profile's results page's recorded answers of ``model``'s weights put in the response
    cache (``recorded_reuse``); one line saying what was taken, or why nothing was."""

    page = figures_dir() / f"results-{profile}"
    folder = Path(resolve_model(model)) if backend == "hf" else None
    if folder is None or not folder.is_dir():
        raise ConfigError(f"--reuse-answers: the answers a page recorded are taken for a local hf model folder; "
                          f"{backend}:{model} is not one")
    if not (page / "provenance.json").exists():
        return f"--reuse-answers: {page} has no recorded answers; nothing taken"
    cache = ResponseCache()
    try:
        return reuse_recorded_answers(page, folder, cache)
    finally:
        cache.close()


def record(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sumjudge.reproduce.record")
    p.add_argument("--profile", default="smoke")
    p.add_argument("--model", default="")
    p.add_argument("--backend", default="")
    p.add_argument("--base-url", default="")
    p.add_argument("--n", default="")
    p.add_argument("--seed", default="")
    p.add_argument("--notebooks", default="", help="prefixes, e.g. '00 10' (default: all)")
    p.add_argument("--jobs", default="", help="notebooks at a time (default: 3 on a shared hf engine, else 1)")
    p.add_argument("--shared-engine", default="auto", choices=("auto", "off"),
                   help="auto: with the hf backend, load the model once and serve every notebook from it")
    p.add_argument("--replay", action="store_true",
                   help="answer from the results page's recorded answers (no model), then check the page against "
                        "what they give (reproduce.check)")
    p.add_argument("--reuse-answers", action="store_true",
                   help="first take the answers the results page recorded of the same weights into the response "
                        "cache (sumjudge.reproduce.reuse): only new requests are asked of the model")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # run the notebooks, report nothing
    args = sys.argv[1:] if argv is None else argv
    a = p.parse_args(args)
    if a.replay and not a.worker:
        return check_main(["--profile", a.profile, "--notebooks", a.notebooks] + (["--jobs", a.jobs] if a.jobs else []))
    params = {"model": a.model, "backend": a.backend, "base_url": a.base_url,
              "n": int(a.n) if a.n else None, "seed": int(a.seed) if a.seed else None}
    out_dir = project_root() / "build" / "notebooks" / a.profile
    t_all = time.time()

    started_at = commit()  # the page names the code the run started with (the checkout may change while it runs)
    failed = []
    profile_rows, walls = [], []
    if a.worker:
        for nb in notebooks(a.notebooks):
            t0 = time.time()
            status = execute_with_retries(nb, a.profile, out_dir, params)
            if status != "ok":
                failed.append(nb.name)
            print(f"{nb.name:45s} {time.time() - t0:8.1f}s  {status}", flush=True)
        return 1 if failed else 0

    prof = profiles.load(a.profile)
    shared = a.shared_engine == "auto" and (a.backend or prof.backend) == "hf"
    note = cpu_speed_note(prof.dtype if (a.backend or prof.backend) == "hf" else None)
    if note:
        print(note, flush=True)
    jobs = int(a.jobs) if a.jobs else (JOBS_SHARED if shared else 1)
    if a.reuse_answers:
        print(reuse_page_answers(a.profile, a.model or prof.model, a.backend or prof.backend), flush=True)
    engine, url = None, ""
    env = dict(os.environ)
    if shared:
        t0 = time.time()
        engine, url = start_shared_engine(a.profile, a.model, project_root() / "build" / "shared_engine")
        env["SUMJUDGE_SHARED_ENGINE"] = url
        print(f"shared engine at {url}: model loaded in {time.time() - t0:.1f}s", flush=True)
    base = [x for x in args if x not in ("--worker",)]
    base = [x for i, x in enumerate(base) if not (x == "--notebooks" or (i and base[i - 1] == "--notebooks"))
            and not x.startswith("--notebooks=")]
    try:
        order = longest_first(notebooks(a.notebooks), prof.longest_first) if jobs > 1 else notebooks(a.notebooks)
        records = run_workers(order, jobs, base, env, out_dir / "logs", after=recording_order(order))
        totals = engine_totals(url) if url else {}
    finally:
        if engine is not None:
            engine.terminate()
            engine.wait(timeout=60)
    for nb in notebooks(a.notebooks):  # the numbered order in every report
        w = next(r for r in records if r["notebook"] == nb.stem)
        if w["status"] != "ok":
            failed.append(nb.name)
        walls.append({k: w[k] for k in ("notebook", "wall_s", "status", "start")})
        profile_rows += notebook_time_profile(nb.stem, w["wall_s"], since=w["start"])

    if profile_rows:
        print(f"time profile per notebook: {write_time_profile(profile_rows, a.profile, figures_dir(), totals, jobs)}")
        heaviest = model_time_by_notebook(profile_rows)[:3]
        if heaviest:
            print("most model time (own prefill + decode + scoring): "
                  + ", ".join(f"{nb} {s:.0f}s" for nb, s in heaviest))
    table = write_parse_rates(runs_dir(), a.profile, figures_dir(), since=t_all)
    if table:
        print(f"parse rates per method: {table.with_suffix('.md')}")

    page = write_results_page(a.profile, notebooks(a.notebooks), walls, figures_dir(),
                              model=a.model or prof.model, time_rows=profile_rows,
                              run={"wall_s": round(time.time() - t_all, 1), "jobs": jobs}, recorded_commit=started_at)
    print(f"results page: {page}" if page else "results page unchanged: no notebook of this run finished")
    print(f"profile {a.profile}: {len(notebooks(a.notebooks)) - len(failed)} notebooks ok, {len(failed)} failed; "
          f"wall time {time.time() - t_all:.1f}s ({jobs} at a time{', one shared engine' if shared else ''}); "
          f"executed copies in {out_dir}; tables and figures in figures/")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
