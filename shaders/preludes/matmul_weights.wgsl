// How matmul_blocked.wgsl reads its weights (the interface of conv_weights_shuffled.wgsl, which
// the 1x1 convolutions' inner product calls): from a storage buffer holding the packed weights
// of every batch matrix, so one dispatch covers the whole batch. Each group of 8 lanes works on
// one batch matrix, so the rows it reads are the same for its 8 lanes: lane l of the group reads
// rows l, l + 8, l + 16, ... once and every row reaches the group's lanes by a shuffle from a
// lane of the group (Mesa's lavapipe and llvmpipe: a read at an offset its compiler cannot prove
// uniform costs a read per lane). Needs subgroups of at least 8 invocations, made of whole
// groups of 8 consecutive invocations, all of them active (the kernel never returns early).

// The weights as vec4 rows of 4 consecutive reduction steps of one output, `stride` rows from
// one output to the next (see matmul_blocked.wgsl).
@group(0) @binding(2) var<storage, read> wst: array<vec4<f32>>;

struct Invocation {
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_invocation_id) sid: u32,
}

// The block of 4 outputs x CQ quads from row `base`, outputs `stride` rows apart. This lane's
// reads: block rows 8j + (sid % 8) for j = 0..7 (those past the 4*CQ rows are zero), and
// the first lane of its group of 8 within the subgroup.
struct Weights {
    r0: vec4<f32>,
    r1: vec4<f32>,
    r2: vec4<f32>,
    r3: vec4<f32>,
    r4: vec4<f32>,
    r5: vec4<f32>,
    r6: vec4<f32>,
    r7: vec4<f32>,
    first: u32,
}

// Row r = 8j + lane of the block (output r / CQ, quad r % CQ), zero past its 4*CQ rows.
fn weight_row(base: u32, stride: u32, j: u32, lane: u32) -> vec4<f32> {
    if (8u * j >= 4u * CQ) {
        return vec4<f32>(0.0);
    }
    let r = 8u * j + lane;
    return wst[base + (r / CQ) * stride + r % CQ];
}

fn weights(inv: Invocation, base: u32, stride: u32) -> Weights {
    let l = inv.sid % 8u;
    return Weights(weight_row(base, stride, 0u, l), weight_row(base, stride, 1u, l), weight_row(base, stride, 2u, l), weight_row(base, stride, 3u, l), weight_row(base, stride, 4u, l), weight_row(base, stride, 5u, l), weight_row(base, stride, 6u, l), weight_row(base, stride, 7u, l), inv.sid - l);
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
    return subgroupShuffle(v, w.first + r % 8u);
}
