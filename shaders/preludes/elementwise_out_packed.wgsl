// The `elementwise` kernel's output form (kernels/elementwise.wgsl), for any element type: outputs
// of 1, 2 or 4 bytes are packed in u32 words; stores clear and set their bits with atomics, so
// that an invocation never writes a neighbour's bytes. Outputs of 4-byte elements run
// `elementwise_words` instead (elementwise_out_words.wgsl: plain stores; atomics cost on CPU
// adapters).

@group(0) @binding(1) var<storage, read_write> out: array<atomic<u32>>;

fn out_word(w: u32) -> u32 {
    return atomicLoad(&out[w]);
}

fn store(e: u32, v: u32) {
    let b = dt_bytes(OUT_T);
    if (b == 4u) {
        atomicStore(&out[e], v);
        return;
    }
    var w: u32;
    var shift: u32;
    var mask: u32;
    if (b == 2u) {
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
