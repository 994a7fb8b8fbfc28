#!/usr/bin/env bash
# check.sh BUNDLE: gomase's GPU check, one bounded command for a machine with an NVIDIA GPU, its driver
# and JAX's CUDA PJRT plugin. BUNDLE is what `make gpu-bundle` wrote (binaries xz-compressed or plain).
#
#   bash kernel/gpu/check.sh bin/gpu-bundle          # DEADLINE=480 (seconds) by default
#   STEPS='cuda_device|sdpa_.*' bash kernel/gpu/check.sh bin/gpu-bundle   # only the steps the regular
#                                                     # expression names (env always runs)
#
# Correctness comes before speed: the machine and plugin, the CUDA kernels through the driver alone, the
# kernels as custom calls inside XLA graphs, the trainer tests, then the figures (training speed of both
# trainers, device memory over 200 large calls, attention with the kernels on and off, SST-2 end to end,
# then whatever time allows). Every step is skipped when fewer than its minimum seconds are left before
# the deadline, and is stopped at its limit (cut to what is left) with SIGQUIT, so a Go binary prints
# every goroutine's stack, where it hung; SIGKILL follows 10 s later. When the driver-level kernel test
# faults (an illegal address poisons the CUDA context of the process), later steps run with
# GOMASE_CUDA_KERNELS=off.
#
# Results go to $OUT when set (else BUNDLE/results), at most four files, each written as the check goes:
#   summary.txt  one block per step (status, seconds, the lines that matter), the environment first
#   tails.txt    the last lines of every step's output and errors
#   gpu.csv      GPU memory and utilisation sampled every 500 ms
#   logs.tgz     every step's full output, at the end
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-bin/gpu-bundle}" 2>/dev/null && pwd) || { echo "check.sh: no bundle folder ${1:-bin/gpu-bundle} (make gpu-bundle writes it)" >&2; exit 2; }
DEADLINE=${DEADLINE:-480}
STEPS=${STEPS:-}
if [ -n "$STEPS" ]; then
	[[ x =~ ^($STEPS)$ ]]
	(($? == 2)) && { echo "check.sh: STEPS must be an extended regular expression over step names (got '$STEPS')" >&2; exit 2; }
fi
case $DEADLINE in '' | *[!0-9]*) echo "check.sh: DEADLINE must be a whole number of seconds (got '$DEADLINE')" >&2; exit 2 ;; esac
T0=$SECONDS
OUT=${OUT:-$B/results}
mkdir -p "$OUT" || exit 2
W=$(mktemp -d) || exit 2
S=$OUT/summary.txt TAILS=$OUT/tails.txt
: >"$S"
: >"$TAILS"
ulimit -c 0
say() { printf '%s\n' "$*" | tee -a "$S"; }

cd "$B" || exit 2
for f in *.xz; do [ -e "$f" ] && { xz -d -f "$f" || say "check.sh: could not decompress $f"; }; done
for f in mase cuda.test backend.test train.test; do
	[ -f "$f" ] || say "check.sh: $f is missing from the bundle"
	[ -f "$f" ] && chmod +x "$f"
done
export GOMASE_DATA_DIR=$B/data
say "gomase GPU check, bundle $B, deadline ${DEADLINE}s${STEPS:+, steps $STEPS}, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"

MON=
if command -v nvidia-smi >/dev/null 2>&1; then
	nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv,noheader -lms 500 >"$OUT/gpu.csv" 2>/dev/null &
	MON=$!
fi
finish() {
	[ -n "$MON" ] && kill "$MON" 2>/dev/null
	tar czf "$OUT/logs.tgz" -C "$W" . 2>/dev/null
	say "done at t=$((SECONDS - T0))s; every step's full output is in logs.tgz"
	rm -rf "$W"
}
trap finish EXIT
trap 'say "check.sh: stopped by a signal at t=$((SECONDS - T0))s"; exit 130' INT TERM

# step NAME MIN LIMIT CMD...: runs CMD with its output in the work folder, or skips it when fewer than MIN
# seconds are left; LIMIT is cut to what is left. Returns CMD's status (99: skipped).
step() {
	local name=$1 min=$2 limit=$3
	shift 3
	if [ -n "$STEPS" ] && [ "$name" != env ] && ! [[ $name =~ ^($STEPS)$ ]]; then
		return 99
	fi
	local t=$((SECONDS - T0))
	local left=$((DEADLINE - t))
	if ((left < min)); then
		say "SKIP $name at t=${t}s: ${left}s left, it needs ${min}s"
		return 99
	fi
	((limit > left)) && limit=$left
	local start=$SECONDS rc
	timeout -s QUIT -k 10 "$limit" "$@" >"$W/$name.out" 2>"$W/$name.err" </dev/null
	rc=$?
	local verdict=ok
	case $rc in 0) ;; 124 | 131 | 137) verdict="CUT at its ${limit}s limit (stacks in tails.txt)" ;; *) verdict="FAILED" ;; esac
	say "=== $name: rc=$rc $verdict, $((SECONDS - start))s (started t=${t}s)"
	say "    $*"
	grep -hE '^(--- (FAIL|SKIP)|FAIL|ok |PASS$|Benchmark|panic:|SIGQUIT|fatal error)|CUDA kernels|error|Error|max abs|max_abs|speedup|samples|per_s|_ms"|GB/s|ms/call|largest|live|peak|compiles|accuracy|_test\.go:[0-9]+:' \
		"$W/$name.out" "$W/$name.err" 2>/dev/null | grep -vE '^[IWE][0-9]{4} ' | cut -c1-300 | head -n 40 | sed 's/^/    /' >>"$S"
	if ((rc != 0)); then # what the command said last
		grep -vE '^[IWE][0-9]{4} ' "$W/$name.err" 2>/dev/null | grep -v '^\s*$' | tail -n 3 | cut -c1-400 | sed 's/^/    stderr: /' >>"$S"
	fi
	{
		echo "##### $name rc=$rc: $*"
		tail -n 120 "$W/$name.out"
		echo "##### $name stderr"
		if grep -q '^SIGQUIT' "$W/$name.err"; then # the lines before the dump, then the dump's start: the stacks
			sed '/^SIGQUIT/,$d' "$W/$name.err" | tail -n 40
			sed -n '/^SIGQUIT/,$p' "$W/$name.err" | head -n 200
		else
			tail -n 60 "$W/$name.err"
		fi
	} >>"$TAILS"
	return $rc
}

# faulted NAME: the step left a CUDA context no fallback survives, or crashed or hung.
faulted() {
	grep -qE 'ILLEGAL_ADDRESS|illegal (memory|address)|unspecified launch failure|CUDA_ERROR_LAUNCH|SIGSEGV|SIGABRT|SIGQUIT' "$W/$1.out" "$W/$1.err" 2>/dev/null
}
kernels_off() {
	export GOMASE_CUDA_KERNELS=off
	say "GOMASE_CUDA_KERNELS=off from here on: $1"
}

# 0. The machine, the driver, the plugin and what it offers (the plugin found here is the one used).
PY=python3
for p in /opt/torch/.venv/bin/python3 "${VIRTUAL_ENV:-/nonexistent}/bin/python3"; do [ -x "$p" ] && PY=$p && break; done
step env 0 40 bash -c "nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader; nvidia-smi | sed -n 3p; uname -srm; nproc; $PY '$HERE/pjrt_env.py' \${GOMASE_CUDA_PLUGIN:-}; ls -l '$B'"
sed 's/^/    /' "$W/env.out" >>"$S"
plugin=$(sed -n 's/^plugin: \(\/.*\.so\)$/\1/p' "$W/env.out" | head -n 1)
if [ -z "${GOMASE_CUDA_PLUGIN:-}" ] && [ -n "$plugin" ]; then
	export GOMASE_CUDA_PLUGIN=$plugin
	say "GOMASE_CUDA_PLUGIN=$plugin"
fi

# 1. The kernels through the driver alone, in a process of their own: MXINT8 bit-exact, attention
#    against float64, then their device-event timings.
step cuda_device 20 100 ./cuda.test -test.v -test.timeout 95s -test.run Device -test.bench Device -test.benchtime 20x
faulted cuda_device && kernels_off "the driver-level kernel test faulted"

# 2. Registration, the probes and the custom calls inside XLA graphs.
if [ "${GOMASE_CUDA_KERNELS:-}" != off ]; then
	step kernels_xla 40 120 ./backend.test -test.v -test.timeout 115s -test.run CUDAKernels
	faulted kernels_xla && kernels_off "the custom calls faulted inside XLA"
fi

# 3. The graph trainer against the fused one on the device, and buffers flat over 100 steps.
step trainer_tests 40 150 env GOMLX_BACKEND=xla:cuda,notf32 ./train.test -test.v -test.timeout 145s -test.run 'TestGraphTrainerMatchesFused|TestTrainingLoopReleasesBuffers'

# 4. Training speed, bert-tiny b8x128: the graph trainer, then the fused one, in this same call.
step train_graph 30 90 env GOMLX_BACKEND=xla:cuda,notf32 GOMASE_TRAINER=graph ./train.test -test.run NONE -test.timeout 85s -test.bench 'BertTinyTrainStep$|BertTinyTrain$' -test.benchtime 300x
step train_fused 20 60 env GOMLX_BACKEND=xla:cuda,notf32 GOMASE_TRAINER=fused ./train.test -test.run NONE -test.timeout 55s -test.bench 'BertTinyTrain$' -test.benchtime 30x

# 5. Device memory over 200 forward calls at b64x512 (out of memory at call 61 before the memory discipline).
step mem_b64x512 40 100 ./mase bench compile --backend xla:cuda --batch 64 --seq 512 --iters 5,50,200 --json

# 6. Attention at [32,8,128,64] float32 with a padding mask: gomase's kernel, then the GoMLX graph.
step sdpa_f32 15 45 ./mase bench sdpa --backend xla:cuda,notf32 --dtype float32 --mask --loop 50 --reps 11 --json
step sdpa_f32_off 15 45 env GOMASE_CUDA_KERNELS=off ./mase bench sdpa --backend xla:cuda,notf32 --dtype float32 --mask --loop 50 --reps 11 --json

# 7. End to end: SST-2, 2,000 examples at 128 tokens, the graph trainer, evaluation on the device.
step train_sst2 40 120 env GOMLX_BACKEND=xla:cuda ./mase train --dataset sst2 --limit 2000 --max-len 128 --quiet --json

# 8. As time allows.
step mxint8_graph 15 45 ./mase bench mxint8 --backend xla:cuda --values 67108864 --loop 20 --reps 7 --json
step sdpa_f16 15 45 ./mase bench sdpa --backend xla:cuda --dtype float16 --loop 50 --reps 11 --json
step sdpa_f16_mask 15 45 ./mase bench sdpa --backend xla:cuda --dtype float16 --mask --loop 50 --reps 11 --json
# The same attentions with XLA's autotuning named at level 4, whatever XLA_FLAGS the machine sets (the steps
# above autotune too unless it turns autotuning off; docs/GPU.md).
step sdpa_f32_tuned 15 45 env XLA_FLAGS=--xla_gpu_autotune_level=4 ./mase bench sdpa --backend xla:cuda,notf32 --dtype float32 --mask --loop 50 --reps 11 --json
step sdpa_f16_mask_tuned 15 45 env XLA_FLAGS=--xla_gpu_autotune_level=4 ./mase bench sdpa --backend xla:cuda --dtype float16 --mask --loop 50 --reps 11 --json
step packed_kernel 20 60 ./mase bench compile --backend xla:cuda --mxint8 32 --json
step packed_gomlx 20 60 env GOMASE_CUDA_KERNELS=off ./mase bench compile --backend xla:cuda --mxint8 32 --json
step compile_b8x128 20 60 ./mase bench compile --backend xla:cuda --json
# The profiler on XLA: the timeline of compiled bert-tiny and the optimised HLO of what XLA compiled.
step profile_xla 15 45 ./mase profile --backend xla:cuda --mode compiled --runs 20 --xla-dump "$W/hlo" --top 5
step profile_xla_eager 15 60 ./mase profile --backend xla:cuda --mode eager --runs 5 --top 5
if [ -d data/imdb ]; then
	step train_imdb 200 400 env GOMLX_BACKEND=xla:cuda ./mase train --dataset imdb --group-by-length --quiet --json
	# Diagnostics (name them in STEPS): the same epoch without TF32 matmuls, and with the fused trainer.
	if [ -n "$STEPS" ]; then
		step train_imdb_notf32 200 400 env GOMLX_BACKEND=xla:cuda,notf32 ./mase train --dataset imdb --group-by-length --quiet --json
		step train_imdb_fused 200 400 env GOMLX_BACKEND=xla:cuda ./mase train --dataset imdb --group-by-length --trainer fused --quiet --json
	fi
fi
if [ -f gpu_peer.py ]; then
	step torch_peer 60 200 env PYTHONUNBUFFERED=1 "$PY" gpu_peer.py
fi
exit 0
