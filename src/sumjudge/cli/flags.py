"""The command line's shared flags and their checks (exit codes, ``--set``, the engine flags, the budget flags): every
subcommand that runs a model takes them from here (the papers' own commands are data, ``run.commands``, and import
none of it)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from sumjudge.errors import ConfigError
from sumjudge.llm.backend_registry import BACKENDS, backend_names
from sumjudge.llm.budget import Budget
from sumjudge.llm.models import check_tokenizer_folder
from sumjudge.run.folder import RunConfig

EXIT_USAGE, EXIT_DATA, EXIT_BACKEND, EXIT_RUN, EXIT_BUDGET, EXIT_INTERRUPTED = 2, 3, 4, 5, 6, 130


def parse_sets(sets: list[str] | None) -> dict[str, str]:
    """``--set key=value`` options as a mapping (values converted and checked by the method's config)."""
    out = {}
    for s in sets or []:
        if "=" not in s:
            raise ConfigError(f"--set {s!r}: expected key=value")
        k, v = s.split("=", 1)
        out[k.strip()] = v
    return out


SQLITE_HEADER = b"SQLite format 3\x00"


def masked_url(url: str, mask: str = "***@") -> str:
    """``url`` with any user and password in it replaced by ``mask`` (``""``: left out): what a message may print."""

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=mask + parts.netloc.rpartition("@")[2]))


def check_engine_flags(a) -> None:
    """Engine flags that do not apply to the backend, contradict each other or are out of range: one
    ``ConfigError`` naming the flag (exit 2), before anything is loaded or written."""


    backend = getattr(a, "backend", None)
    given = {flag: getattr(a, attr, None) for flag, attr in (("--token-budget", "token_budget"), ("--dtype", "dtype"),
             ("--base-url", "base_url"), ("--timeout", "timeout"), ("--max-retry-time", "max_retry_time"),
             ("--server-name", "server_name"), ("--tokenizer", "tokenizer"), ("--concurrency", "concurrency"))}
    for flag, only in (("--token-budget", "hf"), ("--dtype", "hf"), ("--base-url", "openai"), ("--timeout", "openai"),
                       ("--max-retry-time", "openai"), ("--server-name", "openai"), ("--tokenizer", "openai"),
                       ("--concurrency", "openai")):
        if given[flag] is not None and backend != only:
            raise ConfigError(f"{flag} applies to --backend {only} only (this run uses --backend {backend})")
    for flag in ("--token-budget", "--timeout", "--max-retry-time", "--concurrency"):
        if given[flag] is not None and not given[flag] > 0:
            raise ConfigError(f"{flag} {given[flag]}: expected a number above 0")
    url = given["--base-url"]
    if url is not None:
        parts, shown = urlsplit(url), masked_url(url)  # a password in the URL is never printed
        if shown != url:
            raise ConfigError(f"--base-url {shown!r}: a user or password in the URL is refused; give the URL without "
                              f"them ({masked_url(url, mask='')}) and the key in the OPENAI_API_KEY environment "
                              "variable (sent as a bearer token)")
        try:
            parts.port  # a port out of 0-65535 or not a number raises here
        except ValueError as e:
            raise ConfigError(f"--base-url {url!r}: {e} (expected an http(s) URL such as http://host:8000/v1)") from None
        if parts.scheme not in ("http", "https") or not parts.hostname or any(c.isspace() for c in url):
            raise ConfigError(f"--base-url {url!r}: expected an http(s) URL such as http://host:8000/v1")
    if given["--tokenizer"] is not None:
        check_tokenizer_folder(given["--tokenizer"])
    cache = getattr(a, "cache", None)
    if cache is not None:
        if getattr(a, "no_cache", False):
            raise ConfigError(f"--no-cache and --cache {cache}: choose one "
                              "(--no-cache neither reads nor writes a cache)")
        cache = Path(cache)
        if cache.is_dir():
            raise ConfigError(f"--cache {cache}: is a folder; name the cache file (e.g. {cache / 'llm_cache.sqlite'})")
        if cache.is_file() and cache.stat().st_size:
            with open(cache, "rb") as f:
                if f.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
                    raise ConfigError(f"--cache {cache}: not a sumjudge cache (not an SQLite file); name another file")


def add_engine_flags(p, *, model_help: str = "tiny | smoke | gemma-270m | a local model folder | a Hugging Face "
                     "repo id | a served model name") -> None:
    """``--backend`` (the registered backends), ``--model`` and ``--base-url``: every command that runs a model."""

    p.add_argument("--backend", default="hf", choices=backend_names(),
                   help="; ".join(f"{b.name}: {b.about}" for b in BACKENDS.values()))
    p.add_argument("--model", help=model_help)
    p.add_argument("--base-url", help="OpenAI-compatible server, e.g. http://host:8000/v1 (vLLM)")


def add_run_flags(p, *, dataset: str | None = None, split: str | None = None, level: bool = True,
                  limit: int | None = None) -> None:
    """What every command that makes a run folder takes: the data (``--dataset``, ``--split``, ``--level``,
    ``--limit``; the defaults given here), the engine (``add_engine_flags``), ``--seed``, the method's ``--set``,
    the folder (``--out``), the cache and the budget."""
    p.add_argument("--dataset", required=dataset is None, default=dataset)
    p.add_argument("--split", default=split)
    if level:
        p.add_argument("--level", choices=("sentence", "summary"))
    p.add_argument("--limit", type=int, default=limit,
                   help="a seeded subset of N examples (label-stratified; whole groups for rated data)")
    add_engine_flags(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="method setting (repeatable)")
    p.add_argument("--out", required=True, type=Path,
                   help="the run folder (a new or empty one, or an earlier run's: the same command resumes it)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the response cache")
    p.add_argument("--cache", type=Path, help="cache file (default data/cache/llm_cache.sqlite)")
    add_budget_flags(p)


def run_config_of(a, method: str, **extra):
    """The ``folder.RunConfig`` of a command's flags (``add_run_flags``) for ``method``."""

    return RunConfig(method=method, dataset=a.dataset, split=a.split, level=getattr(a, "level", None), limit=a.limit,
                     backend=a.backend, model=a.model, base_url=a.base_url, seed=a.seed, settings=parse_sets(a.set),
                     **extra)


def budget_of(a):
    """The cost guard of ``--max-calls`` / ``--max-tokens`` (None when neither is given)."""

    return Budget(a.max_calls, a.max_tokens) if a.max_calls is not None or a.max_tokens is not None else None


def add_budget_flags(p) -> None:
    p.add_argument("--max-calls", type=int, help="stop before more than this many backend calls (cache hits are free); "
                   f"exit {EXIT_BUDGET}, and the same command with a larger budget resumes")
    p.add_argument("--max-tokens", type=int, help="stop before a call whose prompt and answer cap would take the "
                   "prompt + completion tokens of this process's backend calls past this many; exit "
                   f"{EXIT_BUDGET}, resumable")


def add_paper_runs_flags(p) -> None:
    p.add_argument("--runs", nargs="*", help="runs of profiles/scale.yaml (default: all)")
    p.add_argument("--limit", type=int, default=None, help="examples per run (default: all, the papers' size)")

