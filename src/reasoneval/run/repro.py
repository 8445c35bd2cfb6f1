"""`reasoneval repro RUN_DIR`: generate a fixed subset of a run's samples again and say whether it reproduces.

The subset is each task's first `problems` problems (in the run's order) that have their first `samples` samples
finished, those samples' indices and seeds: the requests are rebuilt by the plan's own request_maker from the run's
settings (as `export` rebuilds prompts), and a seed that does not match the journal's stops the command. They are
generated with the run's setup (engine, its options as config.json records them, concurrency, server) or with one
thing varied (`--vary concurrency=1`, `--vary engine-arg KEY=VALUE`, `--base-url` another server), into
RUN_DIR/repro/<name>/ (samples.jsonl and repro.json): never the run's own store, so the headline never sees them.
Both sides are graded by the task's scorer now, and analysis/repro.py compares them. docs/reproducibility.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from reasoneval.analysis.repro import DEFAULT_PROBLEMS, DEFAULT_SAMPLES, Pair, ReproReport, summarize
from reasoneval.atomic import atomic_write_json
from reasoneval.engines import capabilities, check_supported, create_engine, options_class
from reasoneval.engines.base import CommonOptions
from reasoneval.errors import UserError
from reasoneval.records import Problem, Request, SampleRecord, SamplingParams
from reasoneval.results import fingerprint
from reasoneval.results.schema import RunConfig, load_config
from reasoneval.results.store import SampleStore
from reasoneval.results.store.problems import read_problems
from reasoneval.results.store.sample_store import iter_samples
from reasoneval.run.export import prompt_config, recorded_task_spec
from reasoneval.run.generation import with_fewshot_pool
from reasoneval.run.plan import LoadedTask, request_maker
from reasoneval.run.runner import generate
from reasoneval.run_files import SAMPLES_FILE
from reasoneval.scoring.base import ScoringContext, create_scorer

log = logging.getLogger("reasoneval")

REPRO_DIR = "repro"
REPORT_FILE = "repro.json"
# config.json's engine_config key -> the engine option it records, where the names differ (the local engine
# describes what served: the kernels, threads and context it ended with).
_DESCRIBED_AS = {"local": {"cpu_repack": "cpu_repack", "reuse_prefix": "reuse_prefix", "n_threads": "threads",
                           "n_ctx": "max_model_len"}}

SampleKey = tuple[str, str, int]


@dataclass(frozen=True)
class Variation:
    """What a repro changes from the run's own setup (None / empty: the run's own)."""

    concurrency: int | None = None
    engine_args: Mapping[str, str] = field(default_factory=dict)
    base_url: str | None = None
    model: str | None = None

    def described(self) -> dict[str, str]:
        """What is varied, as the report lists it: setting -> its value here."""
        out = {f"engine-arg {k}": str(v) for k, v in self.engine_args.items()}
        if self.concurrency is not None:
            out["concurrency"] = str(self.concurrency)
        if self.base_url is not None:
            out["base_url"] = self.base_url
        if self.model is not None:
            out["model"] = self.model
        return out


@dataclass(frozen=True)
class ReproOptions:
    """Which samples a repro generates again (each task's first `problems`, their samples 0..`samples`-1), what it
    varies, and where its samples go (RUN_DIR/repro/`name`, by default named after what is varied)."""

    problems: int = DEFAULT_PROBLEMS
    samples: int = DEFAULT_SAMPLES
    vary: Variation = Variation()
    name: str | None = None
    data_dir: str | None = None
    timeout_s: float = 3600.0
    grading_workers: int | None = None

    def folder_name(self) -> str:
        if self.name:
            return self.name
        varied = self.vary.described()
        if not varied:
            return "same"
        text = ",".join(f"{k.removeprefix('engine-arg ')}={v}" for k, v in varied.items())
        return re.sub(r"[^A-Za-z0-9._=,-]+", "_", text)[:80]


def parse_vary(items: Sequence[Sequence[str]]) -> tuple[int | None, dict[str, str]]:
    """`--vary concurrency=N` and `--vary engine-arg KEY=VALUE` (each repeatable) -> (concurrency, engine args)."""
    concurrency: int | None = None
    engine_args: dict[str, str] = {}
    for words in items:
        text = " ".join(words)
        kind, _, rest = text.partition(" ") if text.startswith("engine-arg") else (text, "", "")
        if kind == "engine-arg":
            key, sep, value = rest.strip().partition("=")
            if not sep or not key:
                raise UserError(f"--vary {text!r}: give --vary engine-arg KEY=VALUE (e.g. --vary engine-arg threads=1)")
            engine_args[key.strip()] = value
            continue
        key, sep, value = text.partition("=")
        if key == "concurrency" and sep:
            try:
                concurrency = int(value)
            except ValueError:
                concurrency = 0
            if concurrency < 1:
                raise UserError(f"--vary concurrency={value}: give a whole number of at least 1")
            continue
        raise UserError(f"--vary {text!r} is not something repro can vary: give --vary concurrency=N or --vary "
                        "engine-arg KEY=VALUE (another server: --base-url URL)")
    return concurrency, engine_args


def engine_args_of(config: RunConfig) -> dict[str, Any]:
    """The engine options config.json records the run was served with (its engine_config, as `describe()` wrote it),
    as --engine-arg values: the options whose names it records, and the local engine's served values (threads,
    kernels, context)."""
    try:
        names = {f.name for f in dataclasses.fields(options_class(config.engine))}
    except UserError:
        return {}
    renamed = _DESCRIBED_AS.get(config.engine, {})
    out: dict[str, Any] = {}
    for key, value in config.engine_config.items():
        name = renamed.get(key, key)
        if name in names and value is not None:
            out[name] = tuple(value) if isinstance(value, list) else value
    return out


def _finished(run_dir: Path) -> dict[SampleKey, SampleRecord]:
    out: dict[SampleKey, SampleRecord] = {}
    for d in iter_samples(Path(run_dir) / SAMPLES_FILE):
        if d.get("status") == "ok":
            rec = SampleRecord.from_json_dict(d)
            out.setdefault((rec.task, rec.problem_key, rec.index), rec)
    return out


def select_subset(config: RunConfig, done: Mapping[SampleKey, SampleRecord], problems: int, samples: int
                  ) -> list[SampleKey]:
    """Each task's first `problems` problems (in the run's order) whose samples 0..samples-1 are all finished."""
    if problems < 1 or samples < 1:
        raise UserError(f"--problems and --samples must be at least 1 (got {problems} and {samples})")
    keys: list[SampleKey] = []
    for task in config.tasks:
        chosen = [k for k in config.problem_keys.get(task, []) if all((task, k, j) in done for j in range(samples))]
        keys += [(task, k, j) for k in chosen[:problems] for j in range(samples)]
    if not keys:
        raise UserError(f"run {config.run_id} has no problem with {samples} finished samples: lower --samples, or "
                        "generate the run first")
    return keys


def rebuild_requests(config: RunConfig, run_dir: Path, keys: Sequence[SampleKey], data_dir: Path | None
                     ) -> tuple[list[Request], dict[tuple[str, str], Problem]]:
    """The requests the run sent for `keys` (the plan's request_maker over all the run's problems, in its order: a
    drawn few-shot style depends on it)."""
    problems = read_problems(run_dir)
    by_key = {(p.task, p.key): p for p in problems}
    prompt = prompt_config(config)
    tasks = []
    for task in config.tasks:
        order = config.problem_keys.get(task, [])
        ps = [by_key[(task, k)] for k in order if (task, k) in by_key]
        tasks.append(with_fewshot_pool(LoadedTask(recorded_task_spec(config, task), ps), prompt, data_dir))
    s = config.settings
    make = request_maker(tasks, seed=s.seed or 0, sampling=s.sampling or SamplingParams(), api=s.api or "chat",
                         prompt=prompt)
    requests = []
    for task, key, j in keys:
        problem = by_key.get((task, key))
        if problem is None:
            raise UserError(f"{run_dir}/problems.jsonl lacks problem {key!r} of task {task!r}: the run directory is "
                            "incomplete; repro needs the problems the run asked")
        requests.append(make(problem, j))
    return requests, by_key


def _grade(config: RunConfig, problems: Mapping[tuple[str, str], Problem], records: Sequence[SampleRecord],
           context: ScoringContext) -> list[bool]:
    out: list[bool] = [False] * len(records)
    for task in dict.fromkeys(r.task for r in records):
        idx = [i for i, r in enumerate(records) if r.task == task]
        scorer = create_scorer(config.scoring[task], context)
        scores = scorer.score_many([problems[(task, records[i].problem_key)] for i in idx], [records[i] for i in idx])
        for i, s in zip(idx, scores):
            out[i] = bool(s.correct)
    return out


def _quiet(load: Callable[[], Any]) -> Any:
    """`load()` with file descriptor 2 on /dev/null: llama.cpp's C code logs its context's set-up there even when
    asked not to, and repro's report is what the terminal should show."""
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        return load()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def gguf_tokenizer(path: str | None) -> Callable[[str], Sequence[object]] | None:
    """The model's own tokenizer where the run served a GGUF file and llama.cpp is installed (its vocabulary only:
    no weights are loaded); None otherwise (positions are then counted in words)."""
    if not path or not Path(path).is_file():
        return None
    try:
        from llama_cpp import Llama

        llm = _quiet(lambda: Llama(model_path=str(path), vocab_only=True, verbose=False))
    except Exception as e:  # no llama.cpp, or a file it cannot read: words instead
        log.info("repro: no tokenizer for %s (%s); divergence positions are in words", path, e)
        return None
    return lambda text: list(llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))


def checkpoint_tokenizer(folder: str | None) -> Callable[[str], Sequence[object]] | None:
    """The tokenizer of a local model folder (what vLLM served) where transformers is installed, read from the folder
    only (nothing from a hub); None otherwise (positions are then counted in words)."""
    if not folder or not Path(folder).is_dir():
        return None
    try:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except Exception as e:  # no transformers, or a folder without a tokenizer: words instead
        log.info("repro: no tokenizer in %s (%s); divergence positions are in words", folder, e)
        return None
    return lambda text: list(tok.encode(text, add_special_tokens=False))


def _served_folder(config: RunConfig) -> str | None:
    """The local model folder that served the run (vLLM in process, or a launched vLLM server), if any."""
    if config.engine == "vllm":
        return str(config.engine_config.get("model") or "") or None
    if config.engine == "launch" and config.engine_config.get("server") == "vllm":
        return next((str(x) for x in config.engine_config.get("command") or [] if Path(str(x)).is_dir()), None)
    return None


def _served_gguf(config: RunConfig) -> str | None:
    """The GGUF file that served the run (the local engine's, or a launched llama.cpp server's), if any."""
    if config.engine == "local":
        path = config.engine_config.get("model_path")
        return str(path) if path else None
    if config.engine == "launch" and config.engine_config.get("server") == "llamacpp":
        return next((str(x) for x in config.engine_config.get("command") or [] if str(x).lower().endswith(".gguf")),
                    None)
    return None


async def _regenerate(engine_name: str, common: CommonOptions, args: Mapping[str, Any], requests: Sequence[Request],
                      repro_dir: Path, concurrency: int) -> tuple[dict[str, Any], int]:
    """Generate what repro_dir's store lacks of `requests`; the engine's description and the concurrency used."""
    check_supported(engine_name, capabilities(engine_name, args), common.api, common.sampling or SamplingParams())
    engine = create_engine(engine_name, common, args)
    try:
        info = await engine.start()
        with SampleStore(repro_dir) as store:
            engine.attach_run(repro_dir)
            done = store.scan().ok
            todo = [r for r in requests if (r.task, r.problem_key, r.index) not in done]
            used = min(concurrency, info.max_concurrency or concurrency)
            if todo:
                await generate(engine, todo, store, concurrency=used, max_model_len=info.max_model_len)
        return engine.describe(), used
    finally:
        await engine.close()


def repro(run_dir: str | Path, opts: ReproOptions) -> ReproReport:
    """Regenerate the subset with the run's setup or `opts`' variation, grade both sides, write and return the
    report (RUN_DIR/repro/<name>/repro.json)."""
    run_dir = Path(run_dir)
    config = load_config(run_dir)
    if config.engine in ("score", ""):
        raise UserError(f"{run_dir} was imported from a file of generations (`score`): there is no setup to "
                        "generate with; repro needs a run reasoneval generated")
    done = _finished(run_dir)
    keys = select_subset(config, done, opts.problems, opts.samples)
    data_dir = Path(opts.data_dir) if opts.data_dir else (
        Path(os.environ["REASONEVAL_DATA_DIR"]) if os.environ.get("REASONEVAL_DATA_DIR") else None)
    requests, problems = rebuild_requests(config, run_dir, keys, data_dir)
    for req in requests:
        seed = done[(req.task, req.problem_key, req.index)].seed
        if req.seed != seed:
            raise UserError(f"sample {req.index} of {req.task}/{req.problem_key} was generated with seed {seed}, but "
                            f"the run's settings give {req.seed} now: this reasoneval derives seeds otherwise, so "
                            "repro cannot ask the same samples")
    vary = opts.vary
    engine_name = "openai" if vary.base_url else config.engine
    args: dict[str, Any] = {} if vary.base_url else engine_args_of(config)
    args.update(vary.engine_args)
    s = config.settings
    api_key_env = config.api_key_env or "OPENAI_API_KEY"
    concurrency = vary.concurrency or config.concurrency or 64
    common = CommonOptions(model=vary.model or s.model, base_url=vary.base_url or config.base_url, api=s.api or "chat",
                           api_key=os.environ.get(api_key_env) or None, api_key_env=api_key_env,
                           timeout_s=opts.timeout_s, concurrency=concurrency, log_dir=str(run_dir / REPRO_DIR),
                           sampling=s.sampling)
    repro_dir = run_dir / REPRO_DIR / opts.folder_name()
    repro_dir.mkdir(parents=True, exist_ok=True)
    described, used = asyncio.run(_regenerate(engine_name, common, args, requests, repro_dir, concurrency))
    again = _finished(repro_dir)
    pairs_keys = [k for k in keys if k in again]
    originals = [done[k] for k in pairs_keys]
    regenerated = [again[k] for k in pairs_keys]
    with ScoringContext(workers=opts.grading_workers, cache_dir=repro_dir) as context:
        graded_a = _grade(config, problems, originals, context)
        graded_b = _grade(config, problems, regenerated, context)
    pairs = [Pair(k[0], k[1], k[2], a.text or "", b.text or "", ca, cb)
             for k, a, b, ca, cb in zip(pairs_keys, originals, regenerated, graded_a, graded_b)]
    mine = dataclasses.replace(config, engine=engine_name, engine_config=described, concurrency=used,
                               base_url=common.base_url if engine_name == "openai" else None)
    fp_run, fp_repro = fingerprint.of_config(config), fingerprint.collect(mine)
    diffs = {k: [a, b] for k, a, b in fingerprint.differences(fp_run, fp_repro)}
    tokenizer = gguf_tokenizer(_served_gguf(config)) or checkpoint_tokenizer(_served_folder(config))
    report = summarize(pairs, failed=len(keys) - len(pairs_keys), tokenize=tokenizer,
                       unit="token" if tokenizer else "word", run_dir=str(run_dir), repro_dir=str(repro_dir),
                       varied=vary.described(), fingerprint_differences=diffs)
    atomic_write_json(repro_dir / REPORT_FILE, {**report.to_json_dict(), "fingerprint": fp_repro})
    return report
