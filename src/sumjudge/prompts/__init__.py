"""Prompt templates: one file per paper prompt, named after the table/figure it comes from.

A template file starts with a front-matter block (``---`` ... ``---``) saying where the text comes
from, which fields it takes and any glitch fixed; the body is the paper's text with ``{{field}}``
slots. Prompt text never lives in Python code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files

_SLOT = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}")


@dataclass(frozen=True)
class Template:
    name: str
    body: str
    meta: dict[str, str]

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(_SLOT.findall(self.body)))

    def render(self, **values: object) -> str:
        missing = [f for f in self.fields if f not in values]
        if missing:
            raise KeyError(f"template {self.name} needs {', '.join(missing)}")
        return _SLOT.sub(lambda m: str(values[m.group(1)]), self.body)


def _parse(name: str, text: str) -> Template:
    meta: dict[str, str] = {}
    body = text
    if text.startswith("---\n"):
        end = text.index("\n---\n", 4)
        for line in text[4:end].splitlines():
            if ":" in line:
                k, v = line.split(":", 1)
                meta[k.strip()] = v.strip()
        body = text[end + 5:]
    return Template(name=name, body=body.rstrip("\n"), meta=meta)


DOC_FIRST = "@doc-first"
_DOC_LINE = re.compile(r"^<doc> \{\{doc\}\} </doc>\n\n", re.M)


AS_RUN = "_as_run"
PROMPT_SOURCES = ("code", "printed")


def variant(name: str, doc_first: bool, prompts: str = "printed") -> str:
    """The template name to render: with ``prompts="code"`` the wording the authors' released code sends
    (``name + "_as_run"``) where it differs from the paper's printed text (``prompts="printed"``, the file
    ``name`` itself); then the document-first variant when ``doc_first``."""
    if prompts not in PROMPT_SOURCES:
        raise ValueError(f"prompts={prompts!r}: choose one of {', '.join(PROMPT_SOURCES)}")
    if prompts == "code" and not name.endswith((AS_RUN, DOC_FIRST)) and exists(name + AS_RUN):
        name += AS_RUN
    return name + DOC_FIRST if doc_first and not name.endswith(DOC_FIRST) else name


def exists(name: str) -> bool:
    try:
        _file(name)
    except FileNotFoundError:
        return False
    return True


def _file(name: str):
    """``"<paper>/<file>"`` names ``sumjudge/papers/<paper>/prompts/<file>.txt``."""
    paper, _, rest = name.partition("/")
    path = files("sumjudge.papers").joinpath(paper).joinpath("prompts")
    parts = rest.split("/") if rest else []
    for part in parts[:-1]:
        path = path.joinpath(part)
    leaf = parts[-1] if parts else ""
    f = path.joinpath(leaf if leaf.endswith(".txt") else leaf + ".txt")
    if not leaf or not f.is_file():
        raise FileNotFoundError(f"no prompt template {name!r} under sumjudge/papers/<paper>/prompts")
    return f


@lru_cache(maxsize=None)
def load(name: str) -> Template:
    """``load("<paper>/<table or figure>")`` -> Template (the file under ``papers/<paper>/prompts/``). ``name + "@doc-first"`` moves the paper's
    ``<doc> {{doc}} </doc>`` block, unchanged, to the start of the prompt: every prompt about one
    document then begins with the same tokens, which prefix caching (vLLM) and shared-prefix prefill
    (hf) reuse across agents, rounds, adjudicators and methods. The wording is the paper's either way."""
    if name.endswith(DOC_FIRST):
        base = load(name[: -len(DOC_FIRST)])
        if not _DOC_LINE.search(base.body):
            return base  # no document block: nothing to move
        body = "<doc> {{doc}} </doc>\n\n" + _DOC_LINE.sub("", base.body, count=1)
        return Template(name=name, body=body, meta={**base.meta, "order": "document first"})
    return _parse(name, _file(name).read_text(encoding="utf-8"))


def render(name: str, **values: object) -> str:
    return load(name).render(**values)


def available() -> list[str]:
    out = []
    root = files("sumjudge.papers")
    for d in root.iterdir():
        prompts = d.joinpath("prompts")
        if d.is_dir() and not d.name.startswith("_") and prompts.is_dir():
            out += [f"{d.name}/{f.name[:-4]}" for f in prompts.iterdir() if f.name.endswith(".txt")]
    return sorted(out)
