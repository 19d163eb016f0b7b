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
    if (b == 4u) {
        return out[e >> 2u];
    }
    if (b == 2u) {
        let v = out[e >> 3u];
        let p = select(v.xy, v.zw, (e & 4u) != 0u);
        return vec4<u32>(p.x & 0xffffu, p.x >> 16u, p.y & 0xffffu, p.y >> 16u);
    }
    let w = component(out[e >> 4u], (e >> 2u) & 3u);
    return (vec4<u32>(w) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(0xffu);
}

// The quad of elements e..e+3 (e a multiple of 4), as bits.
fn store_quad(e: u32, v: vec4<u32>) {
    out[e >> 2u] = v;
}
