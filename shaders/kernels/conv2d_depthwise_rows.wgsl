// Depthwise convolution (groups == C), NHWC orientation, register-blocked along rows: each
// invocation computes 4 output channels (one vec4) x 8 consecutive output pixels of one row,
// held as 8 named accumulators. With unit stride and dilation (SLIDE) the 8 input columns under
// tap kx are kept in 8 named registers and slide by one column per tap, so each input vec4 is
// loaded once per kernel row instead of once per tap. The weights are packed by the host as
// [tap][K rounded up to 4] (conv2d_depthwise_block). The 16 vec4 values
// are named, not an array: CPU adapters' compilers do not unroll loops, and a GPU's keeps them
// in registers (80 VGPRs on RADV, no spills: a candidate on every adapter).

// Unit stride and dilation along the row: the input columns slide one per tap.
override SLIDE: bool = false;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let u = gid.x + gid.y * nwg.x * WG;
    if (u >= rp_u[pz()].work.x) {
        return;
    }
    // u = ((n * OH + oy) * strips + strip) * quads + kq: neighbouring invocations take
    // neighbouring channel quads of one strip.
    let kq = u % rp_u[pz()].work.w;
    let s = u / rp_u[pz()].work.w;
    let strip = s % rp_u[pz()].strips.x;
    let row = s / rp_u[pz()].strips.x;
    let oy = row % rp_u[pz()].geo.z;
    let n = row / rp_u[pz()].geo.z;
    let k0 = 4u * kq;
    let ox0 = 8u * strip;
    let ix0 = i32(ox0) * rp_u[pz()].conv.y - rp_u[pz()].conv.w;
    let sx = rp_u[pz()].conv.y;
    let dx = rp_u[pz()].taps.w;
    var a0 = vec4<f32>(0.0);
    var a1 = vec4<f32>(0.0);
    var a2 = vec4<f32>(0.0);
    var a3 = vec4<f32>(0.0);
    var a4 = vec4<f32>(0.0);
    var a5 = vec4<f32>(0.0);
    var a6 = vec4<f32>(0.0);
    var a7 = vec4<f32>(0.0);
    for (var ky = 0; ky < rp_u[pz()].taps.x; ky = ky + 1) {
        let iy = i32(oy) * rp_u[pz()].conv.x - rp_u[pz()].conv.z + ky * rp_u[pz()].taps.z;
        if (iy < 0 || u32(iy) >= rp_u[pz()].geo.x) {
            continue;
        }
        let at = rp_u[pz()].base.x + i32(n) * rp_u[pz()].xs.x + iy * rp_u[pz()].xs.z;
        let wrow = u32(ky * rp_u[pz()].taps.y) * rp_u[pz()].work.w + kq;
        if (SLIDE) {
            var v0 = ld(at, ix0, k0);
            var v1 = ld(at, ix0 + 1, k0);
            var v2 = ld(at, ix0 + 2, k0);
            var v3 = ld(at, ix0 + 3, k0);
            var v4 = ld(at, ix0 + 4, k0);
            var v5 = ld(at, ix0 + 5, k0);
            var v6 = ld(at, ix0 + 6, k0);
            var v7 = ld(at, ix0 + 7, k0);
            for (var kx = 0; kx < rp_u[pz()].taps.y; kx = kx + 1) {
                let w = wp[wrow + u32(kx) * rp_u[pz()].work.w];
                a0 = a0 + w * v0;
                a1 = a1 + w * v1;
                a2 = a2 + w * v2;
                a3 = a3 + w * v3;
                a4 = a4 + w * v4;
                a5 = a5 + w * v5;
                a6 = a6 + w * v6;
                a7 = a7 + w * v7;
                v0 = v1;
                v1 = v2;
                v2 = v3;
                v3 = v4;
                v4 = v5;
                v5 = v6;
                v6 = v7;
                v7 = ld(at, ix0 + 8 + kx, k0);
            }
        } else {
            for (var kx = 0; kx < rp_u[pz()].taps.y; kx = kx + 1) {
                let w = wp[wrow + u32(kx) * rp_u[pz()].work.w];
                let c = ix0 + kx * dx;
                a0 = a0 + w * ld(at, c, k0);
                a1 = a1 + w * ld(at, c + sx, k0);
                a2 = a2 + w * ld(at, c + 2 * sx, k0);
                a3 = a3 + w * ld(at, c + 3 * sx, k0);
                a4 = a4 + w * ld(at, c + 4 * sx, k0);
                a5 = a5 + w * ld(at, c + 5 * sx, k0);
                a6 = a6 + w * ld(at, c + 6 * sx, k0);
                a7 = a7 + w * ld(at, c + 7 * sx, k0);
            }
        }
    }
    let b = vec4<f32>(bias_at(k0), bias_at(k0 + 1u), bias_at(k0 + 2u), bias_at(k0 + 3u));
    put(n, oy, ox0, k0, a0, b);
    put(n, oy, ox0 + 1u, k0, a1, b);
    put(n, oy, ox0 + 2u, k0, a2, b);
    put(n, oy, ox0 + 3u, k0, a3, b);
    put(n, oy, ox0 + 4u, k0, a4, b);
    put(n, oy, ox0 + 5u, k0, a5, b);
    put(n, oy, ox0 + 6u, k0, a6, b);
    put(n, oy, ox0 + 7u, k0, a7, b);
}
