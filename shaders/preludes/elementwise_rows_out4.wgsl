// The rows kernels' output of 4-byte elements (elementwise_rows): vec4 words, each a quad
// that one invocation writes whole.

@group(0) @binding(1) var<storage, read_write> out: array<vec4<u32>>;

// vec4 word w of the output's binding (an input aliased to it reads through it).
fn out_word(w: u32) -> vec4<u32> {
    return out[w];
}

// The quad of elements e..e+3 (e a multiple of 4) of type t of an operand read through the
// output's binding, as zero-extended bits.
fn out_quad(e: u32, t: u32) -> vec4<u32> {
    let b = dt_bytes(t);
    return quad_in(out[(e * b) >> 4u], e, b);
}

// The quad of elements e..e+3 (e a multiple of 4), as bits.
fn store_quad(e: u32, v: vec4<u32>) {
    out[e >> 2u] = v;
}
