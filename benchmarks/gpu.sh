#!/usr/bin/env bash
# The GPU benchmarks in one bounded run (docs/benchmarks.rst, "On a GPU"): P1 image finding,
# W5 single and batched likelihoods, W1/W2 deflections with traced parameters, and W5 batches
# up to 4,096, each beside numba on the same machine and the JAX peers where installed, and two
# forms of the SIE (gpu_sie_forms.py). Every step has a time limit, so the whole run ends within
# about 11 minutes (on an H200 it took 3 min 13 s before the SIE step); each step's JSON lines
# go to OUTDIR/<step>.jsonl.
#
#     bash benchmarks/gpu.sh OUTDIR
set -u
out=$(realpath -m "${1:-gpu-results}")
mkdir -p "$out"
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}

step() {
    local name=$1 limit=$2
    shift 2
    echo "== $name (limit ${limit} s): $*"
    local t0=$SECONDS
    timeout "$limit" "$@" 2>&1 | tee -a "$out/$name.jsonl"
    echo "== $name done in $((SECONDS - t0)) s"
}

step machine 60 "$py" -c "
import json, os, platform, jax, numba, numpy
print(json.dumps({'python': platform.python_version(), 'jax': jax.__version__,
  'numba': numba.__version__, 'numpy': numpy.__version__, 'cpus': os.cpu_count(),
  'devices': [str(d) for d in jax.devices()]}))"
step p1 180 "$py" point_sources.py --quick \
    --cases jax-batch,jax-batch-32,numba-batch,lenstronomy-EPL_NUMBA
for case in twinlens:jax jaxtronomy:jit; do
    step w5 75 "$py" likelihood.py --quick --case "W5:$case"
done
for case in twinlens:jax-batch jaxtronomy:jit-vmap; do  # batches of 64 and 1024
    step w5_batch 110 "$py" likelihood.py --case "W5:$case"
done
for w in W1 W2; do
    for case in twinlens:jax jaxtronomy:jit; do
        step w1_w2 45 "$py" deflections.py --quick --case "$w:$case"
    done
done
step gpu_w5 75 "$py" gpu_w5.py --max-batch 4096 --budget 30
step w5 75 "$py" likelihood.py --quick --case W5:twinlens:numba
# the SIE's angle halvings against jnp.arctan / arctanh in one batch program: is its arithmetic
# what the W5 batch pays for on the device?
step sie_forms 60 "$py" gpu_sie_forms.py
