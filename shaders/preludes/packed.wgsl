// Elements of 1, 2 or 4 bytes packed in u32 words, for kernels that move any element size.
// Loads shift and mask; sub-word stores clear and set their bits with atomics, so that an
// invocation never writes a neighbour's bytes, on any adapter (no SHADER_F16 needed). The
// destination is `out`, stored through packed_store.wgsl (which every kernel that names this
// prelude names after it).

override SRC_BYTES: u32 = 4u;
override DST_BYTES: u32 = 4u;

@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<atomic<u32>>;

fn load(e: u32) -> u32 {
    if (SRC_BYTES == 4u) {
        return src[e];
    }
    if (SRC_BYTES == 2u) {
        return (src[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu;
    }
    return (src[e >> 2u] >> ((e & 3u) * 8u)) & 0xffu;
}

// Element e of the destination (DST_BYTES bytes) set to the low bits of v (packed_store.wgsl).
fn store(e: u32, v: u32) {
    store_packed(e, v, DST_BYTES);
}
