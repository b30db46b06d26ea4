"""What every notebook does first: resolve the profile and its overrides, share one engine, run methods.

Notebooks stay thin: a parameters cell (papermill), then ``session = notebook.Session(...)`` and
``session.run(method, dataset, ...)``. Runs land in ``build/runs/<notebook>/<profile>-<model>/<name>/``
and are resumable like any ``sumjudge run`` (same cache).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sumjudge import profiles
from sumjudge.environment import read
from sumjudge.errors import ConfigError
from sumjudge.judges.settings import make_config
from sumjudge.llm import make_llm
from sumjudge.llm.engine import LLM
from sumjudge.llm.openai import served_models
from sumjudge.llm.recording import Recorder, Recording, ReplayBackend
from sumjudge.paths import figures_dir, project_root, runs_dir
from sumjudge.perf.plan import PlanSetting, planning_llm
from sumjudge.profiles import Profile
from sumjudge.run.folder import RunConfig
from sumjudge.run.methods import get_method, settings_from
from sumjudge.run.replay import (
    ANSWERS,
    ANSWERS_PLAIN,
    ask_from_env,
    model_label,
    page_path,
    replay_from_env,
    replay_llm,
    set_recorded_parameters,
)
from sumjudge.run.runs import Target
from sumjudge.run.runs import run as run_one
from sumjudge.run.runs import run_many as run_jobs
from sumjudge.run.runs import run_many_async as run_jobs_async


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text.rsplit("/", 1)[-1]).strip("-").lower() or "model"


_RECORDERS: dict[str, Recorder] = {}  # notebook -> what its sessions in this process were answered
_RECORDINGS: dict[Path, Recording] = {}  # recorded answers read for a replay
_LATEST: list[Session] = []  # the session a notebook made last in this process (``current_session``)


def current_session() -> Session | None:
    """The session the running notebook made last (None outside a notebook): what its tables were computed in."""
    return _LATEST[-1] if _LATEST else None


@dataclass
class Session:
    """One notebook's settings and engine. Overrides that are None/'' keep the profile's value.

    Replayed from ``SUMJUDGE_REPLAY`` in a notebook run by hand (JupyterLab: ``make lab REPLAY=1``), the session sets
    the notebook's parameters to those the recording ran with (``replay.set_recorded_parameters``), and with
    ``SUMJUDGE_REPLAY_ASK`` asks a model for what the recording does not hold (``replay.Ask``)."""

    notebook: str
    profile: str = "smoke"
    backend: str | None = None
    model: str | None = None
    base_url: str | None = None
    n: int | None = None
    seed: int | None = None
    replay: str | Path | None = None  # a results page folder: answer from its recorded answers, never a model
    # ``sumjudge plan``'s setting (a PlanSetting, its fields or their JSON): every run on the planner, nothing recorded
    planner: PlanSetting | dict | str | None = None
    prof: Profile = field(init=False)
    recorder: Recorder | None = field(default=None, init=False, repr=False)
    recording: Recording | None = field(default=None, init=False, repr=False)
    _llm: LLM | None = field(default=None, init=False, repr=False)
    _engines: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self._use_class_server()
        self.prof = profiles.load(self.profile, notebook=self.notebook, backend=self.backend, model=self.model, base_url=self.base_url,
                                  n=self.n, seed=self.seed)
        self.planner = PlanSetting.of(self.planner)
        from_env = not self.replay and replay_from_env()
        self.replay = self.replay or replay_from_env()
        if self.replay:
            path = page_path(self.replay) / self.notebook / ANSWERS
            if path not in _RECORDINGS:
                _RECORDINGS[path] = Recording.load(path, notebook=self.notebook, missing_ok=True)
            self.recording = _RECORDINGS[path]
            if from_env:  # a notebook opened by hand: the parameters it was recorded with, unless injected
                set_recorded_parameters(self.notebook, self.prof.parameters)
        elif self.planner is None:  # a notebook's sessions (e.g. one per trained model) record together
            self.recorder = _RECORDERS.setdefault(self.notebook, Recorder())
        _LATEST[:] = [self]

    def _use_class_server(self) -> None:
        """Under ``SUMJUDGE_SERVER`` (``make lab SERVER=URL``), a session that records its own model's answers asks
        that server (backend openai; the model named as ``model@URL``, else the one the server lists), unless the
        notebook names a backend or server itself; a replay and the planner keep theirs."""
        server = read("SUMJUDGE_SERVER")
        if not server or self.replay or replay_from_env() or self.planner is not None or self.backend or self.base_url:
            return
        named = "@" in server and not server.startswith(("http://", "https://"))
        model, url = server.split("@", 1) if named else ("", server)
        if not model:
            listed = served_models(url)
            if len(listed) != 1:
                raise ConfigError(f"SUMJUDGE_SERVER={url} serves {len(listed)} models ({', '.join(listed[:5])}): name "
                                  "one, SUMJUDGE_SERVER=model@URL")
            model = listed[0]
        self.backend, self.model, self.base_url = "openai", model, url

    def _engine(self, backend: str, model: str | None, base_url: str | None, options: dict[str, Any]) -> LLM:
        """An engine of this notebook: the model's (its answers recorded), or in a replay the recorded one's."""
        if self.recording is not None:
            return replay_llm(self.recording, backend, model, base_url, options,
                              ask_from_env(backend, model, base_url, options))
        llm = make_llm(backend, model, base_url=base_url, **options)
        if self.recorder is not None:
            self.recorder.register(llm, backend, model_label(model), base_url, options)
        return llm

    @property
    def llm(self) -> LLM:
        """The engine, built on first use and shared by every run of the notebook; the planner when the notebook
        is executed by ``sumjudge plan`` (its ``planner``)."""
        if self._llm is None:
            p = self.prof
            if self.planner is not None:
                self._llm = planning_llm(self.planner, p.parse_retries, measured_from=self.runs_dir(planned=False))
            else:
                self._llm = self._engine(p.backend, p.model, p.base_url, p.engine_options())
        return self._llm

    def llm_for(self, method: str) -> LLM:
        """The engine that runs ``method``: the profile's, or the model the profile names for the method's
        paper (``Profile.engine_for``, e.g. a long-context model)."""

        return self._llm_for_paper(get_method(method).paper)

    def _llm_for_paper(self, paper: str) -> LLM:
        engine = self.prof.engine_for(paper)
        if engine == (self.prof.backend, self.prof.model, self.prof.base_url) or self.planner is not None:
            return self.llm
        if engine not in self._engines:
            # the profile's context cap and dtype are for its own (hf) model
            opts = {k: v for k, v in self.prof.engine_options().items()
                    if k not in ("context_length", "dtype") or (k == "dtype" and engine[0] == "hf")}
            self._engines[engine] = self._engine(engine[0], engine[1], engine[2], opts)
        return self._engines[engine]

    def runs_dir(self, planned: bool = True) -> Path:
        """The notebook's run folders (``planned``: a planned notebook's, under the plan's own folder)."""
        planning = self.planner if planned else None
        root = Path(planning.runs_dir) if planning is not None else runs_dir()
        if self.replay and planned:  # a replay's runs never resume (or overwrite) a real run's folders
            root = project_root() / "build" / "replay" / "runs"
        return root / self.notebook / f"{self.prof.name}-{slug(self.prof.model)}"

    def method_settings(self, method: str | None = None, **extra: Any) -> dict[str, Any]:
        """The profile's generation policy as method settings (those of its fields the method's config has: every
        paper's config has all three, a judge of your own may have none), then the profile's settings for
        ``method``, then ``extra``."""
        return {**settings_from(self.prof, method), **extra}

    def prepare_run(self, method: str, dataset: str, *, name: str | None = None, level: str | None = None,
             split: str | None = None, limit: int | None = None, settings: dict[str, Any] | None = None):
        """(run config, run folder, engine, target) of ``method`` on the profile's first ``n`` examples (or
        ``limit``), a job of ``runs.run_many``: the method and the dataset are looked up here, once (``runs.Target``),
        and the run is given them."""


        p = self.prof
        target = Target.of(method, dataset)
        spec = target.method
        backend, model, base_url = p.engine_for(spec.paper)
        rc = RunConfig(method=method, dataset=dataset, split=split, level=level,
                       limit=limit if limit is not None else p.n, backend=backend, model=model,
                       base_url=base_url, seed=p.seed, settings=self.method_settings(method, **(settings or {})))
        # the folder name carries a hash of the whole configuration (run + the method's resolved settings,
        # defaults included): another profile, setting or default never collides with an older run
        method_cfg = asdict(make_config(spec.config_cls, rc.settings, seed=rc.seed))
        # (a dtype the profile sets is part of it: the same weights in another dtype answer differently)
        key = [rc.to_json(), method_cfg] + ([p.dtype] if p.dtype and backend == "hf" else [])
        digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:8]
        out = self.runs_dir() / f"{name or f'{method}-{dataset}-{level}'}-{digest}"
        return rc, out, self._llm_for_paper(spec.paper), target

    def run(self, method: str, dataset: str, *, name: str | None = None, level: str | None = None,
            split: str | None = None, limit: int | None = None, settings: dict[str, Any] | None = None,
            progress: bool = True) -> tuple[dict[str, Any], Path]:
        """Run ``method`` on the profile's first ``n`` examples (or ``limit``); returns (metrics, run folder)."""
        rc, out, llm, target = self.prepare_run(method, dataset, name=name, level=level, split=split, limit=limit,
                                                settings=settings)
        try:
            return run_one(rc, out, llm=llm, progress=progress, target=target), out
        finally:
            self.write_time_profile()

    def run_many(self, runs: list[dict[str, Any]], *, progress: bool = True,
                 alongside: Sequence[Callable[[], Awaitable[Any]]] = ()) -> list[tuple[dict[str, Any], Path]]:
        """Several runs at once, each given as ``run``'s arguments (``{"method": ..., "dataset": ..., "settings":
        ...}``): their requests share the engine's batches (a table's evaluators, a grid of settings), each run
        keeps its own folder, log and metrics and resumes on its own; a run asked twice runs once. ``alongside``:
        coroutine functions awaited with the runs (``runs.run_many``). Returns ``run``'s (metrics, folder) for each,
        in order."""
        plans, distinct = self._plans(runs)
        try:
            return self._in_order(plans, distinct, run_jobs(distinct, progress=progress, alongside=alongside))
        finally:
            self.write_time_profile()

    async def run_many_async(self, runs: list[dict[str, Any]], *, progress: bool = True
                             ) -> list[tuple[dict[str, Any], Path]]:
        """``run_many`` from inside a running event loop (``runs.run_many_async``): e.g. work alongside other runs
        that starts runs once it has learned their configuration; they join the batches of what is running."""
        plans, distinct = self._plans(runs)
        try:
            return self._in_order(plans, distinct, await run_jobs_async(distinct, progress=progress))
        finally:
            self.write_time_profile()

    def _plans(self, runs: list[dict[str, Any]]) -> tuple[list, list]:
        """Each run's (config, folder, engine, target), and those to run (the same run asked twice runs once)."""
        plans = [self.prepare_run(**spec) for spec in runs]
        return plans, list({plan[1]: plan for plan in plans}.values())

    @staticmethod
    def _in_order(plans: list, distinct: list, finished: list) -> list[tuple[dict[str, Any], Path]]:
        done = dict(zip([plan[1] for plan in distinct], finished))
        return [(done[plan[1]], plan[1]) for plan in plans]

    def time_profile(self) -> list[dict[str, Any]]:
        """Each engine of this notebook: calls, waves, rows per wave, prefill and decode time (``LLM.time_profile``)."""
        engines = ([self._llm] if self._llm is not None else []) + list(self._engines.values())
        return [e.time_profile() for e in engines]

    def write_time_profile(self) -> Path:
        """The time profile so far, in the runs folder (``make reproduce`` puts every notebook's in one table), and
        the answers so far (``write_answers``: a notebook that runs through another path, e.g. the arena, writes
        both when it calls this)."""
        path = self.runs_dir() / "time_profile.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.time_profile(), indent=2), encoding="utf-8")
        self.write_answers()
        self.say_asked()
        return path

    def say_asked(self) -> None:
        """In a replay that asks a model (``SUMJUDGE_REPLAY_ASK``): one line per engine on the requests asked since
        the last line."""
        engines = ([self._llm] if self._llm is not None else []) + list(self._engines.values())
        asks = [e.backend.ask for e in engines if isinstance(e.backend, ReplayBackend) and e.backend.ask is not None]
        for line in filter(None, (ask.news() for ask in asks)):
            print(f"replay: {line}", flush=True)

    def write_answers(self) -> Path | None:
        """Every answer this notebook's engines gave so far (``figures/<notebook>/answers.jsonl``: ``make reproduce``
        keeps it beside the notebook's results page, compressed); nothing in a replay or a plan."""
        if self.recorder is None or not len(self.recorder):
            return None
        return self.recorder.write(figures_dir() / self.notebook / ANSWERS_PLAIN)

    def step(self, name: str, fn: Callable[[], Any]) -> Any:
        """A step of the notebook that calls no model through the engine but whose result its tables use (e.g.
        fine-tuning a model: its losses): run and recorded by ``name`` (its result as JSON gives it back), or in a
        replay the recorded result, without running it."""
        if self.recording is not None:
            return self.recording.step(name)
        value = fn()
        return self.recorder.step(name, value) if self.recorder is not None else value

    def describe(self) -> str:
        p = self.prof
        where = f" at {p.base_url}" if p.backend == "openai" else ""
        n = "all" if p.n is None else p.n
        ctx = f", prompts capped at {p.context_length} tokens" if p.context_length else ""
        ctx += f", weights: {p.dtype}" if p.backend == "hf" and p.dtype else ""
        return (f"profile {p.name}: backend {p.backend}{where}, model {p.model}, n = {n} examples per experiment, "
                f"seed {p.seed}, max_new_tokens {p.max_new_tokens}{ctx}, over-long prompts: {p.truncate}, "
                f"parse retries: {p.parse_retries}, unparseable labels: {p.label_fallback}")
