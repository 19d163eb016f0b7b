#!/usr/bin/env bash
# Runs on a GPU machine, in the checkout the device tool copied there, with `.gpu/` (made by
# tools/gpu/pack.sh) carried: the Vulkan loader and the binaries unpacked, then in one go, within
# GPU_RUN_BUDGET seconds (default 330; a step that would pass it is cut short and says so):
#   1. the crate's `bench --only calls` (the peer script's rows by its rule) and `--only resnet`,
#   2. the PyTorch peers (torch_cuda_bench.py, torch_resnet_variants.py),
#   3. `bench --only resnet --profile` and the parts in GPU_BENCH_PARTS (default: conv matmul
#      reduce host),
#   4. the device test binaries (lavapipe's suites, on the GPU's Vulkan adapter),
#   5. the cooperative-matrix probe (examples/coop_probe.rs, into bench.jsonl) and PyTorch's
#      f16 and f32 mm beside it (tools/gpu/torch_mm_half.py, into torch.jsonl).
# GPU_STEPS names the steps to run (default: calls resnet peers profile parts tests coop).
# Results in $OUT (at most 8 files, the device tool's limit, which these reach: a new output
# goes into one of them): env.txt, calls.jsonl, bench.jsonl, torch.jsonl, torch_resnet.txt,
# tests.log, and for a second build calls_b.jsonl, bench_b.jsonl.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/gpu-out}"
mkdir -p "$OUT"
end=$((SECONDS + ${GPU_RUN_BUDGET:-330}))
# `step CAP FILE CMD...`: runs CMD for at most CAP seconds or what is left of the budget,
# appending its output to FILE.
step() {
  local cap=$1 file=$2
  shift 2
  local left=$((end - SECONDS))
  if [ "$left" -lt 5 ]; then echo "!!! skipped (budget spent): $*" | tee -a "$OUT/$file" >> "$OUT/env.txt"; return; fi
  [ "$cap" -gt "$left" ] && cap=$left
  local t0=$SECONDS
  # Killed 10 s after the cap where SIGTERM does not end it (a process stuck in a GPU wait).
  timeout -k 10 "$cap" "$@" >> "$OUT/$file" 2>&1
  local rc=$?
  echo "### $* : rc=$rc, $((SECONDS - t0)) s" >> "$OUT/env.txt"
}
# The loader into the system (GPU_LOADER=0 leaves the system as it is: a rehearsal on a
# machine that has one).
if [ "${GPU_LOADER:-1}" = 1 ]; then
  for f in .gpu/deb/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
# The test binaries read tests/data through the path they were built at.
built_at="$(cat .gpu/built_at 2>/dev/null || echo "$PWD")"
if [ "$built_at" != "$PWD" ] && [ ! -e "$built_at" ]; then mkdir -p "$(dirname "$built_at")" && ln -s "$PWD" "$built_at"; fi
export WGPU_BACKEND=vulkan STRIDED_WGPU_REQUIRE_ADAPTER=1 XDG_RUNTIME_DIR="$(mktemp -d)" PYTHONUNBUFFERED=1
export STRIDED_WGPU_BENCH_MIN_S="${STRIDED_WGPU_BENCH_MIN_S:-0.2}"
{ date -u; echo "built from:"; cat .gpu/rev 2>/dev/null || echo "!!! no .gpu/rev"; nvidia-smi -L 2>&1; nproc
  echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-} GPU_STEPS=${GPU_STEPS:-} GPU_B_ENV=${GPU_B_ENV-(default)} GPU_RUN_BUDGET=${GPU_RUN_BUDGET:-330}"
  ldconfig -p | grep -E 'libvulkan|libEGL|GLX_nvidia|GLdispatch' || echo "!!! no Vulkan loader in ldconfig"; } > "$OUT/env.txt"
# The binaries travel gzipped (pack.sh).
if [ -f .gpu/bin.tgz ]; then
  tar -C .gpu -xzf .gpu/bin.tgz || echo "!!! unpacking .gpu/bin.tgz failed" >> "$OUT/env.txt"
fi
bin=.gpu/bin/strided-wgpu
if [ ! -x "$bin" ]; then echo "!!! no $bin: was .gpu carried (run with carry [\".gpu\"])?" | tee -a "$OUT/env.txt"; exit 1; fi
# A second build of the main program (`.gpu/bin/strided-wgpu-b`, optional: pack.sh copies the
# binary GPU_PACK_B names) is timed beside the first, in turns, into calls_b.jsonl and
# bench_b.jsonl.
# Or (GPU_B_ENV="VAR=value ...") the same build under other environment variables, e.g.
# GPU_B_ENV=STRIDED_WGPU_COOPERATIVE_MATRIX=0 for a device without the tensor-core feature.
# Unset, it is STRIDED_WGPU_GEMM_TILES=wide (the GEMM engine's wide tiles as the defaults,
# which no GPU has timed yet); GPU_B_ENV= (empty) runs no second build.
GPU_B_ENV="${GPU_B_ENV-STRIDED_WGPU_GEMM_TILES=wide}"
alt=()
if [ -x .gpu/bin/strided-wgpu-b ]; then alt=(.gpu/bin/strided-wgpu-b); elif [ -n "${GPU_B_ENV}" ]; then alt=(env ${GPU_B_ENV} "$bin"); fi
steps=" ${GPU_STEPS:-calls resnet peers profile parts tests coop} "
want() { [[ "$steps" == *" $1 "* ]]; }
want calls && step 120 calls.jsonl $bin bench --only calls --json
want calls && [ ${#alt[@]} -gt 0 ] && step 120 calls_b.jsonl "${alt[@]}" bench --only calls --json
want resnet && step 90 bench.jsonl $bin bench --only resnet --json
want resnet && [ ${#alt[@]} -gt 0 ] && step 90 bench_b.jsonl "${alt[@]}" bench --only resnet --json
if want peers && [ -f .gpu/peers/torch_cuda_bench.py ]; then
  step 120 torch.jsonl python3 .gpu/peers/torch_cuda_bench.py --min-seconds "$STRIDED_WGPU_BENCH_MIN_S"
  step 60 torch_resnet.txt python3 .gpu/peers/torch_resnet_variants.py
fi
want profile && step 40 bench.jsonl $bin bench --only resnet --profile --json
# The second build times only GPU_B_PARTS (default conv matmul: the parts the default
# GPU_B_ENV, the GEMM's wide tiles, changes).
want parts && for part in ${GPU_BENCH_PARTS:-conv matmul reduce host}; do
  step 90 bench.jsonl $bin bench --only "$part" --json
  if [ ${#alt[@]} -gt 0 ] && [[ " ${GPU_B_PARTS:-conv matmul} " == *" $part "* ]]; then step 90 bench_b.jsonl "${alt[@]}" bench --only "$part" --json; fi
done
want tests && for t in ${GPU_TESTS:-graph device_conv2d device_matmul device_reduce device_pool conformance embedding}; do
  [ -x ".gpu/bin/$t" ] || { echo "!!! missing test binary $t" | tee -a "$OUT/tests.log" >> "$OUT/env.txt"; continue; }
  echo "=== $t" >> "$OUT/tests.log"
  step 120 tests.log ".gpu/bin/$t"
done
# Last: the probe's seconds of tensor-core work leave the GPU's clocks lowered for a while
# (an H200 ran the same kernel at 110 TFLOP/s first and 55 some seconds on).
if want coop && [ -x .gpu/bin/coop_probe ]; then
  step 60 bench.jsonl .gpu/bin/coop_probe
  [ -f .gpu/peers/torch_mm_half.py ] && step 60 torch.jsonl python3 .gpu/peers/torch_mm_half.py
fi
# The tool returns the output's tail: every step's exit status and time.
ls -la "$OUT"
cat "$OUT/env.txt"
