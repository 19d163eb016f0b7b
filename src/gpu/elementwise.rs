//! Elementwise operations on device tensors: recorded into a [`Batch`], or run at once through
//! the [`Elementwise`] methods.

use crate::dtype::DType;
use crate::elementwise::api::{elementwise_ops, Elementwise};
use crate::elementwise::resolve::Target;
use crate::elementwise::resolve::{input_copies, resolve, swapped, Input};
use crate::elementwise::{Op, Scalar};
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::fuse;
use crate::gpu::tensor::DeviceTensor;
use crate::kernels::elementwise::{self, ElementwisePath};
use crate::strided::Strided;

impl Batch<'_> {
    /// Records `op` on `inputs` into `target` (see [`Elementwise`]); returns the tensor
    /// written (a new one, the first input, or the given view). Bad input is an error, and
    /// nothing is recorded.
    pub fn elementwise(&mut self, op: Op, inputs: &[Input<'_, DeviceTensor>], target: Target<'_, DeviceTensor>) -> Result<DeviceTensor> {
        self.elementwise_with(op, inputs, target, ElementwisePath::Auto)
    }

    /// [`Batch::elementwise`] through a forced kernel (for tests and benchmarks); a kernel
    /// that cannot run the op is an error, and nothing is recorded.
    pub fn elementwise_with(&mut self, op: Op, inputs: &[Input<'_, DeviceTensor>], target: Target<'_, DeviceTensor>, path: ElementwisePath) -> Result<DeviceTensor> {
        let name = op.name();
        let mut all: Vec<&DeviceTensor> = inputs.iter().filter_map(|i| if let Input::Tensor(t) = i { Some(*t) } else { None }).collect();
        if let Target::Out(t) = target {
            all.push(t);
        }
        self.check_context(name, &all)?;
        // In place as the first op of its batch: a captured graph may fold it into the op
        // before (gpu/fuse.rs).
        let first = self.recorded() == 0;
        let mark = self.recorded();
        // Flipped inputs overlapping the destination read from copies recorded first
        // (`read_from_copies`).
        let copies = input_copies(op, inputs, target, DeviceTensor::shares_storage, |t| self.copied(name, t, t.dtype(), crate::layout::MemoryFormat::Contiguous));
        let copies = match copies {
            Ok(c) => c,
            Err(e) => {
                if self.recorded() != mark {
                    self.cut_back(mark);
                }
                return Err(e);
            }
        };
        let with_copies = swapped(inputs, &copies);
        let inputs = &with_copies[..];
        let tail = match target {
            Target::InPlace if path == ElementwisePath::Auto && first && copies.is_none() => fuse::elementwise_tail(op, &all),
            _ => None,
        };
        let (r, tensors) = match resolve(op, inputs, target, DeviceTensor::shares_storage) {
            Ok(r) => r,
            Err(e) => {
                // The copies recorded for this call, if any (else the batch as it was, tail
                // included).
                if self.recorded() != mark {
                    self.cut_back(mark);
                }
                return Err(e);
            }
        };
        let ctx = self.context().clone();
        let rt = &ctx.rt;
        let rec = self.parts(name)?;
        // One set of error scopes for the op: its new output and its dispatches (cut back out
        // of the batch when they caught an error).
        let out = rt.scoped(name, || {
            let out = match target {
                Target::New => {
                    let len = r.out_layout.span().map_or(0, |(_, hi)| hi + 1);
                    DeviceTensor::alloc_unchecked(name, &ctx, r.out_dtype, len, r.out_layout.clone())?
                }
                Target::InPlace => tensors[0].clone(),
                Target::Out(t) => t.clone(),
            };
            rec.hold_shared(out.storage());
            for t in &tensors {
                rec.hold_shared(t.storage());
            }
            let buffers: Vec<&wgpu::Buffer> = tensors.iter().map(|t| t.buffer()).collect();
            elementwise::record(rt, rec, &r, path, out.buffer(), &buffers)?;
            Ok(out)
        });
        let out = match out {
            Ok(out) => out,
            Err(e) => {
                self.cut_back(mark);
                return Err(e);
            }
        };
        self.tail = tail.map(|t| (0, t));
        Ok(out)
    }
}

/// [`Batch`]'s methods that record the [`Elementwise`] ops, from the list in
/// `elementwise_ops`: `batch.add(&x, &y)` records what `x.add(&y)` runs.
macro_rules! batch_methods {
    ($($name:ident, $name_:ident, $name_out:ident = $torch:literal ($($arg:ident: $ty:ty),*) => $op:expr, [$($inp:expr),*], $doc:literal;)*) => {$(
        #[doc = concat!("Records `input.", stringify!($name), "(..)` ([`Elementwise::", stringify!($name), "`]: ", $doc, "); returns the new tensor. PyTorch's `torch.", $torch, "(input, ..)`.")]
        #[allow(clippy::needless_lifetimes)]
        pub fn $name<'a>(&mut self, input: &'a DeviceTensor $(, $arg: $ty)*) -> Result<DeviceTensor> {
            self.elementwise($op, &[Input::Tensor(input) $(, $inp)*], Target::New)
        }
        #[doc = concat!("Records `input.", stringify!($name_), "(..)` ([`Elementwise::", stringify!($name_), "`]): in place.")]
        #[allow(clippy::needless_lifetimes)]
        pub fn $name_<'a>(&mut self, input: &'a DeviceTensor $(, $arg: $ty)*) -> Result<()> {
            self.elementwise($op, &[Input::Tensor(input) $(, $inp)*], Target::InPlace).map(drop)
        }
        #[doc = concat!("Records `input.", stringify!($name_out), "(.., &out)` ([`Elementwise::", stringify!($name_out), "`]): into `out`.")]
        pub fn $name_out<'a>(&mut self, input: &'a DeviceTensor $(, $arg: $ty)*, out: &'a DeviceTensor) -> Result<()> {
            self.elementwise($op, &[Input::Tensor(input) $(, $inp)*], Target::Out(out)).map(drop)
        }
    )*};
}

/// The [`Elementwise`] ops, recorded: every op in its three forms, with the tensor the method
/// form is called on as the first argument (PyTorch's function form, `torch.add(input, other)`).
impl Batch<'_> {
    /// Records `input.to(dtype)` ([`Elementwise::to`]): `input` itself when it already has
    /// `dtype` (nothing is recorded), else a new converted tensor.
    pub fn to(&mut self, input: &DeviceTensor, dtype: DType) -> Result<DeviceTensor> {
        if dtype == input.dtype() {
            self.check_context("to", &[input])?;
            return Ok(input.clone());
        }
        self.elementwise(Op::To(dtype), &[Input::Tensor(input)], Target::New)
    }

    elementwise_ops!(batch_methods, DeviceTensor);
}

impl Elementwise for DeviceTensor {
    /// Records the op into a batch of its own and submits it (or holds it back under
    /// `SubmitPolicy::Deferred`), never waiting for it.
    fn run(op: Op, inputs: &[Input<'_, DeviceTensor>], target: Target<'_, DeviceTensor>) -> Result<DeviceTensor> {
        DeviceTensor::run_with(op, inputs, target, ElementwisePath::Auto)
    }
}

impl DeviceTensor {
    /// [`Elementwise::run`] through a forced kernel (for tests and benchmarks).
    pub fn run_with(op: Op, inputs: &[Input<'_, DeviceTensor>], target: Target<'_, DeviceTensor>, path: ElementwisePath) -> Result<DeviceTensor> {
        let ctx = match inputs.iter().find_map(|i| if let Input::Tensor(t) = i { Some(*t) } else { None }) {
            Some(t) => t.context().clone(),
            None => return Err(crate::error::Error::invalid(op.name(), "needs at least one tensor input")),
        };
        let mut batch = ctx.batch();
        let out = batch.elementwise_with(op, inputs, target, path)?;
        batch.submit_eager(op.name())?;
        Ok(out)
    }
}
