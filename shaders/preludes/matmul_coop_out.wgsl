// How matmul_coop.wgsl stores an accumulator into an f32 output (binding 4, matmul_out.wgsl's
// y): straight from the fragment (row-major where Y_ROWS, pitch y_pitch()), or through the
// epilogue (EPI: finish_frag, element by element through the output's strides). Its twin,
// matmul_coop_out16.wgsl, stores a 16-bit output. Accumulator c covers the output's rows r ..
// r + FRAG and columns q .. q + FRAG; `at` is its first element for the straight store, c0 and
// y0 the addend's and the output's element offsets for the epilogue. Called by every subgroup in
// step (uniform control flow: EPI is a constant).
fn out_frag(c: FragC, sid: u32, lane: u32, lanes: u32, r: u32, q: u32, at: u32, c0: i32, y0: i32) {
    if (EPI) {
        finish_frag(c, sid, lane, lanes, r, q, c0, y0);
        return;
    }
    // The pitch is a `let`: naga 30 panics ("Expression is not cached") on a coopStore whose
    // pointer or stride is computed in the call.
    let pitch = y_pitch();
    if (Y_ROWS) {
        coopStoreT(c, &y[at], pitch);
    } else {
        coopStore(c, &y[at], pitch);
    }
}
