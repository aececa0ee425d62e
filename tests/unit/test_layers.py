"""The layers import one way only: schemas <- language <- agents <- retrieval <- backends <- streams <- memstream
(bench and ops on top, imported by nothing in the package), and no module imports itself back through others.

Every module's imports are read with ``ast`` (function-local and ``TYPE_CHECKING`` imports included)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ["schemas", "language", "agents", "retrieval", "backends", "streams", "memstream"]  # low to high
TOOLS = ["bench", "ops"]  # programs on top: they may import anything, nothing imports them
RANK = {**{p: i for i, p in enumerate(LAYERS)}, **{t: len(LAYERS) for t in TOOLS}}


def _modules() -> dict[str, Path]:
    found = {}
    for package in LAYERS + TOOLS:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _known(name: str) -> str | None:
    """The module of ours that ``name`` is, or is in (``language.text.tokenize`` -> ``language.text``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str) -> Iterator[tuple[str, int]]:
    """(module of ours imported, line) for every import statement in ``module``."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (target := _known(alias.name)) is not None:
                    yield target, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:  # ``from pkg import submodule`` imports the submodule
                target = _known(f"{source}.{alias.name}")
                target = target if target == f"{source}.{alias.name}" else _known(source)
                if target is not None:
                    yield target, node.lineno


GRAPH = {m: {t for t, _ in imports_of(m) if t != m} for m in MODULES}


def test_every_package_is_found():
    assert {m.split(".")[0] for m in MODULES} == set(LAYERS + TOOLS)
    assert len(MODULES) > 100


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.split(".")[0] in LAYERS))
def test_imports_point_down(module):
    here = module.split(".")[0]
    upward = [
        f"{MODULES[module].relative_to(ROOT)}:{line} imports {target}"
        for target, line in imports_of(module)
        if RANK[target.split(".")[0]] > RANK[here]
    ]
    assert not upward, "\n".join(upward)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


# Known circles being removed by another change; any other circle fails, and so does an entry here once its
# circle is gone.
PENDING: list[list[str]] = []


def test_no_import_cycles_between_modules():
    found = _cycles(GRAPH)
    assert [c for c in found if c not in PENDING] == []
    assert all(c in found for c in PENDING), "a pending circle is gone: drop it from PENDING"


def test_no_import_cycles_between_packages():
    """Subpackages count as packages (``retrieval.router`` must not import back into ``retrieval``'s users)."""

    def package(module: str) -> str:
        return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0] or module

    graph: dict[str, set[str]] = {}
    for module, targets in GRAPH.items():
        src = package(module)
        graph.setdefault(src, set()).update(package(t) for t in targets if package(t) != src)
    # a package importing its own subpackage (and the subpackage importing siblings of its parent) is the
    # normal nesting, not a circle; a circle between two packages at the same level is
    nested = {
        p: {t for t in ts if not (t.startswith(p + ".") or p.startswith(t + "."))} for p, ts in graph.items()
    }
    assert _cycles(nested) == []


MAX_LINES = 400  # a module that grows past this is split by what it does (docs/ARCHITECTURE.md)
CLASS_MAX_LINES = 600  # ...unless it is one cohesive class: split through private helpers it reads worse
CLASS_SHARE = 0.75  # of a module's lines, what its largest class spans for the module to count as one class


def _limit(path: Path, text: str) -> int:
    lines = len(text.splitlines())
    classes = [n for n in ast.parse(text, str(path)).body if isinstance(n, ast.ClassDef)]
    largest = max((n.end_lineno - n.lineno + 1 for n in classes), default=0)
    return CLASS_MAX_LINES if lines and largest >= CLASS_SHARE * lines else MAX_LINES


def test_no_module_is_over_the_size_limit():
    over = {}
    for m, p in MODULES.items():
        text = p.read_text(encoding="utf-8")
        if (n := len(text.splitlines())) > _limit(p, text):
            over[m] = n
    assert over == {}


def test_test_fixtures_do_not_import_benchmarks():
    """Fixtures start their servers with the package's own tools (memstream.devservers), not a benchmark's."""
    shared = [*ROOT.joinpath("tests").rglob("conftest.py"), *ROOT.joinpath("tests").glob("*.py")]
    offenders = []
    for path in shared:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            offenders += [
                f"{path.relative_to(ROOT)}:{node.lineno}" for n in names if n.split(".")[0] in TOOLS
            ]
    assert len(shared) > 3 and not offenders, offenders
