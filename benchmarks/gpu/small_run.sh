#!/usr/bin/env bash
# One GPU session's run of chapters at SCALE = "small" (issue 24), as a single device command:
#   bash benchmarks/gpu/small_run.sh DEADLINE_S JOBS OUTDIR CHAPTER...
# Installs the carried wheels (.whl/: Jupyter, ipywidgets, bertviz, ...; the device's Python has
# torch and transformers), shares the GPU between the JOBS notebooks through CUDA MPS, samples
# nvidia-smi every 5 s, and runs benchmarks/chapter_times.py --scale small with --deadline so that
# everything ends, and its JSON is written, before the device command's limit. Writes OUTDIR/small.json,
# OUTDIR/log.txt and OUTDIR/gpu_util.csv; merge the JSON into benchmarks/chapter_times_small.json here
# (chapter_times.py --merge reads it; see benchmarks/README.md).
set -u
deadline=$1 jobs=$2 out=$3
shift 3
mkdir -p "$out"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD" PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MPLBACKEND=Agg
python3 -c "import torch, nbclient, ipykernel, ipywidgets, bertviz, ptlm_lite; print('torch', torch.__version__, torch.cuda.get_device_name(0))" || exit 1
mps=0
if [ "$jobs" -gt 1 ] && command -v nvidia-cuda-mps-control >/dev/null; then
  nvidia-cuda-mps-control -d && mps=1
fi
echo "MPS: $mps" | tee "$out/log.txt"
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -l 5 >"$out/gpu_util.csv" 2>&1 &
smi=$!
python3 benchmarks/chapter_times.py --scale small --jobs "$jobs" --deadline "$deadline" \
  --no-page --json "$out/small.json" "$@" 2>&1 | tee -a "$out/log.txt"
kill $smi 2>/dev/null
[ $mps = 1 ] && echo quit | nvidia-cuda-mps-control
exit 0
