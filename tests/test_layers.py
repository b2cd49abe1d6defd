"""The package's imports go down the layers of ARCHITECTURE.md: no cycle, no way around the order.

Every ``import`` and ``from ... import`` of a cofiviz module is read from the source with :mod:`ast`,
wherever it stands (module level or inside a function), and checked against :data:`LAYERS`: a module may
import modules of its own layer or of a lower one, never of a higher one, and the import graph has no
cycle. Imports inside functions are not a way around the order: a cofiviz module is imported at the
top of the module that needs it (third-party packages may still be imported lazily).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "cofiviz"

def _layers_of_the_architecture() -> list[tuple[int, list[str]]]:
    """``(layer number, module prefixes)`` read from ARCHITECTURE.md's layer table (its second column's names in
    backquotes, those in parentheses included), lowest first; the package itself sits on top of them all."""
    table = (ROOT / "ARCHITECTURE.md").read_text().split("## The layers", 1)[1].split("\n## ", 1)[0]
    layers = []
    for line in table.splitlines():
        row = re.match(r"\|\s*(\d+)\s*\|([^|]*)\|", line)
        if row:
            layers.append((int(row.group(1)), [f"cofiviz.{name}" for name in re.findall(r"`(\w+)`", row.group(2))]))
    return layers + [(max(number for number, _ in layers) + 1, ["cofiviz"])]


#: (layer number, module prefixes), lowest first, as ARCHITECTURE.md's table writes them (the one place they are
#: written); a module belongs to the longest prefix that names it
LAYERS = _layers_of_the_architecture()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int:
    best, rank = -1, None
    for number, prefixes in LAYERS:
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), number
    if rank is None:
        raise AssertionError(f"{module} belongs to no layer: add it to ARCHITECTURE.md's layer table")
    return rank


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: str) -> list[tuple[str, int, bool]]:
    """``(imported cofiviz module, line, inside a function)`` for every import in ``module``."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []

    def visit(node, in_function: bool):
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name == "cofiviz" or alias.name.startswith("cofiviz."):
                        out.append((alias.name, child.lineno, in_function))
            elif isinstance(child, ast.ImportFrom):
                target = _resolve(module, path.name == "__init__.py", child) if child.level else (child.module or "")
                if target == "cofiviz" or target.startswith("cofiviz."):
                    for alias in child.names:   # ``from . import metrics`` imports a module
                        sub = f"{target}.{alias.name}"
                        out.append((sub if sub in MODULES else target, child.lineno, in_function))
            visit(child, nested)

    visit(tree, False)
    return out


def test_every_module_has_a_layer():
    for module in MODULES:
        layer_of(module)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_go_down_the_layers(module):
    mine = layer_of(module)
    for target, line, in_function in imports(module):
        if target == module or module.startswith(target + "."):   # a package's own parents
            continue
        assert not in_function, (f"{MODULES[module].relative_to(ROOT)}:{line} imports {target} inside a function; "
                                 "import cofiviz modules at the top of the module")
        assert layer_of(target) <= mine, (f"{MODULES[module].relative_to(ROOT)}:{line}: {module} (layer {mine}) "
                                          f"imports {target} (layer {layer_of(target)}), a higher layer")


def test_the_import_graph_has_no_cycle():
    graph = {m: sorted({t for t, _, _ in imports(m) if t in MODULES and t != m and not m.startswith(t + ".")})
             for m in MODULES}
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(m):
        state[m] = 1
        stack.append(m)
        for t in graph[m]:
            if state.get(t) == 1:
                cycle = stack[stack.index(t):] + [t]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if t not in state:
                walk(t)
        stack.pop()
        state[m] = 2

    for m in graph:
        if m not in state:
            walk(m)


def _first_sentence(doc: str) -> str:
    text = " ".join(doc.split())
    end = text.find(". ")
    return text if end < 0 else text[:end + 1]


def test_every_module_opens_by_saying_the_one_thing_it_holds():
    """Modules are cut where concepts end, and a reader finds the concept in the module's first sentence.

    The suite cannot tell one concern from two by counting lines; what it checks is that every module states
    what it holds, in a docstring whose first sentence ends before the code begins, so that a module mixing
    concerns shows in its opening (and is cut there, as ARCHITECTURE.md's "Modules" says).
    """
    missing, unfinished = [], []
    for name, path in MODULES.items():
        doc = ast.get_docstring(ast.parse(path.read_text()))
        if not doc or not doc.strip():
            missing.append(name)
        elif not _first_sentence(doc).rstrip().endswith((".", ":")):
            unfinished.append(f"{name}: {_first_sentence(doc)[:80]!r}")
    assert missing == [], f"modules that do not say what they hold (no docstring): {missing}"
    assert unfinished == [], f"modules whose docstring opens with no finished sentence: {unfinished}"


def test_the_layers_are_the_folders_of_the_package():
    """Every layer is made of folders: each package directly under ``cofiviz/`` is named in exactly one row of
    ARCHITECTURE.md's layer table, each name of the table is such a package, and no module stands beside them
    (``__init__`` aside), so that a new concept gets its place in the layers when it gets its folder."""
    folders = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    named = [prefix.split(".", 1)[1] for _, prefixes in LAYERS[:-1] for prefix in prefixes]
    assert loose == [], f"modules directly under cofiviz/, outside every layer's folder: {loose}"
    assert sorted(named) == folders, (f"named in the table but no package: {sorted(set(named) - set(folders))}; "
                                      f"packages the table does not name: {sorted(set(folders) - set(named))}; "
                                      f"named twice: {sorted({n for n in named if named.count(n) > 1})}")


def test_no_two_packages_import_each_other():
    """The package graph (``cofiviz.losses``, ``cofiviz.solvers``, ...) has no cycle either: a package that needs a
    kernel of another does not lend it one back."""
    def package(m: str) -> str:
        return ".".join(m.split(".")[:2])

    graph: dict[str, set[str]] = {}
    for m in MODULES:
        for t, _, _ in imports(m):
            if t in MODULES and package(t) != package(m) and not m.startswith(t + "."):
                graph.setdefault(package(m), set()).add(package(t))
    pairs = sorted((a, b) for a in graph for b in graph[a] if a in graph.get(b, set()) and a < b)
    assert pairs == [], f"packages that import each other: {pairs}"


def _private_imports(module: str) -> list[tuple[str, str, int]]:
    path = MODULES[module]
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _resolve(module, path.name == "__init__.py", node) if node.level else (node.module or "")
            if not (target == "cofiviz" or target.startswith("cofiviz.")):
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__") and f"{target}.{alias.name}" not in MODULES:
                    found.append((target, alias.name, node.lineno))
    return found


def test_no_private_name_is_imported_across_modules():
    """A name with a leading underscore stays in its module: one another module needs is public (or moves)."""
    found = [f"{MODULES[m].relative_to(ROOT)}:{line} imports {name} from {target}"
             for m in MODULES for target, name, line in _private_imports(m)]
    assert found == [], "\n".join(found)


#: names that once held a second copy of what a model class or a registry declares (a model's paper settings, the
#: baselines, the monitor's first form, the protocol choices, the models' titles)
SECOND_HOMES = ("PAPER_SETTINGS", "BASELINES", "FIRST_FORM", "PROTOCOL_CHOICES", "TITLES")


def test_no_second_home_is_defined_and_paper_settings_are_read_from_the_model_classes():
    """No module of the package, its apps or its benchmarks assigns a name of :data:`SECOND_HOMES` (the Netflix
    reader's ``TITLES``, the name of a file of its format, excepted), and outside the models only
    ``reproductions.spec.paper_preset`` reads a model's ``presets["paper"]``."""
    found, readers = [], []
    for path in [*PACKAGE.rglob("*.py"), *(ROOT / "apps").rglob("*.py"), *(ROOT / "benchmarks").glob("*.py")]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, ast.AnnAssign) else []
            for t in targets:
                if isinstance(t, ast.Name) and t.id in SECOND_HOMES and not (
                        rel == "cofiviz/datasets/netflix.py" and t.id == "TITLES"):
                    found.append(f"{rel}:{node.lineno} {t.id}")
            if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)
                    and node.value.attr == "presets" and isinstance(node.slice, ast.Constant)
                    and node.slice.value == "paper" and not rel.startswith("cofiviz/models/")):
                readers.append(f"{rel}:{node.lineno}")
    assert found == [], found
    assert [r.split(":")[0] for r in readers] == ["cofiviz/reproductions/spec.py"], readers


def test_the_readme_lists_every_folder_of_the_package():
    """README's "What is inside" names each folder of ``cofiviz/`` (``losses/ solvers/`` on one line) and no other."""
    block = (ROOT / "README.md").read_text().split("## What is inside", 1)[1].split("```", 2)[1]
    inside = block.split("\ncofiviz/", 1)[1].split("\napps/", 1)[0]
    heads = [re.match(r"  ((?:\w+/ )*\w+/)\s", line) for line in inside.splitlines()]   # a line's leading names
    listed = sorted(name.rstrip("/") for head in heads if head for name in head.group(1).split())
    folders = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    assert listed == folders, (f"listed but no folder: {sorted(set(listed) - set(folders))}; "
                               f"folders not listed: {sorted(set(folders) - set(listed))}")
