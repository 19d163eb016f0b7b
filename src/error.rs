//! The crate's one error type.
//!
//! Every variant names the operation that failed and the shapes, strides, dims or indices
//! involved, so that a message read in a log says what went wrong without a debugger.

use std::fmt;

/// Shorthand for `std::result::Result<T, strided_wgpu::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The dims an op indexing `rank` dims takes, for [`Error::DimOutOfRange`]'s message.
fn dim_range(rank: usize) -> String {
    match rank {
        0 => "a 0-d tensor has no dim to index".to_string(),
        r => format!("expected a dim in [-{r}, {}] (PyTorch's negative dims count from the end)", r - 1),
    }
}

/// Everything that can go wrong in this crate, host and device alike.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A dim index outside `[-rank, rank)`.
    #[error("{op}: dim {dim} is out of range: {}", dim_range(*.rank))]
    DimOutOfRange {
        /// The operation.
        op: &'static str,
        /// The dim the caller passed.
        dim: isize,
        /// How many dims the op indexes: the tensor's rank, one more where it inserts a dim
        /// (`unsqueeze`, `stack`), and 1 for a 0-d tensor whose dims -1 and 0 PyTorch takes
        /// (`transpose`, `squeeze`, reductions; `maybe_wrap_dim(.., wrap_scalar=true)`).
        rank: usize,
    },
    /// An argument that is invalid for the tensor it is applied to.
    #[error("{op}: {detail}")]
    InvalidArgument {
        /// The operation.
        op: &'static str,
        /// What was passed, for which tensor, and what was expected.
        detail: String,
    },
    /// A well-formed request that this crate, this kernel or this adapter cannot serve, where
    /// [`Error::InvalidArgument`] is a request that is wrong everywhere: a forced kernel that
    /// is not eligible for the shape or the operands' alignment, an adapter that lacks a
    /// feature the work needs (subgroups, timestamp queries), an element type the op does not
    /// implement (a convolution of integers, an integer result PyTorch would widen to int16 or
    /// int64), a buffer whose usage flags rule the work out. The same call may succeed with
    /// the automatic choice, on another adapter, or in PyTorch.
    #[error("{op}: not supported: {detail}")]
    Unsupported {
        /// The operation.
        op: &'static str,
        /// What is not supported, for which operands, and why.
        detail: String,
    },
    /// `view`: the element count matches, but the strides cannot express the new shape without
    /// a copy. `reshape` copies in this case.
    #[error("{op}: shape {requested:?} is not compatible with size {shape:?} and strides {strides:?}; use reshape")]
    IncompatibleLayout {
        /// The operation.
        op: &'static str,
        /// The requested shape.
        requested: Vec<usize>,
        /// The view's shape.
        shape: Vec<usize>,
        /// The view's strides.
        strides: Vec<isize>,
    },
    /// The requested shape cannot hold the tensor's elements at all (wrong element count, or an
    /// ambiguous or repeated -1).
    #[error("{op}: shape {requested:?} is invalid for a tensor of shape {shape:?} ({numel} elements): {detail}")]
    IncompatibleShape {
        /// The operation.
        op: &'static str,
        /// The requested shape, as passed (-1 infers a size).
        requested: Vec<isize>,
        /// The tensor's shape.
        shape: Vec<usize>,
        /// The tensor's element count.
        numel: usize,
        /// What is wrong with it.
        detail: String,
    },
    /// Two shapes that cannot be broadcast together.
    #[error("{op}: shape {from:?} cannot be broadcast to {to:?}: at dim {dim}, size {from_size} must equal {to_size} or be 1")]
    Broadcast {
        /// The operation.
        op: &'static str,
        /// The shape being broadcast (the source of a copy).
        from: Vec<usize>,
        /// The target shape (the destination of a copy).
        to: Vec<usize>,
        /// The dim, counted in the target shape.
        dim: usize,
        /// The size there in `from`.
        from_size: usize,
        /// The size there in `to`.
        to_size: usize,
    },
    /// A view that reaches outside its storage.
    #[error("{op}: a view of shape {shape:?}, strides {strides:?} and offset {offset} reaches elements [{lo}, {hi}], outside a storage of {storage_len} elements")]
    OutOfBounds {
        /// The operation.
        op: &'static str,
        /// The view's shape.
        shape: Vec<usize>,
        /// The view's strides.
        strides: Vec<isize>,
        /// The view's storage offset.
        offset: usize,
        /// The lowest element index the view reaches.
        lo: i128,
        /// The highest element index the view reaches.
        hi: i128,
        /// The number of elements in the storage.
        storage_len: usize,
    },
    /// A write whose destination maps two positions to one element, or that partially overlaps
    /// its source.
    #[error("{op}: {detail}")]
    Overlap {
        /// The operation.
        op: &'static str,
        /// Which views overlap, and how.
        detail: String,
    },
    /// Element types that do not fit together.
    #[error("{op}: element type {got} cannot be used here; expected {expected}")]
    DType {
        /// The operation.
        op: &'static str,
        /// The element type passed.
        got: String,
        /// What the operation accepts.
        expected: String,
    },
    /// An element count or byte size that does not fit the integer type that holds it.
    #[error("{op}: integer overflow computing {what}")]
    Overflow {
        /// The operation.
        op: &'static str,
        /// What was being computed, with its inputs.
        what: String,
    },
    /// A request the adapter cannot serve at all (a limit of the device or of the kernels).
    #[error("{op}: {what} needs {requested}, but the limit {limit} is {max}")]
    Limit {
        /// The operation.
        op: &'static str,
        /// What was requested.
        what: String,
        /// The limit's name, e.g. `max_storage_buffer_binding_size`.
        limit: &'static str,
        /// How much was needed.
        requested: u64,
        /// The limit's value.
        max: u64,
    },
    /// Host memory for a result could not be allocated (the allocator refused it: the size
    /// fits the address space, but not this machine's memory).
    #[error("{op}: could not allocate {bytes} bytes of host memory for {what}")]
    HostMemory {
        /// The operation.
        op: &'static str,
        /// What was being allocated.
        what: String,
        /// The bytes requested.
        bytes: usize,
    },
    /// No adapter matched, or none exists.
    #[error("adapter: {0}")]
    Adapter(String),
    /// An error reported by wgpu (validation, out of memory, device lost), caught in an error
    /// scope around the call that caused it.
    #[error("{op}: wgpu reported: {message}")]
    Gpu {
        /// The operation.
        op: &'static str,
        /// wgpu's message.
        message: String,
    },
    /// The device was lost (destroyed, reset, or its driver failed). Every later call of the
    /// crate on that device returns this error too.
    #[error("{op}: the device was lost: {detail}")]
    DeviceLost {
        /// The operation.
        op: &'static str,
        /// What reported the loss.
        detail: String,
    },
    /// Tuning choices that could not be saved or loaded (an unreadable or unwritable file, a
    /// file that is not a tuning file, a choice that is not one of its class's candidates;
    /// another adapter's, crate version's or tuning format's sections are skipped, not an error).
    #[error("{op}: {detail}")]
    Tuning {
        /// The operation.
        op: &'static str,
        /// What went wrong, with the file and entry involved.
        detail: String,
    },
    /// A tensor that lives on another device context than the operation's.
    #[error("{op}: {detail}")]
    Device {
        /// The operation.
        op: &'static str,
        /// What differs.
        detail: String,
    },
}

impl Error {
    /// The name of the operation that failed (`"view"`, `"expand"`, `"copy_"`, ...).
    pub fn op(&self) -> &'static str {
        match self {
            Error::DimOutOfRange { op, .. }
            | Error::InvalidArgument { op, .. }
            | Error::Unsupported { op, .. }
            | Error::IncompatibleLayout { op, .. }
            | Error::IncompatibleShape { op, .. }
            | Error::Broadcast { op, .. }
            | Error::OutOfBounds { op, .. }
            | Error::Overlap { op, .. }
            | Error::DType { op, .. }
            | Error::Overflow { op, .. }
            | Error::Limit { op, .. }
            | Error::HostMemory { op, .. }
            | Error::Gpu { op, .. }
            | Error::DeviceLost { op, .. }
            | Error::Tuning { op, .. }
            | Error::Device { op, .. } => op,
            Error::Adapter(_) => "adapter",
        }
    }

    pub(crate) fn invalid(op: &'static str, detail: impl fmt::Display) -> Self {
        Error::InvalidArgument { op, detail: detail.to_string() }
    }
    pub(crate) fn unsupported(op: &'static str, detail: impl fmt::Display) -> Self {
        Error::Unsupported { op, detail: detail.to_string() }
    }
    pub(crate) fn overflow(op: &'static str, what: impl fmt::Display) -> Self {
        Error::Overflow { op, what: what.to_string() }
    }
}

/// An empty vector with room for `n` elements of host memory, for `what` of `op`: an
/// allocation the allocator refuses is [`Error::HostMemory`], not an abort (the one fallible
/// allocation of the crate's host results).
pub(crate) fn reserved<T>(op: &'static str, what: impl FnOnce() -> String, n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Error::HostMemory { op, what: what(), bytes: n.saturating_mul(std::mem::size_of::<T>()) })?;
    Ok(v)
}
