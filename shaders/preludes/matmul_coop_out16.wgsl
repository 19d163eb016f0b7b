// The 16-bit twin of matmul_coop_out.wgsl: matmul_coop.wgsl's accumulators into a float16
// output as it is (binding 4, matmul_out16.wgsl's u32 words), always through finish_frag: each
// element finished in f32 (the epilogue where the product has one) and rounded once
// (matmul_out16.wgsl's mm_bits, the rounding of a converting copy), so the output holds the
// bits an f32 output rounded by a copy would, with no f32 result stored and read back.
fn out_frag(c: FragC, sid: u32, lane: u32, lanes: u32, r: u32, q: u32, at: u32, c0: i32, y0: i32) {
    finish_frag(c, sid, lane, lanes, r, q, c0, y0);
}
