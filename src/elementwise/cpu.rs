//! The CPU reference of the elementwise ops: the oracle of the device tests.
//!
//! It walks the plan with the crate's index formula ([`IterPlan::offsets_into`]) and computes
//! each element as the kernels do: inputs converted to the computation type, the op in that
//! type's representation, one rounding to the computation type, one conversion to the
//! destination's. Transcendental functions are evaluated in f64 and rounded once.

use crate::copy::cpu::{read_bits, write_bits};
use crate::dtype::{cast_bits, DType};
use crate::elementwise::resolve::{Args, Repr, Resolved, Slot};
use crate::elementwise::Op;
use crate::plan::{IterPlan, MAX_OPERANDS};

/// Where an input operand's bytes are.
pub(crate) enum Src<'a> {
    /// Another buffer.
    Bytes(&'a [u8]),
    /// The destination's own buffer.
    Dest,
}

/// Runs a resolved op into `dst` (the destination's storage bytes), reading plan operand
/// k (1 and up) from `srcs[k - 1]`. The caller has checked bounds, types and overlap.
pub(crate) fn execute(r: &Resolved, dst: &mut [u8], srcs: &[Src<'_>]) {
    let plan: &IterPlan = &r.plan;
    let repr = Repr::of(r.compute).dtype();
    let mut off = [0usize; MAX_OPERANDS];
    let mut vals = [0u32; 3];
    let size = |d: DType| d.size();
    for i in 0..plan.numel() {
        plan.offsets_into(i, &mut off);
        if let Op::To(_) = r.op {
            // A conversion casts the raw bits once (NaN payloads kept), as copy_ does.
            let (t, es) = (r.types[1], r.out_dtype.size());
            let at = off[1] * t.size()..(off[1] + 1) * t.size();
            let bits = match &srcs[0] {
                Src::Bytes(b) => read_bits(&b[at]),
                Src::Dest => read_bits(&dst[at]),
            };
            write_bits(&mut dst[off[0] * es..(off[0] + 1) * es], cast_bits(t, r.out_dtype, bits));
            continue;
        }
        for (v, slot) in vals.iter_mut().zip(&r.slots) {
            *v = match *slot {
                Slot::Scalar(b) => b,
                Slot::Tensor(k) => {
                    let t = r.types[k];
                    let at = off[k] * size(t)..(off[k] + 1) * size(t);
                    let bits = match &srcs[k - 1] {
                        Src::Bytes(b) => read_bits(&b[at]),
                        Src::Dest => read_bits(&dst[at]),
                    };
                    cast_bits(r.compute, repr, cast_bits(t, r.compute, bits))
                }
            };
        }
        let out = apply(r.op, Repr::of(r.compute), &vals, &r.args);
        let bits = cast_bits(r.compute, r.out_dtype, cast_bits(repr, r.compute, out));
        let es = size(r.out_dtype);
        write_bits(&mut dst[off[0] * es..(off[0] + 1) * es], bits);
    }
}

/// One element of `op` on values `v` in representation `repr` (f32 bits, or 32-bit integer
/// bits), with the arguments `a` in the same representation. The kernels' twin is
/// `shaders/preludes/elementwise_ops.wgsl`.
pub(crate) fn apply(op: Op, repr: Repr, v: &[u32; 3], a: &Args) -> u32 {
    match repr {
        Repr::F32 => apply_f32(op, v, a),
        Repr::I32 => apply_int(op, v, a, true),
        Repr::U32 => apply_int(op, v, a, false),
    }
}

fn is_nan(b: u32) -> bool {
    b & 0x7fff_ffff > 0x7f80_0000
}

/// f64 arithmetic rounded once to f32 bits.
fn f64_op(x: u32, f: impl Fn(f64) -> f64) -> u32 {
    (f(f32::from_bits(x) as f64) as f32).to_bits()
}

/// erfc with a fractional error below 1.2e-7 everywhere (Numerical Recipes' `erfcc`, a
/// Chebyshev fit); the kernels evaluate the same fit in f32.
pub(crate) fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let p = -z * z - 1.265_512_23
        + t * (1.000_023_68 + t * (0.374_091_96 + t * (0.096_784_18 + t * (-0.186_288_06 + t * (0.278_868_07 + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * p.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

fn apply_f32(op: Op, v: &[u32; 3], a: &Args) -> u32 {
    let (x, y, z) = (f32::from_bits(v[0]), f32::from_bits(v[1]), f32::from_bits(v[2]));
    let alpha = f32::from_bits(a[0]);
    match op {
        Op::To(_) | Op::Floor | Op::Ceil | Op::Round | Op::Trunc if is_nan(v[0]) => v[0],
        Op::To(_) => v[0],
        Op::Neg => v[0] ^ 0x8000_0000,
        Op::Abs => v[0] & 0x7fff_ffff,
        Op::Relu => match is_nan(v[0]) || x > 0.0 {
            true => v[0],
            false => 0,
        },
        Op::Sigmoid => f64_op(v[0], |x| 1.0 / (1.0 + (-x).exp())),
        Op::Tanh => f64_op(v[0], f64::tanh),
        Op::Exp => f64_op(v[0], f64::exp),
        Op::Log => f64_op(v[0], f64::ln),
        Op::Sqrt => f64_op(v[0], f64::sqrt),
        Op::Rsqrt => f64_op(v[0], |x| 1.0 / x.sqrt()),
        Op::Floor => x.floor().to_bits(),
        Op::Ceil => x.ceil().to_bits(),
        Op::Round => x.round_ties_even().to_bits(),
        Op::Trunc => x.trunc().to_bits(),
        Op::Clamp { .. } => {
            // A NaN x stays itself (the kernels return a NaN operand before the op); else a NaN
            // bound gives NaN (PyTorch's `clamp`). A bound not given holds 0.
            if is_nan(v[0]) {
                return v[0];
            }
            if is_nan(a[1]) || is_nan(a[2]) {
                return 0x7fc0_0000;
            }
            let mut r = x;
            if a[3] & 1 != 0 && r < f32::from_bits(a[1]) {
                r = f32::from_bits(a[1]);
            }
            if a[3] & 2 != 0 && r > f32::from_bits(a[2]) {
                r = f32::from_bits(a[2]);
            }
            r.to_bits()
        }
        Op::Gelu => f64_op(v[0], |x| 0.5 * x * erfc(-x * std::f64::consts::FRAC_1_SQRT_2)),
        // 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), without the cancellation for negative x.
        Op::GeluTanh => f64_op(v[0], |x| {
            let k = (2.0 / std::f64::consts::PI).sqrt();
            x / (1.0 + (-2.0 * k * (x + 0.044715 * x * x * x)).exp())
        }),
        Op::Silu => f64_op(v[0], |x| x / (1.0 + (-x).exp())),
        Op::Add { .. } if a[0] == 1f32.to_bits() => (x + y).to_bits(),
        Op::Sub { .. } if a[0] == 1f32.to_bits() => (x - y).to_bits(),
        Op::Add { .. } => (x + alpha * y).to_bits(),
        Op::Sub { .. } => (x - alpha * y).to_bits(),
        Op::Mul => (x * y).to_bits(),
        Op::Div => (x / y).to_bits(),
        Op::Maximum | Op::Minimum => {
            let max = op == Op::Maximum;
            match (is_nan(v[0]), is_nan(v[1])) {
                (true, _) => v[0],
                (_, true) => v[1],
                _ if x == y => if max { v[0] & v[1] } else { v[0] | v[1] },
                _ if (x > y) == max => v[0],
                _ => v[1],
            }
        }
        Op::Addcmul { .. } => (x + alpha * y * z).to_bits(),
    }
}

fn apply_int(op: Op, v: &[u32; 3], a: &Args, signed: bool) -> u32 {
    let (x, y, z) = (v[0], v[1], v[2]);
    let lt = |p: u32, q: u32| if signed { (p as i32) < (q as i32) } else { p < q };
    match op {
        Op::Neg => x.wrapping_neg(),
        Op::Abs if signed => (x as i32).wrapping_abs() as u32,
        Op::Relu if signed && (x as i32) < 0 => 0,
        Op::Clamp { .. } => {
            let mut r = x;
            if a[3] & 1 != 0 && lt(r, a[1]) {
                r = a[1];
            }
            if a[3] & 2 != 0 && lt(a[2], r) {
                r = a[2];
            }
            r
        }
        Op::Add { .. } => x.wrapping_add(a[0].wrapping_mul(y)),
        Op::Sub { .. } => x.wrapping_sub(a[0].wrapping_mul(y)),
        Op::Mul => x.wrapping_mul(y),
        Op::Maximum => if lt(x, y) { y } else { x },
        Op::Minimum => if lt(y, x) { y } else { x },
        Op::Addcmul { .. } => x.wrapping_add(a[0].wrapping_mul(y).wrapping_mul(z)),
        // Identity on integers: copies, rounding, abs and relu of unsigned values. Ops that
        // compute in float never get here.
        _ => x,
    }
}
