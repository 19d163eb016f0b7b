// The copy plan every copy kernel receives, and the crate's one WGSL index formula.
// Prepended to each kernel in this folder; the Rust twin is CopyPlan::offsets (src/plan.rs).

struct Plan {
    // Dims innermost first, 8 at most; unused dims have size 1 and stride 0.
    sizes: array<vec4<u32>, 2>,
    dst_strides: array<vec4<i32>, 2>,
    src_strides: array<vec4<i32>, 2>,
    rank: u32,
    // Element indices of linear index 0, relative to the bound windows.
    dst_offset: u32,
    src_offset: u32,
    // Invocations that share one run of dim 0.
    inner_chunks: u32,
    // Invocations with work; the rest return at once.
    threads: u32,
    // Invocations per row of the dispatch grid (workgroups in x times the workgroup size).
    grid_row: u32,
    // Kernel-specific: blocks along plan dim 1 (transpose kernels, word columns), and rows
    // per invocation (word columns).
    aux: u32,
    aux2: u32,
}

@group(0) @binding(0) var<uniform> plan_u: array<Plan, 1>;

fn pz() -> u32 {
    return uniform_index(plan_u[0].rank);
}

// (destination, source) element indices of linear index i, dim 0 fastest. Strides are
// signed; wrapping u32 arithmetic gives the exact index whenever it lies in [0, 2^32).
fn plan_offsets(i: u32) -> vec2<u32> {
    var rem = i;
    var dst = plan_u[pz()].dst_offset;
    var src = plan_u[pz()].src_offset;
    for (var d = 0u; d < plan_u[pz()].rank; d = d + 1u) {
        let n = plan_u[pz()].sizes[d >> 2u][d & 3u];
        let k = rem % n;
        rem = rem / n;
        dst = dst + k * bitcast<u32>(plan_u[pz()].dst_strides[d >> 2u][d & 3u]);
        src = src + k * bitcast<u32>(plan_u[pz()].src_strides[d >> 2u][d & 3u]);
    }
    return vec2<u32>(dst, src);
}

// The linear invocation index on a 2-D grid (more than 65535 workgroups need a second row).
fn invocation_index(gid: vec3<u32>) -> u32 {
    return gid.x + gid.y * plan_u[pz()].grid_row;
}

// A word column (strided_rows, copy_rows_vec4): with the words of a row padded to a multiple
// of 8 (plan.inner_chunks), invocation t takes word t % inner_chunks of plan.aux2 consecutive
// rows along plan dim 1, so that 8 neighbouring invocations touch neighbouring words and the
// index arithmetic is paid once per column. plan.aux holds the row blocks along dim 1; a word
// is `unit` elements of dim 0. Returns the (destination, source) indices of the column's first
// element and its row count, which is 0 for the padding.
fn word_column(t: u32, unit: u32) -> vec3<u32> {
    let block = t / plan_u[pz()].inner_chunks;
    let w = t - block * plan_u[pz()].inner_chunks;
    if (w * unit >= plan_u[pz()].sizes[0].x) {
        return vec3<u32>(0u);
    }
    let outer = block / plan_u[pz()].aux;
    let j0 = (block - outer * plan_u[pz()].aux) * plan_u[pz()].aux2;
    let base = plan_offsets((outer * plan_u[pz()].sizes[0].y + j0) * plan_u[pz()].sizes[0].x + unit * w);
    return vec3<u32>(base, min(plan_u[pz()].aux2, plan_u[pz()].sizes[0].y - j0));
}
