"""Benchmarks: registry (built in and from entry points), data loading (data dir > cache > Hub), user data, problem keys.

    from reasoneval.tasks import load_task, resolve_task_names
    spec, problems = load_task("aime24", data_dir=Path("../shared/datasets"), limit=5)
"""

from __future__ import annotations

from reasoneval.tasks.catalog import GROUPS, resolve_task_names
from reasoneval.tasks.keys import dataset_hash, problem_key, reference_text
from reasoneval.tasks.loading import cache_dir, load_task, pull, resolve_data_dir, task_listing
from reasoneval.tasks.registry import TASKS
from reasoneval.tasks.spec import HubSource, PackageFile, TaskSpec
from reasoneval.tasks.user_data import load_user_data

__all__ = [
    "GROUPS", "TASKS", "HubSource", "PackageFile", "TaskSpec", "cache_dir", "dataset_hash", "load_task",
    "load_user_data", "reference_text", "problem_key", "pull", "resolve_data_dir",
    "resolve_task_names", "task_listing",
]
