//! Matrix products: `matmul`, `mm`, `bmm`, `linear` and `addmm` with PyTorch's shape rules
//! (host values only: shapes, dtypes and the plan every implementation executes), and the CPU
//! reference (`cpu`, on host tensors).
//!
//! Every form reduces to one [`MatmulPlan`]: a batch of products `A [batch.., m, k] @
//! B [batch.., k, n]`, each operand a strided view (batch strides may be 0: broadcast; the last
//! two dims in either order, negative steps included), followed by an epilogue
//! `act(alpha * (A @ B) + beta * C)` where `C` is the bias of `linear` or the input of
//! `addmm`, broadcast to `[batch.., m, n]` (with `beta == 0` it is not read). Operands are
//! float32, float16 or bfloat16, all of one type; the result has that type and is accumulated
//! in float32 on the device and float64 in the reference.

mod cpu;

pub use cpu::matmul_cpu;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::elementwise::{Input, Op, Scalar, Target};
use crate::layout::{Layout, Overlap};

/// An activation applied to the product after bias and scaling (the fused epilogue).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Activation {
    /// None.
    #[default]
    None,
    /// `relu`: x where x > 0, NaN stays NaN, 0 elsewhere.
    Relu,
    /// `gelu`, the erf form (`approximate="none"`).
    Gelu,
}

impl Activation {
    /// The activation's code in the kernels' uniforms (0 none, 1 relu, 2 gelu).
    pub fn code(self) -> u32 {
        match self {
            Activation::None => 0,
            Activation::Relu => 1,
            Activation::Gelu => 2,
        }
    }

    /// The activation as an elementwise op (`None` for none).
    pub(crate) fn op(self) -> Option<crate::elementwise::Op> {
        match self {
            Activation::None => None,
            Activation::Relu => Some(crate::elementwise::Op::Relu),
            Activation::Gelu => Some(crate::elementwise::Op::Gelu),
        }
    }
}

/// One checked matrix product: `act(alpha * (a @ b) + beta * c)` over a batch, with every
/// operand seen as a view of its storage of the batched shape.
#[derive(Clone, Debug, PartialEq)]
pub struct MatmulPlan {
    /// The op the plan was made for (named in errors).
    pub op: &'static str,
    /// The operands' and the result's element type.
    pub dtype: DType,
    /// The broadcast batch shape (may be empty).
    pub batch: Vec<usize>,
    /// Rows of the product.
    pub m: usize,
    /// Columns of the product.
    pub n: usize,
    /// The inner (reduced) size.
    pub k: usize,
    /// The left operand as `[batch.., m, k]` (broadcast batch dims have stride 0).
    pub a: Layout,
    /// The right operand as `[batch.., k, n]`.
    pub b: Layout,
    /// The addend (bias or addmm's input) as `[batch.., m, n]`; `None` when there is none or
    /// `beta == 0`.
    pub c: Option<Layout>,
    /// The product's scale.
    pub alpha: f64,
    /// The addend's scale.
    pub beta: f64,
    /// The activation applied last.
    pub activation: Activation,
    /// The result's shape (PyTorch's: the dims added for 1-d operands removed).
    pub out_shape: Vec<usize>,
    /// Whether the left (`.0`) and right (`.1`) operands were 1-d (their added dim is removed
    /// from the result).
    pub promoted: (bool, bool),
}

impl MatmulPlan {
    /// Multiply-adds counted as 2 flops: 2 * batch * m * n * k.
    pub fn flops(&self) -> f64 {
        2.0 * self.batch.iter().map(|&b| b as f64).product::<f64>() * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// `out` (of the result's shape) seen as `[batch.., m, n]`: the dims removed for 1-d
    /// operands put back as size-1 dims.
    pub fn out_view(&self, out: &Layout) -> Result<Layout> {
        let r = self.batch.len() as isize;
        let mut l = out.clone();
        if self.promoted.0 {
            l = l.unsqueeze(r)?;
        }
        if self.promoted.1 {
            l = l.unsqueeze(r + 1)?;
        }
        Ok(l)
    }

    /// Checks that the plan's fields agree (its fields are public, so a plan may be edited or
    /// built by hand): `a` is `[batch.., m, k]`, `b` `[batch.., k, n]`, the addend `[batch..,
    /// m, n]`, the result's shape `[batch.., m, n]` less the dims of 1-d operands, and the
    /// element type a float. The host and device products run only such a plan.
    pub fn check(&self) -> Result<()> {
        let with = |tail: [usize; 2]| self.batch.iter().copied().chain(tail).collect::<Vec<usize>>();
        let mut out = self.batch.clone();
        if !self.promoted.0 {
            out.push(self.m);
        }
        if !self.promoted.1 {
            out.push(self.n);
        }
        let parts = [("left operand", Some(&self.a), with([self.m, self.k])), ("right operand", Some(&self.b), with([self.k, self.n])), ("addend", self.c.as_ref(), with([self.m, self.n]))];
        for (name, layout, want) in parts {
            if let Some(l) = layout.filter(|l| l.shape() != want.as_slice()) {
                return Err(Error::invalid(self.op, format!("the plan's {name} has shape {:?} where its batch {:?}, m = {}, n = {}, k = {} make it {want:?}", l.shape(), self.batch, self.m, self.n, self.k)));
            }
        }
        if self.out_shape != out || (self.promoted.0 && self.m != 1) || (self.promoted.1 && self.n != 1) {
            return Err(Error::invalid(self.op, format!("the plan's result shape {:?} does not follow from its batch {:?}, m = {}, n = {} and 1-d operands {:?}", self.out_shape, self.batch, self.m, self.n, self.promoted)));
        }
        common_dtype(self.op, &[self.dtype]).map(drop)
    }

    /// The plan a device records for this one: without its GELU where the type is float16 or
    /// bfloat16 (PyTorch's `F.gelu(F.linear(..))` rounds the product first: the elementwise
    /// `gelu` runs after it), else the plan itself. Its class is the one a call measures.
    pub(crate) fn recorded(&self) -> std::borrow::Cow<'_, MatmulPlan> {
        if self.activation == Activation::Gelu && self.dtype != DType::F32 {
            std::borrow::Cow::Owned(self.clone().with_activation(Activation::None))
        } else {
            std::borrow::Cow::Borrowed(self)
        }
    }

    /// The plan with `act`, applied after the bias and scaling.
    pub fn with_activation(mut self, act: Activation) -> Self {
        self.activation = act;
        self
    }

    /// Checks an `out=` destination: its dtype and shape are the result's, it does not overlap
    /// itself, nor an operand in the same storage (`shared`: whether a, b and c share out's
    /// storage). Returns `out` seen as `[batch.., m, n]`.
    pub fn check_out(&self, out: &Layout, dtype: DType, shared: [bool; 3]) -> Result<Layout> {
        if out.shape() != self.out_shape.as_slice() || dtype != self.dtype {
            return Err(Error::invalid(self.op, format!("out must be {} of shape {:?}, got {dtype} of shape {:?}", self.dtype, self.out_shape, out.shape())));
        }
        if out.has_internal_overlap() {
            return Err(Error::Overlap { op: self.op, detail: format!("out (shape {:?}, strides {:?}) overlaps itself", out.shape(), out.strides()) });
        }
        let view = self.out_view(out)?;
        for (name, t, s) in [("left operand", Some(&self.a), shared[0]), ("right operand", Some(&self.b), shared[1]), ("addend", self.c.as_ref(), shared[2])] {
            if let (Some(t), true) = (t, s) {
                // `addmm_(..)`: out is the addend itself (PyTorch's `self.is_same(result)`):
                // each element's addend is read before its result is stored (on a device,
                // from a copy).
                if name == "addend" && view == *t {
                    continue;
                }
                if view.overlap(t) != Overlap::Disjoint {
                    return Err(Error::Overlap { op: self.op, detail: format!("out (shape {:?}, strides {:?}) overlaps the {name} (strides {:?})", out.shape(), out.strides(), t.strides()) });
                }
            }
        }
        Ok(view)
    }
}

/// The element type of operands `dtypes` (all must agree and be float32, float16 or bfloat16).
fn common_dtype(op: &'static str, dtypes: &[DType]) -> Result<DType> {
    let t = dtypes[0];
    if let Some(&u) = dtypes.iter().find(|&&u| u != t) {
        return Err(Error::DType { op, got: format!("{t} and {u}"), expected: "operands of one element type".into() });
    }
    if !t.is_float() {
        return Err(Error::unsupported(op, format!("matrix products are implemented for float32, float16 and bfloat16 operands, got {t}")));
    }
    Ok(t)
}

/// `torch.matmul(a, b)`: 1-d x 1-d is a dot product, a 1-d operand is promoted to a matrix
/// (`[1, k]` on the left, `[k, 1]` on the right) and the added dim removed from the result,
/// batch dims broadcast.
pub fn matmul_plan(a: &Layout, b: &Layout, dtypes: [DType; 2]) -> Result<MatmulPlan> {
    plan("matmul", a, b, dtypes)
}

fn plan(op: &'static str, a: &Layout, b: &Layout, dtypes: [DType; 2]) -> Result<MatmulPlan> {
    let dtype = common_dtype(op, &dtypes)?;
    if a.rank() == 0 || b.rank() == 0 {
        return Err(Error::invalid(op, format!("both arguments must be at least 1-d, got shapes {:?} and {:?}", a.shape(), b.shape())));
    }
    let promoted = (a.rank() == 1, b.rank() == 1);
    let a2 = if promoted.0 { a.unsqueeze(0)? } else { a.clone() };
    let b2 = if promoted.1 { b.unsqueeze(1)? } else { b.clone() };
    let (ra, rb) = (a2.rank(), b2.rank());
    let (m, ka) = (a2.shape()[ra - 2], a2.shape()[ra - 1]);
    let (kb, n) = (b2.shape()[rb - 2], b2.shape()[rb - 1]);
    if ka != kb {
        return Err(Error::invalid(op, format!("the shapes {:?} and {:?} cannot be multiplied: inner sizes {ka} and {kb} differ", a.shape(), b.shape())));
    }
    let batch = broadcast(op, &a2.shape()[..ra - 2], &b2.shape()[..rb - 2])?;
    let with = |s: &[usize], x: usize, y: usize| -> Vec<usize> { s.iter().copied().chain([x, y]).collect() };
    let a3 = a2.broadcast_to(&with(&batch, m, ka))?;
    let b3 = b2.broadcast_to(&with(&batch, ka, n))?;
    let mut out_shape = batch.clone();
    if !promoted.0 {
        out_shape.push(m);
    }
    if !promoted.1 {
        out_shape.push(n);
    }
    Ok(MatmulPlan { op, dtype, batch, m, n, k: ka, a: a3, b: b3, c: None, alpha: 1.0, beta: 1.0, activation: Activation::None, out_shape, promoted })
}

/// The broadcast of two batch shapes, PyTorch's rule (aligned from the right, sizes equal or 1).
fn broadcast(op: &'static str, x: &[usize], y: &[usize]) -> Result<Vec<usize>> {
    let r = x.len().max(y.len());
    let at = |s: &[usize], i: usize| if i + s.len() >= r { s[i + s.len() - r] } else { 1 };
    (0..r)
        .map(|i| match (at(x, i), at(y, i)) {
            (p, q) if p == q || q == 1 => Ok(p),
            (1, q) => Ok(q),
            (p, q) => Err(Error::invalid(op, format!("the batch dims {x:?} and {y:?} do not broadcast: at batch dim {i}, {p} and {q}"))),
        })
        .collect()
}

/// `torch.mm(a, b)`: both 2-d.
pub fn mm_plan(a: &Layout, b: &Layout, dtypes: [DType; 2]) -> Result<MatmulPlan> {
    if a.rank() != 2 || b.rank() != 2 {
        return Err(Error::invalid("mm", format!("both operands must be 2-d, got shapes {:?} and {:?}", a.shape(), b.shape())));
    }
    plan("mm", a, b, dtypes)
}

/// `torch.bmm(a, b)`: both 3-d with the same batch size (no broadcast).
pub fn bmm_plan(a: &Layout, b: &Layout, dtypes: [DType; 2]) -> Result<MatmulPlan> {
    if a.rank() != 3 || b.rank() != 3 || a.shape()[0] != b.shape()[0] {
        return Err(Error::invalid("bmm", format!("both operands must be 3-d with the same batch size, got shapes {:?} and {:?}", a.shape(), b.shape())));
    }
    plan("bmm", a, b, dtypes)
}

/// `torch.nn.functional.linear(x, weight, bias)` as one plan: `x @ weight.T + bias` with the
/// bias in the product's epilogue (rounded once), `weight` `[out, in]` (or 1-d `[in]`), `x` of
/// any leading dims, all of one type. The bias's shape is checked by the route PyTorch 2.15
/// takes ([`linear_route`]): `addmm`'s (`[m, out]` after `x`'s leading dims are flattened)
/// where it flattens, else broadcast to the result. Where PyTorch adds the bias after the
/// rounded product (a float16 or bfloat16 product on the `matmul` route), `linear` does so and
/// this plan rounds once.
pub fn linear_plan(x: &Layout, weight: &Layout, bias: Option<&Layout>, dtypes: [Option<DType>; 3]) -> Result<MatmulPlan> {
    let [Some(xt), Some(wt), bt] = dtypes else {
        return Err(Error::invalid("linear", format!("linear_plan needs the input's and the weight's types, got {dtypes:?}")));
    };
    let ds: Vec<DType> = dtypes.iter().flatten().copied().collect();
    common_dtype("linear", &ds)?;
    let (mut p, after) = linear_parts(x, weight, bias.map(|b| (b, bt.unwrap_or(xt))), [xt, wt], false)?;
    if after.is_some() {
        p.c = after;
    }
    Ok(p)
}

/// How PyTorch 2.15's `F.linear` adds a bias, which decides its shape rule and its roundings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinearRoute {
    /// `addmm(bias, x.reshape(-1, in), weight.t())`: a 2-d `x`, or (not for `linear_out`) a
    /// contiguous `x` with a contiguous bias that is 1-d or squeezes to 1-d. The bias expands
    /// to `[rows, out]`, `weight` must be 2-d, all three of one type; rounded once.
    Addmm,
    /// `matmul(x, weight.t())` then `add_(bias)`: the bias broadcasts to the result and may
    /// have any type (PyTorch's promotion, cast into the result's); the product is rounded to
    /// its type before the bias is added.
    MatmulAdd,
}

/// The route `F.linear(x, weight, bias)` (or `linear_out` when `out_form`) takes.
pub fn linear_route(x: &Layout, bias: &Layout, out_form: bool) -> LinearRoute {
    let flat_bias = bias.is_contiguous() && (bias.rank() == 1 || bias.squeeze_all().rank() == 1);
    if x.rank() == 2 || (!out_form && x.is_contiguous() && flat_bias) {
        LinearRoute::Addmm
    } else {
        LinearRoute::MatmulAdd
    }
}

/// `F.linear`'s product and where its bias goes: the plan (with the bias in its epilogue where
/// that gives PyTorch's bits), and the bias as `[batch.., m, n]` when it is to be added after
/// the product is rounded (`LinearRoute::MatmulAdd` in a 16-bit type or with a bias of another
/// type; the plan then has no addend). `bias` comes with its type.
pub(crate) fn linear_parts(x: &Layout, weight: &Layout, bias: Option<(&Layout, DType)>, dtypes: [DType; 2], out_form: bool) -> Result<(MatmulPlan, Option<Layout>)> {
    let op = "linear";
    if weight.rank() > 2 || weight.rank() == 0 {
        return Err(Error::invalid(op, format!("weight must be [out, in] or [in], got shape {:?}", weight.shape())));
    }
    let wt = if weight.rank() == 2 { weight.transpose(0, 1)? } else { weight.clone() };
    let Some((bias, bias_t)) = bias else {
        return Ok((plan(op, x, &wt, dtypes)?, None));
    };
    let route = if x.rank() == 0 { LinearRoute::MatmulAdd } else { linear_route(x, bias, out_form) };
    if route == LinearRoute::Addmm {
        common_dtype(op, &[dtypes[0], dtypes[1], bias_t])?;
        // PyTorch's `addmm`, which needs a matrix.
        if weight.rank() == 1 {
            return Err(Error::invalid(op, format!("an input {:?} with a bias {:?} (PyTorch's addmm route) needs a 2-d weight [out, in], got shape {:?} (PyTorch: addmm's \"mat2 must be a matrix\")", x.shape(), bias.shape(), weight.shape())));
        }
    }
    let mut p = plan(op, x, &wt, dtypes)?;
    match route {
        LinearRoute::Addmm => {
            // The bias expands to [rows, out] (x's leading dims flattened), then is seen in
            // the result's shape.
            let rows = x.shape()[..x.rank() - 1].iter().product::<usize>();
            let flat = bias.broadcast_to(&[rows, p.n]).map_err(|_| {
                Error::invalid(op, format!("the bias of shape {:?} does not expand to [{rows}, {}] (PyTorch's addmm route for a contiguous input {:?} and a contiguous bias that is or squeezes to 1-d: the input's leading dims flattened)", bias.shape(), p.n, x.shape()))
            })?;
            let dims: Vec<isize> = p.out_shape.iter().map(|&s| s as isize).collect();
            p.c = Some(p.out_view(&flat.view(&dims)?)?);
            Ok((p, None))
        }
        LinearRoute::MatmulAdd => {
            let c = addend(&p, bias, &p.out_shape.clone())?;
            // In float32 with a float32 bias a device's epilogue (alpha = beta = 1, in f32) is
            // the product's rounding then the add's; the host's f64 epilogue rounds once,
            // within float32 products' tolerance.
            if p.dtype == DType::F32 && bias_t == DType::F32 {
                p.c = Some(c);
                Ok((p, None))
            } else {
                Ok((p, Some(c)))
            }
        }
    }
}

/// `torch.addmm(input, mat1, mat2, beta=beta, alpha=alpha)`: `beta * input + alpha * (mat1 @
/// mat2)`, `input` broadcastable to `[m, n]`; with `beta == 0` the input is not read (NaN in it
/// does not propagate), and in float32 with `alpha == 0` neither are `mat1` and `mat2` (BLAS's
/// rule, which PyTorch's float32 `addmm` follows: the plan's reduction is then empty, k = 0;
/// its float16 and bfloat16 `addmm` read them, a NaN propagating). `alpha` and `beta` are
/// taken as float32 (PyTorch's `value cannot be converted to type float without overflow`
/// for a finite one past its range, in every type).
pub fn addmm_plan(input: &Layout, m1: &Layout, m2: &Layout, beta: f64, alpha: f64, dtypes: [DType; 3]) -> Result<MatmulPlan> {
    let op = "addmm";
    common_dtype(op, &dtypes)?;
    for (what, v) in [("alpha", alpha), ("beta", beta)] {
        if v.is_finite() && v.abs() > f32::MAX as f64 {
            return Err(Error::invalid(op, format!("{what} {v:?} cannot be converted to float32 without overflow")));
        }
    }
    if m1.rank() != 2 || m2.rank() != 2 {
        return Err(Error::invalid(op, format!("mat1 and mat2 must be 2-d, got shapes {:?} and {:?}", m1.shape(), m2.shape())));
    }
    let mut p = plan(op, m1, m2, [dtypes[1], dtypes[2]])?;
    let c = addend(&p, input, &[p.m, p.n])?;
    p.c = (beta != 0.0).then_some(c);
    if alpha == 0.0 && p.k > 0 && p.dtype == DType::F32 {
        p.a = p.a.narrow(-1, 0, 0)?;
        p.b = p.b.narrow(-2, 0, 0)?;
        p.k = 0;
    }
    // An empty reduction (k = 0) is PyTorch's `beta * input` (zeros for beta 0): alpha never
    // multiplies it (an infinite alpha gave NaN, a negative one -0.0).
    p.alpha = if p.k == 0 { 0.0 } else { alpha };
    p.beta = beta;
    Ok(p)
}

/// `linear_out`'s parts ([`linear_parts`] in its `out=` form), with the checks of `out` the
/// product's plan cannot make: off `addmm`'s route (an `x` that is not 2-d) PyTorch writes the
/// product into `out` and then adds the bias, so a bias sharing `out`'s elements would read the
/// product (refused); where the bias comes after, `out` is checked against `x` and `weight`
/// here, before anything is written. `shared`: whether `x`, `weight` and the bias share
/// `out`'s storage.
pub(crate) fn linear_out_parts(x: &Layout, weight: &Layout, bias: Option<(&Layout, DType)>, dtypes: [DType; 2], out: (&Layout, DType), shared: [bool; 3]) -> Result<(MatmulPlan, Option<Layout>)> {
    let (p, after) = linear_parts(x, weight, bias, dtypes, true)?;
    if let Some((b, _)) = bias.filter(|_| shared[2] && x.rank() != 2) {
        if out.0.overlap(b) != Overlap::Disjoint {
            return Err(Error::Overlap {
                op: "linear",
                detail: format!("out (shape {:?}, strides {:?}) shares elements with the bias (shape {:?}, strides {:?}), which is added after the product is written", out.0.shape(), out.0.strides(), b.shape(), b.strides()),
            });
        }
    }
    if after.is_some() {
        p.check_out(out.0, out.1, [shared[0], shared[1], false])?;
    }
    Ok((p, after))
}

/// The addend `t` broadcast to the result's shape `to`, seen as `[batch.., m, n]`.
fn addend(p: &MatmulPlan, t: &Layout, to: &[usize]) -> Result<Layout> {
    let what = if p.op == "linear" { "bias" } else { "input" };
    let b = t.broadcast_to(to).map_err(|_| Error::invalid(p.op, format!("the {what} of shape {:?} does not broadcast to the result's shape {to:?}", t.shape())))?;
    p.out_view(&b)
}

/// The matrix products as methods, on host and device tensors alike, with PyTorch's names,
/// shape rules and `out=` forms. On a [`HostTensor`](crate::HostTensor) they compute the CPU
/// reference ([`matmul_cpu`]); on a [`DeviceTensor`](crate::DeviceTensor) they run the device
/// kernels. Operands are float32, float16 or bfloat16, all of one type (two types:
/// [`Error::DType`]; integer operands: [`Error::Unsupported`]); the result has that type.
/// (`linear`'s bias may have another type where PyTorch adds it after the product:
/// [`LinearRoute::MatmulAdd`].)
/// An `out` must have the result's type and shape and must not overlap itself or an operand
/// ([`Error::Overlap`]); on any error nothing is written.
///
/// ```
/// use strided_wgpu::{HostTensor, Matmul, Strided};
/// let a = HostTensor::from_vec((0..6).map(|i| i as f32).collect(), &[2, 3])?;
/// let w = HostTensor::from_vec((0..12).map(|i| i as f32).collect(), &[4, 3])?;
/// // A transposed view is read in place.
/// let y = a.matmul(&w.transpose(0, 1)?)?;
/// assert_eq!(y.shape(), &[2, 4]);
/// assert_eq!(a.linear(&w, None)?.to_vec::<f32>()?, y.to_vec::<f32>()?);
/// # Ok::<(), strided_wgpu::Error>(())
/// ```
pub trait Matmul: crate::Elementwise {
    /// Executes a checked plan: `a`, `b` and `c` give the storages the plan's layouts view;
    /// into `out` when given (checked here), else into a new contiguous tensor.
    #[doc(hidden)]
    fn run_plan(plan: &MatmulPlan, a: &Self, b: &Self, c: Option<&Self>, out: Option<&Self>) -> Result<Self>;
    /// Whether two views share a storage.
    #[doc(hidden)]
    fn same_storage(&self, other: &Self) -> bool;
    /// `linear` where the bias is added after the rounded product ([`linear_parts`]'s second
    /// value): the product of `plan` (which has no addend) into `out` or a new tensor, then
    /// `bias` added and `act` applied in place, every check made before anything is written.
    #[doc(hidden)]
    fn run_linear_after(plan: &MatmulPlan, x: &Self, weight: &Self, bias: &Self, out: Option<&Self>, act: Activation) -> Result<Self> {
        let y = Self::run_plan(plan, x, weight, None, out)?;
        Self::run(Op::Add { alpha: Scalar::Int(1) }, &[Input::Tensor(&y), Input::Tensor(bias)], Target::InPlace)?;
        if let Some(op) = act.op() {
            Self::run(op, &[Input::Tensor(&y)], Target::InPlace)?;
        }
        Ok(y)
    }

    /// `torch.matmul(self, other)`: 1-d x 1-d is a dot product (a 0-d result), 1-d operands are
    /// promoted and the added dim removed, batch dims broadcast (`[3, 1, m, k] @ [1, 2, k, n]`
    /// is `[3, 2, m, n]`).
    fn matmul(&self, other: &Self) -> Result<Self> {
        Self::run_plan(&matmul_plan(self.layout(), other.layout(), [self.dtype(), other.dtype()])?, self, other, None, None)
    }
    /// [`matmul`](Matmul::matmul) into `out`.
    fn matmul_out(&self, other: &Self, out: &Self) -> Result<()> {
        Self::run_plan(&matmul_plan(self.layout(), other.layout(), [self.dtype(), other.dtype()])?, self, other, None, Some(out)).map(drop)
    }
    /// `torch.mm(self, other)`: both 2-d.
    fn mm(&self, other: &Self) -> Result<Self> {
        Self::run_plan(&mm_plan(self.layout(), other.layout(), [self.dtype(), other.dtype()])?, self, other, None, None)
    }
    /// [`mm`](Matmul::mm) into `out`.
    fn mm_out(&self, other: &Self, out: &Self) -> Result<()> {
        Self::run_plan(&mm_plan(self.layout(), other.layout(), [self.dtype(), other.dtype()])?, self, other, None, Some(out)).map(drop)
    }
    /// `torch.bmm(self, other)`: both 3-d with the same batch size.
    fn bmm(&self, other: &Self) -> Result<Self> {
        Self::run_plan(&bmm_plan(self.layout(), other.layout(), [self.dtype(), other.dtype()])?, self, other, None, None)
    }
    /// [`bmm`](Matmul::bmm) into `out`.
    fn bmm_out(&self, other: &Self, out: &Self) -> Result<()> {
        Self::run_plan(&bmm_plan(self.layout(), other.layout(), [self.dtype(), other.dtype()])?, self, other, None, Some(out)).map(drop)
    }
    /// `torch.nn.functional.linear(self, weight, bias)`: `self @ weight.T + bias`, `weight`
    /// `[out, in]` in any strides, `self` `[.., in]`, `bias` `[out]` (or broadcastable to the
    /// result).
    fn linear(&self, weight: &Self, bias: Option<&Self>) -> Result<Self> {
        self.linear_act(weight, bias, Activation::None)
    }
    /// [`linear`](Matmul::linear) into `out`: PyTorch's `linear_out`, `addmm`'s route for a
    /// 2-d `self` only ([`LinearRoute`]); a bias sharing `out`'s elements is then an error.
    fn linear_out(&self, weight: &Self, bias: Option<&Self>, out: &Self) -> Result<()> {
        let shared = [out.same_storage(self), out.same_storage(weight), bias.is_some_and(|b| b.same_storage(out))];
        let (p, after) = linear_out_parts(self.layout(), weight.layout(), bias.map(|b| (b.layout(), b.dtype())), [self.dtype(), weight.dtype()], (out.layout(), out.dtype()), shared)?;
        match (after, bias) {
            (Some(_), Some(bias)) => Self::run_linear_after(&p, self, weight, bias, Some(out), Activation::None).map(drop),
            _ => Self::run_plan(&p, self, weight, bias, Some(out)).map(drop),
        }
    }
    /// `act(linear(self, weight, bias))` in one pass: the activation fused into the product's
    /// epilogue (`F.relu(F.linear(..))`, `F.gelu(F.linear(..))`). A float16 or bfloat16 GELU is
    /// PyTorch's two roundings: the product rounded to its type, then the activation (on a
    /// device the elementwise `gelu` after the product; ReLU, which commutes with the rounding,
    /// stays in the epilogue).
    /// Where PyTorch adds the bias after the rounded product ([`LinearRoute::MatmulAdd`] in a
    /// 16-bit type, or a bias of another type) the bias and the activation are elementwise ops
    /// after the product.
    fn linear_act(&self, weight: &Self, bias: Option<&Self>, act: Activation) -> Result<Self> {
        let (p, after) = linear_parts(self.layout(), weight.layout(), bias.map(|b| (b.layout(), b.dtype())), [self.dtype(), weight.dtype()], false)?;
        match (after, bias) {
            (Some(_), Some(bias)) => Self::run_linear_after(&p, self, weight, bias, None, act),
            _ => Self::run_plan(&p.with_activation(act), self, weight, bias, None),
        }
    }
    /// `torch.addmm(self, mat1, mat2, beta=beta, alpha=alpha)`: `beta * self + alpha * (mat1 @
    /// mat2)`, `self` broadcastable to `[m, n]`; with `beta == 0` `self` is not read, in
    /// float32 with `alpha == 0` neither are `mat1` and `mat2` (BLAS's rule: `beta * self`, a
    /// NaN in them kept out; PyTorch's 16-bit `addmm` reads them). `alpha` or `beta` past
    /// float32's range is an error.
    fn addmm(&self, mat1: &Self, mat2: &Self, beta: f64, alpha: f64) -> Result<Self> {
        let p = addmm_plan(self.layout(), mat1.layout(), mat2.layout(), beta, alpha, [self.dtype(), mat1.dtype(), mat2.dtype()])?;
        Self::run_plan(&p, mat1, mat2, Some(self), None)
    }
    /// `act(beta * self + alpha * (mat1 @ mat2))` in one pass (16-bit GELU: as
    /// [`linear_act`](Matmul::linear_act)): the residual `self` added and the
    /// activation applied in the product's epilogue (a linear layer's residual connection,
    /// `F.relu(torch.addmm(x, h, w.T))`), equal to `addmm` then the activation.
    fn addmm_act(&self, mat1: &Self, mat2: &Self, beta: f64, alpha: f64, act: Activation) -> Result<Self> {
        let p = addmm_plan(self.layout(), mat1.layout(), mat2.layout(), beta, alpha, [self.dtype(), mat1.dtype(), mat2.dtype()])?;
        Self::run_plan(&p.with_activation(act), mat1, mat2, Some(self), None)
    }
    /// [`addmm`](Matmul::addmm) into `out` (which may be `self` itself, as `addmm_`).
    fn addmm_out(&self, mat1: &Self, mat2: &Self, beta: f64, alpha: f64, out: &Self) -> Result<()> {
        let p = addmm_plan(self.layout(), mat1.layout(), mat2.layout(), beta, alpha, [self.dtype(), mat1.dtype(), mat2.dtype()])?;
        Self::run_plan(&p, mat1, mat2, Some(self), Some(out)).map(drop)
    }
    /// `self.addmm_(mat1, mat2, beta=beta, alpha=alpha)`: `self = beta * self + alpha * (mat1
    /// @ mat2)` in place (`self` of the result's shape [m, n]).
    fn addmm_(&self, mat1: &Self, mat2: &Self, beta: f64, alpha: f64) -> Result<()> {
        self.addmm_out(mat1, mat2, beta, alpha, self)
    }
}
