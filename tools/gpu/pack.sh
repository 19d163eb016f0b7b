#!/usr/bin/env bash
# Packs what a GPU machine needs to measure the crate, into `.gpu/` (ignored by git): the
# release main program, the device test binaries, the Vulkan loader's Debian packages (the GPU
# machine has an NVIDIA driver but may lack the loader) and the PyTorch peers from
# ../shared/tools/peers. Run here, from the repository root, then on the GPU machine (the
# device tool, with `.gpu` carried) `bash tools/gpu/run.sh`. docs/testing.md has the steps.
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
rm -rf .gpu && mkdir -p .gpu/bin .gpu/deb .gpu/peers
cargo build --release --bin strided-wgpu --example coop_probe
cp target/release/strided-wgpu target/release/examples/coop_probe .gpu/bin/
# The device suites, built with the release profile; their data files are read from the
# checkout (compiled-in CARGO_MANIFEST_DIR, which run.sh links to the checkout there).
tests=(graph device_conv2d device_matmul device_reduce device_pool conformance embedding)
cargo test --release --no-run --message-format=json $(printf -- '--test %s ' "${tests[@]}") 2>.gpu/build.log \
  | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["target"]["name"], m["executable"])' \
  | while read -r name exe; do cp "$exe" ".gpu/bin/$name"; done \
  || true # a suite that failed to build is named below, with cargo's messages (set -e would stop here silently)
for t in "${tests[@]}"; do
  [ -x ".gpu/bin/$t" ] || { echo "pack: no test binary $t (cargo's messages: .gpu/build.log)"; tail -20 .gpu/build.log; exit 1; }
done
# GPU_PACK_B=<path>: a second build of the main program (another revision, or the same with
# one constant changed), timed beside the first by run.sh.
if [ -n "${GPU_PACK_B:-}" ]; then cp "$GPU_PACK_B" .gpu/bin/strided-wgpu-b; fi
strip .gpu/bin/* 2>/dev/null || true
# Gzipped (run.sh unpacks them): eight stripped binaries were about 63 MiB (before device_pool), and the working tree
# that travels with them may hold 64 MiB in all; gzip made them about 25 (with device_pool, nine: `.gpu` held 29 MiB in all).
tar -C .gpu -czf .gpu/bin.tgz bin
rm -rf .gpu/bin
echo "$PWD" > .gpu/built_at
# What was built (the device gets the working tree, not .git): run.sh copies it into env.txt.
{ git rev-parse HEAD; echo "uncommitted files: $(git status --short | wc -l)"; date -u; } > .gpu/rev
# The Vulkan loader and EGL, as the device tool's README says to bring them.
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
mkdir -p /tmp/amd64/partial
apt-get $o update -qq >/dev/null
(cd .gpu/deb && apt-get $o download -qq libvulkan1 libegl1 libglvnd0 >/dev/null)
if [ -d ../shared/tools/peers ]; then cp ../shared/tools/peers/*.py .gpu/peers/; fi
cp tools/gpu/torch_mm_half.py .gpu/peers/
du -sh .gpu
