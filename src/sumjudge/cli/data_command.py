"""``sumjudge data``: the datasets (list, stats, fetch)."""

from __future__ import annotations

import json
import sys

from sumjudge.cli.flags import EXIT_DATA, EXIT_USAGE
from sumjudge.cli.subcommand import Subcommand
from sumjudge.data import registry, sources
from sumjudge.data.stats import dataset_stats
from sumjudge.errors import ConfigError


def add_arguments(p) -> None:
    p.add_argument("action", choices=("list", "stats", "fetch"))
    p.add_argument("name", nargs="?")
    p.add_argument("--level")


def main(a) -> int:
    if a.action == "list":
        for name, spec in sorted(registry.DATASETS.items()):
            status = "ok" if registry.is_present(name) else "missing"
            print(f"{name:24s} {spec.kind:15s} {status:8s} {spec.source}\n{'':24s} {spec.description}")
        return 0
    if a.action == "stats":
        if not a.name:
            raise ConfigError("sumjudge data stats NAME: name the dataset")
        print(json.dumps(dataset_stats(a.name, level=a.level), indent=2))
        return 0
    if a.action == "fetch":
        if a.name in sources.RESOURCES:  # files that are no dataset of their own (criteria files, QMSum)
            try:
                for f in sources.RESOURCES[a.name]:
                    print(f"{a.name}: {sources.fetch(f)}")
            except sources.DataMissingError as e:
                print(f"{a.name}: {e}", file=sys.stderr)
                return EXIT_DATA
            return 0
        names = sorted(registry.DATASETS) if a.name in (None, "all") else [a.name]
        missing = []
        for n in names:
            if registry.get(n).fetch is not None:
                try:
                    print(f"{n}: {registry.get(n).fetch()}")
                except sources.DataMissingError as e:
                    missing.append(f"{n}: {e}")
            for f in registry.get(n).files:
                try:
                    print(f"{n}: {sources.fetch(f)}")
                except (sources.DataMissingError, KeyError) as e:
                    missing.append(f"{n}: {e}")
        for n, rels in (sources.RESOURCES.items() if a.name in (None, "all") else ()):
            for f in rels:
                try:
                    print(f"{n}: {sources.fetch(f)}")
                except sources.DataMissingError as e:
                    missing.append(f"{n}: {e}")
        for m in missing:
            print(m, file=sys.stderr)
        return EXIT_DATA if missing else 0
    return EXIT_USAGE


COMMAND = Subcommand("data", help="datasets: list | stats NAME | fetch NAME|all",
                     add_arguments=add_arguments, run=main)
