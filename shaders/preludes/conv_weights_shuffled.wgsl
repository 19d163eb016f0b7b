// How the 1x1 convolution kernels read their window's weights, with subgroup shuffles: the
// interface of conv_weights.wgsl, for adapters where a uniform-buffer read at an offset the
// compiler cannot prove uniform costs a read per lane. That is lavapipe and llvmpipe: Mesa
// proves only constants and push constants uniform, not a loop counter, so each such vec4 was
// 4 scalar reads for every lane. Here lane l of each subgroup reads rows l, l + 8, l + 16, ...
// once, and every row reaches all lanes by a shuffle from a constant lane, so a block of 4*CQ
// rows costs each lane CQ / 2 reads instead of 4*CQ. Needs subgroups of at least 8
// invocations, all of them active (the kernels never return early).

// The window's weights (binding 2 of conv.wgsl): a 64 KiB uniform block.
@group(0) @binding(2) var<uniform> wu: array<vec4<f32>, 4096>;

struct Invocation {
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_invocation_id) sid: u32,
}

// This lane's reads: rows 8j + (sid % 8) for j = 0..7 (those past the 4*CQ rows are zero).
struct Weights {
    r0: vec4<f32>,
    r1: vec4<f32>,
    r2: vec4<f32>,
    r3: vec4<f32>,
    r4: vec4<f32>,
    r5: vec4<f32>,
    r6: vec4<f32>,
    r7: vec4<f32>,
}

fn weight_row(base: u32, stride: u32, j: u32, lane: u32) -> vec4<f32> {
    if (8u * j >= 4u * CQ) {
        return vec4<f32>(0.0);
    }
    return wu[min(base + (8u * j + lane) * stride, 4095u)];
}

fn weights(inv: Invocation, base: u32, stride: u32) -> Weights {
    let l = inv.sid % 8u;
    return Weights(weight_row(base, stride, 0u, l), weight_row(base, stride, 1u, l), weight_row(base, stride, 2u, l), weight_row(base, stride, 3u, l), weight_row(base, stride, 4u, l), weight_row(base, stride, 5u, l), weight_row(base, stride, 6u, l), weight_row(base, stride, 7u, l));
}

// Row `r` (a constant at every call, below 4*CQ): lane r % 8's read number r / 8.
fn weight(w: Weights, r: u32) -> vec4<f32> {
    var v: vec4<f32>;
    switch (r / 8u) {
        case 0u: { v = w.r0; }
        case 1u: { v = w.r1; }
        case 2u: { v = w.r2; }
        case 3u: { v = w.r3; }
        case 4u: { v = w.r4; }
        case 5u: { v = w.r5; }
        case 6u: { v = w.r6; }
        default: { v = w.r7; }
    }
    return subgroupShuffle(v, r % 8u);
}
