// Elementwise ops on rows, in quad columns through EPT rows (plans of 2 dims or more; see
// `column`): broadcast operands are loaded once per row. Shared code: elementwise_rows.

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = column(gid);
    if (c.w >= c.q0) {
        return;
    }
    let step = iter_strides(0u);
    for (var r = 0u; r < c.rows; r = r + 1u) {
        let o = c.base + r * c.s1;
        let p = row_values(o);
        for (var i = 0u; i < QPR; i = i + 1u) {
            if (c.w + i * c.lanes >= c.q0) {
                break;
            }
            quad(o + 4u * i * c.lanes * step, p);
        }
    }
}
