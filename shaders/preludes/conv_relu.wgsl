// The convolutions' fused ReLU, as `Op::Relu` and PyTorch's relu: v where v > 0, a NaN
// unchanged (its payload too), +0.0 elsewhere. WGSL leaves max() of a NaN to the implementation,
// so the NaN test is on bits.
fn relu4(v: vec4<f32>) -> vec4<f32> {
    let nan = (bitcast<vec4<u32>>(v) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u);
    return select(vec4<f32>(0.0), v, (v > vec4<f32>(0.0)) | nan);
}
