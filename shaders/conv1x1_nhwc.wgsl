// 1x1 convolution, channel-vectorized (the NHWC orientation: A = input [N*H*W, C], B = the
// weight transposed). Each invocation holds its quad's 4 pixels x up to 4*CQ input channels in
// registers (one mat4x4 per 4 channels: columns are pixels, each a vec4 over channels), then
// walks the window's output channels 4 at a time: acc_pixel (a vec4 over 4 output channels)
// += W * x_pixel, where W's columns are w[k..k+4, c] for 4 channels. Barrier-free. Weights:
// wu[c * 64 + k / 4] holds w[k..k+4, c] (rows of 256 output channels, 64 rows).

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let q = gid.x + gid.y * cp.work.w;
    if (q * 4u >= cp.work.x) {
        return;
    }
    let qd = quad_at(q);
    var xm: array<mat4x4<f32>, 16>;
    for (var i = 0u; i < CQ; i = i + 1u) {
        xm[i] = mat4x4<f32>(load_pixel(qd, 0u, i), load_pixel(qd, 1u, i), load_pixel(qd, 2u, i), load_pixel(qd, 3u, i));
    }
    for (var kq = 0u; kq * 4u < cp.work.z; kq = kq + 1u) {
        var a0 = vec4<f32>(0.0);
        var a1 = vec4<f32>(0.0);
        var a2 = vec4<f32>(0.0);
        var a3 = vec4<f32>(0.0);
        for (var i = 0u; i < CQ; i = i + 1u) {
            let wm = mat4x4<f32>(wu[i * 256u + kq], wu[i * 256u + 64u + kq], wu[i * 256u + 128u + kq], wu[i * 256u + 192u + kq]);
            let m = xm[i];
            a0 = a0 + wm * m[0];
            a1 = a1 + wm * m[1];
            a2 = a2 + wm * m[2];
            a3 = a3 + wm * m[3];
        }
        let k = kq * 4u;
        store_pixel(qd, 0u, k, a0);
        store_pixel(qd, 1u, k, a1);
        store_pixel(qd, 2u, k, a2);
        store_pixel(qd, 3u, k, a3);
    }
}
