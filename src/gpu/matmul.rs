//! The matrix products on device tensors: [`Matmul`] for [`DeviceTensor`] and the [`Batch`]
//! methods that record them (the kernels are in `crate::kernels::matmul`).

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::batch::{read_copy, Batch};
use crate::gpu::tensor::DeviceTensor;
use std::sync::Arc;

use crate::gpu::context::GpuContext;
use crate::kernels::matmul::{self as kernels, matmul_class, MatmulClass, MatmulKernel, Operand, Product};
use crate::kernels::matmul::Matmul as MatmulFamily;
use crate::runtime::submit::Drive;
use crate::runtime::timing::Timer;
use crate::tune::Tuner;
use crate::layout::{Layout, MemoryFormat};
use crate::elementwise::{Input, Op, Scalar, Target};
use crate::matmul::{addmm_plan, bmm_plan, linear_out_parts, linear_parts, matmul_plan, mm_plan, Matmul, MatmulPlan};
use crate::strided::Strided;

impl Matmul for DeviceTensor {
    fn same_storage(&self, other: &DeviceTensor) -> bool {
        self.shares_storage(other)
    }
    /// One recording (the product, the bias, the activation), submitted once: an error in any
    /// step records and writes nothing.
    fn run_linear_after(plan: &MatmulPlan, x: &DeviceTensor, weight: &DeviceTensor, bias: &DeviceTensor, out: Option<&DeviceTensor>, act: crate::Activation) -> Result<DeviceTensor> {
        plan.check()?;
        tune_on_call(plan, x, weight, None, out)?;
        let mut batch = x.context().batch();
        let y = batch.whole(|b| {
            let y = b.record_linear(plan, true, x, weight, Some(bias), out)?;
            if let Some(op) = act.op() {
                b.elementwise(op, &[Input::Tensor(&y)], Target::InPlace)?;
            }
            Ok(y)
        })?;
        batch.submit_eager(plan.op)?;
        Ok(y)
    }
    /// Runs the device kernels (the matrix-vector kernel for m == 1 or n == 1, else the tiled
    /// GEMM; operands read in place); submitted (or held back under `SubmitPolicy::Deferred`), never waited for. Checked before anything is
    /// recorded.
    fn run_plan(plan: &MatmulPlan, a: &DeviceTensor, b: &DeviceTensor, c: Option<&DeviceTensor>, out: Option<&DeviceTensor>) -> Result<DeviceTensor> {
        // Before the tuner reads the plan's sizes.
        plan.check()?;
        tune_on_call(plan, a, b, c, out)?;
        let ctx = a.context();
        let mut batch = ctx.batch();
        let out = batch.run_plan(plan, a, b, c, out, MatmulKernel::Auto)?;
        batch.submit_eager(plan.op)?;
        Ok(out)
    }
}

/// Asked to (`TuningPolicy::OnFirstCall`), the first product of a shape class measures the
/// kernels, outside any recording: the class of this call's output (an `out=` view's own),
/// checked first. `plan` is checked.
fn tune_on_call(plan: &MatmulPlan, a: &DeviceTensor, b: &DeviceTensor, c: Option<&DeviceTensor>, out: Option<&DeviceTensor>) -> Result<()> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        let ctx = a.context();
        if ctx.tunes_on_call() && [Some(b), c, out].into_iter().flatten().all(|t| t.context().same_device(ctx)) {
            if let Some(o) = out {
                plan.check_out(o.layout(), o.dtype(), [o.shares_storage(a), o.shares_storage(b), c.is_some_and(|c| o.shares_storage(c))])?;
            }
            pollster::block_on(ctx.tune_plan(plan, a, b, c, out, Drive::Wait))?;
        }
    }
    #[cfg(target_arch = "wasm32")]
    let _ = (plan, a, b, c, out);
    Ok(())
}

/// The matrix products, recorded: `matmul`, `matmul_out`, `mm`, `bmm`, `linear`, `linear_out`,
/// `addmm`, `addmm_act` and `addmm_out`, as the [`Matmul`] methods of those names with the left
/// operand (for `addmm`, the input) as the first argument (`mm` / `bmm` into a given tensor:
/// `matmul_out`). Recording never measures.
impl Batch<'_> {
    /// Records `a.matmul(b)` ([`Matmul::matmul`]); returns the new tensor.
    pub fn matmul(&mut self, a: &DeviceTensor, b: &DeviceTensor) -> Result<DeviceTensor> {
        self.run_plan(&matmul_plan(a.layout(), b.layout(), [a.dtype(), b.dtype()])?, a, b, None, None, MatmulKernel::Auto)
    }
    /// Records `a.matmul_out(b, out)`.
    pub fn matmul_out(&mut self, a: &DeviceTensor, b: &DeviceTensor, out: &DeviceTensor) -> Result<()> {
        self.run_plan(&matmul_plan(a.layout(), b.layout(), [a.dtype(), b.dtype()])?, a, b, None, Some(out), MatmulKernel::Auto).map(drop)
    }
    /// Records `a.matmul_out(b, out)` through a chosen kernel (one that is not eligible is
    /// [`Error::Unsupported`], and nothing is recorded).
    pub fn matmul_out_with(&mut self, a: &DeviceTensor, b: &DeviceTensor, out: &DeviceTensor, kernel: MatmulKernel) -> Result<()> {
        self.run_plan(&matmul_plan(a.layout(), b.layout(), [a.dtype(), b.dtype()])?, a, b, None, Some(out), kernel).map(drop)
    }
    /// Records `a.mm(b)`.
    pub fn mm(&mut self, a: &DeviceTensor, b: &DeviceTensor) -> Result<DeviceTensor> {
        self.run_plan(&mm_plan(a.layout(), b.layout(), [a.dtype(), b.dtype()])?, a, b, None, None, MatmulKernel::Auto)
    }
    /// Records `a.bmm(b)`.
    pub fn bmm(&mut self, a: &DeviceTensor, b: &DeviceTensor) -> Result<DeviceTensor> {
        self.run_plan(&bmm_plan(a.layout(), b.layout(), [a.dtype(), b.dtype()])?, a, b, None, None, MatmulKernel::Auto)
    }
    /// Records `x.linear(weight, bias)` ([`Matmul::linear`]).
    pub fn linear(&mut self, x: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>) -> Result<DeviceTensor> {
        let (p, after) = linear_parts(x.layout(), weight.layout(), bias.map(|b| (b.layout(), b.dtype())), [x.dtype(), weight.dtype()], false)?;
        self.record_linear(&p, after.is_some(), x, weight, bias, None)
    }
    /// Records `x.linear_out(weight, bias, out)`.
    pub fn linear_out(&mut self, x: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, out: &DeviceTensor) -> Result<()> {
        let shared = [out.shares_storage(x), out.shares_storage(weight), bias.is_some_and(|b| b.shares_storage(out))];
        let (p, after) = linear_out_parts(x.layout(), weight.layout(), bias.map(|b| (b.layout(), b.dtype())), [x.dtype(), weight.dtype()], (out.layout(), out.dtype()), shared)?;
        self.record_linear(&p, after.is_some(), x, weight, bias, Some(out)).map(drop)
    }
    /// The product of `linear_parts`' plan, then the bias added after it when `after`.
    fn record_linear(&mut self, p: &MatmulPlan, after: bool, x: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, out: Option<&DeviceTensor>) -> Result<DeviceTensor> {
        match (after, bias) {
            (true, Some(bias)) => self.whole(|batch| {
                let y = batch.run_plan(p, x, weight, None, out, MatmulKernel::Auto)?;
                batch.elementwise(Op::Add { alpha: Scalar::Int(1) }, &[Input::Tensor(&y), Input::Tensor(bias)], Target::InPlace)?;
                Ok(y)
            }),
            _ => self.run_plan(p, x, weight, bias, out, MatmulKernel::Auto),
        }
    }
    /// Records `input.addmm(mat1, mat2, beta, alpha)` ([`Matmul::addmm`]).
    pub fn addmm(&mut self, input: &DeviceTensor, mat1: &DeviceTensor, mat2: &DeviceTensor, beta: f64, alpha: f64) -> Result<DeviceTensor> {
        let p = addmm_plan(input.layout(), mat1.layout(), mat2.layout(), beta, alpha, [input.dtype(), mat1.dtype(), mat2.dtype()])?;
        self.run_plan(&p, mat1, mat2, Some(input), None, MatmulKernel::Auto)
    }
    /// Records `input.addmm_act(mat1, mat2, beta, alpha, act)` ([`Matmul::addmm_act`]): the
    /// residual and the activation in the product's epilogue (a 16-bit GELU: the elementwise
    /// `gelu` after the product, as [`Matmul::linear_act`] says).
    pub fn addmm_act(&mut self, input: &DeviceTensor, mat1: &DeviceTensor, mat2: &DeviceTensor, beta: f64, alpha: f64, act: crate::Activation) -> Result<DeviceTensor> {
        let p = addmm_plan(input.layout(), mat1.layout(), mat2.layout(), beta, alpha, [input.dtype(), mat1.dtype(), mat2.dtype()])?.with_activation(act);
        self.run_plan(&p, mat1, mat2, Some(input), None, MatmulKernel::Auto)
    }
    /// Records `input.addmm_out(mat1, mat2, beta, alpha, out)`.
    pub fn addmm_out(&mut self, input: &DeviceTensor, mat1: &DeviceTensor, mat2: &DeviceTensor, beta: f64, alpha: f64, out: &DeviceTensor) -> Result<()> {
        let p = addmm_plan(input.layout(), mat1.layout(), mat2.layout(), beta, alpha, [input.dtype(), mat1.dtype(), mat2.dtype()])?;
        self.run_plan(&p, mat1, mat2, Some(input), Some(out), MatmulKernel::Auto).map(drop)
    }

    /// Records a plan made by one of the plan functions (`matmul_plan`, `linear_plan`, ...;
    /// with its activation; the crate's tests use it, not a stable interface) into `out` through a chosen kernel: an
    /// ineligible kernel is [`Error::Unsupported`] and nothing is recorded. `a`, `b` and `c`
    /// are the tensors whose layouts the plan was made from (for `linear`: x, weight, bias;
    /// for `addmm`: mat1, mat2, input).
    #[doc(hidden)]
    pub fn run_plan_with(&mut self, plan: &MatmulPlan, a: &DeviceTensor, b: &DeviceTensor, c: Option<&DeviceTensor>, out: &DeviceTensor, kernel: MatmulKernel) -> Result<()> {
        self.run_plan(plan, a, b, c, Some(out), kernel).map(drop)
    }

    /// Records a checked plan into `out` (checked here) or a new contiguous tensor. A 16-bit
    /// result is written as it is by the kernels that can (`MatmulKernel::writes_half`: rounded
    /// once from f32), and computed into an f32 scratch tensor that a recorded copy converts
    /// into the destination by the others (the CPU-adapter kernels, the tensor cores unless the
    /// device takes every tensor-core path) and wherever the destination shares a buffer with
    /// an operand (a disjoint view); a float32 destination that does reads that operand from a
    /// copy of the buffer.
    /// A 16-bit product with GELU is PyTorch's `F.gelu(F.linear(..))`: the product rounded to
    /// its type, then the elementwise `gelu` in place (rounded again; an epilogue would round
    /// once). ReLU, which commutes with the rounding, stays in the epilogue.
    pub(crate) fn run_plan(&mut self, plan: &MatmulPlan, a: &DeviceTensor, b: &DeviceTensor, c: Option<&DeviceTensor>, out: Option<&DeviceTensor>, kernel: MatmulKernel) -> Result<DeviceTensor> {
        self.whole(|batch| {
            let recorded = plan.recorded();
            let y = batch.record_plan(&recorded, a, b, c, out, kernel)?;
            if recorded.activation != plan.activation {
                batch.elementwise(Op::Gelu, &[Input::Tensor(&y)], Target::InPlace)?;
            }
            Ok(y)
        })
    }

    fn record_plan(&mut self, plan: &MatmulPlan, a: &DeviceTensor, b: &DeviceTensor, c: Option<&DeviceTensor>, out: Option<&DeviceTensor>, kernel: MatmulKernel) -> Result<DeviceTensor> {
        let op = plan.op;
        plan.check()?;
        let ctx = self.context().clone();
        let operands: Vec<&DeviceTensor> = [Some(a), Some(b), c, out].into_iter().flatten().collect();
        self.check_context(op, &operands)?;
        let out = match out {
            Some(out) => {
                plan.check_out(out.layout(), out.dtype(), [out.shares_storage(a), out.shares_storage(b), c.is_some_and(|c| out.shares_storage(c))])?;
                out.clone()
            }
            None => DeviceTensor::empty_for(op, &ctx, &plan.out_shape, plan.dtype, MemoryFormat::Contiguous)?,
        };
        if out.numel() == 0 {
            return Ok(out);
        }
        // k = 0: the kernels read nothing of A and B, but bind a window at each one's offset,
        // which an empty view may have anywhere (past its buffer, past u64 bytes): fresh empty
        // operands at offset 0 stand in. The result is beta * input, the bias, or zeros.
        let stand_ins = ctx.class_operands(plan, a, b)?;
        let (plan, a, b) = stand_ins.as_ref().map_or((plan, a, b), |(p, a, b)| (p, a, b));
        let c = c.filter(|_| plan.c.is_some());
        let cl = plan.c.clone();
        let out_view = plan.out_view(out.layout())?;
        // The class and the kernel are those of the product into an f32 output: float32 into
        // the output's own view; 16-bit types into [batch.., m, n] contiguous, the f32 scratch
        // that the kernels writing f32 only (the tensor cores', the CPU adapters') write before
        // a recorded copy rounds it into the destination. (Layouts make the class: the output's
        // buffer stands in for the scratch.)
        let full: Vec<usize> = plan.batch.iter().copied().chain([plan.m, plan.n]).collect();
        let half = plan.dtype != DType::F32;
        let f32_view = if half { Some(Layout::contiguous(&full)?) } else { None };
        let class_view = f32_view.as_ref().unwrap_or(&out_view);
        let whole = product(plan, a, b, c, out.buffer(), class_view);
        let class = matmul_class(&ctx.rt.report, &whole);
        // 16-bit operands of a product that the f32 CPU-adapter kernels would take (Blocked,
        // Conv1x1: the choice for the product's f32 class): each operand's whole storage is
        // widened to f32 first by a recorded converting copy (so the plan's layouts hold), and
        // the f32 kernel runs; the kernels' packed 16-bit loads serve GPUs and small products.
        let wide = if kernel == MatmulKernel::Auto { ctx.widened_choice(plan, a, b, c, out.buffer(), class_view, &class, true) } else { None };
        let kernel = match (wide, kernel) {
            (Some(k), _) => k,
            (None, MatmulKernel::Auto) => match ctx.matmul_choice(&class) {
                // A widened kernel a capture kept for the 16-bit class, where this call's buffers
                // do not fit the widened route: the class's 16-bit default.
                MatmulKernel::Blocked | MatmulKernel::Conv1x1 if half => MatmulKernel::default_for(&ctx.rt.report, &class),
                k => k,
            },
            (None, k) => {
                // The kernel's own check (a forced kernel may be one the automatic choice does not
                // offer: the tensor-core kernel on a product with an epilogue).
                if !class.kernels.contains(&k) {
                    crate::kernels::matmul::kernel_eligible(&ctx.rt.report, &whole, k)?;
                }
                k
            }
        };
        // The SIMT kernels write a 16-bit output as they compute it (`matmul_gemm16`, ...:
        // the bits the scratch and its rounding copy would give), and so does the tensor-core
        // kernel where the device takes every tensor-core path (`MatmulKernel::writes_half`);
        // the others need the scratch,
        // and so does an output sharing a buffer with an operand (read from a copy of the
        // output's buffer otherwise, which needs COPY_SRC: the scratch keeps such calls as
        // they were).
        let shares = [Some(a), Some(b), c].into_iter().flatten().any(|t| out.shares_storage(t));
        let direct = half && wide.is_none() && !shares && kernel.writes_half(&ctx.rt.report);
        let scratch = if half && !direct { Some(DeviceTensor::empty_for(op, &ctx, &full, DType::F32, MemoryFormat::Contiguous)?) } else { None };
        let target = scratch.as_ref().unwrap_or(&out);
        let target_view: Layout = match &scratch {
            Some(s) => s.layout().clone(),
            None => out_view,
        };
        let shared = |t: &DeviceTensor| scratch.is_none() && out.shares_storage(t);
        for t in [Some(a), Some(b), c].into_iter().flatten() {
            if shared(t) && !t.buffer().usage().contains(wgpu::BufferUsages::COPY_SRC) {
                return Err(Error::unsupported(op, format!("the output shares a buffer with an operand (shape {:?}), which is then read from a copy, but the buffer's usage {:?} lacks COPY_SRC", t.shape(), t.buffer().usage())));
            }
        }
        let widened: Vec<DeviceTensor> = match wide {
            Some(_) => [Some(a), Some(b), c]
                .into_iter()
                .flatten()
                .map(|t| {
                    let w = DeviceTensor::empty_for(op, &ctx, &[t.storage_len()], DType::F32, MemoryFormat::Contiguous)?;
                    self.copy_(&w, &t.as_strided(&[t.storage_len()], &[1], 0)?)?;
                    Ok(w)
                })
                .collect::<Result<_>>()?,
            None => Vec::new(),
        };
        let rt = ctx.rt.clone();
        let rec = self.parts(op)?;
        // The stand-ins of a k = 0 product too: they are bound.
        for t in operands.iter().copied().chain(&widened).chain([a, b]) {
            rec.hold_shared(t.storage());
        }
        if let Some(s) = &scratch {
            rec.hold_shared(s.storage());
        }
        let mut copies = Vec::new();
        for t in [Some(a), Some(b), c] {
            copies.push(match t {
                Some(t) if shared(t) => Some(read_copy(&rt, rec, op, t.buffer())?),
                _ => None,
            });
        }
        let buf = |i: usize, t: &'_ DeviceTensor| -> wgpu::Buffer { widened.get(i).map_or_else(|| copies[i].as_ref().unwrap_or(t.buffer()), |w| w.buffer()).clone() };
        let (ab, bb) = (buf(0, a), buf(1, b));
        let cb = c.map(|c| buf(2, c));
        let p = Product {
            op,
            dtype: if widened.is_empty() { plan.dtype } else { DType::F32 },
            a: Operand { buffer: &ab, layout: &plan.a },
            b: Operand { buffer: &bb, layout: &plan.b },
            c: match (&cb, &cl) {
                (Some(buffer), Some(layout)) => Some(Operand { buffer, layout }),
                _ => None,
            },
            out: Operand { buffer: target.buffer(), layout: &target_view },
            out_half: direct,
            alpha: plan.alpha,
            beta: plan.beta,
            activation: plan.activation,
        };
        kernels::record(&rt, rec, &p, kernel)?;
        if let Some(s) = scratch {
            let shape: Vec<isize> = plan.out_shape.iter().map(|&d| d as isize).collect();
            self.copy_(&out, &s.view(&shape)?)?;
        }
        Ok(out)
    }
}

/// The product of `plan` over the given buffers (an addend only where the plan reads one).
fn product<'a>(plan: &'a MatmulPlan, a: &'a DeviceTensor, b: &'a DeviceTensor, c: Option<&'a DeviceTensor>, out: &'a wgpu::Buffer, out_layout: &'a Layout) -> Product<'a> {
    Product {
        op: plan.op,
        dtype: plan.dtype,
        a: Operand { buffer: a.buffer(), layout: &plan.a },
        b: Operand { buffer: b.buffer(), layout: &plan.b },
        c: match (c, &plan.c) {
            (Some(c), Some(layout)) => Some(Operand { buffer: c.buffer(), layout }),
            _ => None,
        },
        out: Operand { buffer: out, layout: out_layout },
        out_half: false,
        alpha: plan.alpha,
        beta: plan.beta,
        activation: plan.activation,
    }
}

impl GpuContext {
    /// The matrix-product kernel of `class`: the kept choice (measured or loaded), else the
    /// adapter's default ([`MatmulKernel::default_for`]); never measures.
    pub(crate) fn matmul_choice(&self, class: &MatmulClass) -> MatmulKernel {
        self.choice::<MatmulFamily>(class, || MatmulKernel::default_for(&self.rt.report, class))
    }

    /// The kernel `a.matmul(b)` runs now: the kept choice of its shape class, or the adapter's
    /// default while the class has none. The checks of `matmul`; nothing is recorded.
    pub fn matmul_choice_of(&self, a: &DeviceTensor, b: &DeviceTensor) -> Result<MatmulKernel> {
        let plan = matmul_plan(a.layout(), b.layout(), [a.dtype(), b.dtype()])?;
        let stand_ins = self.class_operands(&plan, a, b)?;
        let (plan, a, b) = stand_ins.as_ref().map_or((&plan, a, b), |(p, a, b)| (p, a, b));
        let (out, view) = self.class_output(plan, a, b, None)?;
        let class = matmul_class(&self.rt.report, &product(plan, a, b, None, &out, &view));
        Ok(self.widened_choice(plan, a, b, None, &out, &view, &class, true).unwrap_or_else(|| self.matmul_choice(&class)))
    }

    /// For a product of k = 0 or an empty output: its empty operands (views that may have any
    /// strides and offset, past `isize` when multiplied out) as fresh empty contiguous tensors
    /// of the same shapes (no memory), the others as they are, and the plan over them, which
    /// the class is formed with (a call binds such stand-ins for k = 0, `record_plan`, and runs
    /// nothing for an empty output); `None` for any other product.
    fn class_operands(&self, plan: &MatmulPlan, a: &DeviceTensor, b: &DeviceTensor) -> Result<Option<(MatmulPlan, DeviceTensor, DeviceTensor)>> {
        if !(plan.k == 0 || plan.out_shape.contains(&0)) {
            return Ok(None);
        }
        let stand_in = |t: &DeviceTensor, l: &Layout| -> Result<(DeviceTensor, Layout)> {
            if l.numel() > 0 {
                return Ok((t.clone(), l.clone()));
            }
            Ok((DeviceTensor::empty_for(plan.op, self, t.shape(), plan.dtype, MemoryFormat::Contiguous)?, Layout::contiguous(l.shape())?))
        };
        let ((a, la), (b, lb)) = (stand_in(a, &plan.a)?, stand_in(b, &plan.b)?);
        Ok(Some((MatmulPlan { a: la, b: lb, ..plan.clone() }, a, b)))
    }

    /// The output buffer and view a product's class is keyed with, as `record_plan` forms them:
    /// `out`'s, or those of the new contiguous tensor a call without one allocates; the view is
    /// the output's own for float32, `[batch.., m, n]` contiguous (the f32 scratch's) for
    /// 16-bit types. A new output's buffer decides the class only by whether it passes one
    /// binding (the routes that refuse such buffers): an operand's buffer on the same side of
    /// that limit stands in for it, and only where neither is (a huge outer product, say) is one
    /// of the pool's made. (A contiguous view and `a`'s buffer stood in before, so a product
    /// into an `out=` view measured a class its calls never looked up.)
    fn class_output(&self, plan: &MatmulPlan, a: &DeviceTensor, b: &DeviceTensor, out: Option<&DeviceTensor>) -> Result<(wgpu::Buffer, Layout)> {
        let report = &self.rt.report;
        let (buffer, view) = match out {
            Some(o) => (o.buffer().clone(), plan.out_view(o.layout())?),
            None => {
                let numel = plan.out_shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d as u64));
                let bytes = numel.and_then(|n| n.checked_mul(plan.dtype.size() as u64)).and_then(|b| crate::runtime::pool::pooled_size(b.div_ceil(4) * 4, report.max_buffer_size));
                let over = |size: u64| size > report.max_storage_buffer_binding_size;
                let stand_in = bytes.and_then(|bytes| [a, b].into_iter().find(|t| over(t.buffer().size()) == over(bytes)));
                let buffer = match stand_in {
                    Some(t) => t.buffer().clone(),
                    None => DeviceTensor::empty_for(plan.op, self, &plan.out_shape, plan.dtype, MemoryFormat::Contiguous)?.buffer().clone(),
                };
                (buffer, Layout::contiguous(&plan.out_shape)?)
            }
        };
        let view = if plan.dtype != DType::F32 { Layout::contiguous(&plan.batch.iter().copied().chain([plan.m, plan.n]).collect::<Vec<_>>())? } else { view };
        Ok((buffer, view))
    }

    /// Where a 16-bit product runs widened to f32 on a CPU adapter: while its own class
    /// (`class`) has no kept choice, the f32 class's default when that is one of the f32
    /// CPU-adapter kernels (`Blocked`, `Conv1x1`) and the buffers the widened call binds (each
    /// operand's storage and the output as f32, in the pool's buffer sizes, which those
    /// kernels check) each fit one binding; else `None` (the 16-bit kernels, which bind the
    /// output as it is: the f32 scratch past one binding made the widened call an error).
    /// With `kept`, the 16-bit class's kept choice decides once it has one (a measured 16-bit
    /// kernel: `None`; a widened kernel a capture kept: that), so that its calls keep their
    /// bits whatever the f32 class keeps later; without, the default alone
    /// ([`GpuContext::matmul_default`]).
    #[allow(clippy::too_many_arguments)]
    fn widened_choice(&self, plan: &MatmulPlan, a: &DeviceTensor, b: &DeviceTensor, c: Option<&DeviceTensor>, out: &wgpu::Buffer, out_view: &Layout, class: &MatmulClass, kept: bool) -> Option<MatmulKernel> {
        let report = &self.rt.report;
        if plan.dtype == DType::F32 || report.device_type != wgpu::DeviceType::Cpu {
            return None;
        }
        let widens = |k: MatmulKernel| matches!(k, MatmulKernel::Blocked | MatmulKernel::Conv1x1);
        let kept_choice = if kept { self.tuner.get::<MatmulFamily>(class) } else { None };
        let k32 = match kept_choice {
            Some(k) => k,
            None => {
                let mut p32 = plan.clone();
                p32.dtype = DType::F32;
                MatmulKernel::default_for(report, &matmul_class(report, &product(&p32, a, b, c, out, out_view)))
            }
        };
        let binds = |elems: usize| (elems as u64).checked_mul(4).and_then(|b| crate::runtime::pool::pooled_size(b, report.max_buffer_size)).is_some_and(|b| b <= report.max_storage_buffer_binding_size);
        let out_elems = plan.batch.iter().product::<usize>() * plan.m * plan.n;
        let fits = [Some(a), Some(b), c].into_iter().flatten().all(|t| binds(t.storage_len())) && binds(out_elems);
        if !(widens(k32) && fits) {
            return None;
        }
        // A capture under OnFirstCall pins the class to what it records (see `choice`).
        if kept && kept_choice.is_none() && self.tuner.policy() == crate::tune::TuningPolicy::OnFirstCall && self.rt.capturing_here() {
            return Some(self.tuner.keep_default::<MatmulFamily>(class, &k32)).filter(|&k| widens(k));
        }
        Some(k32)
    }

    /// The adapter's default kernel for `a.matmul(b)`: what [`GpuContext::matmul_choice_of`]
    /// gives while the call's class has no kept choice.
    pub fn matmul_default(&self, a: &DeviceTensor, b: &DeviceTensor) -> Result<MatmulKernel> {
        let plan = matmul_plan(a.layout(), b.layout(), [a.dtype(), b.dtype()])?;
        let stand_ins = self.class_operands(&plan, a, b)?;
        let (plan, a, b) = stand_ins.as_ref().map_or((&plan, a, b), |(p, a, b)| (p, a, b));
        let (out, view) = self.class_output(plan, a, b, None)?;
        let report = &self.rt.report;
        let class = matmul_class(report, &product(plan, a, b, None, &out, &view));
        // A 16-bit product on a CPU adapter runs widened where the f32 class's default is a
        // CPU-adapter kernel, as the call does.
        Ok(self.widened_choice(plan, a, b, None, &out, &view, &class, false).unwrap_or_else(|| MatmulKernel::default_for(report, &class)))
    }

    /// The matrix-product kernels chosen so far (measured or loaded), by shape class.
    pub fn tuned_matmul_choices(&self) -> Vec<(MatmulClass, MatmulKernel)> {
        self.tuner.entries::<MatmulFamily>()
    }

    /// Measures the matrix-product kernels (`MatmulClass::kernels`) for the shape class of
    /// `a.matmul(b)` unless it is tuned already: each computes the real product into a scratch
    /// output. Returns whether it measured.
    pub async fn tune_matmul_async(&self, a: &DeviceTensor, b: &DeviceTensor) -> Result<bool> {
        let plan = matmul_plan(a.layout(), b.layout(), [a.dtype(), b.dtype()])?;
        self.tune_plan(&plan, a, b, None, None, Drive::Poll).await
    }

    /// [`GpuContext::tune_matmul_async`], blocking (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn tune_matmul(&self, a: &DeviceTensor, b: &DeviceTensor) -> Result<bool> {
        let plan = matmul_plan(a.layout(), b.layout(), [a.dtype(), b.dtype()])?;
        pollster::block_on(self.tune_plan(&plan, a, b, None, None, Drive::Wait))
    }

    /// Measures the candidates of `plan`'s class (into `out`, or a new contiguous tensor: the
    /// class of the call's output, [`GpuContext::class_output`]) unless the class is tuned
    /// already, each computing into a scratch output of the class's view: f32, or for a 16-bit
    /// product the type itself where the kernel writes it as it is
    /// (`MatmulKernel::writes_half`), as each runs in a call. (The others' 16-bit calls add a
    /// rounding copy of the output, not timed here.) A scratch the adapter cannot give (a limit,
    /// out of memory) measures nothing: the call runs the default.
    pub(crate) async fn tune_plan(&self, plan: &MatmulPlan, a: &DeviceTensor, b: &DeviceTensor, c: Option<&DeviceTensor>, out: Option<&DeviceTensor>, drive: Drive) -> Result<bool> {
        // The class of the product as recorded (a 16-bit GELU's without it).
        let plan = &*plan.recorded();
        self.ready_to_tune(&[Some(a), Some(b), c].into_iter().flatten().map(|t| t.context()).collect::<Vec<_>>())?;
        // Nothing to measure in an empty product, nor in one of k = 0 (whose operands, empty
        // views, may lie anywhere: a call binds stand-ins for them, `record_plan`).
        if plan.out_shape.contains(&0) || plan.k == 0 {
            return Ok(false);
        }
        let (class_out, out) = self.class_output(plan, a, b, out)?;
        let class = matmul_class(&self.rt.report, &product(plan, a, b, c, &class_out, &out));
        drop(class_out);
        if class.kernels.len() < 2 || self.tuner.get::<MatmulFamily>(&class).is_some() {
            return Ok(false);
        }
        // The scratch holds the view from near its start: its lowest element moved by a whole
        // number of 64 elements (256 bytes) to within the first 64, which keeps every alignment
        // the kernels look at (the offset alone moved made a flipped view reach below 0).
        let shift = out.span().map_or(out.offset(), |(lo, _)| lo - lo % 64);
        let out = Layout::new(out.shape().to_vec(), out.strides().to_vec(), out.offset() - shift)?;
        let bytes = out.span().map_or(0, |(_, hi)| hi as u64 + 1) * 4;
        let Some(scratch) = crate::tune::scratch(self.rt.scoped("tune", || self.rt.buffer("tune", bytes, wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST)))? else { return Ok(false) };
        let scratch = Arc::new(scratch);
        let p = product(plan, a, b, c, scratch.buffer(), &out);
        let half = Product { out_half: plan.dtype != DType::F32, ..product(plan, a, b, c, scratch.buffer(), &out) };
        self.settle_before_measuring().await?;
        let timer = Timer::new(&self.rt)?;
        let best = Tuner::measure(&timer, &class.kernels, drive, |kernel, rec| {
            rec.hold(scratch.clone());
            for t in [Some(a), Some(b), c].into_iter().flatten() {
                rec.hold_shared(t.storage());
            }
            kernels::record(&self.rt, rec, if kernel.writes_half(&self.rt.report) { &half } else { &p }, kernel)
        })
        .await?;
        let Some(best) = best else { return Ok(false) };
        self.tuner.keep::<MatmulFamily>(&class, &best);
        Ok(true)
    }
}
