// The 16-bit twin of matmul_out.wgsl: the output of a float16 or bfloat16 product (the
// operands' type, the uniform's dtype) written as it is (matmul_gemm16, matmul_gemm_sum16,
// matmul_vec16, matmul_coop_half). Each f32 result is rounded once to the type (round to nearest even, NaN stays
// NaN: cast.wgsl, the rounding a copy applies), so the output holds the bits that an f32 output
// rounded by a copy would. Binding 4 is u32 words of two elements; an element is stored through
// packed_store.wgsl's atomics (an invocation never writes a neighbour's half), 4 consecutive
// elements starting at an even index as two whole words. Needs the `dtypes` prelude, cast.wgsl
// and packed_store.wgsl.

@group(0) @binding(4) var<storage, read_write> out: array<atomic<u32>>;

// The bits of v rounded to the operands' type.
fn mm_bits(v: f32) -> u32 {
    return f32_to_float(mp_u[pz()].dims.w, bitcast<u32>(v));
}

fn mm_store(i: u32, v: f32) {
    store_packed(i, mm_bits(v), 2u);
}

fn mm_store4(i: u32, v: vec4<f32>) {
    if ((i & 1u) == 0u) {
        // Two whole words that no other invocation writes.
        atomicStore(&out[i >> 1u], mm_bits(v.x) | (mm_bits(v.y) << 16u));
        atomicStore(&out[(i >> 1u) + 1u], mm_bits(v.z) | (mm_bits(v.w) << 16u));
        return;
    }
    for (var k = 0u; k < 4u; k = k + 1u) {
        store_packed(i + k, mm_bits(v[k]), 2u);
    }
}

// Output elements i and j set to a and b (two neighbours of the tensor-core kernel's
// epilogue): one whole word where they are its two halves (j == i + 1, i even), which no other
// invocation writes but with the same bits.
fn mm_store2(i: u32, j: u32, a: f32, b: f32) {
    if (j == i + 1u && (i & 1u) == 0u) {
        atomicStore(&out[i >> 1u], mm_bits(a) | (mm_bits(b) << 16u));
        return;
    }
    store_packed(i, mm_bits(a), 2u);
    store_packed(j, mm_bits(b), 2u);
}

// Split-K's slices store f32 partial sums through the float32 form (matmul_gemm); this one is
// never called under SPLIT.
fn mm_partial(i: u32, v: f32) {
    atomicStore(&out[i], bitcast<u32>(v));
}
