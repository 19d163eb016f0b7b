// 1x1 convolution, pixel-vectorized (the NCHW orientation: A = weight [K, C], B = the image's
// [C, H*W]). Each invocation holds its quad's 4 pixels x up to 4*CQ input channels in registers
// (one mat4x4 per 4 channels: columns are channels, rows pixels), then walks the window's output
// channels 4 at a time: acc_k += X * w[k, c..c+4], so each uniform weight feeds 16 multiply-adds
// and no operand is re-read from memory. Barrier-free. Weights: wu[k * 16 + c / 4] holds
// w[k, c..c+4] (rows of 64 channels, 256 rows).

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let q = gid.x + gid.y * cp.work.w;
    if (q * 4u >= cp.work.x) {
        return;
    }
    let qd = quad_at(q);
    var xm: array<mat4x4<f32>, 16>;
    for (var i = 0u; i < CQ; i = i + 1u) {
        xm[i] = mat4x4<f32>(load_channel(qd, 4u * i), load_channel(qd, 4u * i + 1u), load_channel(qd, 4u * i + 2u), load_channel(qd, 4u * i + 3u));
    }
    for (var k = 0u; k < cp.work.z; k = k + 4u) {
        var a0 = vec4<f32>(0.0);
        var a1 = vec4<f32>(0.0);
        var a2 = vec4<f32>(0.0);
        var a3 = vec4<f32>(0.0);
        for (var i = 0u; i < CQ; i = i + 1u) {
            let m = xm[i];
            a0 = a0 + m * wu[k * 16u + i];
            a1 = a1 + m * wu[k * 16u + 16u + i];
            a2 = a2 + m * wu[k * 16u + 32u + i];
            a3 = a3 + m * wu[k * 16u + 48u + i];
        }
        store_channel(qd, k, a0);
        store_channel(qd, k + 1u, a1);
        store_channel(qd, k + 2u, a2);
        store_channel(qd, k + 3u, a3);
    }
}
