#!/usr/bin/env bash
# Parity with lm-evaluation-harness 0.4.13 on the embedded model (docs/lm-eval.md, "Parity").
#
#   scripts/lmeval_parity.sh [LIMIT] [MAX_TOKENS] [ONLY]
#
# Starts llama-cpp-python's server with the embedded SmolLM2-135M (as `launch --server llamacpp` does,
# repacked kernels off), installs lm-eval 0.4.13 in its own venv ($LMEVAL_VENV, default /tmp/lmeval-venv)
# if it is not there, runs lm-eval and reasoneval on the same first LIMIT problems of each battery task
# (the rows of `reasoneval run --battery lmeval-base`: gsm8k and gsm8k_cot 4/8-shot, hendrycks_math and
# minerva_math 4-shot by subject, IFEval, MBPP 3-shot, HumanEval) and prints prompts identical, responses
# identical, per-problem verdicts identical and the metrics side by side. Data: $REASONEVAL_DATA_DIR (../shared/datasets).
# Not run in CI (it installs lm-eval and takes minutes per task on 2 cores). The server decodes with
# $PARITY_THREADS threads (default 1: on a shared machine a second thread waits on the first more than it helps).
# PARITY_REUSE_LMEVAL=1: a row whose lm-eval output is already in the work dir is read, not run again.
set -euo pipefail
LIMIT=${1:-20}
MAX_TOKENS=${2:-256}
ONLY=${3:-}
VENV=${LMEVAL_VENV:-/tmp/lmeval-venv}
PORT=${PARITY_PORT:-18765}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}"
export REASONEVAL_DATA_DIR=${REASONEVAL_DATA_DIR:-$ROOT/../shared/datasets}
WORK=${PARITY_WORK:-$(mktemp -d /tmp/lmeval-parity.XXXXXX)}  # (a second invocation can add to the first's runs)
mkdir -p "$WORK"

if [ ! -x "$VENV/bin/lm_eval" ]; then
  python -m venv "$VENV"
  "$VENV/bin/pip" install -q torch==2.13.0
  "$VENV/bin/pip" install -q "lm-eval[api,math,ifeval]==0.4.13"
fi

GGUF=$(python -c "from reasoneval.engines.local import default_model_path; print(default_model_path())")
python -m reasoneval.engines.launch.llamacpp_server --no-repack --model "$GGUF" --model_alias smol \
  --host 127.0.0.1 --port "$PORT" --n_ctx 8192 --n_threads "${PARITY_THREADS:-1}" >"$WORK/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 120); do
  curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && break
  kill -0 $SERVER 2>/dev/null || { cat "$WORK/server.log"; exit 1; }
  sleep 1
done

python "$ROOT/scripts/lmeval_parity.py" --base-url "http://127.0.0.1:$PORT/v1" --model smol --venv "$VENV" \
  --limit "$LIMIT" --max-tokens "$MAX_TOKENS" --work "$WORK" --only "$ONLY" ${PARITY_REUSE_LMEVAL:+--reuse-lmeval}
