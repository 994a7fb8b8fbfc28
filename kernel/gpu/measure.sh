#!/usr/bin/env bash
# Measures gomase on a GPU machine, next to PyTorch in the same sitting: the figures of
# docs/GPU.md and docs/BENCHMARKS.md. `make gpu-bundle` builds bin/gpu-bundle/ (this script,
# bin/mase and the test binaries, xz-compressed, the data the commands read and the PyTorch
# peer script when ../shared/bench is there); copy that folder to a machine with an NVIDIA
# driver and JAX's CUDA plugin and run:
#
#   bash bin/gpu-bundle/measure.sh [quick|all]     # results under $OUT (default bin/gpu-bundle/results)
#
# quick: the memory check (200 forward calls at b64×512), the training steps and the
# compiled-vs-eager benchmark; all (the default) adds one full IMDb epoch with its two
# evaluations on all 25,000 test reviews, and the PyTorch peer.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
mode=${1:-all}
OUT=${OUT:-$here/results}
mkdir -p "$OUT"
for f in *.xz; do [ -e "$f" ] && xz -d -f "$f"; done
chmod +x mase ./*.test 2>/dev/null
export GOMASE_DATA_DIR=$here/data
nvidia-smi -L || { echo "measure.sh: no NVIDIA GPU (nvidia-smi failed)"; exit 1; }

# run NAME TIMEOUT CMD...: output to $OUT/NAME.out, stderr to $OUT/NAME.err, the tail shown.
run() {
	local name=$1 limit=$2; shift 2
	echo "=== $name: $*"
	timeout "$limit" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
	echo "rc=$?"
	tail -n 3 "$OUT/$name.err"
	tail -c 1200 "$OUT/$name.out"
	echo
}
# sampled NAME TIMEOUT CMD...: run, with the GPU's memory and utilisation sampled every 200 ms.
sampled() {
	local name=$1
	nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader,nounits -lms 200 >"$OUT/$name.gpu" &
	local mon=$!
	run "$@"
	kill $mon 2>/dev/null
	awk -F', *' '{ if ($1 > m) m = $1; u += $2; n++ } END { printf "%s: device memory peak %d MiB, mean utilisation %.0f%% over %d samples\n", FILENAME, m, u / n, n }' "$OUT/$name.gpu"
}

# Device memory: 200 compiled and eager forward calls of bert-tiny at b64×512 (OOM at call 61 before).
sampled compile_b64x512 600 ./mase bench compile --backend xla:cuda --batch 64 --seq 512 --iters 5,50,200 --json
sampled compile_b8x128 300 ./mase bench compile --backend xla:cuda --json
# The MXINT8-packed model (Linear layers, group 32): with gomase's CUDA kernel called from the XLA
# graph (a custom call), and with the GoMLX dequantisation graph instead (GOMASE_CUDA_KERNELS=off).
run packed_kernel 300 ./mase bench compile --backend xla:cuda --mxint8 32 --json
run packed_gomlx 300 env GOMASE_CUDA_KERNELS=off ./mase bench compile --backend xla:cuda --mxint8 32 --json
# Lab 4's kernels as GoMLX graphs, each repeated inside one executable (the per-call dispatch left
# out; its floor is reported beside): naive vs fused attention in fp16 and fp32, and the MXINT8
# dequantisation at 64 Mi values next to an elementwise pass over the same bytes.
run sdpa_fp16 300 ./mase bench sdpa --backend xla:cuda --dtype float16 --loop 100 --reps 21 --json
run sdpa_fp32 300 ./mase bench sdpa --backend xla:cuda --dtype float32 --loop 100 --reps 21 --json
run sdpa_fp16_mask 300 ./mase bench sdpa --backend xla:cuda --dtype float16 --mask --loop 100 --reps 21 --json
run sdpa_fp32_mask 300 ./mase bench sdpa --backend xla:cuda --dtype float32 --mask --loop 100 --reps 21 --json
run sdpa_fp32_nokernel 300 env GOMASE_CUDA_KERNELS=off ./mase bench sdpa --backend xla:cuda --dtype float32 --loop 100 --reps 21 --json
run mxint8_64mi 300 ./mase bench mxint8 --backend xla:cuda --values 67108864 --loop 20 --reps 11 --json
# gomase's CUDA kernels through the driver API, timed with device events: MXINT8 (bit-exact for group
# sizes 8–512, bandwidth at 64 Mi values) and flash attention (TestDeviceSDPA against the float64
# reference, BenchmarkDeviceSDPA's ms per call at [32, 8, 128, 64]).
run cuda_mxint8 300 ./cuda.test -test.v -test.run Device -test.bench Device -test.benchtime 50x
# The same kernels called from XLA graphs (custom calls): MXINT8 bit-exact through the packed-embedding
# lookup, flash attention against float64, packed bert-tiny with and without the kernel.
run cuda_graphs 300 ./backend.test -test.v -test.run CUDAKernels
# Training step, b8×128: the graph trainer (the XLA default) and the fused host trainer.
sampled train_graph 300 env GOMLX_BACKEND=xla:cuda,notf32 GOMASE_TRAINER=graph ./train.test -test.run NONE -test.bench 'BertTinyTrain$' -test.benchtime 500x
sampled train_fused 300 env GOMLX_BACKEND=xla:cuda,notf32 GOMASE_TRAINER=fused ./train.test -test.run NONE -test.bench 'BertTinyTrain$' -test.benchtime 50x
sampled trainstep 300 env GOMLX_BACKEND=xla:cuda,notf32 ./train.test -test.run NONE -test.bench 'BertTinyTrainStep$' -test.benchtime 200x
sampled train_sst2 300 env GOMLX_BACKEND=xla:cuda ./mase train --dataset sst2 --limit 2000 --max-len 128 --quiet --json
if [ "$mode" = all ]; then
	# One full IMDb epoch at 512 tokens and both evaluations on all 25,000 test reviews.
	sampled train_imdb 1800 env GOMLX_BACKEND=xla:cuda ./mase train --dataset imdb --group-by-length --quiet --json
	[ -f gpu_peer.py ] && run torch_peer 600 env PYTHONUNBUFFERED=1 python3 gpu_peer.py
fi
echo "results: $OUT"
