//! What a reduction computes, checked once for host and device alike: the dims, the shapes,
//! the types and the empty-reduction rules (host values; no tensor).

use crate::dtype::DType;
use crate::elementwise::resolve::typed_overlap;
use crate::error::{Error, Result};
use crate::layout::{wrap_dim, Layout, Overlap};
use crate::strided::Strided;

/// The dims a reduction runs over: every dim (PyTorch's `dim=None`), or a list (one dim is
/// a list of one). Negative dims count from the end; an empty list means every dim, as
/// `amax(dim=())`. Built from `isize`, `Option<isize>`, arrays, slices and vectors of `isize`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dims {
    /// Every dim.
    All,
    /// These dims (each at most once).
    List(Vec<isize>),
}

impl From<isize> for Dims {
    fn from(d: isize) -> Dims {
        Dims::List(vec![d])
    }
}
impl From<Option<isize>> for Dims {
    fn from(d: Option<isize>) -> Dims {
        d.map_or(Dims::All, Dims::from)
    }
}
impl From<Vec<isize>> for Dims {
    fn from(d: Vec<isize>) -> Dims {
        Dims::List(d)
    }
}
impl From<&[isize]> for Dims {
    fn from(d: &[isize]) -> Dims {
        Dims::List(d.to_vec())
    }
}
impl<const N: usize> From<[isize; N]> for Dims {
    fn from(d: [isize; N]) -> Dims {
        Dims::List(d.to_vec())
    }
}

/// A reduction (see [`Reduce`](crate::Reduce) for each one's semantics).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ReduceOp {
    /// `sum`.
    Sum,
    /// `mean`.
    Mean,
    /// `prod`.
    Prod,
    /// `amax`.
    Amax,
    /// `amin`.
    Amin,
    /// `argmax`.
    Argmax,
    /// `argmin`.
    Argmin,
    /// `max(dim)`: values and indices.
    Max,
    /// `min(dim)`: values and indices.
    Min,
    /// `var` with Bessel's `correction`.
    Var {
        /// Subtracted from the count in the divisor.
        correction: f64,
    },
    /// `std` with `correction`.
    Std {
        /// Subtracted from the count in the divisor.
        correction: f64,
    },
    /// `linalg.vector_norm` of order `p` (1, 2 or infinity).
    Norm {
        /// The order.
        p: f64,
    },
    /// `logsumexp`.
    Logsumexp,
}

impl ReduceOp {
    /// PyTorch's name of the op.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Mean => "mean",
            ReduceOp::Prod => "prod",
            ReduceOp::Amax => "amax",
            ReduceOp::Amin => "amin",
            ReduceOp::Argmax => "argmax",
            ReduceOp::Argmin => "argmin",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Var { .. } => "var",
            ReduceOp::Std { .. } => "std",
            ReduceOp::Norm { .. } => "norm",
            ReduceOp::Logsumexp => "logsumexp",
        }
    }
    /// Whether the op has no value for an empty reduction (an error there).
    fn needs_elements(self) -> bool {
        matches!(self, ReduceOp::Amax | ReduceOp::Amin | ReduceOp::Argmax | ReduceOp::Argmin | ReduceOp::Max | ReduceOp::Min)
            || matches!(self, ReduceOp::Norm { p } if p.is_infinite())
    }
    /// Whether the op returns indices (as its result, or beside the values).
    pub fn has_indices(self) -> bool {
        matches!(self, ReduceOp::Argmax | ReduceOp::Argmin | ReduceOp::Max | ReduceOp::Min)
    }
}

/// An op along one dim whose result has the input's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanOp {
    /// `softmax`.
    Softmax,
    /// `log_softmax`.
    LogSoftmax,
    /// `cumsum`.
    Cumsum,
}

impl ScanOp {
    /// PyTorch's name of the op.
    pub fn name(self) -> &'static str {
        match self {
            ScanOp::Softmax => "softmax",
            ScanOp::LogSoftmax => "log_softmax",
            ScanOp::Cumsum => "cumsum",
        }
    }
}

/// A checked reduction.
#[derive(Clone, Debug, PartialEq)]
pub struct ReduceSpec {
    /// The op (the caller's, but a 2-norm over one element: the 1-norm, PyTorch's absolute
    /// value; not for a 0-d input with a dim listed, which PyTorch squares).
    pub op: ReduceOp,
    /// Whether each input dim is reduced (a 0-d input has none: it reduces its one element).
    pub reduced: Vec<bool>,
    /// The result's shape with every reduced dim kept as 1.
    pub keep_shape: Vec<usize>,
    /// The result's shape (`keep_shape`, or without the reduced dims).
    pub out_shape: Vec<usize>,
    /// Elements that each result reads.
    pub extent: usize,
    /// The type the input is converted to before the reduction (`dtype=`, else the input's).
    pub cast_to: DType,
    /// The type of the values (the indices' for `argmax` / `argmin`).
    pub out_dtype: DType,
}

impl ReduceSpec {
    /// The number of results.
    pub fn outputs(&self) -> usize {
        self.out_shape.iter().product()
    }
    /// The contiguous result of `keep_shape` seen with the input's shape: stride 0 along every
    /// reduced dim (the output operand of the reduction's iteration plan).
    pub fn expanded_output(&self, in_shape: &[usize]) -> Result<Layout> {
        let l = Layout::contiguous(&self.keep_shape)?;
        let strides: Vec<isize> = l.strides().iter().zip(&self.reduced).map(|(&s, &r)| if r { 0 } else { s }).collect();
        Layout::new(in_shape.to_vec(), strides, 0)
    }
}

/// Checks a reduction of an input of `layout` and `dtype`; `dtype_arg` is PyTorch's `dtype=`.
pub fn reduce_spec(op: ReduceOp, layout: &Layout, dtype: DType, dims: &Dims, keepdim: bool, dtype_arg: Option<DType>) -> Result<ReduceSpec> {
    let name = op.name();
    let shape = layout.shape();
    let rank = shape.len();
    let mut reduced = vec![false; rank];
    match dims {
        Dims::List(list) if !list.is_empty() => {
            // A 0-d input takes dims 0 and -1, each once (PyTorch: "dim 0 appears multiple times").
            let mut scalar_dim = false;
            for &d in list {
                let w = wrap_dim(name, d, rank, true)?;
                if rank == 0 {
                    if std::mem::replace(&mut scalar_dim, true) {
                        return Err(Error::invalid(name, format!("dim 0 appears more than once in the list of dims {list:?} (a 0-d input)")));
                    }
                    continue;
                }
                if reduced[w] {
                    return Err(Error::invalid(name, format!("dim {w} appears more than once in the list of dims {list:?} (input shape {shape:?})")));
                }
                reduced[w] = true;
            }
        }
        _ => reduced.iter_mut().for_each(|r| *r = true),
    }
    let float_only = |what: &str| -> Result<()> {
        if dtype.is_float() {
            Ok(())
        } else {
            Err(Error::DType { op: name, got: dtype.to_string(), expected: format!("a float type ({what})") })
        }
    };
    let (cast_to, out_dtype) = match (op, dtype_arg) {
        (ReduceOp::Sum, Some(d)) if d.is_float() || d == DType::I32 => (d, d),
        (ReduceOp::Mean, Some(d)) if d.is_float() => (d, d),
        (ReduceOp::Sum | ReduceOp::Mean, Some(d)) => return Err(Error::invalid(name, format!("dtype={d} is not a float type{}", if op == ReduceOp::Sum { " or int32" } else { "" }))),
        (_, Some(d)) => return Err(Error::invalid(name, format!("dtype={d} applies to sum and mean only"))),
        (ReduceOp::Sum | ReduceOp::Prod, None) => (dtype, if dtype.is_float() { dtype } else { DType::I32 }),
        (ReduceOp::Mean, None) => {
            if !dtype.is_float() {
                return Err(Error::invalid(name, format!("could not infer the output type: the input is {dtype}; pass a float dtype (mean_dtype)")));
            }
            (dtype, dtype)
        }
        (ReduceOp::Amax | ReduceOp::Amin | ReduceOp::Max | ReduceOp::Min | ReduceOp::Argmax | ReduceOp::Argmin, None) => {
            if dtype == DType::U32 {
                return Err(Error::DType { op: name, got: dtype.to_string(), expected: "any type but uint32 (PyTorch does not implement it)".into() });
            }
            (dtype, if matches!(op, ReduceOp::Argmax | ReduceOp::Argmin) { DType::I32 } else { dtype })
        }
        (ReduceOp::Var { .. } | ReduceOp::Std { .. }, None) => {
            float_only("var and std are defined for floats")?;
            (dtype, dtype)
        }
        (ReduceOp::Norm { p }, None) => {
            float_only("vector_norm needs a float input")?;
            if !(p == 1.0 || p == 2.0 || p == f64::INFINITY) {
                return Err(Error::unsupported(name, format!("ord={p}: only 1, 2 and inf are implemented")));
            }
            (dtype, dtype)
        }
        (ReduceOp::Logsumexp, None) => {
            let t = if dtype.is_float() { dtype } else { DType::F32 };
            (t, t)
        }
    };
    // The reduced elements of one output: a product that can pass usize where the input is
    // empty (its other dims multiply without bound). Where no output is (a kept dim of 0) it
    // is never counted, and saturates (PyTorch: `as_strided(.., (0, 2**40, 2**40), (0, 0,
    // 0)).sum((1, 2))` is an empty result).
    let no_output = shape.iter().zip(&reduced).any(|(&n, &r)| !r && n == 0);
    let extent = match product(shape.iter().zip(&reduced).filter(|(_, &r)| r).map(|(&n, _)| n)) {
        Some(e) => e,
        None if no_output => usize::MAX,
        None => return Err(Error::overflow(name, format!("the elements of one output of a reduction over dims {dims:?} of shape {shape:?} past usize"))),
    };
    // PyTorch's `vector_norm` over one element is its absolute value (no square to overflow
    // or underflow): the 1-norm's.
    // (A 0-d input with a dim listed squares in PyTorch 2.15: its size check reads past the
    // shape.)
    let zero_d_dim = layout.rank() == 0 && matches!(dims, Dims::List(l) if !l.is_empty());
    let op = match op {
        ReduceOp::Norm { p } if extent == 1 && p == 2.0 && !zero_d_dim => ReduceOp::Norm { p: 1.0 },
        op => op,
    };
    if extent == 0 && op.needs_elements() {
        return Err(Error::invalid(name, format!("the reduction over dims {dims:?} of an input of shape {shape:?} has no elements, and {name} has no identity")));
    }
    // Indices (PyTorch's int64) are int32 here: an extent past 2^31 has positions they cannot
    // hold (an error, not a wrap to negative); none is written where the input is empty.
    if op.has_indices() && extent > i32::MAX as usize + 1 && !shape.contains(&0) {
        return Err(Error::Limit { op: name, what: format!("the int32 indices of a reduction over {extent} elements (dims {dims:?} of shape {shape:?})"), limit: "int32 indices", requested: extent as u64 - 1, max: i32::MAX as u64 });
    }
    let keep_shape: Vec<usize> = shape.iter().zip(&reduced).map(|(&n, &r)| if r { 1 } else { n }).collect();
    let out_shape: Vec<usize> = if keepdim { keep_shape.clone() } else { shape.iter().zip(&reduced).filter(|(_, &r)| !r).map(|(&n, _)| n).collect() };
    if product(out_shape.iter().copied()).is_none() {
        return Err(Error::overflow(name, format!("the output of a reduction over dims {dims:?} of shape {shape:?} has more than usize::MAX elements")));
    }
    Ok(ReduceSpec { op, reduced, keep_shape, out_shape, extent, cast_to, out_dtype })
}

/// A checked op along one dim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanSpec {
    /// The op.
    pub op: ScanOp,
    /// The dim (wrapped; 0 for a 0-d input).
    pub dim: usize,
    /// The result's type.
    pub out_dtype: DType,
    /// The new result's layout: the input's shape, contiguous (PyTorch's `_softmax`,
    /// `_log_softmax` and cumulative ops allocate their output so, whatever the input's
    /// strides).
    pub out_layout: Layout,
}

/// Checks `op` along `dim` of an input of `layout` and `dtype`.
pub fn scan_spec(op: ScanOp, layout: &Layout, dtype: DType, dim: isize) -> Result<ScanSpec> {
    let name = op.name();
    let dim = wrap_dim(name, dim, layout.rank(), true)?;
    let out_dtype = match op {
        ScanOp::Cumsum if !dtype.is_float() => DType::I32,
        ScanOp::Cumsum => dtype,
        _ if dtype.is_float() => dtype,
        _ => return Err(Error::DType { op: name, got: dtype.to_string(), expected: "a float type".into() }),
    };
    let out_layout = Layout::contiguous(layout.shape())?;
    Ok(ScanSpec { op, dim, out_dtype, out_layout })
}

/// An `out=` of a result of `shape` and `dtype` (`what`: "out" or "indices"): the same shape
/// and type, no element reached twice, no overlap with the input of `in_dtype` (`shares`:
/// whether they share storage; the bytes compared where the types' sizes differ, as two
/// views of one device buffer may be).
#[allow(clippy::too_many_arguments)]
pub(crate) fn check_out(op: &'static str, what: &str, shape: &[usize], dtype: DType, out: &Layout, out_dtype: DType, input: &Layout, in_dtype: DType, shares: bool) -> Result<()> {
    if out.shape() != shape || out_dtype != dtype {
        return Err(Error::invalid(op, format!("{what} must be {dtype} of shape {shape:?}, got {out_dtype} of shape {:?}", out.shape())));
    }
    if out.has_internal_overlap() {
        return Err(Error::Overlap { op, detail: format!("{what} (shape {:?}, strides {:?}) reaches an element twice", out.shape(), out.strides()) });
    }
    if shares && typed_overlap(out, out_dtype, input, in_dtype) != Overlap::Disjoint {
        return Err(Error::Overlap { op, detail: format!("{what} (shape {:?}, strides {:?}) overlaps the input (shape {:?}, strides {:?})", out.shape(), out.strides(), input.shape(), input.strides()) });
    }
    Ok(())
}

/// The `out=` targets of a reduction: values (and indices for `max` / `min`, both or neither)
/// of the result's shape and types, overlapping neither the input nor each other (`shares`:
/// whether two tensors share storage).
pub(crate) fn check_targets<T: Strided>(name: &'static str, s: &ReduceSpec, x: &T, out: Option<&T>, indices: Option<&T>, shares: impl Fn(&T, &T) -> bool) -> Result<()> {
    let both = matches!(s.op, ReduceOp::Max | ReduceOp::Min);
    match (out, indices) {
        (None, None) => return Ok(()),
        (Some(_), None) if !both => {}
        (Some(_), Some(_)) if both => {}
        _ => return Err(Error::invalid(name, if both { "max/min into given tensors needs both values and indices" } else { "this op writes no indices" })),
    }
    if let Some(o) = out {
        check_out(name, "out", &s.out_shape, s.out_dtype, o.layout(), o.dtype(), x.layout(), x.dtype(), shares(o, x))?;
    }
    if let (Some(o), Some(i)) = (out, indices) {
        check_out(name, "indices", &s.out_shape, DType::I32, i.layout(), i.dtype(), x.layout(), x.dtype(), shares(i, x))?;
        if shares(i, o) && typed_overlap(i.layout(), i.dtype(), o.layout(), o.dtype()) != Overlap::Disjoint {
            return Err(Error::Overlap { op: name, detail: format!("values (strides {:?}) and indices (strides {:?}) overlap", o.strides(), i.strides()) });
        }
    }
    Ok(())
}

/// The product of `sizes`: 0 where any is 0 (whatever the others multiply to), `None` past usize.
fn product(mut sizes: impl Iterator<Item = usize> + Clone) -> Option<usize> {
    if sizes.clone().any(|n| n == 0) {
        return Some(0);
    }
    sizes.try_fold(1usize, |a, n| a.checked_mul(n))
}
