"""The package's import graph has no cycles, counting imports inside functions.

A cycle that only closes through a lazy import still ties the modules
together: neither can be understood, tested or moved without the other.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "intbench"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules(root: Path) -> dict[str, Path]:
    return {module_name(path, root): path for path in sorted(root.rglob("*.py"))}


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module ``name`` means: itself, or the longest module it lies in."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imported_modules(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every ``intbench`` module that ``module`` imports, at any depth of its code.

    ``from package import name`` counts as importing ``package.name`` when that
    is a module, else the package itself.
    """
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" for alias in node.names] + [base]
            names = [n for n in names[:-1] if n in modules] or [base]
        else:
            continue
        for name in names:
            if name.split(".")[0] != "intbench":
                continue
            resolved = _resolve(name, modules)
            if resolved and resolved != module:
                targets.add(resolved)
    return targets


def import_graph(root: Path = PACKAGE_ROOT) -> dict[str, set[str]]:
    modules = package_modules(root)
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_cycle_through(component, graph) for component in components]


def _cycle_through(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A concrete path start -> ... -> start inside one strongly connected component."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node] & members):
                if target == start:
                    return [*paths[node], start]
                if target not in paths:
                    paths[target] = [*paths[node], target]
                    following.append(target)
        frontier = following
    return component


def test_the_parser_sees_lazy_and_relative_imports(tmp_path):
    package = tmp_path / "intbench"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from intbench.sub import leaf\n")
    (package / "sub" / "__init__.py").write_text("from .leaf import thing\n")
    (package / "sub" / "leaf.py").write_text(
        "def late():\n    from intbench import sub\n    from .. import other\n"
    )
    (package / "other.py").write_text("import intbench.sub.leaf as leaf\n")
    graph = import_graph(package)
    assert graph["intbench.sub.leaf"] == {"intbench.sub", "intbench.other"}
    assert graph["intbench.sub"] == {"intbench.sub.leaf"}
    assert graph["intbench"] == {"intbench.sub.leaf"}
    # sub <-> leaf and leaf <-> other form one tangle, reported by one of its cycles.
    assert find_cycles(graph) == [["intbench.other", "intbench.sub.leaf", "intbench.other"]]


def test_no_import_cycles():
    cycles = find_cycles(import_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)
