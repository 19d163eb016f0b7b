// The `elementwise_words` kernel's output form (kernels/elementwise.wgsl), for any input types
// into an output of 4-byte elements (f32, i32, u32; the host picks this kernel only for those):
// every element is a whole u32 word that one invocation writes, so stores are plain. On lavapipe
// the atomic stores of elementwise_out_packed.wgsl made `add` of a channels-last and an NCHW
// tensor 20-30% slower.

@group(0) @binding(1) var<storage, read_write> out: array<u32>;

fn out_word(w: u32) -> u32 {
    return out[w];
}

fn store(e: u32, v: u32) {
    out[e] = v;
}
