// The sub-word store of outputs packed in u32 words, for every kernel that stores elements of 1,
// 2 or 4 bytes through `out` (an array<atomic<u32>> that the file including this one binds:
// packed.wgsl, elementwise_out_packed.wgsl, reduce_io.wgsl). 1- and 2-byte elements clear and
// set their bits with atomics, so that an invocation never writes a neighbour's bytes.

// Element e, of `bytes` bytes (1, 2 or 4), set to the low bits of v.
fn store_packed(e: u32, v: u32, bytes: u32) {
    if (bytes == 4u) {
        atomicStore(&out[e], v);
        return;
    }
    var w: u32;
    var shift: u32;
    var mask: u32;
    if (bytes == 2u) {
        w = e >> 1u;
        shift = (e & 1u) * 16u;
        mask = 0xffffu;
    } else {
        w = e >> 2u;
        shift = (e & 3u) * 8u;
        mask = 0xffu;
    }
    atomicAnd(&out[w], ~(mask << shift));
    atomicOr(&out[w], (v & mask) << shift);
}
