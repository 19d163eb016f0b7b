// The `elementwise` kernel's output form (kernels/elementwise.wgsl), for any element type: outputs
// of 1, 2 or 4 bytes are packed in u32 words; stores clear and set their bits with atomics, so
// that an invocation never writes a neighbour's bytes (packed_store.wgsl, after this prelude).
// Outputs of 4-byte elements run `elementwise_words` instead (elementwise_out_words.wgsl: plain
// stores; atomics cost on CPU adapters).

@group(0) @binding(1) var<storage, read_write> out: array<atomic<u32>>;

fn out_word(w: u32) -> u32 {
    return atomicLoad(&out[w]);
}

fn store(e: u32, v: u32) {
    store_packed(e, v, dt_bytes(OUT_T));
}
