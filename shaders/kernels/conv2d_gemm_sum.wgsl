// The second dispatch of a split-K convolution (conv2d_gemm.wgsl under SPLIT): each invocation
// adds the S partial sums of one output pixel's 4 channels in slice order (so the result is the
// same at every run), then applies the epilogue (bias, residual, ReLU) and stores them through
// the output's strides. The partial sums are bound as the input's vec4 words (binding 5).
//
// Invocations run along the output's unit-stride dim: channel quads (CHANNELS), else pixels.

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = gid.x + gid.y * nwg.x * 256u;
    let pixels = gp_u[pz()].work.x;
    let quads = gp_u[pz()].red.w;
    var m = id % pixels;
    var q = (id / pixels) % quads;
    let group = id / (pixels * quads);
    if (CHANNELS) {
        q = id % quads;
        m = (id / quads) % pixels;
    }
    // This dispatch's work.w counts invocations: groups x pixels x channel quads.
    if (id >= gp_u[pz()].work.w) {
        return;
    }
    let slices = gp_u[pz()].split.x;
    let words = gp_u[pz()].split.w;
    var v = vec4<f32>(0.0);
    for (var s = 0u; s < slices; s = s + 1u) {
        v = v + partial_at(((group * slices + s) * gp_u[pz()].split.z + m) * words + q);
    }
    let k = 4u * q;
    let b = vec4<f32>(bias_at(group, k), bias_at(group, k + 1u), bias_at(group, k + 2u), bias_at(group, k + 3u));
    store_channels(m, group, k, v, b);
}
