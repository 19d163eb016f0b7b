//! The tensor-core matrix product (`matmul_coop.wgsl`, `MatmulKernel::Coop`): float16
//! operands multiplied on cooperative matrices (16 x 16 x 16, or 8 x 8 x 8 where the adapter
//! has only that, f32 accumulation), every fragment loaded straight from the operands' storage
//! through their pitches. Its one check ([`eligible`]), its pipeline (by the fragment size) and
//! the constants that specialize it to a product's layouts.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::coop::frag;
use crate::matmul::Activation;
use crate::runtime::AdapterReport;

use super::product::{Product, Shapes};

/// The output tile of a workgroup: four subgroups of 4 x 4 fragments each (128 x 128 with
/// fragments of 16).
pub(super) fn tile(report: &AdapterReport) -> usize {
    8 * frag(report)
}

/// The registered kernel for the device's fragment size (`coop_frag16` or `coop_frag8`), writing
/// an f32 output or (`half`) the float16 one as it is (`matmul_coop_out16`).
pub(super) fn shader(report: &AdapterReport, half: bool) -> &'static str {
    match half {
        false => crate::kernels::coop::shader(report, "matmul_coop", "matmul_coop8"),
        true => crate::kernels::coop::shader(report, "matmul_coop_half", "matmul_coop8_half"),
    }
}

/// Whether the kernel writes a float16 output as it is (`matmul_coop_half`: each element rounded
/// once as it leaves the accumulator, the bits a rounding copy of its f32 result gives) rather
/// than an f32 result that a recorded copy rounds: where the device takes every tensor-core path
/// ([`CooperativeMatrix::all_paths`](crate::runtime::CooperativeMatrix)). It passes the device
/// tests on Mesa 26's lavapipe (8 x 8 x 8 fragments), but its stores go through workgroup memory
/// as the epilogue's do, and no GPU has run that yet.
pub(super) fn writes_half(report: &AdapterReport) -> bool {
    report.cooperative_matrix.is_some_and(|c| c.all_paths)
}

/// How an operand's fragments are read or written: row-major (`true`: unit stride along the
/// columns, the rows' pitch the row stride) or column-major.
fn orientation(rows: isize, cols: isize) -> Option<bool> {
    match (rows, cols) {
        (r, 1) if r > 0 => Some(true),
        (1, c) if c > 0 => Some(false),
        _ => None,
    }
}

/// The one check of [`MatmulKernel::Coop`], for the automatic choice and a forced kernel alike:
/// an adapter whose device runs cooperative matrices ([`AdapterReport::cooperative_matrix`]),
/// float16 operands, m, n and k multiples of 16 (of the fragment side, 16 or 8), A and B row- or column-major with a positive
/// pitch, their pitch, (non-negative) batch strides and offset 16-byte aligned, and the same of
/// the f32 output unless the product has an epilogue (alpha, an addend, an activation) or a
/// float16 output (either is then written element by element through any strides). An offset that is a
/// multiple of 8 elements stays one inside the bound window: the window starts at the lowest
/// element (all strides non-negative) rounded down to the storage offset alignment, a power of
/// two, which either divides that element's 16-byte-aligned byte offset or is a multiple of 16.
pub(super) fn eligible(report: &AdapterReport, p: &Product<'_>, s: &Shapes) -> Result<()> {
    let nb = s.batch.len();
    let aligned = |i: usize, per: isize| s.strides[i][..nb].iter().all(|&z| z >= 0 && z % per == 0) && s.offsets[i] as isize % per == 0;
    let layout_ok = |i: usize, per: isize| -> bool {
        let (r, c) = (s.strides[i][nb], s.strides[i][nb + 1]);
        match orientation(r, c) {
            Some(true) => r % per == 0 && aligned(i, per),
            Some(false) => c % per == 0 && aligned(i, per),
            None => false,
        }
    };
    let why = if report.cooperative_matrix.is_none() {
        "the device runs no cooperative matrices (AdapterReport::cooperative_matrix)"
    } else if p.dtype != DType::F16 {
        "it multiplies float16 operands"
    } else if !s.m.is_multiple_of(frag(report)) || !s.n.is_multiple_of(frag(report)) || !s.k.is_multiple_of(frag(report)) || s.k == 0 {
        if frag(report) == 8 {
            "m, n and k must be multiples of 8 (k at least 8)"
        } else {
            "m, n and k must be multiples of 16 (k at least 16)"
        }
    } else if !layout_ok(0, 8) || !layout_ok(1, 8) {
        "A and B must each be row- or column-major, their pitch, batch strides and offset multiples of 8 elements"
    } else if !epilogue(p) && !p.out_half && !layout_ok(3, 4) {
        "without an epilogue the output must be row- or column-major, its pitch, batch strides and offset multiples of 4 floats"
    } else {
        return Ok(());
    };
    Err(Error::unsupported(p.op, format!("the kernel Coop does not apply to a product of m = {}, n = {}, k = {} (strides A {:?}, B {:?}, output {:?}): {why}", s.m, s.n, s.k, s.strides[0], s.strides[1], s.strides[3])))
}

/// Whether the automatic choice may take the kernel for `p` (it passed [`eligible`]): without
/// an epilogue, or with one where the device takes every tensor-core path
/// ([`CooperativeMatrix::all_paths`](crate::runtime::CooperativeMatrix)). The epilogue path
/// (`EPI`) passed the device test on Mesa 26's lavapipe (8 x 8 x 8 fragments) and its SPIR-V is
/// checked in every specialization (tests/shaders.rs), but no GPU has run it yet: until one
/// has, it is not offered unasked.
///
/// Nor where a float16 result goes through an f32 scratch (the device does not take every
/// path) of which one matrix would pass a binding: the call would fail, where the SIMT
/// kernels write the float16 result as they go.
pub(super) fn automatic(report: &AdapterReport, p: &Product<'_>) -> bool {
    let s = Shapes::of(p);
    let scratch_fits = writes_half(report) || s.m as u64 * s.n as u64 * 4 <= report.max_storage_buffer_binding_size;
    (!epilogue(p) || report.cooperative_matrix.is_some_and(|c| c.all_paths)) && scratch_fits
}

/// Whether the product goes through the epilogue (alpha, an addend, an activation): then the
/// kernel stores the output element by element, through any strides.
fn epilogue(p: &Product<'_>) -> bool {
    p.alpha != 1.0 || p.c.is_some() || p.activation != Activation::None
}

/// The most pipelines of the kernel with pitches compiled in, per context: past them a new set
/// of pitches is read from the uniform (0 for the constants), so that shapes that vary (a
/// sequence length) do not compile a pipeline each.
pub(super) const PITCH_SETS: usize = 16;

/// The pipeline constants of an eligible product: each operand's orientation and, with
/// `pitches`, its pitch (compiled in: 1.5x the speed of pitches read from the uniform on an
/// NVIDIA H200, at the price of a pipeline per set), `EPI` with an epilogue, and the
/// workgroup's size (four subgroups of the adapter's fixed size). The output's orientation and
/// pitch only matter for an f32 output without an epilogue; through the public API that output
/// is always the contiguous f32 scratch of a 16-bit result (row-major, pitch n), the other forms
/// untested. A float16 output (`matmul_coop_half`) always takes the epilogue's way.
pub(super) fn constants(report: &AdapterReport, p: &Product<'_>, s: &Shapes, pitches: bool) -> Vec<(&'static str, i64)> {
    let pitch = |i: usize| if pitches { pitch_of(s, i) } else { 0 };
    let wg = crate::kernels::coop::workgroup(report);
    // Through the epilogue's way (a float16 output always): no output orientation or pitch.
    if p.out_half || epilogue(p) {
        let mut c = vec![("A_ROWS", rows_of(s, 0) as i64), ("B_ROWS", rows_of(s, 1) as i64), ("A_PITCH", pitch(0)), ("B_PITCH", pitch(1))];
        if !p.out_half {
            c.push(("EPI", 1));
        }
        c.push(wg);
        return c;
    }
    vec![("A_ROWS", rows_of(s, 0) as i64), ("B_ROWS", rows_of(s, 1) as i64), ("Y_ROWS", rows_of(s, 3) as i64), ("A_PITCH", pitch(0)), ("B_PITCH", pitch(1)), ("Y_PITCH", pitch(3)), wg]
}

/// Whether operand `i` (0 A, 1 B, 3 the output) is row-major.
fn rows_of(s: &Shapes, i: usize) -> bool {
    let nb = s.batch.len();
    orientation(s.strides[i][nb], s.strides[i][nb + 1]).unwrap_or(true)
}

/// Operand `i`'s pitch: its row stride if row-major, else its column stride.
fn pitch_of(s: &Shapes, i: usize) -> i64 {
    let nb = s.batch.len();
    (if rows_of(s, i) { s.strides[i][nb] } else { s.strides[i][nb + 1] }) as i64
}
