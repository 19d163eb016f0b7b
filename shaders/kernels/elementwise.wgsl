// The general elementwise kernel: out[i] = op(in slots at i) for every element the plan reaches;
// each invocation takes up to EPT consecutive elements of plan dim 0, so that the division work
// of iter_offsets is paid once per run. Inputs of 1, 2 or 4 bytes are packed in u32 words. It is
// registered twice, with one of two output forms before it (a prelude that binds `out` and
// defines `out_word(w)`, word w of the output's binding, for inputs aliased to it, and
// `store(e, v)`): `elementwise` with elementwise_out_packed (elements of 1, 2 or 4 bytes through
// atomics), `elementwise_words` with elementwise_out_words (4-byte elements, plain stores).
// Slots, types and aliasing: elementwise_slots.

@group(0) @binding(2) var<storage, read> in1: array<u32>;
@group(0) @binding(3) var<storage, read> in2: array<u32>;
@group(0) @binding(4) var<storage, read> in3: array<u32>;

// Word w of operand k's binding.
fn word(k: u32, w: u32) -> u32 {
    if (aliased(k)) {
        return out_word(w);
    }
    switch k {
        case 1u: {
            return in1[w];
        }
        case 2u: {
            return in2[w];
        }
        default: {
            return in3[w];
        }
    }
}

// Element e (of type t) of operand k, as zero-extended bits.
fn load(k: u32, e: u32, t: u32) -> u32 {
    let b = dt_bytes(t);
    if (b == 4u) {
        return word(k, e);
    }
    if (b == 2u) {
        return (word(k, e >> 1u) >> ((e & 1u) * 16u)) & 0xffffu;
    }
    return (word(k, e >> 2u) >> ((e & 3u) * 8u)) & 0xffu;
}

// Slot j's value (reading plan operand k, or its scalar) in the computation's representation.
fn slot(j: u32, k: u32, o: vec4<u32>) -> u32 {
    if (k == 0u) {
        return it_u[pz()].scalars[j];
    }
    let t = operand_type(k);
    return to_repr(load(k, o[k], t), t);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = iter_invocation(gid);
    if (t >= it_u[pz()].threads) {
        return;
    }
    let n0 = it_u[pz()].sizes[0].x;
    let row = t / it_u[pz()].inner_chunks;
    let first = (t - row * it_u[pz()].inner_chunks) * EPT;
    let base = iter_offsets(row * n0 + first);
    let step = iter_strides(0u);
    let count = min(EPT, n0 - first);
    for (var e = 0u; e < count; e = e + 1u) {
        let o = base + e * step;
        let a = slot(0u, IN0, o);
        var b = 0u;
        var c = 0u;
        if (ARITY > 1u) {
            b = slot(1u, IN1, o);
        }
        if (ARITY > 2u) {
            c = slot(2u, IN2, o);
        }
        let r = apply_op(a, b, c);
        store(o.x, to_out(r));
    }
}
