"""Adding a sampling option is one edit: a field of SamplingParams (records.py). The test copies the tree (src/, tests/,
pyproject.toml), adds that one line to the copy's records.py (tests/recipes.py), changes nothing else, and shows in
the copy: `run` has the flag and a jobs file the key; the OpenAI request (through the loopback server), vLLM's keyword
arguments and the embedded llama.cpp model's parameters carry it when set and leave it out when unset (an engine or a
launched server whose Capabilities do not name it refuses it at start); the dashboards log it, `runs`' settings column
shows it and the re-run advice of `report`/`score` gives it; every pinned run id and sweep fingerprint is unchanged
while it is unset; the run id and the fingerprint change when it is set; and the copy's own tests of the option table
(every run option placed), of the flags and of every engine x every option pass unedited. (The copy's whole suite
passes too: scripts/recipe_check.py, a CI step.)"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import reasoneval
from tests.recipes import add_sampling_option

ROOT = Path(reasoneval.__file__).parents[2]

CHECK = textwrap.dedent('''
    import json, sys, types
    from pathlib import Path

    import reasoneval

    assert reasoneval.__file__.startswith(sys.argv[1]), reasoneval.__file__  # the copy's package, edited
    data, out = Path(sys.argv[2]), Path(sys.argv[3])

    from reasoneval.cli.main import main
    from reasoneval.engines.sampling import llama_fields, openai_fields, vllm_fields
    from reasoneval.errors import UserError
    from reasoneval.fleet.jobs import Job, make_job
    from reasoneval.records import SamplingParams
    from tests.fixtures.openai_server import OpenAIServer
    from tests.run.test_identity_pinned import PINNED, pinned_config, run_id_of

    result = {"pinned_unset": [(run_id_of(pinned_config(o)), Job(name="j", config=pinned_config(o)).fingerprint())
                               for o, _, _ in PINNED]}
    set_cfg = pinned_config({"dummy_penalty": 0.5})
    result["set"] = [run_id_of(set_cfg), Job(name="j", config=set_cfg).fingerprint()]
    result["sampling_set"] = set_cfg.sampling().to_json_dict()
    p = SamplingParams(dummy_penalty=0.5)
    result["vllm"] = [vllm_fields(p, 1, 10), vllm_fields(SamplingParams(), 1, 10)]
    result["llama"] = [llama_fields(p), llama_fields(SamplingParams())]
    result["openai_fields"] = openai_fields(p, 1)
    job = make_job({"model": "m", "dummy-penalty": 0.25}, {}, out, where="jobs.yaml: models[0]")
    result["job"] = job.config.dummy_penalty
    try:
        make_job({"model": "m", "dummy_penalty": "high"}, {}, out, where="jobs.yaml: models[0]")
    except UserError as e:
        result["job_error"] = str(e)
    from reasoneval.engines import capabilities
    from reasoneval.engines.base import check_supported

    check_supported("openai", capabilities("openai"), "chat", p)  # a server takes any field
    for engine, args in (("local", {}), ("vllm", {}), ("launch", {"server": "llamacpp"})):
        try:  # their Capabilities do not name it: one line at start, never ignored
            check_supported(engine, capabilities(engine, args), "chat", p)
        except UserError as e:
            result[engine + "_error"] = str(e).split(" (")[0]
    with OpenAIServer(model="test-model", default="The answer is \\\\boxed{4}.") as server:
        for name, flags in (("set", ["--dummy-penalty", "0.5"]), ("unset", [])):
            server.reset()
            assert main(["run", "--base-url", server.base_url, "--model", "test-model", "--data", str(data), "--n", "2",
                         "--output-dir", str(out / name), "--no-progress", "--json", *flags]) == 0
            result[name + "_bodies"] = [r.body for r in server.requests() if r.body and "messages" in r.body]
            result[name + "_run"] = [p.name for p in (out / name / "test-model").iterdir()]
    from reasoneval.report.dashboards import run_settings
    from reasoneval.results.schema import load_run

    from reasoneval.report.runs import row_settings
    from reasoneval.run.rerun import rerun_command

    set_run = load_run(next((out / "set" / "test-model").iterdir()))
    result["dashboards"] = run_settings(set_run)
    result["runs_settings"] = row_settings(set_run)  # `reasoneval runs`' settings column
    result["rerun"] = rerun_command(set_run)  # the re-run advice of `report` and `score`
    print(json.dumps(result))
''')


def test_a_sampling_option_is_one_edit_of_records_py(tmp_path: Path) -> None:
    from reasoneval.fleet.jobs import Job
    from reasoneval.run.options import EvalConfig
    from tests.run.test_identity_pinned import PINNED, pinned_config, run_id_of

    tree = tmp_path / "tree"  # a copy of the tree: the one edit is made there
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for part in ("src", "tests"):
        shutil.copytree(ROOT / part, tree / part, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    add_sampling_option(tree)  # the edit: one line in SamplingParams (tests/recipes.py)
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"problem": "What is 2+2?", "answer": "4"}) + "\n")
    env = {**os.environ, "PYTHONPATH": f"{tree / 'src'}{os.pathsep}{tree}"}
    proc = subprocess.run([sys.executable, "-c", CHECK, str(tree / "src"), str(data), str(tmp_path)],
                          capture_output=True, text=True, timeout=300, cwd=tree, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # The copy's own tests of the option table and of the flags, unedited, pass with the new field.
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "tests/run/test_option_combinations.py::test_every_run_option_is_placed",
                            "tests/run/test_options.py::test_every_field_has_a_flag_a_help_and_the_parsers_default",
                            "tests/run/test_options.py::test_the_sampling_defaults_are_stated_once",
                            "tests/engines/test_every_option.py::test_echo_never_samples_so_it_refuses_every_option_"
                            "beyond_the_first",
                            "tests/engines/test_every_option.py::test_vllm_engine_passes_each_option_to_vllms_sampling_"
                            "params_or_refuses_it",
                            "tests/engines/test_every_option.py::test_local_engine_hands_each_option_to_llamacpps_"
                            "sampler_or_refuses_it"],
                           capture_output=True, text=True, timeout=300, cwd=tree, env=env)
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    assert "6 passed" in tests.stdout
    got = json.loads(proc.stdout.strip().splitlines()[-1])

    assert "dummy_penalty" not in {f for f in EvalConfig.__dataclass_fields__}  # this process: the file unedited
    # Unset: every pinned run id and sweep fingerprint as before, and the request does not carry it.
    assert [tuple(x) for x in got["pinned_unset"]] == [(run_id, fp) for _, run_id, fp in PINNED]
    assert got["unset_bodies"] and all("dummy_penalty" not in b for b in got["unset_bodies"])
    assert got["unset_run"] == [run_id_of(EvalConfig(), model="test-model")]
    # Set: the flag reaches the OpenAI request, vLLM's and llama.cpp's parameters; the run id and fingerprint change.
    assert len(got["set_bodies"]) == 2 and all(b["dummy_penalty"] == 0.5 for b in got["set_bodies"])
    assert got["set_run"] != got["unset_run"]
    assert got["openai_fields"]["dummy_penalty"] == 0.5
    assert got["vllm"][0]["dummy_penalty"] == 0.5 and "dummy_penalty" not in got["vllm"][1]
    assert got["llama"][0]["dummy_penalty"] == 0.5 and "dummy_penalty" not in got["llama"][1]
    default = pinned_config({})
    assert got["set"][0] != run_id_of(default) and got["set"][1] != Job(name="j", config=default).fingerprint()
    assert got["sampling_set"]["dummy_penalty"] == 0.5
    assert got["local_error"] == "--dummy-penalty is not supported by the local engine"
    assert got["vllm_error"] == "--dummy-penalty is not supported by the vllm engine"
    assert got["launch_error"] == "--dummy-penalty is not supported by the launch engine"
    # The dashboards' settings carry it (read from SamplingParams' fields, like the request).
    assert got["dashboards"]["dummy_penalty"] == 0.5 and got["dashboards"]["temperature"] == 0.6
    # `runs`' settings column and the re-run advice give it (both read SamplingParams' fields).
    assert got["runs_settings"]["dummy_penalty"] == "0.5"
    assert " --dummy-penalty 0.5 " in got["rerun"] and " --temperature " not in got["rerun"]  # only what is changed
    # A jobs file takes the key (dashes or underscores) and checks its value like the flag.
    assert got["job"] == 0.25
    assert got["job_error"] == "jobs.yaml: models[0]: dummy_penalty must be a number, got 'high'"
