#!/usr/bin/env bash
# On a GPU machine, from the repository root: builds mirage-train-gpt against the CUDA LibTorch of
# this machine's Python, checks it on the GPU (resume, signal, fused AdamW, bf16) and compares its
# training throughput with the eager PyTorch twin of its step (eager_gpt.py), same model and batch.
#
#   bash training_jobs/bench/gpu_bench.sh
#   MODEL=124M BATCHES="16 32 64" STEPS=60  the throughput runs, each batch size in both of the
#                      trainer's GPU precisions (autocast; bf16 compute with fp32 master weights)
#                      and in the eager twin (the same two; pure bf16 without master weights
#                      at the largest batch, as an upper bound); the C++ log's 10-step
#                      windows after the first 20 steps are averaged
#   COMPILE=1          also time the eager twin under torch.compile (for reference)
#   CHECKS=0           skip the resume and signal checks (throughput only)
#   PRECISIONS="bf16"  the trainer's precisions timed (default: autocast bf16 on GPUs)
#   EAGER_PRECISIONS="bf16 pure-bf16"  the eager twin's (default: autocast bf16, and pure-bf16
#                      at the largest batch)
#   PROFILE=1          after each timed trainer run, profile 3 more steps (--profile) and the
#                      eager twin's steps the same way: device time per kernel, side by side
#   PEAK_TFLOPS=989.4  dense bf16 peak the MFU is taken against (H100/H200 SXM)
#   MIRAGE_DEPS_DEBS=DIR   Debian packages of the trainer's other dependencies (spdlog, fmt,
#                      CLI11, nlohmann-json, zlib, gloo headers) to unpack, where the machine lacks them
#   LOGS=DIR           logs and results.jsonl (default /tmp/mirage-gpu-bench)
#   OUT=DIR            where to leave a tarball of them as well, however the run ends
#   DEVICE=cpu         the same runs on CPUs (precisions fp32 and bf16), to try the script itself:
#                      DEVICE=cpu MODEL=tiny BATCHES=4 bash training_jobs/bench/gpu_bench.sh
set -uo pipefail
model=${MODEL:-124M}
batches=${BATCHES:-16 32 64}
steps=${STEPS:-60}
peak=${PEAK_TFLOPS:-989.4}
device=${DEVICE:-cuda}
if [ "$device" = cuda ]; then precisions="autocast bf16"; else precisions="fp32 bf16"; fi
precisions=${PRECISIONS:-$precisions}
eager_precisions=${EAGER_PRECISIONS:-autocast bf16}
profile=${PROFILE:-0}
out=${LOGS:-/tmp/mirage-gpu-bench}
build=${BUILD_DIR:-build-gpu}
py=${PYTHON:-python3}
mkdir -p "$out"
results=$out/results.jsonl
: >"$results"
say() { echo "== $*"; }
if [ -n "${OUT:-}" ]; then
  trap 'tar czf "$OUT/gpu-bench-logs.tgz" -C "$out" . 2>/dev/null' EXIT
fi

say machine
[ "$device" = cuda ] && nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm \
  --format=csv,noheader
$py -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
  "cxx11 abi", torch._C._GLIBCXX_USE_CXX11_ABI,
  torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU")'
echo "$(nproc) cores; compiler: $(c++ --version 2>&1 | head -1)"
cmake --version | head -1
torch_prefix=$($py -c 'import torch; print(torch.utils.cmake_prefix_path)')

say build
prefix=$torch_prefix
extra=()
if [ -n "${MIRAGE_DEPS_DEBS:-}" ]; then
  deps=/tmp/mirage-deps
  for f in "$MIRAGE_DEPS_DEBS"/*.deb; do dpkg -x "$f" "$deps"; done
  prefix="$deps/usr;$prefix"
  if [ ! -e /usr/include/zlib.h ]; then
    # The header from the package, the machine's own shared library (same API).
    zlib=$(ls /usr/lib/x86_64-linux-gnu/libz.so.1 /lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1)
    extra+=(-DZLIB_INCLUDE_DIR=$deps/usr/include -DZLIB_LIBRARY=$zlib)
  fi
fi
export PATH=/usr/local/cuda/bin:$PATH
t0=$(date +%s)
if ! cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMIRAGE_TRAINING_JOB_ONLY=ON \
    -DCMAKE_PREFIX_PATH="$prefix" "${extra[@]}" >"$out/configure.log" 2>&1; then
  tail -40 "$out/configure.log"
  exit 1
fi
grep -E "mirage:|CUDA|NCCL|cuDNN" "$out/configure.log" | head -20
if ! cmake --build "$build" --target mirage-train-gpt -j "$(nproc)" >"$out/build.log" 2>&1; then
  grep -m 12 -B 2 -A 8 -E "error|undefined reference" "$out/build.log"
  exit 1
fi
say "built in $(($(date +%s) - t0)) s"
bin=$build/training_jobs/mirage-train-gpt
# Which CUDA libraries each side loads: the trainer and Python must run the same cuBLAS and cuDNN
# for their kernels to be comparable.
if [ "$device" = cuda ]; then
  echo "trainer links:"
  ldd "$bin" | grep -E "cublas|cudnn|cudart|nccl|torch_cuda" | sed 's/^/  /'
  $py -c 'import torch
a = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16); (a @ a).sum().item()
torch.nn.functional.scaled_dot_product_attention(*(torch.randn(1, 2, 64, 64, device="cuda",
    dtype=torch.bfloat16) for _ in range(3)), is_causal=True).sum().item()
libs = sorted({l.split()[-1] for l in open("/proc/self/maps") if any(k in l for k in
    ("cublas", "cudnn", "cudart", "nccl"))})
print("python loads:"); [print("  " + l) for l in libs]'
fi

[ "${CHECKS:-1}" = 0 ] && precisions_checked="" || precisions_checked=$precisions
for precision in $precisions_checked; do
  say "check: tiny model, $precision, 20 steps straight vs 10 + 10 resumed, on $device"
  rm -rf /tmp/mg-a /tmp/mg-b /tmp/mg-a.jsonl /tmp/mg-b.jsonl
  tiny=(--device $device --precision $precision --steps 20 --log-every 1)
  $bin --checkpoint-dir /tmp/mg-a "${tiny[@]}" --metrics /tmp/mg-a.jsonl \
    >"$out/tiny-$precision-straight.log" 2>&1
  echo "straight exit $?"
  $bin --checkpoint-dir /tmp/mg-b "${tiny[@]}" --run-steps 10 --metrics /tmp/mg-b.jsonl \
    >"$out/tiny-$precision-first.log" 2>&1
  echo "first half exit $?"
  $bin --checkpoint-dir /tmp/mg-b "${tiny[@]}" --metrics /tmp/mg-b.jsonl \
    >"$out/tiny-$precision-second.log" 2>&1
  echo "second half exit $?"
  grep -h -o "AdamW [a-z-]*, precision [a-z0-9]*" "$out/tiny-$precision-straight.log" | head -1
  $py - <<'EOF2'
import json
a = [json.loads(l) for l in open("/tmp/mg-a.jsonl")]
b = [json.loads(l) for l in open("/tmp/mg-b.jsonl")]
la = {r["step"]: r["loss"] for r in a}; lb = {r["step"]: r["loss"] for r in b}
common = sorted(set(la) & set(lb))
diff = max(abs(la[s] - lb[s]) for s in common)
print(f"resume: {len(common)} steps compared, loss {la[common[0]]:.4f} -> {la[common[-1]]:.4f}, "
      f"largest difference straight vs resumed {diff:.2e}")
EOF2
done

if [ "${CHECKS:-1}" != 0 ]; then
say "check: SIGUSR1 mid-run on $model"
rm -rf /tmp/mg-sig
$bin --checkpoint-dir /tmp/mg-sig --model "$model" --device $device --steps 100000 --batch 8 \
  --log-every 5 --progress /tmp/mg-sig.json >"$out/signal.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  grep -q '"step": *1[0-9]' /tmp/mg-sig.json 2>/dev/null && break
  grep -q '"step":1[0-9]' /tmp/mg-sig.json 2>/dev/null && break
  sleep 0.1
done
s0=$(date +%s%N)
kill -USR1 $pid
wait $pid
rc=$?
echo "exit $rc, $(( ($(date +%s%N) - s0) / 1000000 )) ms after SIGUSR1"
tail -2 "$out/signal.log"
$bin --inspect /tmp/mg-sig 2>&1 | tail -3
fi

say "throughput: $model, one $device device"
# The trainer's own log: tokens/s and model TFLOP/s of each 10-step window after the first 20
# steps, and how long the host took to queue a step against how long it then waited for the GPU.
cpp_result() {  # batch precision log
  $py - "$1" "$2" "$3" "$model" "$peak" <<'EOF2'
import json, re, sys
b, precision, log, model = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
peak = float(sys.argv[5])
pat = re.compile(r"step (\d+) loss ([\d.]+) .* (\d+) tokens/s ([\d.e+-]+) model TFLOP/s "
                 r".*host ([\d.]+) ms, wait ([\d.]+) ms")
rows = [m.groups() for m in map(pat.search, open(log)) if m]
late = [r for r in rows if int(r[0]) > 20 and int(r[0]) % 10 == 0]
if not late:
    sys.exit(f"no throughput lines in {log}")
mean = lambda i: sum(float(r[i]) for r in late) / len(late)
tf = mean(3)  # the trainer's own count (GptConfig::model_flops_per_token)
print(json.dumps({"impl": f"mirage-train-gpt {precision}", "model": model, "batch": b,
                  "tokens_per_s": round(mean(2)), "model_tflops": round(tf, 1),
                  "mfu": round(tf / peak, 4), "loss": float(late[-1][1]),
                  "host_ms": round(mean(4), 1), "wait_ms": round(mean(5), 1)}))
EOF2
}
for b in $batches; do
  for precision in $precisions; do
    rm -rf /tmp/mg-tp
    log=$out/cpp-$precision-b$b.log
    # With PROFILE=1, three steps after the timed windows go through the profiler.
    prof=()
    [ "$profile" = 1 ] && prof=(--profile "$out/cpp-$precision-b$b.trace.json"
      --profile-after $((steps + 1)) --profile-steps 3)
    $bin --checkpoint-dir /tmp/mg-tp --model "$model" --device $device --steps 100000 --batch "$b" \
      --precision $precision --run-steps $((steps + 5)) --log-every 10 --checkpoint-minutes 0 \
      "${prof[@]}" >"$log" 2>&1 || echo "c++ $precision batch $b failed: $(tail -1 "$log")"
    cpp_result "$b" "$precision" "$log" | tee -a "$results"
    [ "$profile" = 1 ] && grep -o "profile: .*" "$log" | head -14
  done
  for precision in $eager_precisions; do
    eprof=()
    [ "$profile" = 1 ] && [ "$device" = cuda ] && eprof=(--profile 3)
    PYTHONUNBUFFERED=1 $py training_jobs/bench/eager_gpt.py --model "$model" --batch "$b" \
      --steps $((steps - 20)) --warmup-steps 20 --peak-tflops "$peak" --precision $precision \
      --device $device "${eprof[@]}" \
      2>"$out/eager-$precision-b$b.log" | tee -a "$results"
    [ "$profile" = 1 ] && grep -v -i warn "$out/eager-$precision-b$b.log" | head -20
  done
done
if [ -z "${EAGER_PRECISIONS:-}" ]; then
  PYTHONUNBUFFERED=1 $py training_jobs/bench/eager_gpt.py --model "$model" --batch "$b" \
    --steps $((steps - 20)) --warmup-steps 20 --peak-tflops "$peak" --precision pure-bf16 \
    2>"$out/eager-pure-bf16-b$b.log" | tee -a "$results"
fi
# Where the eager step's GPU time goes, by kernel kind (the C++ step runs the same kernels).
b=$(echo $batches | awk '{print $NF}')
if [ "$device" = cuda ] && [ "$profile" != 1 ]; then
  $py training_jobs/bench/eager_gpt.py --model "$model" --batch "$b" --steps 5 --warmup-steps 5 \
    --profile 3 --peak-tflops "$peak" >/dev/null 2>"$out/profile.log"
  grep -v Warning "$out/profile.log" | grep -v _warn_once | head -24
fi
if [ "${COMPILE:-0}" = 1 ]; then
  PYTHONUNBUFFERED=1 $py training_jobs/bench/eager_gpt.py --model "$model" --batch "$b" \
    --steps $((steps - 20)) --warmup-steps 20 --compile --peak-tflops "$peak" \
    2>"$out/compile.log" | tee -a "$results"
fi

say "results (MFU against $peak TFLOP/s)"
$py - "$results" <<'EOF'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    host = f'  host {r["host_ms"]} / wait {r["wait_ms"]} ms' if "host_ms" in r else ""
    print(f'{r["impl"]:34s} {r["model"]:5s} batch {r["batch"]:3d}  {r["tokens_per_s"]:>9,d} tokens/s'
          f'  {r["model_tflops"]:6.1f} TFLOP/s  MFU {100 * r["mfu"]:5.1f}%  loss {r["loss"]:.3f}{host}')
EOF
