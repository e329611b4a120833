"""The shape of the house: rooms, arrows, arrows back up and circles of the import graph.

A *room* is a direct child of a package (a subpackage or a module); an *arrow* is one
room importing another (any import, also inside a function; ``TYPE_CHECKING`` imports
left out); a *circle* is a set of rooms that reach each other, and the arrows *back up* are the
fewest of a circle's arrows whose removal leaves no circle (Eades-Lin-Smyth ordering of
the circle's rooms, the arrows against it: ``agents.monitor`` importing
``agents.capabilities``, which loads the monitor's wiring), and so does every import of
the package itself from inside it (``from loopwarden import __version__``). Figures for the
whole package and for ``agents/`` and ``streams/runtime/``, with the modules behind each
arrow back up, over the real import graph (grimp, as the import contracts are checked).

    .venv/bin/python benchmarks/house_shape.py [--type-imports] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAPPED = ("agents", "schemas", "storage", "streams")
PACKAGES = ("loopwarden", "loopwarden.agents", "loopwarden.streams.runtime")

MEASURE = """
import json, sys
from pathlib import Path
import loopwarden
root, links, typed = sys.argv[1:4]
loopwarden.__path__[:] = [str(Path(root) / "loopwarden"), links]
import grimp
graph = grimp.build_graph("loopwarden", exclude_type_checking_imports=typed == "no", cache_dir=None
)
print(json.dumps({m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}))
"""


def import_graph(type_imports: bool = False) -> dict[str, list[str]]:
    """Every module of the package and the modules it imports directly (``type_imports``:
    with the imports made for the type checker only)."""
    with tempfile.TemporaryDirectory() as folder:
        links = Path(folder)
        for name in MAPPED:
            (links / name).symlink_to(ROOT / name)
        done = subprocess.run(
            [sys.executable, "-c", MEASURE, str(ROOT), str(links), "yes" if type_imports else "no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
    return json.loads(done.stdout)


def _room(module: str, package: str) -> str | None:
    if not module.startswith(package + "."):
        return None
    return module[len(package) + 1 :].split(".")[0]


def circles(arrows: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected sets of more than one room (Tarjan)."""
    out: dict[str, set[str]] = {}
    for a, b in arrows:
        out.setdefault(a, set()).add(b)
        out.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in out[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(out):
        if v not in index:
            visit(v)
    return found


def against(group: list[str], arrows: dict[tuple[str, str], list[str]]) -> list[tuple[str, str]]:
    """The arrows of a circle's rooms that run against an Eades-Lin-Smyth ordering (sinks
    last, sources first, else the room whose arrows out most exceed its arrows in)."""
    inside = {(a, b) for a, b in arrows if a in group and b in group}
    left = set(group)
    first: list[str] = []
    last: list[str] = []
    while left:
        edges = {(a, b) for a, b in inside if a in left and b in left}
        outs = {r: sum(1 for a, _ in edges if a == r) for r in left}
        ins = {r: sum(1 for _, b in edges if b == r) for r in left}
        sinks = sorted(r for r in left if outs[r] == 0)
        sources = sorted(r for r in left if ins[r] == 0 and outs[r] > 0)
        if sinks:
            last[:0] = sinks
            left -= set(sinks)
        elif sources:
            first.extend(sources)
            left -= set(sources)
        else:
            pick = max(sorted(left), key=lambda r: outs[r] - ins[r])
            first.append(pick)
            left.remove(pick)
    rank = {room: n for n, room in enumerate(first + last)}
    return sorted((a, b) for a, b in inside if rank[a] > rank[b])


def shape(graph: dict[str, list[str]], package: str) -> dict[str, object]:
    """Rooms, arrows, arrows back up and circles of ``package``."""
    modules = [m for m in graph if m.startswith(package + ".")]
    rooms = {_room(m, package) for m in modules}
    arrows: dict[tuple[str, str], list[str]] = {}
    for module in modules:
        for imported in graph[module]:
            a, b = _room(module, package), _room(imported, package)
            if a is not None and b is not None and a != b:
                arrows.setdefault((a, b), []).append(f"{module} -> {imported}")
    found = circles(set(arrows))
    back_up = {arrow: arrows[arrow] for group in found for arrow in against(group, arrows)}
    # a room importing the package itself (its __init__, which imports the rooms lazily)
    to_top = sorted(f"{m} -> {package}" for m in modules if package in graph[m])
    if to_top:
        back_up[("*", package)] = to_top
    return {
        "rooms": len(rooms),
        "arrows": len(arrows),
        "back_up": len(back_up),
        "circles": found,
        "back_up_arrows": sorted(line for why in back_up.values() for line in why),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the figures there")
    parser.add_argument(
        "--type-imports", action="store_true", help="count the TYPE_CHECKING imports too"
    )
    args = parser.parse_args()
    graph = import_graph(args.type_imports)
    figures = {package: shape(graph, package) for package in PACKAGES}
    print(f"{'package':<28} {'rooms':>5} {'arrows':>6} {'back up':>7} {'circles':>7}")
    for package, f in figures.items():
        print(
            f"{package:<28} {f['rooms']:>5} {f['arrows']:>6} {f['back_up']:>7} "
            f"{len(f['circles']):>7}"
        )
    for package, f in figures.items():
        for group in f["circles"]:
            print(f"  circle in {package}: {' <-> '.join(group)}")
        for arrow in f["back_up_arrows"]:
            print(f"  back up in {package}: {arrow}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
