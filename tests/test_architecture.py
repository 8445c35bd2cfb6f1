"""docs/architecture.md's examples are real modules of the test suite (tests/plugins/last_line.py,
constant_engine.py and doubles_task.py), byte for byte, registered the way the doc says (one registry entry each, a
lazy "module:attr" reference) and imported by the registry as the shipped ones are; a run works end to end
through them. The rest of its "Adding a ..." and "Plugins" sections is checked against the code: every other code
block is run or checked, and every name, call, registry line, entry-point group, path and flag they show exists
with that signature."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import reasoneval
from reasoneval.engines import ENGINES, make_options
from reasoneval.errors import UserError
from reasoneval.scoring import SCORERS, TaskScoring
from reasoneval.tasks import TASKS, TaskSpec
from reasoneval.tasks.schema import INT_META, STR_META
from tests.plugins import register_for_the_test

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
PLUGINS = ROOT / "tests" / "plugins"


def example(name: str) -> str:
    m = re.search(rf"<!-- example: {name} -->\n```python\n(.*?)```\n<!-- /example -->", DOC.read_text(), re.S)
    assert m, f"no example {name!r} in {DOC}"
    return m.group(1)


@pytest.mark.parametrize(("name", "module"), [("scorer", "last_line.py"), ("engine", "constant_engine.py"),
                                             ("task", "doubles_task.py"), ("packaged_task", "squares_task.py")])
def test_the_docs_examples_are_the_test_suites_modules(name: str, module: str) -> None:
    assert example(name) == (PLUGINS / module).read_text()


ARITH_EXACT = TaskSpec("arith_exact", "arith scored by exact match", scoring=TaskScoring("last_line", {"ignore_case": True}),
                       prompt="boxed", generate=TASKS.get("arith").generate, size=TASKS.get("arith").size)


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The two examples registered as the doc says (one entry each), for the test only."""
    register_for_the_test(monkeypatch, SCORERS, "last_line", "tests.plugins.last_line:LastLineScorer")
    register_for_the_test(monkeypatch, ENGINES, "constant", "tests.plugins.constant_engine")
    register_for_the_test(monkeypatch, TASKS, "arith_exact", "tests.test_architecture:ARITH_EXACT")


def test_example_scorer_and_engine_run_end_to_end(registered: None, tmp_path: Path) -> None:
    first = reasoneval.evaluate(tasks=["arith"], engine="constant", engine_args={"answer": "7"}, n=2, limit=40,
                                output_dir=str(tmp_path), print_table=False, progress=False)
    arith = first.tasks["arith"]
    assert arith.num_problems == 40 and arith.num_samples == 2
    # The constant answer 7 is right exactly where the reference is 7.
    sevens = [p for p in TASKS.get("arith").generate()[:40] if str(p["answer"]) == "7"]
    assert arith.mean == pytest.approx(len(sevens) / 40)
    assert first.config.engine_config == {"text": "The answer is \\boxed{7}."}
    # A task that names the example scorer: the last line "The answer is \boxed{7}." never equals "7".
    second = reasoneval.evaluate(tasks=["arith_exact"], engine="constant", n=1, limit=5,
                                 output_dir=str(tmp_path), print_table=False, progress=False)
    assert second.tasks["arith_exact"].mean == 0.0 and second.scorers == {"last_line": "1"}
    loaded = reasoneval.load_run(second.run_dir)
    assert loaded.config.scoring["arith_exact"] == TaskScoring("last_line", {"ignore_case": True})
    # The registry imported the contributor's modules: the same objects a plain import gives.
    from tests.plugins import constant_engine, last_line

    assert SCORERS.get("last_line") is last_line.LastLineScorer and ENGINES.get("constant") is constant_engine


def test_example_task_runs_end_to_end(registered: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    register_for_the_test(monkeypatch, TASKS, "doubles", "tests.plugins.doubles_task:DOUBLES")
    result = reasoneval.evaluate(tasks=["doubles"], engine="constant", engine_args={"answer": "10"}, n=1,
                                 output_dir=str(tmp_path), print_table=False, progress=False)
    doubles = result.tasks["doubles"]
    assert doubles.num_problems == 20 and doubles.mean == pytest.approx(1 / 20)  # 5 + 5 is the one right answer
    assert result.config.task_version("doubles") == "1" and result.config.datasets["doubles"].source == "generated"
    from tests.plugins.doubles_task import DOUBLES

    assert TASKS.get("doubles") is DOUBLES and DOUBLES.fewshot is None  # the default: no exemplars of another kind


def test_example_packaged_task_runs_end_to_end_and_is_recorded_as_its_package_file(
        registered: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    register_for_the_test(monkeypatch, TASKS, "squares", "tests.plugins.squares_task:SQUARES")
    result = reasoneval.evaluate(tasks=["squares"], engine="constant", engine_args={"answer": "49"}, n=1,
                                 output_dir=str(tmp_path), print_table=False, progress=False)
    squares = result.tasks["squares"]
    assert squares.num_problems == 12 and squares.mean == pytest.approx(1 / 12)  # 7 * 7 is the one right answer
    source = "package:tests.plugins/squares.jsonl"
    assert result.config.datasets["squares"].source == source
    written = json.loads((Path(result.run_dir) / "config.json").read_text())
    assert written["datasets"]["squares"]["source"] == source
    from reasoneval.tasks import task_listing

    (entry,) = [e for e in task_listing(None) if e["name"] == "squares"]
    assert entry["local"] and entry["size"] == 12 and entry["source"] == source


def _doc_block(marker: str) -> str:
    m = re.search(rf"<!-- {marker} -->\n?(.*?)<!-- /{marker} -->", DOC.read_text(), re.S)
    assert m, f"no {marker} block in {DOC}"
    return m.group(1)


def _shown(f: dataclasses.Field[Any]) -> str:
    if f.default_factory is not dataclasses.MISSING:
        return f"`{getattr(f.default_factory, '__name__', '?')}()`"
    if f.default is dataclasses.MISSING:
        return "required"
    return f"`{json.dumps(f.default) if isinstance(f.default, str) else repr(f.default)}`"


def test_the_docs_show_every_taskspec_field_with_its_default_and_every_row_key() -> None:
    rows = [line.split("|")[1:3] for line in _doc_block("taskspec-fields").splitlines()[2:] if line.startswith("|")]
    assert [(name.strip(), default.strip()) for name, default in rows] == \
        [(f"`{f.name}`", _shown(f)) for f in dataclasses.fields(TaskSpec)]
    keys = re.findall(r"`(\w+)`", _doc_block("row-keys"))
    assert sorted(keys) == sorted({"id", "problem", "answer", "choices", *STR_META, *INT_META})


def test_engine_options_are_typed_and_checked(registered: None) -> None:
    assert make_options("constant", {"answer": "12"}).answer == "12"
    with pytest.raises(UserError, match="the constant engine has no option 'replicas'"):
        make_options("constant", {"replicas": "2"})


def test_unsupported_extra_body_stops_at_start(registered: None, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"--extra-body key\(s\) top_a are not supported by the constant engine"):
        reasoneval.evaluate(tasks=["arith"], engine="constant", extra_body={"top_a": 1}, n=1, limit=1,
                            output_dir=str(tmp_path), print_table=False, progress=False)


def test_scorer_modules_import_the_scoring_package_without_a_cycle() -> None:
    """In a fresh interpreter: `import reasoneval.scoring` imports no scorer; the example scorer imports after it
    (and first of all); every shipped scorer, which imports from reasoneval.scoring as the example does,
    resolves through the registry."""
    code = """
import sys
import tests.plugins.last_line
assert "reasoneval.scoring" in sys.modules
import reasoneval.scoring
from reasoneval.scoring import SCORERS
assert not [m for m in sys.modules if m.endswith(".scorer") or m == "reasoneval.scoring.lmeval"], sorted(sys.modules)
SCORERS.add_lazy("last_line", "tests.plugins.last_line:LastLineScorer")
# The built-ins, in the order added (any installed package's scorers come after them: not this test's).
names = [n for n in SCORERS.names() if SCORERS.origin(n) is None]
assert names[-1] == "last_line" and {"math", "choice", "code", "ifeval", "strict_match"} <= set(names), names
for name in names:
    SCORERS.get(name)
print("ok")
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    for first in ("import tests.plugins.last_line", "import reasoneval.scoring"):
        r = subprocess.run([sys.executable, "-c", f"{first}\n{code}"], capture_output=True, text=True, env=env,
                           cwd=ROOT, timeout=120)
        assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]


def test_no_module_or_folder_of_the_package_has_a_standard_library_name() -> None:
    # A script or `python -c` run from inside a folder of the package puts that folder first on sys.path;
    # a module there named like a standard one (types.py did) then replaces it for the whole interpreter.
    package = Path(reasoneval.__file__).parent
    clashes = []
    for path in package.rglob("*"):
        if "__pycache__" in path.parts:
            continue
        name = path.stem if path.suffix == ".py" else path.name if path.is_dir() else None
        if name in sys.stdlib_module_names and name != "__main__":
            clashes.append(str(path.relative_to(package)))
    assert clashes == []


# ---- everything else the "Adding a ..." and "Plugins" sections show ----------------------------------------------
# Each code block is run or checked (below), and every code span that names code is looked up in the code as it
# is: a dotted name resolves, a call binds to the signature of what it calls, a keyword is a parameter of what
# takes it, a registry call is in the file the doc names, an entry-point group is a registry's, a path exists,
# a flag is `run`'s and a command is the CLI's.

def _adding_sections() -> str:
    text = DOC.read_text()
    return text[text.index("## Adding a scorer"):text.index("## Habits")]


def _code_blocks() -> list[tuple[str, str]]:
    return re.findall(r"```(\w*)\n(.*?)```", _adding_sections(), re.S)


def _spans() -> list[str]:
    prose = re.sub(r"```.*?```", "", _adding_sections(), flags=re.S)
    return list(dict.fromkeys(re.findall(r"`([^`\n]+)`", prose)))


# Spans that look like code but are not names in reasoneval: metric names, Python's None, an environment variable.
NOT_CODE = {"x.num", "x.den", "inst_strict.num", "inst_strict.den", "None", "PYTHONPATH"}
# Paths of the modules a contributor would add (the doc's examples live in tests/plugins), of other projects, and
# of an installed distribution (tests/plugins/site).
NEW_PATHS = {"src/reasoneval/scoring/last_line.py", "src/reasoneval/engines/constant.py"}
OTHER_PROJECTS = {"instruction_following_eval/evaluation_lib.py", "<task>.jsonl"}
PATH_ROOTS = (ROOT, ROOT / "src", ROOT / "src" / "reasoneval", ROOT / "tests" / "plugins" / "site")
# Where the doc says each registry's built-in entries are added: file -> the registry calls it must hold.
REGISTRY_FILES = {"scoring/base.py": ("SCORERS.add_lazy(",), "engines/__init__.py": ("ENGINES.add_lazy(",),
                  "tasks/registry.py": ("TASKS.add_lazy(",), "prompts/__init__.py": ("PROMPTS.add(", "PROMPTS.add_lazy(")}
# The modules whose names the sections use bare (`TaskSpec`, `CAPABILITIES`): the packages' public names, and an
# engine module's contract as the example engine fulfils it.
BARE_NAME_MODULES = ("reasoneval.scoring", "reasoneval.scoring.base", "reasoneval.tasks", "reasoneval.prompts",
                     "reasoneval.engines", "reasoneval.engines.base", "reasoneval.records", "reasoneval.serial",
                     "reasoneval.results.schema", "reasoneval.run.flags", "reasoneval.run.options", "reasoneval.run.pipeline",
                     "reasoneval.metrics.summary", "reasoneval.fleet.jobs", "reasoneval.registry",
                     "tests.plugins.constant_engine", "tests.run.test_option_combinations")
# Lower-case names the prose uses bare, with what has them.
BARE_MEMBERS = {"cluster_many": "reasoneval.scoring.base:AnswerClusterer", "score_many": "reasoneval.scoring.base:Scorer",
                "add_lazy": "reasoneval.registry:Registry", "completion_stop": "reasoneval.prompts:PromptStyle",
                "payload": "reasoneval.records:Problem", "load_task": "reasoneval.tasks",
                "create": "tests.plugins.constant_engine", "start()": "reasoneval.engines.base:Engine",
                "generate()": "reasoneval.tasks:TaskSpec"}
# Keyword fragments (`flag=True`) and what takes them.
KEYWORDS = {"flag": "reasoneval.engines.base:option", "aliases": "reasoneval.run.flags:run_option",
            "in_first_run_ids": "reasoneval.records:sampling_option", "fewshot": "reasoneval.tasks:TaskSpec",
            "data_file": "reasoneval.tasks:TaskSpec"}
# Flags the prose makes up (a new option, a renamed one).
PLACEHOLDER_FLAGS = {"--field-name", "--old-name", "--frequency-penalty"}


def _import(ref: str) -> Any:
    import importlib

    module, _, attr = ref.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = _member(obj, part)
    return obj


def _member(obj: Any, name: str) -> Any:
    """An attribute, or a dataclass field / annotated member of a class (`Score.value`, `TaskMetrics.extra`)."""
    if hasattr(obj, name):
        return getattr(obj, name)
    if isinstance(obj, type):
        fields = {f.name: f for f in dataclasses.fields(obj)} if dataclasses.is_dataclass(obj) else {}
        if name in fields:
            return fields[name]
        for klass in obj.__mro__:
            if name in getattr(klass, "__annotations__", {}):
                return klass.__annotations__[name]
    raise AttributeError(f"{obj!r} has no {name!r}")


def _bare_names() -> dict[str, Any]:
    import importlib

    names: dict[str, Any] = {}
    for module in BARE_NAME_MODULES:
        names.update({k: v for k, v in vars(importlib.import_module(module)).items() if not k.startswith("__")})
    return names


def _resolve(dotted: str) -> Any:
    """`scoring.SCORERS`, `fleet.jobs.Job.fingerprint`, `EvalConfig.sampling`: a module under reasoneval and
    members, or a bare name of BARE_NAME_MODULES and members."""
    import importlib

    parts = dotted.removeprefix("reasoneval.").split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(["reasoneval", *parts[:i]]))
        except ModuleNotFoundError:
            continue
        for part in parts[i:]:
            obj = _member(obj, part)
        return obj
    names = _bare_names()
    assert parts[0] in names, f"{dotted}: no module reasoneval.{parts[0]}, and no {parts[0]} in {BARE_NAME_MODULES}"
    obj = names[parts[0]]
    for part in parts[1:]:
        obj = _member(obj, part)
    return obj


# Functions whose **keywords are another's parameters: run_option's and sampling_option's are CliOption's fields.
FORWARDED_KEYWORDS = {"run_option": "reasoneval.run.flags:CliOption",
                      "sampling_option": "reasoneval.run.flags:CliOption"}


def _bind(func: Any, args: list[Any], keywords: dict[str, Any]) -> None:
    """`func(*args, **keywords)` fits func's signature (and the keywords it forwards fit where they go)."""
    import inspect

    params = inspect.signature(func).parameters
    inspect.signature(func).bind_partial(*args, **keywords)
    if getattr(func, "__name__", None) in FORWARDED_KEYWORDS:
        rest = {k: v for k, v in keywords.items() if k not in params}
        inspect.signature(_import(FORWARDED_KEYWORDS[func.__name__])).bind_partial(**rest)


def _check_call(node: Any, where: str) -> None:
    import ast

    func = _resolve(ast.unparse(node.func))
    positional = [a for a in node.args if not (isinstance(a, ast.Constant) and a.value is Ellipsis)]
    keywords = {k.arg: None for k in node.keywords if k.arg is not None}
    try:
        _bind(func, positional, keywords)
    except TypeError as e:
        raise AssertionError(f"{where}: {ast.unparse(node)} does not fit {func!r}: {e}") from None


def test_every_name_call_and_path_the_adding_sections_show_is_the_codes() -> None:
    import ast

    from reasoneval import registry
    from reasoneval.cli.main import COMMANDS, build_parser

    groups = {registry.ENGINE_GROUP, registry.TASK_GROUP, registry.SCORER_GROUP, registry.PROMPT_GROUP}
    run_parser = next(a for a in build_parser(["run"])._actions if isinstance(a, argparse._SubParsersAction)).choices["run"]
    run_flags = {s for a in run_parser._actions for s in a.option_strings}
    checked = 0
    for span in _spans():
        if span in NOT_CODE:
            continue
        entry_group = re.fullmatch(r'\[project\.entry-points\."([\w.]+)"\]', span)
        if entry_group or span in groups:
            assert (entry_group.group(1) if entry_group else span) in groups, span
        elif re.fullmatch(r"[\w<>.-]+(/[\w.-]+)+/?|[\w.-]+/|[\w<>.-]+\.(py|toml|txt|jsonl)", span):
            if span in OTHER_PROJECTS:
                continue
            if span in NEW_PATHS:
                assert not (ROOT / span).exists() and (ROOT / span).parent.is_dir(), span
            else:
                assert any((root / span).exists() for root in PATH_ROOTS), f"no file or folder {span}"
            for call in REGISTRY_FILES.get(span, ()):
                assert call in (ROOT / "src" / "reasoneval" / span).read_text(), f"{span} has no {call}"
        elif span.startswith("reasoneval ") or span.startswith("--"):
            words = span.split()
            if words[0] == "reasoneval":
                assert words[1] in COMMANDS or words[1] == "--version", span
                if words[1] != "run":
                    continue
            for flag in (w.split("=")[0] for w in words if w.startswith("--")):
                assert flag in PLACEHOLDER_FLAGS or flag in run_flags, f"{span}: `run` has no {flag}"
        elif span in BARE_MEMBERS:
            owner = _import(BARE_MEMBERS[span])
            _member(owner, span.removesuffix("()"))
        elif m := re.fullmatch(r"[A-Z_]+=\S+ python (-m pytest|([\w/]+\.py))\b.*", span):
            # A command with an environment variable set: the script it runs must be the project's.
            assert m.group(2) is None or (ROOT / m.group(2)).is_file(), f"{span}: no script {m.group(2)}"
        elif m := re.fullmatch(r"(\w+)=.*", span):
            assert m.group(1) in KEYWORDS, f"{span}: which function takes {m.group(1)}? (KEYWORDS)"
            _bind(_import(KEYWORDS[m.group(1)]), [], {m.group(1): None})
        elif re.fullmatch(r"[A-Za-z_]\w*(\.\w+)+(\(\))?|[A-Z_][A-Za-z_0-9]*", span):
            _resolve(span.removesuffix("()"))
        elif re.fullmatch(r"[\w.]+\(.*\)", span) or re.fullmatch(r"\w+ = \"[\w.:]+\"", span):
            tree = ast.parse(re.sub(r", \.\.\.\)", ")", span))  # `f(a, k=..., ...)`: and further keywords
            for node in ast.walk(tree):
                if isinstance(node, ast.Call):
                    _check_call(node, span)
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and "mypkg" in node.value:
                    assert re.fullmatch(r"mypkg(\.\w+)+(:\w+)?", node.value), span  # an entry point's target
        else:
            continue  # prose in code style: a metric, a column, a status, a file format
        checked += 1
    assert checked >= 60, checked  # the sections name that much code; a parse that found little is a broken test
    # Paths in the prose too (`scoring/maths/scorer.py`, bench/pathological_outputs.py), not only in code spans.
    prose = re.sub(r"```.*?```", "", _adding_sections(), flags=re.S)
    for path in set(re.findall(r"[\w./-]+\.py\b", prose)) - NEW_PATHS - OTHER_PROJECTS:
        assert any((root / path).exists() for root in PATH_ROOTS), f"no file {path}"


def test_every_code_block_of_the_adding_sections_is_run_or_checked() -> None:
    import tomllib

    from reasoneval import registry
    from tests.recipes import SAMPLING_OPTION

    groups = {registry.ENGINE_GROUP, registry.TASK_GROUP, registry.SCORER_GROUP, registry.PROMPT_GROUP}
    examples = {example(name) for name in ("scorer", "engine", "task", "packaged_task")}  # modules of tests/plugins
    rest = [(lang, code) for lang, code in _code_blocks() if code not in examples]
    assert len(_code_blocks()) - len(rest) == 4
    for lang, code in rest:
        if lang == "toml":  # entry points: groups of the registries, "module" or "module:attr" targets
            entry_points = tomllib.loads(code)["project"]["entry-points"]
            assert set(entry_points) <= groups and entry_points
            assert all(re.fullmatch(r"\w+(\.\w+)*(:\w+)?", t) for g in entry_points.values() for t in g.values())
        elif lang == "python" and "sampling_option(" in code:
            # The one-line sampling option: the edit tests/recipes.py makes to records.py,
            # but for the option's name and help; and it declares a field with a flag in the sampling group.
            line = re.fullmatch(r'    (\w+): .*help="([^"]*)"\)\n', code)
            assert line, code
            name, help_ = line.groups()
            assert code.replace(name, "dummy_penalty").replace(help_, "a made-up sampling option") == SAMPLING_OPTION
            from reasoneval.records import CLI, sampling_option

            namespace: dict[str, Any] = {"sampling_option": sampling_option}
            exec(compile("from dataclasses import dataclass\n@dataclass(frozen=True)\nclass WithIt:\n" + code,
                         "docs/architecture.md", "exec"), namespace)
            (f,) = dataclasses.fields(namespace["WithIt"])
            assert f.name == name and f.default is None and f.metadata[CLI]["parse"] is float
        else:
            raise AssertionError(f"a {lang or 'plain'} block of the Adding sections that no test runs:\n{code}")


def test_the_plugin_groups_table_names_each_registrys_group() -> None:
    rows = re.findall(r"^\| `(reasoneval\.\w+)` \| `(\w+)\.(\w+)` \|", DOC.read_text(), re.M)
    assert len(rows) == 4
    for group, package, name in rows:
        assert _resolve(f"{package}.{name}").group == group
