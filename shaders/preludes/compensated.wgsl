// The compensated (Neumaier) sum that the reductions (reduce.wgsl) and the normalization
// kernel (norm_rows.wgsl) accumulate in: a state (x the sum, y the compensation), folded in
// order, so that the same terms give the same bits. A sum that reached an infinity (or NaN)
// stays it: its compensation, then inf - inf, is dropped (a row of +-1e20 has an infinite
// variance, as the reference's f64 sum says).

fn is_finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

fn kadd(s: vec2<f32>, v: f32) -> vec2<f32> {
    let t = s.x + v;
    let c = select((v - t) + s.x, (s.x - t) + v, abs(s.x) >= abs(v));
    return vec2<f32>(t, s.y + c);
}
fn ksum(s: vec2<f32>) -> f32 {
    if (!is_finite(s.x)) {
        return s.x;
    }
    return s.x + s.y;
}
