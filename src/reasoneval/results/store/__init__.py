"""The sample store: an append-only journal per run directory, resumable to the sample."""

from reasoneval.results.store.problems import add_problems, read_problems
from reasoneval.results.store.sample_store import SampleKey, SampleStore, iter_jsonl, iter_samples

__all__ = ["SampleStore", "SampleKey", "iter_jsonl", "iter_samples", "add_problems", "read_problems"]
