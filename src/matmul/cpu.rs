//! The CPU reference of the matrix products on host tensors: every operand read through its
//! strides, accumulated in f64, rounded once to f32 and then to the result's type (as a
//! float32 accumulator rounds); a 16-bit GELU rounds the product to the type first, then the
//! activation (PyTorch's `F.gelu(F.linear(..))`).

use crate::dtype::{f32_bits_to_float, float_bits_to_f32, DType, Sum32};
use crate::error::Result;
use crate::host::HostTensor;
use crate::layout::{Layout, MemoryFormat};
use crate::matmul::{Activation, Matmul, MatmulPlan};
use crate::strided::Strided;

/// The elements of `t`'s storage seen through `layout`, in logical order, as f64: an
/// [`Error::DType`](crate::Error::DType) where `t` is not of the plan's type `dtype`, an
/// [`Error::OutOfBounds`](crate::Error::OutOfBounds) where the layout (a plan made for other
/// tensors) reaches outside its storage.
/// None are copied where `copy` is false (the checks stay).
fn values(t: &HostTensor, layout: &Layout, dtype: DType, copy: bool) -> Result<Vec<f64>> {
    if t.dtype() != dtype {
        return Err(crate::Error::DType { op: "matmul_cpu", got: t.dtype().to_string(), expected: format!("{dtype} (the plan's operands)") });
    }
    let v = t.as_strided(layout.shape(), layout.strides(), layout.offset())?;
    if !copy {
        return Ok(Vec::new());
    }
    let v = v.contiguous(MemoryFormat::Contiguous)?;
    // The f64 copy is twice an f32 one: memory the host cannot give is an error, not an abort.
    let mut out: Vec<f64> = crate::error::reserved("matmul_cpu", || format!("an f64 copy of an operand of shape {:?}", layout.shape()), v.numel())?;
    match v.dtype() {
        DType::F32 => out.extend(v.to_vec::<f32>()?.into_iter().map(f64::from)),
        DType::F16 => out.extend(v.to_vec::<half::f16>()?.into_iter().map(f64::from)),
        DType::BF16 => out.extend(v.to_vec::<half::bf16>()?.into_iter().map(f64::from)),
        // The plans accept float operands only.
        t => return Err(crate::Error::DType { op: "matmul_cpu", got: t.to_string(), expected: "float32, float16 or bfloat16".into() }),
    }
    Ok(out)
}

/// GELU (erf form) in f64.
fn gelu(x: f64) -> f64 {
    0.5 * x * crate::elementwise::cpu::erfc(-x * std::f64::consts::FRAC_1_SQRT_2)
}

/// Applies an epilogue to one accumulated value: `act(alpha * acc + beta * c)`.
pub(crate) fn epilogue(acc: f64, c: Option<f64>, alpha: f64, beta: f64, act: Activation) -> f64 {
    // Without an addend nothing is added (a 0.0 added would turn a -0.0 product into +0.0,
    // where the device kernels keep it).
    let v = match c {
        Some(c) => alpha * acc + beta * c,
        None => alpha * acc,
    };
    match act {
        Activation::None => v,
        // As Op::Relu: NaN stays NaN.
        Activation::Relu => if v > 0.0 || v.is_nan() { v } else { 0.0 },
        Activation::Gelu => gelu(v),
    }
}

/// Computes `plan` on host operands (their storages seen through the plan's layouts) into a new
/// contiguous tensor of the result's shape.
pub fn matmul_cpu(plan: &MatmulPlan, a: &HostTensor, b: &HostTensor, c: Option<&HostTensor>) -> Result<HostTensor> {
    plan.check()?;
    let (m, n, k) = (plan.m, plan.n, plan.k);
    // The result's layout first (a size past isize is an error), then its memory (one the host
    // cannot give is an error, not an abort: an empty reduction may make a huge result).
    let full: Vec<usize> = plan.batch.iter().copied().chain([m, n]).collect();
    let result = Layout::contiguous(&full)?;
    // An empty result reads no operand (PyTorch's, and the device's: expanded operands of an
    // empty product may be far larger than any copy).
    let read = |t: &HostTensor, l: &Layout| values(t, l, plan.dtype, result.numel() > 0);
    let av = read(a, &plan.a)?;
    let bv = read(b, &plan.b)?;
    // A plan without an addend (addmm with beta == 0) does not read one it is given.
    let cv = match (&plan.c, c) {
        (Some(l), Some(c)) => Some(read(c, l)?),
        (Some(_), None) => return Err(crate::Error::invalid("matmul_cpu", "the plan adds an input (addmm's, beta != 0) but none was given")),
        (None, _) => None,
    };
    // (An empty result's batch dims may multiply past a usize: none is walked.)
    let batches: usize = if result.numel() == 0 { 0 } else { plan.batch.iter().product() };
    let round_before_gelu = plan.activation == Activation::Gelu && plan.dtype != DType::F32;
    let mut bits: Vec<u32> = crate::error::reserved(plan.op, || format!("the result of shape {full:?}"), result.numel())?;
    for z in 0..batches {
        for i in 0..m {
            for j in 0..n {
                // Float32's range, as PyTorch's and the device's accumulators (a product past it
                // is infinite); f64's digits within it.
                let mut sum = Sum32::new(0.0);
                for p in 0..k {
                    sum.add(av[(z * m + i) * k + p] * bv[(z * k + p) * n + j]);
                }
                let acc = sum.value();
                let cz = cv.as_ref().map(|c| c[(z * m + i) * n + j]);
                let v = if round_before_gelu {
                    // PyTorch's F.gelu(F.linear(..)) in a 16-bit type: the product rounded to
                    // it, then the activation (rounded again).
                    let pre = epilogue(acc, cz, plan.alpha, plan.beta, Activation::None) as f32;
                    let pre = f32::from_bits(float_bits_to_f32(plan.dtype, f32_bits_to_float(plan.dtype, pre.to_bits())));
                    gelu(pre as f64) as f32
                } else {
                    epilogue(acc, cz, plan.alpha, plan.beta, plan.activation) as f32
                };
                bits.push(f32_bits_to_float(plan.dtype, v.to_bits()));
            }
        }
    }
    let size = plan.dtype.size();
    let mut bytes: Vec<u8> = crate::error::reserved(plan.op, || format!("the result of shape {full:?}"), bits.len() * size)?;
    bytes.extend(bits.iter().flat_map(|b| b.to_le_bytes().into_iter().take(size)));
    let t = HostTensor::from_bytes(plan.dtype, bytes, result)?;
    t.reshape(&plan.out_shape.iter().map(|&s| s as isize).collect::<Vec<_>>())
}

impl Matmul for HostTensor {
    fn same_storage(&self, other: &HostTensor) -> bool {
        self.shares_storage(other)
    }
    /// The CPU reference ([`matmul_cpu`]), written into `out` after every check has passed.
    fn run_plan(plan: &MatmulPlan, a: &HostTensor, b: &HostTensor, c: Option<&HostTensor>, out: Option<&HostTensor>) -> Result<HostTensor> {
        if let Some(out) = out {
            let shared = [out.shares_storage(a), out.shares_storage(b), c.is_some_and(|c| out.shares_storage(c))];
            plan.check_out(out.layout(), out.dtype(), shared)?;
        }
        let r = matmul_cpu(plan, a, b, c)?;
        match out {
            Some(out) => {
                out.copy_(&r)?;
                Ok(out.clone())
            }
            None => Ok(r),
        }
    }
}
