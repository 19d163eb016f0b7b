// The N-operand plan every elementwise kernel receives (operand 0 the output, 1..3 the tensor
// inputs), and its index formula. The Rust twin is IterPlan::offsets_into (src/plan.rs).

struct Iter {
    // Dims innermost first, 8 at most; unused dims have size 1 and stride 0.
    sizes: array<vec4<u32>, 2>,
    // Operand k's strides along dims 4j..4j+3 are strides[2k + j].
    strides: array<vec4<i32>, 8>,
    // Each operand's element of linear index 0, relative to its bound window.
    offsets: vec4<u32>,
    rank: u32,
    // Invocations with work; the rest return at once.
    threads: u32,
    // Runs of dim 0 per row: of EPT elements (elementwise.wgsl), or of WG * EPT quads, one per
    // workgroup (elementwise_rows_runs.wgsl).
    inner_chunks: u32,
    // Invocations per row of the dispatch grid (workgroups in x times the workgroup size).
    grid_row: u32,
    // Input slot j's value when it is a scalar, as bits of the computation's representation.
    scalars: vec4<u32>,
    // The op's arguments, same representation: alpha (or addcmul's value), clamp's min and
    // max, and flags (1: min given, 2: max given).
    args: vec4<u32>,
    // Kernel-specific: row blocks along plan dim 1 (the quad columns of elementwise_rows_columns.wgsl and _blocks.wgsl).
    extra: vec4<u32>,
}

@group(0) @binding(0) var<uniform> it_u: array<Iter, 1>;

fn pz() -> u32 {
    return uniform_index(it_u[0].rank);
}

// Every operand's stride along dim d.
fn iter_strides(d: u32) -> vec4<u32> {
    let j = d >> 2u;
    let c = d & 3u;
    return bitcast<vec4<u32>>(vec4<i32>(it_u[pz()].strides[j][c], it_u[pz()].strides[2u + j][c], it_u[pz()].strides[4u + j][c], it_u[pz()].strides[6u + j][c]));
}

// Every operand's element index at linear index i, dim 0 fastest. Strides are signed;
// wrapping u32 arithmetic gives the exact index whenever it lies in [0, 2^32).
fn iter_offsets(i: u32) -> vec4<u32> {
    var rem = i;
    var o = it_u[pz()].offsets;
    for (var d = 0u; d < it_u[pz()].rank; d = d + 1u) {
        let n = it_u[pz()].sizes[d >> 2u][d & 3u];
        let k = rem % n;
        rem = rem / n;
        o = o + k * iter_strides(d);
    }
    return o;
}

// The linear invocation index on a 2-D grid (more than 65535 workgroups need a second row).
fn iter_invocation(gid: vec3<u32>) -> u32 {
    return gid.x + gid.y * it_u[pz()].grid_row;
}
