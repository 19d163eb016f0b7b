// What both elementwise kernels share: how input slots map to plan operands, the operands'
// types and aliasing (override constants), and the conversions around the op. Input slot j
// (0..ARITY) reads plan operand INj (1..3), or the scalar it.scalars[j] when INj is 0. Operand
// k's element type is Tk; ALIASk reads it through the output's binding (it shares the output's
// buffer, which cannot also be bound read-only). Values are converted to the computation type
// COMPUTE, then to its representation REPR, computed (elementwise_ops), rounded back to
// COMPUTE and converted to the output's type OUT_T.

override WG: u32 = 256u;
override EPT: u32 = 4u;
override ARITY: u32 = 1u;
override COMPUTE: u32 = 0u;
override OUT_T: u32 = 0u;
override IN0: u32 = 1u;
override IN1: u32 = 0u;
override IN2: u32 = 0u;
override T1: u32 = 0u;
override T2: u32 = 0u;
override T3: u32 = 0u;
override ALIAS1: u32 = 0u;
override ALIAS2: u32 = 0u;
override ALIAS3: u32 = 0u;

fn operand_type(k: u32) -> u32 {
    switch k {
        case 1u: {
            return T1;
        }
        case 2u: {
            return T2;
        }
        default: {
            return T3;
        }
    }
}

// Whether plan operand k is read through the output's binding.
fn aliased(k: u32) -> bool {
    return (k == 1u && ALIAS1 == 1u) || (k == 2u && ALIAS2 == 1u) || (k == 3u && ALIAS3 == 1u);
}

// An element of type t in the computation's representation (a conversion, `to`, casts the
// raw bits once, from the input's type to the output's, keeping NaN payloads).
fn to_repr(v: u32, t: u32) -> u32 {
    if (OP == OP_TO) {
        return v;
    }
    return cast_bits(cast_bits(v, t, COMPUTE), COMPUTE, REPR);
}

// A result in the computation's representation as an element of the output's type.
fn to_out(r: u32) -> u32 {
    if (OP == OP_TO) {
        return cast_bits(r, T1, OUT_T);
    }
    return cast_bits(cast_bits(r, REPR, COMPUTE), COMPUTE, OUT_T);
}
