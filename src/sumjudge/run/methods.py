"""The methods' registry: every judge is a ``MethodSpec`` registered by name (``register``), and the entry points
(the command line, notebooks, the arena, the planner, the reproduction) look methods up here (``get_method``,
``methods``). The papers register theirs when their package is imported, which happens on the first lookup
(``registry.discover``): nothing below the entry points imports a paper."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from sumjudge.registry import Registry

if TYPE_CHECKING:
    from sumjudge.judges.base import Judgement
    from sumjudge.llm.engine import LLM
    from sumjudge.profiles import Profile

JudgeFn = Callable[[Any, "LLM", Any], Awaitable["Judgement"]]


@dataclass(frozen=True)
class AsPrinted:
    """A method whose default follows the authors' code where the printed paper differs: the settings of each
    reading, so that both can run on the same examples (the arena's as-printed vs as-run pairs)."""
    what: str  # what differs, in words
    as_run: tuple[tuple[str, str], ...]  # the settings of the code's reading (() when it is the default)
    as_printed: tuple[tuple[str, str], ...]  # the settings of the paper's


@dataclass(frozen=True)
class MethodSpec:
    name: str
    paper: str
    kind: str  # a registered kind of method (``run.metrics.KINDS``): "faithfulness", "rated", or a paper's own
    config_cls: type
    judge: JudgeFn
    description: str
    # checks of the whole run before any call (examples, engine, config), e.g. inputs the model cannot hold
    preflight: Callable[[list, "LLM", Any], Awaitable[None]] | None = None
    # the run's metrics (examples, judgements) -> dict; None: the kind's own (``run.metrics.KINDS``)
    metrics: Callable[[list, list], dict[str, Any]] | None = None
    # parse events' roles for the parse-rate report: a regex over an event's tag whose group 1 names the role
    roles: str | None = None
    # a faithfulness judge whose label thresholds a graded score (Judgement.score, higher = more faithful): the
    # arena chooses its threshold on held-out examples and reports ROC-AUC beside BAcc
    scores: bool = False
    as_printed: tuple[AsPrinted, ...] = ()  # readings of the printed paper beside the code's (default) one
    # a public leaderboard's number for this judge: (model, dataset, level) -> an object with ``bacc`` (percent),
    # ``model`` (the leaderboard's name) and ``source`` (its address), or a string saying why there is none
    published: Callable[[str, str, str | None], Any] | None = None


METHODS: Registry[MethodSpec] = Registry("method")


def methods() -> dict[str, MethodSpec]:
    """Every registered method: the shared judges and, imported on first use, every plug-in package's
    (``registry.discover``)."""
    return METHODS.all()


def register(spec: MethodSpec) -> MethodSpec:
    return METHODS.add(spec.name, spec)


def get_method(name: str) -> MethodSpec:
    return METHODS.find(name)


def settings_from(profile: Profile, method: str | None = None) -> dict[str, Any]:
    """``profile``'s settings for ``method`` (``Profile.settings_for``), its generation policy kept to the fields
    ``method``'s config has."""
    accepted = {f.name for f in fields(get_method(method).config_cls)} if method else None
    return profile.settings_for(method, accepted)
