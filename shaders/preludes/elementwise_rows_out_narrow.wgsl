// The rows kernels' output of 2- and 1-byte elements (elementwise_rows): u32 words, of which a
// quad is two (2-byte elements) or one (1-byte), written whole by one invocation. Not vec4
// words written a component at a time: a store to a vector's component may access the whole
// vector (WGSL's memory model; Metal's compilers may read, modify and write it), so quads of
// one word written by different invocations would race.

@group(0) @binding(1) var<storage, read_write> out: array<u32>;

// vec4 word w of the output's binding (an input aliased to it reads through it).
fn out_word(w: u32) -> vec4<u32> {
    let i = w * 4u;
    return vec4<u32>(out[i], out[i + 1u], out[i + 2u], out[i + 3u]);
}

// The quad of elements e..e+3 (e a multiple of 4) of type t of an operand read through the
// output's binding, as zero-extended bits: only the u32 words the quad lies in (the words
// around them are other invocations' to write).
fn out_quad(e: u32, t: u32) -> vec4<u32> {
    let b = dt_bytes(t);
    if (b == 4u) {
        return vec4<u32>(out[e], out[e + 1u], out[e + 2u], out[e + 3u]);
    }
    if (b == 2u) {
        let lo = out[e >> 1u];
        let hi = out[(e >> 1u) + 1u];
        return vec4<u32>(lo & 0xffffu, lo >> 16u, hi & 0xffffu, hi >> 16u);
    }
    let w = out[e >> 2u];
    return (vec4<u32>(w) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(0xffu);
}

// The quad of elements e..e+3 (e a multiple of 4), as zero-extended bits.
fn store_quad(e: u32, v: vec4<u32>) {
    if (dt_bytes(OUT_T) == 2u) {
        out[e >> 1u] = v.x | (v.y << 16u);
        out[(e >> 1u) + 1u] = v.z | (v.w << 16u);
        return;
    }
    out[e >> 2u] = v.x | (v.y << 8u) | (v.z << 16u) | (v.w << 24u);
}
