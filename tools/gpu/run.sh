#!/usr/bin/env bash
# Runs on a GPU machine, in the checkout the device tool copied there, with `.gpu/` (made by
# tools/gpu/pack.sh) carried: the Vulkan loader unpacked, the device suites (lavapipe's
# tests, on the GPU's Vulkan adapter), then the bench parts and the PyTorch peers in one go.
# Results go to $OUT (at most 8 files): tests.log, bench.jsonl, profile.jsonl, torch.jsonl,
# torch_resnet.txt, env.txt. `GPU_BENCH_PARTS` picks the bench parts (default: host resnet
# conv matmul reduce).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/gpu-out}"
mkdir -p "$OUT"
for f in .gpu/deb/*.deb; do dpkg -x "$f" /; done
ldconfig
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
# The test binaries read tests/data through the path they were built at.
built_at="$(cat .gpu/built_at)"
if [ "$built_at" != "$PWD" ] && [ ! -e "$built_at" ]; then mkdir -p "$(dirname "$built_at")" && ln -s "$PWD" "$built_at"; fi
export WGPU_BACKEND=vulkan STRIDED_WGPU_REQUIRE_ADAPTER=1 XDG_RUNTIME_DIR="$(mktemp -d)" PYTHONUNBUFFERED=1
{ nvidia-smi -L 2>&1; .gpu/bin/strided-wgpu bench --only host 2>&1 | head -3; } > "$OUT/env.txt"
{
  for t in .gpu/bin/*; do
    case "$(basename "$t")" in strided-wgpu) continue ;; esac
    echo "=== $(basename "$t")"
    timeout 300 "$t" 2>&1 | grep -E "test result|FAILED|panicked|passed, |failed" || echo "!!! $(basename "$t") exited $?"
  done
} > "$OUT/tests.log" 2>&1
for part in ${GPU_BENCH_PARTS:-host resnet conv matmul reduce}; do
  timeout 240 .gpu/bin/strided-wgpu bench --only "$part" --json >> "$OUT/bench.jsonl" 2>&1 || echo "!!! bench $part exited $?" >> "$OUT/bench.jsonl"
done
timeout 120 .gpu/bin/strided-wgpu bench --only resnet --profile --json > "$OUT/profile.jsonl" 2>&1
if [ -f .gpu/peers/torch_cuda_bench.py ]; then
  timeout 240 python3 .gpu/peers/torch_cuda_bench.py > "$OUT/torch.jsonl" 2>&1
  timeout 240 python3 .gpu/peers/torch_resnet_variants.py > "$OUT/torch_resnet.txt" 2>&1
fi
ls -la "$OUT"
