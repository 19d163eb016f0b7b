//! The checks of an elementwise operation, shared by host and device: types, shapes, the
//! destination, overlap, and the plan. Nothing is written before they pass.

use crate::dtype::DType;
use crate::elementwise::types::{can_cast, common_type, int16_result, Arg, Common};
use crate::elementwise::{Op, Scalar};
use crate::error::{Error, Result};
use crate::layout::ops::broadcast_error;
use crate::layout::{Layout, MemoryFormat, Overlap};
use crate::plan::{compare_dims, reorder, IterPlan};
use crate::strided::Strided;

/// Where [`Elementwise::run`](crate::Elementwise::run) writes.
#[derive(Debug)]
pub enum Target<'a, T> {
    /// A new tensor in the inputs' memory order (PyTorch's rule; see
    /// [`output_layout`](crate::elementwise::output_layout)).
    New,
    /// The first input, which must be a tensor of the broadcast shape.
    InPlace,
    /// A given view of the broadcast shape (`out=`).
    Out(&'a T),
}

impl<T> Clone for Target<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Target<'_, T> {}

/// An input of an operation: a tensor, or a Python scalar.
#[derive(Debug)]
pub enum Input<'a, T> {
    /// A tensor (broadcast against the other inputs).
    Tensor(&'a T),
    /// A Python scalar.
    Scalar(Scalar),
}

impl<T> Clone for Input<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Input<'_, T> {}

impl<'a, T> From<&'a T> for Input<'a, T> {
    fn from(t: &'a T) -> Self {
        Input::Tensor(t)
    }
}
macro_rules! input_from {
    ($($t:ty),*) => { $(impl<T> From<$t> for Input<'_, T> { fn from(x: $t) -> Self { Input::Scalar(x.into()) } })* };
}
input_from!(i64, i32, u8, f64, f32, Scalar);

/// How the kernels hold a value while computing: f32 for float types, 32-bit integers else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Repr {
    F32,
    I32,
    U32,
}

impl Repr {
    pub(crate) fn of(d: DType) -> Repr {
        match d {
            DType::F32 | DType::F16 | DType::BF16 => Repr::F32,
            DType::U32 => Repr::U32,
            _ => Repr::I32,
        }
    }

    /// The representation as a [`DType`] to cast through.
    pub(crate) fn dtype(self) -> DType {
        match self {
            Repr::F32 => DType::F32,
            Repr::I32 => DType::I32,
            Repr::U32 => DType::U32,
        }
    }
}

/// An input slot of a resolved operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// Plan operand `k` (1 and up).
    Tensor(usize),
    /// A scalar, as bits of the computation's [`Repr`].
    Scalar(u32),
}

/// Bits of the arguments: [alpha or value, clamp min, clamp max, flags (1: min given, 2: max given)].
pub(crate) type Args = [u32; 4];

/// An operation ready to run: its plan (operand 0 the destination, then the tensor inputs)
/// and everything the arithmetic needs, with scalars converted once.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    pub op: Op,
    /// The type the op computes in (PyTorch's common dtype).
    pub compute: DType,
    /// The destination's type.
    pub out_dtype: DType,
    /// The destination's layout (for a new result: where to allocate it, at offset 0).
    pub out_layout: Layout,
    /// The type of each plan operand (0 the destination).
    pub types: Vec<DType>,
    pub slots: Vec<Slot>,
    pub args: Args,
    pub plan: IterPlan,
}

/// An operand scalar (`x + 300`) as bits of the computation type `compute`'s representation:
/// an int wraps to an integer type's width (two's complement), as PyTorch reads a wrapped
/// number into its kernels (uint8 `x + 300` adds 44; only op arguments are range-checked,
/// [`argument_bits`]); a float is float32's nearest value for a float computation (the
/// kernels compute 16-bit types in float32; `add` and `sub` then round it to the 16-bit type,
/// as PyTorch's CPU does) and an error for an integer one.
fn operand_bits(op: &'static str, value: Scalar, compute: DType) -> Result<u32> {
    Ok(match (value, compute) {
        (Scalar::Int(i), DType::I32 | DType::U32) => i as u32,
        (Scalar::Int(i), DType::I8) => i as i8 as i32 as u32,
        (Scalar::Int(i), DType::U8) => i as u8 as u32,
        _ => scalar_bits(op, "scalar", value, compute)?,
    })
}

/// An operand scalar of an op PyTorch computes in int16 (`int16`: uint8 with int8), wrapped
/// to int16 as PyTorch reads it (the kernels compute in 32 bits; `check_int16`).
fn int16_operand(s: Scalar, int16: bool) -> Scalar {
    match s {
        Scalar::Int(i) if int16 => Scalar::Int(i as i16 as i64),
        s => s,
    }
}

/// `value` as bits of the computation type `compute`'s representation; an int that does not
/// fit `compute` is an error, as PyTorch's `checked_convert` of an op's argument.
fn scalar_bits(op: &'static str, what: &str, value: Scalar, compute: DType) -> Result<u32> {
    let range = |lo: i64, hi: i64| -> Result<i64> {
        match value {
            Scalar::Int(i) if (lo..=hi).contains(&i) => Ok(i),
            Scalar::Int(i) => Err(Error::invalid(op, format!("{what} {i} cannot be converted to {compute} without overflow"))),
            Scalar::Float(x) => Err(Error::DType { op, got: format!("a float {what} ({x:?}) with {compute} operands"), expected: format!("an int {what} for an integer computation") }),
        }
    };
    Ok(match compute {
        DType::F32 | DType::F16 | DType::BF16 => match value {
            Scalar::Int(i) => (i as f32).to_bits(),
            Scalar::Float(x) => (x as f32).to_bits(),
        },
        DType::I32 => range(i32::MIN as i64, i32::MAX as i64)? as i32 as u32,
        // Unsigned types take negative ints down to -max, wrapping (PyTorch's `checked_convert`:
        // `a - b` may run as `a + max * b`).
        DType::U32 => range(-(u32::MAX as i64), u32::MAX as i64)? as u32,
        DType::I8 => range(-128, 127)? as i32 as u32,
        DType::U8 => (range(-255, 255)? as u32) & 0xff,
    })
}

/// An op's argument (alpha, value, a clamp bound) as [`scalar_bits`], where a finite float
/// past float32's range is an error too: PyTorch converts arguments with `checked_convert`
/// (an operand scalar, `x + 1e300`, becomes infinity there as here). 16-bit float operands
/// compute in float32 with their arguments in float32, as PyTorch's CUDA kernels take them
/// (`clamp(max=70000.0)` of float16: no clamp here and on CUDA, an error on PyTorch's CPU).
fn argument_bits(op: &'static str, what: &str, value: Scalar, compute: DType) -> Result<u32> {
    if let Scalar::Float(x) = value {
        if compute.is_float() && x.is_finite() && (x > f32::MAX as f64 || x < f32::MIN as f64) {
            return Err(Error::invalid(op, format!("{what} {x:?} cannot be converted to float32 without overflow")));
        }
    }
    scalar_bits(op, what, value, compute)
}

/// The range `[lo, hi]` of an integer computation type, and for the int16 computation of
/// uint8 with int8 (`int16`) int16's.
fn int_range(compute: DType, int16: bool) -> Option<(i64, i64)> {
    if int16 {
        return Some((i16::MIN as i64, i16::MAX as i64));
    }
    match compute {
        DType::I32 => Some((i32::MIN as i64, i32::MAX as i64)),
        DType::U32 => Some((0, u32::MAX as i64)),
        DType::I8 => Some((-128, 127)),
        DType::U8 => Some((0, 255)),
        _ => None,
    }
}

/// A float `value` of `addcmul` for an integer computation, as PyTorch's `value.to<int>()`:
/// within `[lo, hi + 1)` (no unsigned wrap of a negative value, unlike an int argument), then
/// truncated toward zero; else an error.
fn truncated_value(op: &'static str, x: f64, compute: DType, int16: bool) -> Result<Scalar> {
    let (lo, hi) = int_range(compute, int16).unwrap_or((i64::MIN, i64::MAX));
    if !(x >= lo as f64 && x < hi as f64 + 1.0) {
        return Err(Error::invalid(op, format!("value {x:?} cannot be converted to {} without overflow", if int16 { "int16".to_string() } else { compute.to_string() })));
    }
    Ok(Scalar::Int(x.trunc() as i64))
}

/// `addcmul`'s `value` for an integer computation: a float is checked and truncated as
/// [`truncated_value`]; a float computation takes it as [`argument_bits`].
fn addcmul_value_bits(op: &'static str, value: Scalar, compute: DType, int16: bool) -> Result<u32> {
    match value {
        Scalar::Float(x) if !compute.is_float() => argument_bits(op, "value", truncated_value(op, x, compute, int16)?, compute),
        _ => argument_bits(op, "value", value, compute),
    }
}

/// A clamp bound for an integer computation, as PyTorch takes it: an int bound past the
/// type's range on the side that clamps nothing (a `min` below it, a `max` above it) is
/// dropped (`None`); one past it on the other side would clamp every value outside the type,
/// an error. Float computations and bounds in range keep the bound.
fn int_clamp_bound(op: &'static str, what: &str, bound: Scalar, compute: DType) -> Result<Option<Scalar>> {
    let Some((lo, hi)) = int_range(compute, false) else { return Ok(Some(bound)) };
    let Scalar::Int(i) = bound else { return Ok(Some(bound)) };
    let below = i < lo;
    let above = i > hi;
    if (what == "min" && below) || (what == "max" && above) {
        return Ok(None);
    }
    if below || above {
        return Err(Error::invalid(op, format!("clamp {what} value {i} is outside the representable range [{lo}, {hi}] of {compute}")));
    }
    Ok(Some(bound))
}

/// `sub`'s alpha: PyTorch's `sub` is `add` of `-alpha` converted to the computation's type,
/// so an integer alpha's range is -alpha's (int8 takes alpha 128, not -128); the bits kept are
/// alpha's, wrapped to the type (x - alpha y and x + (-alpha) y agree modulo its width).
fn sub_alpha_bits(op: &'static str, alpha: Scalar, compute: DType) -> Result<u32> {
    match alpha {
        Scalar::Int(i) if !compute.is_float() => {
            let neg = i.checked_neg().ok_or_else(|| Error::invalid(op, format!("alpha {i} cannot be negated in int64")))?;
            let bits = argument_bits(op, "-alpha", Scalar::Int(neg), compute)?;
            Ok(if compute == DType::U8 { bits.wrapping_neg() & 0xff } else { bits.wrapping_neg() })
        }
        _ => argument_bits(op, "alpha", alpha, compute),
    }
}

/// The layout of an out-of-place result of `shape` computed from `inputs` (`scalars` more
/// inputs are Python scalars): PyTorch's TensorIterator rule. When every operand has the
/// result's shape and all are contiguous, or all channels-last, or all dense with the same
/// strides, the result takes that layout; otherwise its memory order is the inputs'
/// (ordered by their strides, the first input's first) and it is dense in that order.
///
/// ```
/// use strided_wgpu::advanced::internal::output_layout;
/// use strided_wgpu::{Layout, MemoryFormat};
/// let cl = Layout::with_format(&[8, 3, 4, 4], MemoryFormat::ChannelsLast).unwrap();
/// let nchw = Layout::contiguous(&[8, 3, 4, 4]).unwrap();
/// assert_eq!(output_layout(&[8, 3, 4, 4], &[&cl, &nchw], 0).unwrap(), cl);
/// assert_eq!(output_layout(&[8, 3, 4, 4], &[&nchw, &cl], 0).unwrap(), nchw);
/// let t = Layout::contiguous(&[4, 5]).unwrap().transpose(0, 1).unwrap();
/// assert_eq!(output_layout(&[5, 4], &[&t], 1).unwrap().strides(), &[1, 5]);
/// ```
///
/// Every input must broadcast to `shape`: an input with more dims is
/// [`Error::InvalidArgument`], a size that is neither equal nor 1 is [`Error::Broadcast`].
pub fn output_layout(shape: &[usize], inputs: &[&Layout], scalars: usize) -> Result<Layout> {
    for l in inputs {
        // `l.broadcast_to(shape)` succeeds, checked without building the layout.
        let broadcasts = l.rank() <= shape.len() && l.shape().iter().zip(&shape[shape.len() - l.rank()..]).all(|(&n, &t)| n == t || n == 1);
        if !broadcasts {
            return Err(broadcast_error("output_layout", l.shape(), shape));
        }
    }
    let same_shape = scalars == 0 || shape.is_empty();
    if same_shape && !inputs.is_empty() && inputs.iter().all(|l| l.shape() == shape) {
        if inputs.iter().all(|l| l.is_contiguous()) {
            return Layout::contiguous(shape);
        }
        if shape.len() == 4 && inputs.iter().all(|l| l.is_contiguous_for(MemoryFormat::ChannelsLast)) {
            return Layout::with_format(shape, MemoryFormat::ChannelsLast);
        }
        let first = inputs[inputs.len() - 1].strides();
        if inputs.iter().all(|l| non_overlapping_and_dense(l) && l.strides() == first) {
            return Layout::new(shape.to_vec(), first.to_vec(), 0);
        }
    }
    let rank = shape.len();
    // Each input's strides broadcast to `shape` (0 where it is broadcast), per dim.
    let strides: Vec<Vec<isize>> = inputs
        .iter()
        .map(|l| {
            let lead = rank - l.rank();
            (0..rank).map(|d| if d < lead || (l.shape()[d - lead] == 1 && shape[d] != 1) { 0 } else { l.strides()[d - lead] }).collect()
        })
        .collect();
    let dim_strides = |d: usize| -> Vec<isize> { strides.iter().map(|s| s[d]).collect() };
    let mut perm: Vec<usize> = (0..rank).rev().collect();
    reorder(&mut perm, |a, b| compare_dims(shape[a], &dim_strides(a), shape[b], &dim_strides(b)));
    if perm.iter().enumerate().all(|(j, &d)| d == rank - 1 - j) {
        return Layout::contiguous(shape);
    }
    let mut out = vec![0isize; rank];
    let mut next: isize = 1;
    for &d in &perm {
        out[d] = next;
        next = next.checked_mul(shape[d] as isize).ok_or_else(|| Error::overflow("output_layout", format!("strides of {shape:?}")))?;
    }
    Layout::new(shape.to_vec(), out, 0)
}

/// The layout of `x.to(..)`'s copy of `l` (PyTorch's `preserve_format`, at offset 0): the same
/// strides when the view is dense with no overlap (every empty view is), else dense in the
/// order of its strides.
pub(crate) fn preserved_layout(l: &Layout) -> Result<Layout> {
    match non_overlapping_and_dense(l) {
        true => Layout::new(l.shape().to_vec(), l.strides().to_vec(), 0),
        false => output_layout(l.shape(), &[l], 0),
    }
}

/// PyTorch's `is_non_overlapping_and_dense`: true for an empty view (PyTorch counts it
/// contiguous); else the dims of size > 1, sorted by stride, pack the elements with no gap and
/// no repeat.
pub(crate) fn non_overlapping_and_dense(l: &Layout) -> bool {
    if l.numel() == 0 {
        return true;
    }
    let mut dims: Vec<(usize, isize)> = l.shape().iter().zip(l.strides()).filter(|(&n, _)| n != 1).map(|(&n, &s)| (n, s)).collect();
    dims.sort_by_key(|&(n, s)| (s, n));
    let mut expected = 1isize;
    for (n, s) in dims {
        if s != expected {
            return false;
        }
        expected *= n as isize;
    }
    true
}

/// PyTorch's `infer_size` over several shapes: the error names both shapes and the dim
/// (counted from the right-aligned result) where neither size is 1 and they differ.
pub(crate) fn broadcast_shapes(op: &'static str, shapes: &[&[usize]]) -> Result<Vec<usize>> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1usize; rank];
    for s in shapes {
        let lead = rank - s.len();
        for (i, &n) in s.iter().enumerate() {
            let o = out[lead + i];
            if o == 1 {
                out[lead + i] = n;
            } else if n != 1 && n != o {
                return Err(Error::Broadcast { op, from: s.to_vec(), to: out.clone(), dim: lead + i, from_size: n, to_size: o });
            }
        }
    }
    Ok(out)
}

/// Which inputs of an elementwise call are read from a copy of their values: a tensor input in
/// the destination's storage that walks some dim the other way from it and partially overlaps
/// it ([`flipped_overlap`]). PyTorch has no negative strides (its `flip` copies), so
/// `x.add_(&x.flip(0))` reads the values from before the op there; any other partial overlap
/// is an error in both ([`resolve`]).
pub(crate) fn read_from_copies<T: Strided>(op: Op, inputs: &[Input<'_, T>], dest: Target<'_, T>, same_storage: impl Fn(&T, &T) -> bool) -> Vec<bool> {
    let d: &T = match (dest, inputs.first()) {
        (Target::Out(d), _) => d,
        (Target::InPlace, Some(Input::Tensor(d))) => d,
        _ => return vec![false; inputs.len()],
    };
    let shapes: Vec<&[usize]> = inputs.iter().filter_map(|i| if let Input::Tensor(t) = i { Some(t.shape()) } else { None }).collect();
    // (A destination of another shape is `resolve`'s error.)
    if broadcast_shapes(op.name(), &shapes).ok().as_deref() != Some(d.shape()) {
        return vec![false; inputs.len()];
    }
    inputs
        .iter()
        .map(|i| match i {
            Input::Tensor(t) if same_storage(d, t) => t.layout().broadcast_to(d.shape()).is_ok_and(|b| flipped_overlap(d.layout(), d.dtype(), &b, t.dtype())),
            _ => false,
        })
        .collect()
}

/// Whether an input `b` (broadcast to the destination's shape) in the destination's storage is
/// read from a copy of its values: the two walk some axis of their storage in opposite
/// directions (one is a `flip` or a negative-step slice of the other, which PyTorch would hold
/// as a copy) and partially overlap. A storage axis is told by its stride in bytes, whatever
/// the dim it is at: `y.add_(&y.t())` of a flipped `y` walks both axes as `y` does (an error, as
/// PyTorch's `x.add_(x.t())`), `x.flip(0).add_(&x.t().flip(0))` walks one the other way.
pub(crate) fn flipped_overlap(dst: &Layout, dst_t: DType, b: &Layout, b_t: DType) -> bool {
    // The byte strides of the axes a view walks backwards (its dims of more than one element).
    let backwards = |l: &Layout, size: usize| {
        let mut v: Vec<usize> = l.strides().iter().zip(l.shape()).filter(|&(&s, &n)| s < 0 && n > 1).map(|(&s, _)| s.unsigned_abs() * size).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    backwards(dst, dst_t.size()) != backwards(b, b_t.size()) && !matches!(typed_overlap(dst, dst_t, b, b_t), Overlap::Full | Overlap::Disjoint)
}

/// The copies of the inputs that [`read_from_copies`] marks, made by `copy` (a contiguous
/// tensor of the input's values, recorded or run before the op), `None` for the others; `None`
/// in all, without allocating, where no input but the destination itself is in its storage
/// (nearly every call).
pub(crate) fn input_copies<T: Strided>(op: Op, inputs: &[Input<'_, T>], dest: Target<'_, T>, same_storage: impl Fn(&T, &T) -> bool, mut copy: impl FnMut(&T) -> Result<T>) -> Result<Option<Vec<Option<T>>>> {
    let d: &T = match (dest, inputs.first()) {
        (Target::Out(d), _) => d,
        (Target::InPlace, Some(Input::Tensor(d))) => d,
        _ => return Ok(None),
    };
    if !inputs.iter().any(|i| matches!(i, Input::Tensor(t) if !std::ptr::eq(*t, d) && same_storage(d, t))) {
        return Ok(None);
    }
    let marked = read_from_copies(op, inputs, dest, same_storage);
    if !marked.contains(&true) {
        return Ok(None);
    }
    inputs.iter().zip(marked).map(|(i, m)| match (i, m) { (Input::Tensor(t), true) => copy(t).map(Some), _ => Ok(None) }).collect::<Result<Vec<_>>>().map(Some)
}

/// `inputs` with each input that has a copy ([`input_copies`]) replaced by it; `inputs` as they
/// are where none has.
pub(crate) fn swapped<'b, T>(inputs: &'b [Input<'b, T>], copies: &'b Option<Vec<Option<T>>>) -> std::borrow::Cow<'b, [Input<'b, T>]> {
    match copies {
        Some(c) => inputs.iter().zip(c).map(|(i, c)| match c { Some(c) => Input::Tensor(c), None => *i }).collect(),
        None => std::borrow::Cow::Borrowed(inputs),
    }
}

/// Resolves `op` over `inputs` into `dest`, checking everything first: the number of inputs,
/// the types (promotion, the op's type rules, a destination the result can be cast to),
/// the shapes (broadcasting, a destination of the broadcast shape), and overlap (a
/// destination reaching an element twice, or sharing elements with an input at other
/// positions; exact aliasing as in `a.add_(a)` is fine; an input with a negative stride is
/// read from a copy first, [`read_from_copies`]). `same_storage` tells whether two
/// tensors share storage. Returns the resolution, the destination's layout for a new
/// result, and the tensor inputs in plan order.
pub(crate) fn resolve<'a, T: Strided>(op: Op, inputs: &[Input<'a, T>], dest: Target<'a, T>, same_storage: impl Fn(&T, &T) -> bool) -> Result<(Resolved, Vec<&'a T>)> {
    let name = op.name();
    if inputs.len() != op.arity() {
        return Err(Error::invalid(name, format!("takes {} inputs, got {}", op.arity(), inputs.len())));
    }
    let tensors: Vec<&T> = inputs.iter().filter_map(|i| if let Input::Tensor(t) = i { Some(*t) } else { None }).collect();
    if tensors.is_empty() {
        return Err(Error::invalid(name, "needs at least one tensor input"));
    }
    // Types.
    let mut args: Vec<Arg> = Vec::with_capacity(inputs.len() + 2);
    args.extend(inputs.iter().map(|i| match i {
        Input::Tensor(t) => Arg::Tensor(t.dtype(), t.rank()),
        Input::Scalar(s) => Arg::Scalar(*s),
    }));
    args.extend(op.promoted_args().into_iter().map(Arg::Scalar));
    // uint8 with int8 computes in int16 (PyTorch), which no tensor here stores: a new result is
    // an error, and an in-place or `out=` one computes in 32 bits and converts at the store
    // (checked below to equal int16 arithmetic).
    // A float-only op's integer operands stay integer here, for the check below (mapped to
    // float32 first, they passed it).
    let (common, int16) = match common_type(name, &args, op.computes_in_float() && !op.float_only())? {
        Common::Stored(d) => (d, false),
        Common::Int16 if matches!(dest, Target::New) => return Err(int16_result(name)),
        Common::Int16 => (DType::I32, true),
    };
    if op.float_only() && !common.is_float() {
        return Err(Error::DType { op: name, got: common.to_string(), expected: "a float type".into() });
    }
    let compute = if op.computes_in_float() && !common.is_float() { DType::F32 } else { common };
    // Shapes and the destination.
    let shapes: Vec<&[usize]> = tensors.iter().map(|t| t.shape()).collect();
    let layouts: Vec<&Layout> = tensors.iter().map(|t| t.layout()).collect();
    let shape = broadcast_shapes(name, &shapes)?;
    let dest_tensor = match dest {
        Target::New => None,
        Target::InPlace => match inputs[0] {
            Input::Tensor(t) => Some(t),
            Input::Scalar(_) => return Err(Error::invalid(name, "an in-place op needs a tensor as its first input")),
        },
        Target::Out(t) => Some(t),
    };
    let (out_layout, out_dtype) = match dest_tensor {
        None => {
            match op {
                Op::To(d) => (preserved_layout(tensors[0].layout())?, d),
                _ => (output_layout(&shape, &layouts, inputs.len() - tensors.len())?, compute),
            }
        }
        Some(d) => {
            if d.shape() != shape.as_slice() {
                return Err(Error::invalid(name, format!("the destination's shape {:?} does not match the broadcast shape {shape:?} of the inputs {shapes:?}", d.shape())));
            }
            // maximum/minimum in place are `a.copy_(maximum(a, b))`: any type converts (into a
            // given `out=` view PyTorch checks the cast, as for every op).
            let copies = matches!(op, Op::To(_)) || (matches!(op, Op::Maximum | Op::Minimum) && matches!(dest, Target::InPlace));
            if !copies && !can_cast(compute, d.dtype()) {
                return Err(Error::DType { op: name, got: format!("result type {compute}"), expected: format!("a type that can be cast to the destination's {}", d.dtype()) });
            }
            // PyTorch's unary ops that keep their input's type (`neg`, `abs`, rounding, `clamp`)
            // write an `out=` tensor of that type only ("Found dtype Half but expected Float").
            // (`relu`, `gelu` and `silu` too: their functional forms take no `out=`, but their
            // `aten` out forms refuse another type.)
            let keeps_type = matches!(op, Op::Neg | Op::Abs | Op::Relu | Op::Gelu | Op::GeluTanh | Op::Silu | Op::Floor | Op::Ceil | Op::Round | Op::Trunc | Op::Clamp { .. });
            if keeps_type && matches!(dest, Target::Out(_)) && d.dtype() != compute {
                return Err(Error::DType { op: name, got: format!("an out= destination of {}", d.dtype()), expected: format!("{compute}, the result's type ({name} converts into no other type)") });
            }
            if d.layout().has_internal_overlap() {
                return Err(Error::Overlap { op: name, detail: format!("the destination (shape {:?}, strides {:?}) reaches some element more than once", d.shape(), d.strides()) });
            }
            for t in &tensors {
                if !same_storage(d, t) {
                    continue;
                }
                let b = t.layout().broadcast_to(&shape)?;
                let overlap = typed_overlap(d.layout(), d.dtype(), &b, t.dtype());
                if overlap != Overlap::Full && overlap != Overlap::Disjoint {
                    return Err(Error::Overlap {
                        op: name,
                        detail: format!(
                            "the destination (shape {:?}, strides {:?}, offset {}) partially overlaps an input (shape {:?}, strides {:?}, offset {})",
                            d.shape(),
                            d.strides(),
                            d.storage_offset(),
                            t.shape(),
                            t.strides(),
                            t.storage_offset()
                        ),
                    });
                }
            }
            (d.layout().clone(), d.dtype())
        }
    };
    // Scalars and arguments, as bits of the computation.
    let mut slots = Vec::with_capacity(inputs.len());
    let mut k = 0;
    for i in inputs {
        slots.push(match i {
            Input::Tensor(_) => {
                k += 1;
                Slot::Tensor(k)
            }
            Input::Scalar(s) => {
                let bits = operand_bits(name, int16_operand(*s, int16), compute)?;
                // PyTorch's CPU `add` and `sub` take a scalar beside float16 or bfloat16
                // tensors rounded to their type (`mul` and `div` take its float32 value).
                let rounded = matches!(op, Op::Add { .. } | Op::Sub { .. }) && matches!(compute, DType::F16 | DType::BF16);
                Slot::Scalar(if rounded { crate::dtype::float_bits_to_f32(compute, crate::dtype::f32_bits_to_float(compute, bits)) } else { bits })
            }
        });
    }
    let mut a: Args = [0; 4];
    match op {
        Op::Add { alpha } => a[0] = argument_bits(name, "alpha", alpha, compute)?,
        Op::Sub { alpha } => a[0] = sub_alpha_bits(name, alpha, compute)?,
        Op::Addcmul { value } => a[0] = addcmul_value_bits(name, value, compute, int16)?,
        Op::Clamp { min, max } => {
            if min.is_none() && max.is_none() {
                return Err(Error::invalid(name, "at least one of min and max must be given"));
            }
            let min = min.map(|m| int_clamp_bound(name, "min", m, compute)).transpose()?.flatten();
            let max = max.map(|m| int_clamp_bound(name, "max", m, compute)).transpose()?.flatten();
            if let Some(m) = min {
                a[1] = argument_bits(name, "min", m, compute)?;
                a[3] |= 1;
            }
            if let Some(m) = max {
                a[2] = argument_bits(name, "max", m, compute)?;
                a[3] |= 2;
            }
        }
        _ => {}
    }
    if int16 {
        check_int16(op, inputs, out_dtype)?;
    }
    let plan = IterPlan::build(name, &out_layout, &layouts)?;
    let mut types = Vec::with_capacity(tensors.len() + 1);
    types.push(out_dtype);
    types.extend(tensors.iter().map(|t| t.dtype()));
    Ok((Resolved { op, compute, out_dtype, out_layout, types, slots, args: a, plan }, tensors))
}

/// Checks that an op PyTorch computes in int16 (uint8 with int8), computed here in 32 bits and
/// converted to the destination's type `out`, gives PyTorch's bits. PyTorch converts every
/// scalar to int16 first (an argument outside its range is an error, an operand scalar wraps)
/// and wraps at 16 bits. Sums,
/// differences and products agree modulo 2^16 in either width, and max/min pick an input, so
/// an 8-bit destination always gets PyTorch's bits. A wider one gets them where no result can
/// leave int16, which interval arithmetic over the operands' ranges tells (mul of uint8 by
/// int8 lies in [-32640, 32385]; add and sub fit for a multiplier up to 127 in magnitude;
/// addcmul of two uint8 factors does not); the other cases are refused, naming the ranges.
fn check_int16<T: Strided>(op: Op, inputs: &[Input<'_, T>], out: DType) -> Result<()> {
    let name = op.name();
    const I16: (i64, i64) = (i16::MIN as i64, i16::MAX as i64);
    let fits = |what: &str, s: Scalar| match s {
        Scalar::Int(i) if !(I16.0..=I16.1).contains(&i) => Err(Error::invalid(name, format!("{what} {i} cannot be converted to int16 (the type uint8 with int8 computes in) without overflow"))),
        _ => Ok(()),
    };
    let mut ranges = Vec::with_capacity(inputs.len());
    for i in inputs {
        ranges.push(match *i {
            Input::Tensor(t) => match t.dtype() {
                DType::U8 => (0, 255),
                DType::I8 => (-128, 127),
                // A 0-d tensor of a wider integer type beside them still computes in int16
                // (0-d tensors lose within their category): its value is not known here, so
                // only an 8-bit destination, where 32-bit and int16 arithmetic agree in every
                // kept bit, is certain to match PyTorch.
                _ if out.size() == 1 => (0, 0),
                d => {
                    return Err(Error::unsupported(
                        name,
                        format!("uint8 with int8 and a 0-d {d} tensor (PyTorch computes in int16, wrapping at 16 bits) into a {out} destination: served into a uint8 or int8 destination"),
                    ))
                }
            },
            // An operand scalar wraps to int16 (`int16_operand`); a float one never joins an
            // integer computation (`operand_bits` refuses it).
            Input::Scalar(s) => match int16_operand(s, true) {
                Scalar::Int(i) => (i, i),
                Scalar::Float(_) => (0, 0),
            },
        });
    }
    let int = |what: &str, s: Scalar| -> Result<(i64, i64)> {
        // A float `value` of addcmul is checked and truncated (`truncated_value`).
        let s = match s {
            Scalar::Float(x) => truncated_value(name, x, DType::I32, true)?,
            s => s,
        };
        fits(what, s)?;
        Ok(match s {
            Scalar::Int(i) => (i, i),
            Scalar::Float(_) => (0, 0),
        })
    };
    let mul = |a: (i64, i64), b: (i64, i64)| {
        let p = [a.0 * b.0, a.0 * b.1, a.1 * b.0, a.1 * b.1];
        (*p.iter().min().unwrap_or(&0), *p.iter().max().unwrap_or(&0))
    };
    let range = match op {
        Op::Add { alpha } => {
            let m = mul(int("alpha", alpha)?, ranges[1]);
            (ranges[0].0 + m.0, ranges[0].1 + m.1)
        }
        // `add` of -alpha, as PyTorch converts it (see `sub_alpha_bits`).
        Op::Sub { alpha } => {
            let neg = match alpha {
                Scalar::Int(i) => Scalar::Int(i.saturating_neg()),
                s => s,
            };
            let m = mul(int("-alpha", neg)?, ranges[1]);
            (ranges[0].0 + m.0, ranges[0].1 + m.1)
        }
        Op::Mul => mul(ranges[0], ranges[1]),
        Op::Addcmul { value } => {
            let m = mul(mul(int("value", value)?, ranges[1]), ranges[2]);
            (ranges[0].0 + m.0, ranges[0].1 + m.1)
        }
        Op::Maximum | Op::Minimum => (ranges.iter().map(|r| r.0).min().unwrap_or(0), ranges.iter().map(|r| r.1).max().unwrap_or(0)),
        // Unary ops take one tensor, which never promotes to int16.
        _ => return Err(int16_result(name)),
    };
    if out.size() == 1 || (I16.0 <= range.0 && range.1 <= I16.1) {
        return Ok(());
    }
    Err(Error::unsupported(
        name,
        format!(
            "uint8 with int8 (PyTorch computes in int16, wrapping at 16 bits) into a {out} destination, with results up to [{}, {}]: served into a uint8 or int8 destination, or where every result fits int16",
            range.0, range.1
        ),
    ))
}

/// How two views of one storage overlap when they may read it as different types (two
/// `from_buffer` views of one wgpu buffer). Element indices compare only between types of one
/// size; otherwise an index means different bytes in each, so only disjoint byte spans count as
/// `Disjoint`, and anything else is `Partial`.
pub(crate) fn typed_overlap(a: &Layout, a_type: DType, b: &Layout, b_type: DType) -> Overlap {
    if a_type.size() == b_type.size() {
        return a.overlap(b);
    }
    match (byte_span(a, a_type), byte_span(b, b_type)) {
        (Some((a0, a1)), Some((b0, b1))) if a0 < b1 && b0 < a1 => Overlap::Partial,
        _ => Overlap::Disjoint,
    }
}

/// The bytes [start, end) a view of `dtype` elements reaches, if any.
fn byte_span(l: &Layout, dtype: DType) -> Option<(usize, usize)> {
    l.span().map(|(lo, hi)| (lo * dtype.size(), (hi + 1) * dtype.size()))
}
