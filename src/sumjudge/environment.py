"""The environment variables sumjudge reads, each with its one purpose, and the one place they are read
(``read``). None of them changes what a model is asked or how an answer is read: they say where files are, or
tell a notebook process what the command that started it set up. docs/command-line.md lists them (tested)."""

from __future__ import annotations

import os

VARIABLES: dict[str, str] = {
    "SUMJUDGE_HOME": "the project folder (data/, figures/, build/) when the package is installed outside a checkout",
    "SUMJUDGE_CACHE": "the response cache file (default data/cache/llm_cache.sqlite)",
    "SUMJUDGE_MODELS": "where built and fetched models are kept (default data/models)",
    "SUMJUDGE_RUNS": "where notebooks keep their run folders (default build/runs; `make rerun-drift` points it at an "
                     "empty folder so that nothing resumes)",
    "SUMJUDGE_DATA_RAW": "where downloaded benchmark files are kept (default data/raw)",
    "SUMJUDGE_DATA_MIRROR": "a local mirror of the benchmark files, read before any download",
    "SUMJUDGE_LLM_AGGREFACT_REVISION": "the LLM-AggreFact commit to download (default: its current main)",
    "SUMJUDGE_FIGURES": "where notebooks write their tables and figures (default figures/; set by the replay check "
                        "and by `sumjudge plan` for the notebooks they execute)",
    "SUMJUDGE_REPLAY": "the results page whose recorded answers a notebook answers from (set by "
                       "`make reproduce REPLAY=1` and `make lab REPLAY=1`)",
    "SUMJUDGE_REPLAY_ASK": "in a replay, the engine that answers a request the recorded answers do not hold: "
                           "`profile` (the profile's model) or `backend:model@base_url`; unset, the notebook stops "
                           "there (set by `make lab REPLAY=1`, docs/explore.md)",
    "SUMJUDGE_SERVER": "an OpenAI-compatible server (`URL`, or `model@URL`) a notebook's own model calls go to "
                       "instead of the profile's model, its key read from OPENAI_API_KEY (set by `make lab "
                       "SERVER=URL`: a class on one server, docs/lab.md); replayed judges are unchanged",
    "SUMJUDGE_ROUTER": "the router executable (vllm-router) that `sumjudge scale --replicas` and `make test-router` "
                       "put in front of stand-in replicas (set by the Makefile after `make router-env`)",
    "SUMJUDGE_SHARED_ENGINE": "the address of the engine the notebooks of one `make reproduce` share (set by it)",
}


def read(name: str) -> str | None:
    """The variable's value, None when unset or empty; a name not listed above is a programming error."""
    if name not in VARIABLES:
        raise KeyError(f"{name} is not one of sumjudge's environment variables ({', '.join(VARIABLES)})")
    return os.environ.get(name) or None
