// Elements of 1, 2 or 4 bytes packed in u32 words, for kernels that move any element size.
// Loads shift and mask; sub-word stores clear and set their bits with atomics, so that an
// invocation never writes a neighbour's bytes, on any adapter (no SHADER_F16 needed).

override SRC_BYTES: u32 = 4u;
override DST_BYTES: u32 = 4u;

@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<atomic<u32>>;

fn load(e: u32) -> u32 {
    if (SRC_BYTES == 4u) {
        return src[e];
    }
    if (SRC_BYTES == 2u) {
        return (src[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu;
    }
    return (src[e >> 2u] >> ((e & 3u) * 8u)) & 0xffu;
}

fn store(e: u32, v: u32) {
    if (DST_BYTES == 4u) {
        atomicStore(&dst[e], v);
        return;
    }
    var w: u32;
    var shift: u32;
    var mask: u32;
    if (DST_BYTES == 2u) {
        w = e >> 1u;
        shift = (e & 1u) * 16u;
        mask = 0xffffu;
    } else {
        w = e >> 2u;
        shift = (e & 3u) * 8u;
        mask = 0xffu;
    }
    atomicAnd(&dst[w], ~(mask << shift));
    atomicOr(&dst[w], (v & mask) << shift);
}
