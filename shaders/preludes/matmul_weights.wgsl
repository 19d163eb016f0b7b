// How matmul_blocked.wgsl reads its weights (the interface of conv_weights_shuffled.wgsl, which
// the 1x1 convolutions' inner product calls): from a storage buffer holding the packed weights
// of every batch matrix, so one dispatch covers the whole batch. Each group of 8 lanes works on
// one batch matrix, so the rows it reads are the same for its 8 lanes: lane l of the group reads
// rows l, l + 8, l + 16, ... once and every row reaches the group's lanes by a shuffle from a
// lane of the group (shuffled_rows.wgsl; Mesa's lavapipe and llvmpipe: a read at an offset its
// compiler cannot prove uniform costs a read per lane). Needs subgroups of at least 8 invocations, made of whole
// groups of 8 consecutive invocations, all of them active (the kernel never returns early).

// The weights as vec4 rows of 4 consecutive reduction steps of one output, `stride` rows from
// one output to the next (see matmul_blocked.wgsl).
@group(0) @binding(2) var<storage, read> wst: array<vec4<f32>>;

// The block of 4 outputs x CQ quads from row `base`, outputs `stride` rows apart. This lane's
// reads: block rows 8j + (sid % 8) for j = 0..7 (those past the 4*CQ rows are zero), and
// the first lane of its group of 8 within the subgroup.
struct Weights {
    rows: Rows8,
    first: u32,
}

// Row r = 8j + lane of the block (output r / CQ, quad r % CQ).
fn weight_row(base: u32, stride: u32, j: u32, lane: u32) -> vec4<f32> {
    let r = 8u * j + lane;
    return wst[base + (r / CQ) * stride + r % CQ];
}

fn weights(inv: Invocation, base: u32, stride: u32) -> Weights {
    let l = inv.sid % 8u;
    return Weights(rows8(base, stride, l), inv.sid - l);
}

// Row `r` (a constant at every call, below 4*CQ): read number r / 8 of the group's lane r % 8.
fn weight(w: Weights, r: u32) -> vec4<f32> {
    return subgroupShuffle(row8(w.rows, r), w.first + r % 8u);
}
