"""The package's floors, declared once: drawn by folder (each subpackage one room, each top-level module one room),
a room imports only rooms on floors below its own. A new room, or an import that climbs, fails here until this table
says where it stands. docs/engine.md's module map follows the same floors."""

from test_layout import _module_graph

# lowest first; a room may import any room on a lower floor, none on its own or a higher one
FLOORS: list[tuple[str, ...]] = [
    ("sumjudge", "errors", "environment", "metrics", "prompts"),  # the ground: no import of the package's own
    ("paths", "registry"),  # where files are; the one registry type
    ("profiles", "llm", "data"),  # run settings, the engine and its backends, the datasets
    ("judges",),  # the pieces the papers' judges share
    ("run",),  # a method over a dataset: runs, their folders and metrics, notebooks as jobs, replay
    ("perf", "arena"),  # benchmarks, scale runs and the planner; every judge on the same examples
    ("notebook", "cli"),  # what a notebook imports first; the command line
    ("report",),  # tables beside the papers' numbers
    ("plots", "results"),  # figures; the results page
    ("papers",),  # the four papers and the leaderboard, each in its folder
    ("reproduce",),  # recording, replaying and checking the results page
    ("classroom",),  # the lab and its class server
]


def _room_graph() -> dict[str, set[str]]:
    rooms: dict[str, set[str]] = {}
    for m, deps in _module_graph().items():
        room = m.split(".")[1] if "." in m else m
        rooms.setdefault(room, set()).update(d.split(".")[1] if "." in d else d for d in deps)
    return {r: deps - {r} for r, deps in rooms.items()}


def climbs(graph: dict[str, set[str]], floors: list[tuple[str, ...]]) -> list[str]:
    floor = {room: i for i, rooms in enumerate(floors) for room in rooms}
    bad = [f"{r} is on no floor" for r in sorted(graph) if r not in floor]
    bad += [f"{r} (floor {floor[r]}) imports {d} (floor {floor[d]})" for r in sorted(graph) if r in floor
            for d in sorted(graph[r]) if d in floor and floor[d] >= floor[r]]
    return bad


def test_every_room_stands_on_a_floor_and_imports_only_rooms_below():
    graph = _room_graph()
    assert {"llm", "run", "papers", "classroom"} <= set(graph) and len(graph) <= 22
    assert climbs(graph, FLOORS) == []
    assert sorted(r for rooms in FLOORS for r in rooms) == sorted(graph)  # no floor names a room that is gone


def test_the_floor_check_sees_a_climb_and_a_room_without_a_floor():
    graph = {"llm": {"errors"}, "errors": {"llm"}, "new": set()}
    assert climbs(graph, [("errors",), ("llm",)]) == ["new is on no floor", "errors (floor 0) imports llm (floor 1)"]
