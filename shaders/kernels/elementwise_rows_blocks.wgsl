// Elementwise ops on rows, in quad columns (see `column`) with transposed operands (TRANS):
// rows in groups of 4 (the host guarantees whole groups in every invocation), each transposed
// operand's 4 x 4 block loaded once and feeding the 4 rows' quads. Shared code:
// elementwise_rows.

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = column(gid);
    if (c.w >= c.q0) {
        return;
    }
    let step = iter_strides(0u);
    for (var r = 0u; r < c.rows; r = r + 4u) {
        let o4 = c.base + r * c.s1;
        for (var i = 0u; i < QPR; i = i + 1u) {
            if (c.w + i * c.lanes >= c.q0) {
                break;
            }
            let oq = o4 + 4u * i * c.lanes * step;
            let ba = block_at(0u, IN0, oq, step);
            let bb = block_at(1u, IN1, oq, step);
            let bc = block_at(2u, IN2, oq, step);
            for (var rr = 0u; rr < 4u; rr = rr + 1u) {
                let o = oq + rr * c.s1;
                var p = row_values(o);
                if (transposed(IN0)) {
                    p[0] = block_row(ba, rr);
                }
                if (ARITY > 1u && transposed(IN1)) {
                    p[1] = block_row(bb, rr);
                }
                if (ARITY > 2u && transposed(IN2)) {
                    p[2] = block_row(bc, rr);
                }
                quad(o, p);
            }
        }
    }
}
