// Elementwise ops on rows, in runs (plans of any rank): workgroup g takes a run of WG * EPT
// quads of one row; invocation l takes quads l, l + WG, l + 2 WG, ... of it, so that
// neighbouring invocations touch neighbouring words. Shared code: elementwise_rows.

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) l: u32) {
    let t = iter_invocation(gid);
    if (t >= it_u[pz()].threads) {
        return;
    }
    let q0 = it_u[pz()].sizes[0].x >> 2u;
    let step = iter_strides(0u);
    let g = t / WG;
    let row = g / it_u[pz()].inner_chunks;
    let first = (g - row * it_u[pz()].inner_chunks) * WG * EPT;
    let base = iter_offsets((row * q0 + first) * 4u);
    let p = row_values(base);
    for (var j = 0u; j < EPT; j = j + 1u) {
        let q = j * WG + l;
        if (first + q >= q0) {
            break;
        }
        quad(base + 4u * q * step, p);
    }
}
