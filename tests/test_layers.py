"""The packages of src/reasoneval form layers that read as the pipeline, with no cycle: each package imports only
from the layers below it (LAYERS; docs/architecture.md, "Layers"). The graph is read from the AST of every module,
so an import inside a function or under `if TYPE_CHECKING:` counts like one at the top of the file. A failure names
the module, the line and the import.

Imports by string (registries' "module:attr" entries, `importlib.import_module`) are not import statements and are
not read; today every one of them names a module of the package that holds it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "reasoneval"

# Bottom to top. A package may import the packages of every layer below its own, never one of its own layer or above.
# "reasoneval" is the package's own __init__ (the facade: reasoneval.evaluate, load_run), "__main__" `python -m`.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("version", "errors", "run_files"),  # primitives (run_files: the names of a run directory's files)
    ("atomic", "workers", "serial", "registry", "machine"),
    ("records",),
    ("metrics", "engines"),  # pure functions of correctness arrays; Engine.generate(Request) -> Completion
    ("scoring",),  # Scorer.score_many -> Score
    ("tasks",),  # TaskSpec + Problem (a task names its scorer)
    ("prompts",),  # prompt styles (a multiple-choice prompt formats the task's choices)
    ("results",),  # what a run writes: config.json, summary.json, the sample store, the scoring stream over it
    ("analysis",),  # computation on finished runs
    ("report",),  # renderers
    ("run",),  # one run, orchestrated: options, plan, runner, pipeline
    ("fleet",),  # many runs: sweeps, watch
    ("view",),  # `reasoneval view`: the results folder in the browser (reads results, analysis, report)
    ("cli",),
    ("reasoneval", "__main__"),
)


def allowed_imports(layers: Sequence[Sequence[str]]) -> dict[str, frozenset[str]]:
    """Package -> the packages it may import: those of every lower layer."""
    out: dict[str, frozenset[str]] = {}
    below: set[str] = set()
    for layer in layers:
        for name in layer:
            out[name] = frozenset(below)
        below |= set(layer)
    return out


ALLOWED = allowed_imports(LAYERS)


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, dotted (reasoneval.results.schema)
    path: Path
    line: int
    target: str  # what it imports, dotted (reasoneval.run.identity.RunSettings)
    source: str  # the importing module's package (first component under reasoneval/)
    package: str  # the imported package


def _module_name(path: Path, root: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def _package(dotted: str, root: Path) -> str:
    """The package of a dotted name under the root: its first component; `from reasoneval import x` names the
    package x when x is a module or folder of the tree, else the facade (reasoneval/__init__.py)."""
    parts = dotted.split(".")
    if len(parts) == 1:
        return root.name
    first = parts[1]
    if (root / first).is_dir() or (root / f"{first}.py").exists():
        return first
    return root.name


def imports_of(root: Path) -> list[Import]:
    """Every import of a module of the tree `root` (the package folder) by a module of another package."""
    top = root.name
    out = []
    for path in sorted(root.rglob("*.py")):
        module, is_package = _module_name(path, root)
        source = _package(module, root)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    here = module.split(".") if is_package else module.split(".")[:-1]
                    here = here[:len(here) - (node.level - 1)]
                    base = ".".join([*here, *([node.module] if node.module else [])])
                # `from reasoneval import metrics` imports reasoneval.metrics: each name may be a module
                targets = [f"{base}.{a.name}" for a in node.names] if base == top else [base]
            for target in targets:
                if target != top and not target.startswith(top + "."):
                    continue
                package = _package(target, root)
                if package != source:
                    out.append(Import(module, path, node.lineno, target, source, package))
    return out


def layer_violations(imports: Iterable[Import], allowed: Mapping[str, frozenset[str]]) -> list[str]:
    """One line per import the table does not allow, and per package the table does not place."""
    out = []
    for imp in imports:
        for name in (imp.source, imp.package):
            if name not in allowed:
                out.append(f"{imp.path}:{imp.line}: package {name!r} is in no layer of tests/test_layers.py")
        if imp.source in allowed and imp.package in allowed and imp.package not in allowed[imp.source]:
            may = ", ".join(sorted(allowed[imp.source])) or "nothing"
            out.append(f"{imp.path}:{imp.line}: {imp.module} imports {imp.target}: {imp.source} -> {imp.package} "
                       f"is not allowed ({imp.source} may import: {may})")
    return sorted(set(out))


def package_graph(imports: Iterable[Import]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for imp in imports:
        graph.setdefault(imp.source, set()).add(imp.package)
        graph.setdefault(imp.package, set())
    return graph


def find_cycle(graph: Mapping[str, Iterable[str]]) -> list[str] | None:
    """A cycle of the graph as its nodes (the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


# ---- the project ---------------------------------------------------------------------------------------------

def test_every_import_goes_down_the_layers() -> None:
    bad = layer_violations(imports_of(SRC), ALLOWED)
    assert not bad, "imports against the layers (tests/test_layers.py):\n" + "\n".join(bad)


def test_the_package_graph_has_no_cycle() -> None:
    cycle = find_cycle(package_graph(imports_of(SRC)))
    assert cycle is None, "package cycle: " + " -> ".join(cycle or [])


def test_every_package_is_in_a_layer() -> None:
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    packages |= {p.stem for p in SRC.glob("*.py") if p.stem != "__init__"}
    assert packages - set(ALLOWED) == set()
    assert set(ALLOWED) - packages - {"reasoneval"} == set(), "a layer names a package that no longer exists"


def test_docs_show_the_same_layers() -> None:
    """docs/architecture.md's layer table names the packages in LAYERS' order (the facade row aside)."""
    import re

    doc = (SRC.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = doc[doc.index("## Layers"):doc.index("## The stages")]
    rows = [line.split("|")[2] for line in section.splitlines() if line.startswith("| ") and "---" not in line][1:]
    named = [n for row in rows for n in re.findall(r"`([a-z_]+)`", row) if n in ALLOWED]
    assert named == [n for layer in LAYERS for n in layer if n not in ("reasoneval", "__main__")]


def test_the_graph_is_read_from_every_kind_of_import() -> None:
    """The project's own graph holds edges that only a function-level import and only a TYPE_CHECKING import make
    (the facade's `evaluate`, cli's lazy parsers), so neither kind is skipped."""
    imports = imports_of(SRC)
    facade = [i for i in imports if i.module == "reasoneval" and i.package == "run"]
    assert facade, "reasoneval/__init__.py imports run.pipeline under TYPE_CHECKING"
    lazy = [i for i in imports if i.module == "reasoneval.cli.analysis" and i.package == "analysis"]
    assert lazy, "cli/analysis.py imports analysis inside its functions"


def _module_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same folder it imports (by AST, like imports_of)."""
    names = {p.stem for p in package.glob("*.py")}
    dotted = ".".join(package.relative_to(SRC.parent).parts)
    graph: dict[str, set[str]] = {n: set() for n in names}
    for name in names:
        for node in ast.walk(ast.parse((package / f"{name}.py").read_text(encoding="utf-8"))):
            found = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [f"{node.module}.{a.name}" for a in node.names] + [node.module or ""]
                     if isinstance(node, ast.ImportFrom) else [])
            for target in found:
                if target.startswith(dotted + "."):
                    other = target[len(dotted) + 1:].split(".")[0]
                    if other in names and other != name:
                        graph[name].add(other)
    return graph


def test_the_local_engine_drives_its_supervisor_one_way() -> None:
    """engines/local: the engine imports the supervisor, never the reverse (the supervisor calls back through its
    WorkerHost protocol); the wire messages are a module both sides import; no cycle among the modules."""
    graph = _module_graph(SRC / "engines" / "local")
    assert "supervisor" in graph["engine"]
    assert graph["supervisor"] <= {"messages"}, graph["supervisor"]
    assert graph["messages"] == set()
    assert "messages" in graph["worker"] and "messages" in graph["decoder"]
    assert find_cycle(graph) is None


def _modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (its file, whether it is a package's __init__)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        name, is_package = _module_name(path, root)
        out[name] = (path, is_package)
    return out


def _from_base(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    here = module.split(".") if is_package else module.split(".")[:-1]
    here = here[:len(here) - (node.level - 1)]
    return ".".join([*here, *([node.module] if node.module else [])])


def module_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the tree it imports, by any import (at the top, in a function, under
    TYPE_CHECKING): `from a.b import c` is an edge to a.b.c where that is a module, else to a.b."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, (path, is_package) in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                graph[module] |= {a.name for a in node.names if a.name in modules}
            elif isinstance(node, ast.ImportFrom):
                base = _from_base(node, module, is_package)
                for a in node.names:
                    target = f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    if target in modules and target != module:
                        graph[module].add(target)
    return graph


def _defined_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names a module defines (def, class, assignment at any depth) and those it imports."""
    defined: set[str] = set()
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                defined |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return defined, imported - defined


def reexport_imports(root: Path, files: Iterable[Path]) -> list[str]:
    """One line per `from M import name` (in `files`) where M is a module of the tree (not a package's __init__,
    which is its package's interface) that does not define `name` but imports it: an import through a re-export.
    Import the name from the module that defines it."""
    modules = _modules(root)
    names = {m: _defined_names(ast.parse(p.read_text(encoding="utf-8"))) for m, (p, pkg) in modules.items() if not pkg}
    out = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if not isinstance(node, ast.ImportFrom) or node.level or node.module not in names:
                continue
            defined, imported = names[node.module]
            for a in node.names:
                if a.name in imported and a.name not in defined and f"{node.module}.{a.name}" not in modules:
                    out.append(f"{path}:{node.lineno}: imports {a.name} from {node.module}, which only re-exports it")
    return out


def run_file_spellings(root: Path) -> list[str]:
    """One line per string constant of a module (docstrings and f-string parts aside) that spells a run directory's
    file name (reasoneval/run_files.py) instead of importing it. `config.json` is also a Hugging Face checkpoint's
    file (engines, fleet/watch): only its run-directory meaning is run_files' (RUN_FILE_HOMONYMS)."""
    names = {}
    for node in ast.parse((root / "run_files.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            names[node.value.value] = node.targets[0].id  # type: ignore[attr-defined]
    out = []
    for path in sorted(root.rglob("*.py")):
        if path == root / "run_files.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = {id(n.body[0].value) for n in ast.walk(tree)  # type: ignore[attr-defined]
                if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and n.body and isinstance(n.body[0], ast.Expr)}
        skip |= {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
                    and "." in node.value and id(node) not in skip
                    and rel not in RUN_FILE_HOMONYMS.get(node.value, ())):
                out.append(f"{path}:{node.lineno}: spells {node.value!r}: import {names[node.value]} from "
                           "reasoneval.run_files")
    return out


# Modules where a run file's name means another file: a Hugging Face checkpoint's config.json.
RUN_FILE_HOMONYMS = {"config.json": ("engines/checkpoint.py", "engines/gguf_convert.py", "fleet/watch.py")}
ROOT = SRC.parents[1]


def test_no_module_import_cycle() -> None:
    """No two modules of src import each other, directly or round a loop, by any kind of import (a lazy import in a
    function or one under TYPE_CHECKING too: such a cycle breaks as soon as someone moves the import to the top)."""
    cycle = find_cycle(module_graph(SRC))
    assert cycle is None, "module import cycle: " + " -> ".join(cycle or [])


def test_no_import_through_a_re_export() -> None:
    """src, tests, bench and scripts import every name from the module that defines it (or a package's __init__)."""
    files = [p for d in ("src", "tests", "bench", "scripts") for p in sorted((ROOT / d).rglob("*.py"))]
    bad = reexport_imports(SRC, files)
    assert not bad, "imports through a re-export:\n" + "\n".join(bad)


def test_run_files_are_named_in_one_module() -> None:
    bad = run_file_spellings(SRC)
    assert not bad, "\n".join(bad)


MAX_MODULE_LINES = 600  # a module longer than this does two jobs (docs/architecture.md): split it along them


def test_no_module_is_over_600_lines() -> None:
    long = [f"{p.relative_to(SRC.parent)}: {n} lines" for p in sorted(SRC.rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES]
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split each along its jobs):\n" + "\n".join(long)


# ---- the checker on trees made to break it -------------------------------------------------------------------

def _tree(root: Path, files: Mapping[str, str]) -> Path:
    pkg = root / "reasoneval"
    for name, text in {"__init__.py": "", **files}.items():
        path = pkg / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return pkg


SMALL = (("errors",), ("metrics",), ("results",), ("run",))


def test_a_back_edge_is_named_with_its_module_and_line(tmp_path: Path) -> None:
    pkg = _tree(tmp_path, {
        "errors.py": "",
        "metrics/__init__.py": "from reasoneval.errors import x\n",
        "results/__init__.py": "",
        "results/schema.py": "import json\n\nfrom reasoneval.metrics import TaskMetrics\n\n\ndef f():\n"
                             "    from reasoneval.run.identity import RunSettings\n    return RunSettings\n",
        "run/__init__.py": "",
        "run/identity.py": "from reasoneval.results.schema import f\n",
    })
    bad = layer_violations(imports_of(pkg), allowed_imports(SMALL))
    assert bad == [f"{pkg / 'results' / 'schema.py'}:7: reasoneval.results.schema imports "
                   "reasoneval.run.identity: results -> run is not allowed (results may import: errors, metrics)"]
    assert find_cycle(package_graph(imports_of(pkg))) == ["results", "run", "results"]


def test_type_checking_relative_and_from_package_imports_count(tmp_path: Path) -> None:
    pkg = _tree(tmp_path, {
        "errors.py": "",
        "metrics/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                               "    from reasoneval.results import RunResult\n",
        "metrics/summary.py": "from ..run import plan\n",
        "results/__init__.py": "from reasoneval import errors, run\n",
        "run/__init__.py": "import reasoneval.metrics.summary as s\n",
    })
    bad = layer_violations(imports_of(pkg), allowed_imports(SMALL))
    assert [b.split(": ", 1)[1] for b in bad] == [
        "reasoneval.metrics imports reasoneval.results: metrics -> results is not allowed (metrics may import: errors)",
        "reasoneval.metrics.summary imports reasoneval.run: metrics -> run is not allowed (metrics may import: errors)",
        "reasoneval.results imports reasoneval.run: results -> run is not allowed (results may import: errors, "
        "metrics)",
    ]


def test_a_package_in_no_layer_is_named(tmp_path: Path) -> None:
    pkg = _tree(tmp_path, {"errors.py": "", "newstage/__init__.py": "from reasoneval.errors import x\n"})
    bad = layer_violations(imports_of(pkg), allowed_imports(SMALL))
    assert bad == [f"{pkg / 'newstage' / '__init__.py'}:1: package 'newstage' is in no layer of tests/test_layers.py"]


def test_the_project_checker_fails_on_a_new_back_edge(tmp_path: Path) -> None:
    """A copy of the real tree with one deliberate back edge (scoring importing the run's options in a function)
    fails with that import named; the copy without it passes."""
    import shutil

    copy = tmp_path / "reasoneval"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "exemplars"))
    assert layer_violations(imports_of(copy), ALLOWED) == []
    base = copy / "scoring" / "base.py"
    base.write_text(base.read_text() + "\n\ndef _back() -> None:\n    from reasoneval.run.options import EvalConfig\n")
    bad = layer_violations(imports_of(copy), ALLOWED)
    assert len(bad) == 1 and "reasoneval.scoring.base imports reasoneval.run.options: scoring -> run" in bad[0]


@pytest.mark.parametrize("graph, cycle", [
    ({"a": {"b"}, "b": {"c"}, "c": set()}, None),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
    ({"a": {"a"}}, ["a", "a"]),
    ({"x": {"y"}, "y": set(), "a": {"b"}, "b": {"a"}}, ["a", "b", "a"]),
])
def test_find_cycle(graph: dict[str, set[str]], cycle: list[str] | None) -> None:
    assert find_cycle(graph) == cycle


def test_a_lazy_import_cycle_and_a_re_export_are_found(tmp_path: Path) -> None:
    """A cycle closed only by an import inside a function, and an import of a name through a module that merely
    imports it, are each named; the same tree with the name imported from its home passes."""
    pkg = _tree(tmp_path, {
        "tasks/__init__.py": "from reasoneval.tasks.loading import load\n",
        "tasks/loading.py": "def load():\n    from reasoneval.tasks.user_data import read\n    return read\n",
        "tasks/user_data.py": "from reasoneval.tasks.loading import load\n\n\ndef read():\n    return load\n",
        "run/__init__.py": "",
        "run/pipeline.py": "from reasoneval.run.options import EvalConfig\n\n\ndef evaluate(c: EvalConfig): ...\n",
        "run/options.py": "class EvalConfig: ...\n",
        "cli.py": "from reasoneval.run.pipeline import EvalConfig, evaluate\nfrom reasoneval.tasks import load\n",
    })
    assert find_cycle(module_graph(pkg)) == ["reasoneval.tasks.loading", "reasoneval.tasks.user_data",
                                             "reasoneval.tasks.loading"]
    bad = reexport_imports(pkg, [pkg / "cli.py"])
    assert bad == [f"{pkg / 'cli.py'}:1: imports EvalConfig from reasoneval.run.pipeline, which only re-exports it"]
    (pkg / "cli.py").write_text("from reasoneval.run.options import EvalConfig\nfrom reasoneval.run.pipeline import "
                                "evaluate\n")
    assert reexport_imports(pkg, [pkg / "cli.py"]) == []
    (pkg / "tasks" / "loading.py").write_text("def load(): ...\n")
    assert find_cycle(module_graph(pkg)) is None


def test_a_spelt_run_file_name_is_found(tmp_path: Path) -> None:
    pkg = _tree(tmp_path, {
        "run_files.py": 'SUMMARY_FILE = "summary.json"\nVIEWS_DIR = "views"\n',
        "fleet/__init__.py": "",
        "fleet/status.py": '"""Reads summary.json."""\nfrom pathlib import Path\n\n\ndef done(d):\n'
                           '    return (Path(d) / "summary.json").exists() and f"{d}.summary.json"\n',
    })
    assert run_file_spellings(pkg) == [f"{pkg / 'fleet' / 'status.py'}:6: spells 'summary.json': import SUMMARY_FILE "
                                       "from reasoneval.run_files"]
