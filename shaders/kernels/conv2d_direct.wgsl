// Convolution of any kernel size, channel-vectorized (the NHWC orientation), shaped for CPU
// adapters. Each invocation accumulates its two quads' 8 output pixels x 4*CQ output channels
// (CQ counts output-channel quads here, up to 16: 64 channels) in registers over every tap of
// the kernel and every input channel of its window, then writes each output once. Per tap and
// input channel quad it loads 4 channels at its 8 pixels and reads 4*CQ weight rows. The
// conv1x1_*.wgsl kernels instead hold the input and run a tap per dispatch, reading the output
// back and writing it again at every tap: on a CPU adapter every storage access is a loop over
// lanes, so writing each output once is what pays.
//
// The accumulators, the weight block's layout and the steps: conv2d_direct_acc.wgsl. Uniform,
// bindings, pixel arithmetic and stores: conv.wgsl; the weight reads: conv_weights*.wgsl.

@compute @workgroup_size(WG)
fn main(inv: Invocation) {
    let q = inv.gid.x + inv.gid.y * cp_u[pz()].work.w;
    // No invocation returns early (the shuffled weight reads need every lane): quads past the
    // work load zeros and store nothing.
    let cw = (cp_u[pz()].work.y + 3u) / 4u * 4u;
    var acc = Held();
    for (var ky = 0; ky < cp_u[pz()].taps.x; ky = ky + 1) {
        for (var kx = 0; kx < cp_u[pz()].taps.y; kx = kx + 1) {
            let ry = cp_u[pz()].conv.z + ky * cp_u[pz()].taps.z;
            let rx = cp_u[pz()].conv.w + kx * cp_u[pz()].taps.w;
            let qa = quad_from(2u * q, ry, rx);
            let qb = quad_from(2u * q + 1u, ry, rx);
            let rows = u32(ky * cp_u[pz()].taps.y + kx) * cw;
            for (var cq = 0u; 4u * cq < cp_u[pz()].work.y; cq = cq + 1u) {
                let x = Pair(quad_load(qa, cq), quad_load(qb, cq));
                acc = accumulate_all(acc, x, weights(inv, (rows + 4u * cq) * CQ, 1u));
            }
        }
    }
    let t = tile_at(q, inv.lid);
    store_all(t, acc);
}
