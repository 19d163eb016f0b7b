//! The CPU reference: executes a [`CopyPlan`] on byte buffers.
//!
//! It dispatches on the same [`CopyKind`] as the GPU and computes addresses with the same
//! index formula ([`CopyPlan::offsets`]). Copies move element bytes untouched (bit-exact by
//! construction); conversions between types use [`crate::dtype::cast_bits`].

use crate::dtype::{cast_bits, DType};
use crate::plan::{CopyKind, CopyPlan};

/// Where a copy reads from.
pub(crate) enum Source<'a> {
    /// Another buffer.
    Other(&'a [u8]),
    /// The destination's own buffer (the caller has checked that the views are disjoint).
    Same,
}

/// Runs `plan` from `src` (elements of `src_t`) into `dst` (elements of `dst_t`). The caller
/// has checked that both views lie within their buffers and that the types may be copied.
pub(crate) fn execute(plan: &CopyPlan, dst: &mut [u8], dst_t: DType, src: Source<'_>, src_t: DType) {
    let (ds, ss) = (dst_t.size(), src_t.size());
    let mut mv = |d: usize, s: usize, elems: usize| match &src {
        Source::Other(src) => dst[d * ds..(d + elems) * ds].copy_from_slice(&src[s * ss..(s + elems) * ss]),
        Source::Same => dst.copy_within(s * ss..(s + elems) * ss, d * ds),
    };
    if dst_t != src_t {
        // Converting copies go element by element: read, convert, write.
        let mut tmp = [0u8; 4];
        for i in 0..plan.numel() {
            let (d, s) = plan.offsets(i);
            let bytes = match &src {
                Source::Other(src) => &src[s * ss..(s + 1) * ss],
                Source::Same => {
                    tmp[..ss].copy_from_slice(&dst[s * ss..(s + 1) * ss]);
                    &tmp[..ss]
                }
            };
            let bits = cast_bits(src_t, dst_t, read_bits(bytes));
            write_bits(&mut dst[d * ds..(d + 1) * ds], bits);
        }
        return;
    }
    match plan.kind() {
        CopyKind::Empty => {}
        CopyKind::Dense => mv(plan.dst_offset(), plan.src_offset(), plan.numel()),
        CopyKind::InnerContiguous => {
            let row = plan.sizes()[0];
            for r in 0..plan.numel() / row {
                let (d, s) = plan.offsets(r * row);
                mv(d, s, row);
            }
        }
        CopyKind::BatchedTranspose { .. } | CopyKind::StridedRows { .. } | CopyKind::Gather => {
            for i in 0..plan.numel() {
                let (d, s) = plan.offsets(i);
                mv(d, s, 1);
            }
        }
    }
}

/// Little-endian element bytes (1, 2 or 4) as u32 bits.
pub(crate) fn read_bits(b: &[u8]) -> u32 {
    let mut w = [0u8; 4];
    w[..b.len()].copy_from_slice(b);
    u32::from_le_bytes(w)
}

pub(crate) fn write_bits(b: &mut [u8], bits: u32) {
    let n = b.len();
    b.copy_from_slice(&bits.to_le_bytes()[..n]);
}
