// layer_norm and group_norm of few long rows on GPUs (src/kernels/norm/): each row cut into
// split.x chunks of split.y elements (the last one shorter), a workgroup a chunk, so that a
// handful of rows (a diffusion VAE's 32 groups of 65,536 elements) fills the GPU where
// norm_rows.wgsl would run a workgroup a row. Three dispatches (PHASE), each ordered after the
// one before: 1 sums each chunk's elements (compensated walks, then the workgroup's fixed tree)
// into its slot of `part`; 2 folds the row's chunk sums in order into its mean (every
// workgroup of the row folds the same slots in the same order: the same mean) and sums its
// chunk's squared deviations from it; 3 folds both into the row's mean and biased variance and
// writes its chunk. The same input gives the same bits. Needs `dtypes`, `cast`, `compensated`
// and `norm` (the uniform, operands, walks and writes).

// 1: chunk sums; 2: chunk sums of squared deviations; 3: the writes.
override PHASE: u32 = 1u;

// The chunks' sums: rows * chunks of phase 1 (row r's at r * chunks), then as many of phase 2.
@group(0) @binding(6) var<storage, read_write> part: array<f32>;

// The compensated fold of the `count` chunk sums from part[at], in order.
fn fold(at: u32, count: u32) -> f32 {
    var st = vec2<f32>(0.0);
    for (var s = 0u; s < count; s = s + 1u) {
        st = kadd(st, part[at + s]);
    }
    return ksum(st);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let geo = norm_u[pz()].geo;
    let n = geo.y;
    norm_scale = sum_scale();
    let chunks = norm_u[pz()].split.x;
    let g = wid.x + wid.y * geo.z;
    let r = g / chunks;
    // Uniform across the workgroup: the barriers below stay in uniform control flow.
    if (r >= geo.x) {
        return;
    }
    let lo = (g % chunks) * norm_u[pz()].split.y;
    let len = min(norm_u[pz()].split.y, n - lo);
    let b = row_start(r);
    if (PHASE == 1u) {
        let v = tree_sum(walk(b.x + lo, len, lid, WG, false, 0.0), lid);
        if (lid == 0u) {
            part[g] = v;
        }
        return;
    }
    let mean = mean_of(fold(r * chunks, chunks), n);
    let squares = geo.x * chunks;
    if (PHASE == 2u) {
        let v = tree_sum(walk(b.x + lo, len, lid, WG, true, mean), lid);
        if (lid == 0u) {
            part[squares + g] = v;
        }
        return;
    }
    let rstd = rsqrt_of(fold(squares + r * chunks, chunks) / f32(n) + norm_u[pz()].eps.x);
    write_row(r, b.x + lo, b.y + lo, len, lo, lid, WG, mean, rstd);
}
