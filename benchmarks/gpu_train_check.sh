#!/usr/bin/env bash
# GPU check of teacher training at scale: a few GRPO steps of a real small instruct
# model with TRL's vLLM generation (colocate mode), against a frozen student that a
# separate `vllm serve` process serves through the `openai:` backend.  It trains the
# multi-turn feedback teacher first (IntBench's own rollout through TRL's vLLM
# generation), then the monitor teacher, and prints one JSON line per protocol with
# the seconds per step and the logged reward.
#
# Needs: one CUDA GPU, `pip install -e ".[train]" vllm`, and a model on local disk:
# MODEL=/path/to/model, or the first of $CANDIDATES found in the Hugging Face cache
# ($HF_HOME/hub, default ~/.cache/huggingface/hub).  Nothing is downloaded.
# Budget: about 8 minutes (each stage has its own timeout below).
#
#   bash benchmarks/gpu_train_check.sh            # STEPS=3 PROTOCOLS="feedback monitor"
#   MODEL=/models/qwen2.5-0.5b STEPS=2 bash benchmarks/gpu_train_check.sh
set -uo pipefail

STEPS=${STEPS:-3}
PORT=${PORT:-8011}
PROTOCOLS=${PROTOCOLS:-feedback monitor}
WORK=${WORK:-runs/gpu-train-check}
PYTHON=${PYTHON:-python3}
CANDIDATES="Qwen/Qwen2.5-0.5B-Instruct Qwen/Qwen2.5-1.5B-Instruct HuggingFaceTB/SmolLM2-360M-Instruct HuggingFaceTB/SmolLM2-1.7B-Instruct"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TRL_EXPERIMENTAL_SILENCE=1 PYTHONUNBUFFERED=1

fail() { echo "gpu_train_check: $*" >&2; exit 1; }

"$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
  || fail "no CUDA GPU visible to torch; run this on a GPU machine"
"$PYTHON" -c "import vllm, trl, intbench" 2>/dev/null \
  || fail "vllm, trl or intbench is not importable; pip install -e '.[train]' vllm"

if [ -z "${MODEL:-}" ]; then
  hub=${HF_HOME:-$HOME/.cache/huggingface}/hub
  for name in $CANDIDATES; do
    snapshot=$(ls -d "$hub/models--${name//\//--}"/snapshots/*/ 2>/dev/null | head -n 1)
    if [ -n "$snapshot" ] && ls "$snapshot"/*.safetensors >/dev/null 2>&1; then
      MODEL=${snapshot%/}
      break
    fi
  done
fi
[ -n "${MODEL:-}" ] || fail "no model found: set MODEL=/path/to/model (tried: $CANDIDATES)"
[ -d "$MODEL" ] || fail "MODEL=$MODEL is not a directory"
echo "model: $MODEL"
mkdir -p "$WORK"

# The frozen student: its own vLLM server on a quarter of the GPU.
timeout 420 vllm serve "$MODEL" --port "$PORT" --served-model-name student \
  --gpu-memory-utilization 0.25 --max-model-len 4096 >"$WORK/vllm-student.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null' EXIT
started=$(date +%s)
until curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null; do
  kill -0 $server 2>/dev/null || fail "the student's vLLM server exited; see $WORK/vllm-student.log"
  [ $(( $(date +%s) - started )) -lt 180 ] || fail "the student's vLLM server did not start in 180 s"
  sleep 2
done
echo "student server up in $(( $(date +%s) - started )) s"

# TRL's colocate mode runs vLLM inside the training process as a one-rank group.
export RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29531

for protocol in $PROTOCOLS; do
  timeout 240 "$PYTHON" - "$protocol" "$MODEL" "$PORT" "$STEPS" "$WORK" <<'PY' || echo "{\"protocol\": \"$protocol\", \"error\": \"exit $?\"}"
import json
import sys
import time

from transformers import TrainerCallback

from intbench.training.config import load_config
from intbench.training.trainer import build_trainer

protocol, model, port, steps, work = sys.argv[1:]
config = load_config(
    f"intbench/training/configs/{protocol}_grpo.yaml",
    env="IntBench-Math-Feedback-v0" if protocol == "feedback" else "IntBench-Math-v0",
    model=f"hf:{model}",
    student=f"openai:student@http://127.0.0.1:{port}/v1",
    n=8,
    output_dir=f"{work}/{protocol}",
)
# a short student reply keeps each step's rollouts to seconds
config.env_options["student_sampling"] = {"max_tokens": 1024}
config.trainer.update(
    max_steps=int(steps),
    logging_steps=1,
    save_strategy="no",
    bf16=True,
    per_device_train_batch_size=8,
    num_generations=4,
    use_vllm=True,
    vllm_mode="colocate",
    vllm_gpu_memory_utilization=0.3,
    vllm_max_model_length=4096,
)


class StepLog(TrainerCallback):
    def __init__(self):
        self.started, self.steps, self.logs = None, [], []

    def on_step_begin(self, args, state, control, **kwargs):
        self.started = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self.steps.append(round(time.perf_counter() - self.started, 2))

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "reward" in logs:
            self.logs.append({k: v for k, v in logs.items() if "reward" in k or k == "loss"})


built = time.perf_counter()
trainer = build_trainer(config)
setup = time.perf_counter() - built
log = StepLog()
trainer.add_callback(log)
trainer.train()
print(
    json.dumps(
        {
            "protocol": protocol,
            "setup_s": round(setup, 1),
            "step_s": log.steps,
            "reward": [entry.get("reward") for entry in log.logs],
            "logs": log.logs,
        }
    ),
    flush=True,
)
PY
done
