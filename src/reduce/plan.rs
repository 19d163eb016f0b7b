//! The iteration plan of a reduction or of an op along a dim: PyTorch's TensorIterator for
//! reductions. The output is seen with the input's shape and stride 0 along every reduced
//! dim; a third operand, the *index*, is a contiguous tensor over the reduced dims alone
//! (stride 0 along kept dims). For ops that return indices and for scans it numbers them in
//! logical order, giving each element its position within its reduction (`argmax`'s answer,
//! `cumsum`'s direction); for the others in the input's memory order (largest stride first),
//! so that reduced dims merge wherever the input's do (a permuted 9-d input's sum). The three operands
//! are planned as any elementwise operation ([`IterPlan::build`]: size-1 dims dropped,
//! reversed dims flipped, dims ordered by memory, contiguous dims merged), then the reduced
//! dims (index stride != 0) are moved innermost, in their planned order, so that linear index
//! `r + extent * o` is element `r` of output `o`.

use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::plan::IterPlan;
use crate::reduce::spec::{ReduceSpec, ScanSpec};

/// Where the reduced dims fall in memory, which picks the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceClass {
    /// Nothing to write.
    Empty,
    /// The reduction reads nothing (every output is the op's identity).
    Identity,
    /// The innermost reduced dim is contiguous in the input: each output's elements are
    /// contiguous runs (one run when the reduced dims merge into one): a workgroup per output.
    Rows,
    /// Neighbouring outputs read neighbouring input elements (a kept dim innermost in the
    /// input): an invocation per four outputs walking their reductions.
    Columns,
    /// Neither contiguous: an invocation per output, through the index formula.
    General,
}

/// A reduction's plan: operand 0 the output, 1 the input, 2 the index; the first `rrank`
/// dims are reduced.
#[derive(Clone, Debug, PartialEq)]
pub struct ReducePlan {
    /// The plan.
    pub plan: IterPlan,
    /// How many of its innermost dims are reduced.
    pub rrank: usize,
    /// Elements per output.
    pub extent: usize,
    /// Outputs (rows of a scan).
    pub outputs: usize,
}

impl ReducePlan {
    /// The plan of `spec` reducing an input of `input`'s layout into `out` (a view of the
    /// result's `keep_shape`, or of its shape: the kept dims in order).
    pub fn reduction(spec: &ReduceSpec, input: &Layout, out: &Layout) -> Result<ReducePlan> {
        let shape = input.shape();
        // The output seen with the input's shape: its kept dims' strides, 0 along reduced dims.
        let mut kept = out.strides().iter().copied();
        let out_strides: Vec<isize> = if out.rank() == shape.len() {
            out.strides().iter().zip(&spec.reduced).map(|(&s, &r)| if r { 0 } else { s }).collect()
        } else {
            spec.reduced.iter().map(|&r| if r { 0 } else { kept.next().unwrap_or(0) }).collect()
        };
        let out_view = Layout::new(shape.to_vec(), out_strides, out.offset())?;
        // Only ops that return indices read the index: the others number the reduced dims in
        // the input's memory order, so that the index merges wherever the input does.
        let logical = spec.op.has_indices();
        Self::build(spec.op.name(), &out_view, out, input, &spec.reduced, spec.extent, spec.outputs(), logical)
    }

    /// The plan of a scan along `spec.dim` of `input` into `out` (both of the input's shape).
    pub fn scan(spec: &ScanSpec, input: &Layout, out: &Layout) -> Result<ReducePlan> {
        let shape = input.shape();
        let reduced: Vec<bool> = (0..shape.len()).map(|d| d == spec.dim).collect();
        let extent = shape.get(spec.dim).copied().unwrap_or(1);
        let rows = input.numel().checked_div(extent).unwrap_or(0);
        Self::build(spec.op.name(), out, out, input, &reduced, extent, rows, true)
    }

    /// `out`: the output seen with the input's shape; `result`: the output as given (planned
    /// alone when nothing is read); `logical`: the index numbers the reduced dims row-major
    /// (the indices an op returns, a scan's order), else in the input's memory order (largest
    /// stride first; a permuted input's dims then merge, past the kernels' 8 reduced dims).
    #[allow(clippy::too_many_arguments)]
    fn build(op: &'static str, out: &Layout, result: &Layout, input: &Layout, reduced: &[bool], extent: usize, outputs: usize, logical: bool) -> Result<ReducePlan> {
        let shape = input.shape();
        if extent == 0 || outputs == 0 {
            // Nothing is read: a plan over the outputs alone (every operand the output).
            let p = IterPlan::build(op, result, &[result, result])?;
            return Ok(ReducePlan { plan: p, rrank: 0, extent, outputs });
        }
        // The index: row-major over the reduced dims in `order`, 0 along kept dims.
        let mut order: Vec<usize> = (0..shape.len()).collect();
        if !logical {
            order.sort_by_key(|&d| std::cmp::Reverse(input.strides()[d].unsigned_abs()));
        }
        let mut idx = vec![0isize; shape.len()];
        let mut acc = 1isize;
        for &d in order.iter().rev() {
            if reduced[d] {
                idx[d] = acc;
                acc = isize::try_from(shape[d].max(1)).ok().and_then(|n| acc.checked_mul(n)).ok_or_else(|| Error::overflow(op, format!("the row-major index over the reduced dims of shape {shape:?} past isize")))?;
            }
        }
        let index = Layout::new(shape.to_vec(), idx, 0)?;
        let mut plan = IterPlan::build(op, out, &[input, &index])?;
        let mut rrank = 0;
        for d in 0..plan.rank() {
            if plan.strides_of(2)[d] != 0 {
                plan = plan.with_dim_moved(d, rrank);
                rrank += 1;
            }
        }
        Ok(ReducePlan { plan, rrank, extent, outputs })
    }

    /// The plan's class.
    pub fn class(&self) -> ReduceClass {
        if self.outputs == 0 {
            return ReduceClass::Empty;
        }
        if self.extent == 0 {
            return ReduceClass::Identity;
        }
        let p = &self.plan;
        let input = p.strides_of(1);
        if self.rrank >= 1 && input[0] == 1 {
            ReduceClass::Rows
        } else if p.rank() > self.rrank && input[self.rrank] == 1 {
            ReduceClass::Columns
        } else {
            ReduceClass::General
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::layout::MemoryFormat;
    use crate::reduce::spec::{reduce_spec, Dims, ReduceOp};

    fn plan(shape: &[usize], format: MemoryFormat, dims: &[isize]) -> ReducePlan {
        let x = Layout::with_format(shape, format).unwrap();
        let s = reduce_spec(ReduceOp::Sum, &x, DType::F32, &Dims::List(dims.to_vec()), false, None).unwrap();
        let out = Layout::contiguous(&s.out_shape).unwrap();
        ReducePlan::reduction(&s, &x, &out).unwrap()
    }

    #[test]
    fn classes_follow_memory() {
        // Global average pooling: NCHW reduces rows of H*W, channels-last columns of C.
        let p = plan(&[8, 64, 56, 56], MemoryFormat::Contiguous, &[2, 3]);
        assert_eq!((p.class(), p.plan.sizes(), p.rrank), (ReduceClass::Rows, &[3136, 512][..], 1));
        let p = plan(&[8, 64, 56, 56], MemoryFormat::ChannelsLast, &[2, 3]);
        assert_eq!((p.class(), p.plan.sizes(), p.rrank), (ReduceClass::Columns, &[3136, 64, 8][..], 1));
        assert_eq!(p.plan.strides_of(1), &[64, 1, 200704]);
        assert_eq!(plan(&[4096, 4096], MemoryFormat::Contiguous, &[0]).class(), ReduceClass::Columns);
        // A batch-norm statistic: dims 0, 2, 3 of NCHW are runs of H*W, one per image.
        let p = plan(&[8, 64, 56, 56], MemoryFormat::Contiguous, &[0, 2, 3]);
        assert_eq!((p.class(), p.plan.sizes(), p.rrank), (ReduceClass::Rows, &[3136, 8, 64][..], 2));
        // Neither: every dim strided.
        let x = Layout::contiguous(&[6, 10]).unwrap().slice(1, 0, 10, 2).unwrap();
        let s = reduce_spec(ReduceOp::Sum, &x, DType::F32, &Dims::List(vec![0]), false, None).unwrap();
        let p = ReducePlan::reduction(&s, &x, &Layout::contiguous(&[5]).unwrap()).unwrap();
        assert_eq!(p.class(), ReduceClass::General);
        // The index operand gives logical positions even through a flip.
        let x = Layout::contiguous(&[3, 5]).unwrap().flip(1).unwrap();
        let s = reduce_spec(ReduceOp::Argmax, &x, DType::F32, &Dims::List(vec![1]), false, None).unwrap();
        let p = ReducePlan::reduction(&s, &x, &Layout::contiguous(&[3]).unwrap()).unwrap();
        let mut o = [0usize; 4];
        p.plan.offsets_into(0, &mut o);
        assert_eq!((o[1], o[2]), (0, 4)); // storage element 0 is logical position 4 of its row
    }
}
