#!/bin/bash
# Runs a command's binary on Mesa 26's lavapipe, which has cooperative matrices (8 x 8 x 8,
# f16 x f16 + f16/f32; Mesa 22.3 of Debian 12 has none), so that the tensor-core kernels run
# on a machine without a GPU:
#
#   bash tools/coop/lavapipe.sh target/release/deps/device_matmul-<hash> tensor_core
#   bash tools/coop/lavapipe.sh --setup     # download and unpack only
#
# The first call downloads Debian 13's packages (lavapipe from trixie-backports, glibc, LLVM 19
# and their libraries, about 60 MB) into .coop-lavapipe/ (ignored) and unpacks them there; the
# binary then runs under that glibc's loader, with only that lavapipe as its Vulkan driver.
# Binaries built on Debian 12 run under the newer glibc unchanged.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
root=${COOP_LAVAPIPE_ROOT:-$here/.coop-lavapipe}
lib=$root/usr/lib/x86_64-linux-gnu
if [ ! -e "$root/ready" ]; then
    mkdir -p "$root/apt/lists/partial" "$root/apt/cache/archives/partial" "$root/apt/parts" "$root/debs"
    cat > "$root/apt/parts/trixie.sources" <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie trixie-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    apt_opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$root/apt/parts" -o "Dir::State::Lists=$root/apt/lists" -o "Dir::Cache=$root/apt/cache" -o APT::Sandbox::User=root)
    apt-get "${apt_opts[@]}" update >&2
    (cd "$root/debs" && apt-get "${apt_opts[@]}" download mesa-vulkan-drivers/trixie-backports \
        libc6 libllvm19 libstdc++6 libgcc-s1 libffi8 libedit2 libz3-4 libxml2 libzstd1 zlib1g libtinfo6 libbsd0 libmd0 \
        libicu76 liblzma5 libexpat1 libdrm2 libdrm-amdgpu1 libxcb1 libx11-xcb1 libxcb-dri3-0 libxcb-present0 libxcb-randr0 \
        libxcb-shm0 libxcb-sync1 libxcb-xfixes0 libxshmfence1 libwayland-client0 libx11-6 libxau6 libxdmcp6 libelf1t64 \
        libdisplay-info2 libpng16-16t64 >&2)
    for deb in "$root"/debs/*.deb; do dpkg-deb -x "$deb" "$root"; done
    printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "%s", "api_version": "1.4.0"}}\n' "$lib/libvulkan_lvp.so" > "$root/lvp_icd.json"
    # Every library the driver needs must resolve (a newer Mesa may want others).
    missing=$(LD_TRACE_LOADED_OBJECTS=1 "$lib/ld-linux-x86-64.so.2" --library-path "$lib" "$lib/libvulkan_lvp.so" 2>&1 | grep "not found" || true)
    if [ -n "$missing" ]; then
        echo "the lavapipe of $root misses libraries: $missing" >&2
        exit 1
    fi
    touch "$root/ready"
fi
if [ "${1:-}" = --setup ]; then
    exit 0
fi
export VK_ICD_FILENAMES=$root/lvp_icd.json WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
exec "$lib/ld-linux-x86-64.so.2" --library-path "$lib" "$@"
