//! The copy family's host side: `copy_`'s checks (shared by host and device tensors) and the
//! CPU reference (`cpu`), which executes a [`CopyPlan`] on bytes. A copy is the one-input case
//! of the iteration plan (`crate::plan`); its device entry points are in `gpu/copy.rs`, its
//! kernels in `kernels/copy/`.

pub(crate) mod cpu;

use crate::dtype::DType;
use crate::elementwise::resolve::{flipped_overlap, typed_overlap};
use crate::error::{Error, Result};
use crate::layout::{Layout, Overlap};
use crate::plan::CopyPlan;

/// Whether `dst.copy_(src)` reads `src` from a copy of its values made first: a source in the
/// destination's storage that walks some dim the other way from it (a `flip` of it, a
/// negative-step slice) and partially overlaps it, which PyTorch (whose `flip` copies) reads
/// from a copy too ([`flipped_overlap`]); any other partial overlap is an error
/// ([`check_copy`]).
pub(crate) fn reads_from_copy(dst: &Layout, dst_t: DType, src: &Layout, src_t: DType, same_storage: bool) -> bool {
    same_storage && src.broadcast_to(dst.shape()).is_ok_and(|b| flipped_overlap(dst, dst_t, &b, src_t))
}

/// Validates `dst.copy_(src)` and returns its plan, or `None` when it is a no-op self-copy.
/// Shared by host and device tensors.
pub(crate) fn check_copy(dst: &Layout, dst_t: DType, src: &Layout, src_t: DType, same_storage: bool) -> Result<Option<CopyPlan>> {
    // Every pair of types converts today; the check stays for types that may not.
    if !src_t.can_copy_into(dst_t) {
        return Err(Error::DType { op: "copy_", got: format!("{src_t} (source) into {dst_t}"), expected: "a type it converts into".into() });
    }
    // A view copied onto itself does nothing, even one that reaches an element twice (as
    // PyTorch's `copy_` returns before its overlap checks when the two are the same data).
    if same_storage && dst == src && dst_t == src_t {
        return Ok(None);
    }
    let plan = CopyPlan::new(dst, src)?;
    if dst.has_internal_overlap() {
        return Err(Error::Overlap {
            op: "copy_",
            detail: format!("destination of shape {:?} and strides {:?} reaches some element twice (or, over a span past {} elements, this could not be ruled out)", dst.shape(), dst.strides(), crate::layout::overlap::EXACT_CHECK_LIMIT),
        });
    }
    if same_storage {
        // Compare the broadcast source with the destination, position by position.
        let src_b = src.broadcast_to(dst.shape())?;
        match typed_overlap(dst, dst_t, &src_b, src_t) {
            Overlap::Full if dst_t == src_t => return Ok(None),
            // Full with two types: views of the same bytes as two types of one size (PyTorch's
            // `a.view(torch.int32).copy_(a)`), each element converting in place.
            Overlap::Full | Overlap::Disjoint => {}
            _ => {
                return Err(Error::Overlap {
                    op: "copy_",
                    detail: format!(
                        "destination (shape {:?}, strides {:?}, offset {}) partially overlaps its source (shape {:?}, strides {:?}, offset {}), or this could not be ruled out (views of other strides sharing a span past {} elements are not checked element by element)",
                        dst.shape(),
                        dst.strides(),
                        dst.offset(),
                        src.shape(),
                        src.strides(),
                        src.offset(),
                        crate::layout::overlap::EXACT_CHECK_LIMIT
                    ),
                })
            }
        }
    }
    Ok(Some(plan))
}
