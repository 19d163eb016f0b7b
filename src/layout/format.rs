//! Memory formats: which dim order a dense tensor stores its elements in.

use crate::error::{Error, Result};

/// PyTorch's `torch.memory_format` for strided tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryFormat {
    /// Row-major: the last dim is innermost.
    Contiguous,
    /// NHWC storage order for a logical NCHW (4-d) shape: C is innermost, then W, H, N.
    ChannelsLast,
    /// NDHWC storage order for a logical NCDHW (5-d) shape: C, W, H, D, N.
    ChannelsLast3d,
}

impl MemoryFormat {
    /// The dims innermost first, for a tensor of `rank` dims, or `None` when the format does
    /// not apply to that rank (channels_last needs 4 dims, channels_last_3d 5).
    pub fn dim_order(self, rank: usize) -> Option<Vec<usize>> {
        match (self, rank) {
            (MemoryFormat::Contiguous, _) => Some((0..rank).rev().collect()),
            (MemoryFormat::ChannelsLast, 4) => Some(vec![1, 3, 2, 0]),
            (MemoryFormat::ChannelsLast3d, 5) => Some(vec![1, 4, 3, 2, 0]),
            _ => None,
        }
    }

    /// The strides this format gives a dense tensor of `shape`.
    ///
    /// Contiguous strides count a size-0 dim as size 1, as PyTorch does; the channels-last
    /// formats do not (PyTorch's `{1,3,2,0}` construction): `[2,0,3,3]` gets `[0,1,0,0]`.
    ///
    /// ```
    /// use strided_wgpu::MemoryFormat;
    /// assert_eq!(MemoryFormat::ChannelsLast.strides(&[1, 64, 5, 4]).unwrap(), vec![1280, 1, 256, 64]);
    /// assert_eq!(MemoryFormat::Contiguous.strides(&[2, 0, 3]).unwrap(), vec![3, 3, 1]);
    /// ```
    pub fn strides(self, shape: &[usize]) -> Result<Vec<isize>> {
        let clamp = self == MemoryFormat::Contiguous;
        let mut strides = vec![0isize; shape.len()];
        // The next dim's stride; `None` once it left isize, an error only when a dim takes it (the
        // product past the outermost dim is no stride: [2^32, 0, 2^32] has strides).
        let mut acc: Option<isize> = Some(1);
        let mut place = |d: usize| -> Result<()> {
            strides[d] = acc.ok_or_else(|| Error::overflow("memory_format", format!("the strides of shape {shape:?} in {self:?}")))?;
            let n = if clamp { shape[d].max(1) } else { shape[d] };
            acc = isize::try_from(n).ok().and_then(|n| acc?.checked_mul(n));
            Ok(())
        };
        if clamp {
            // Contiguous: from the last dim, without building the order.
            (0..shape.len()).rev().try_for_each(&mut place)?;
        } else {
            let order = self.dim_order(shape.len()).ok_or_else(|| {
                Error::invalid("memory_format", format!("{self:?} needs a tensor of rank {}, got shape {shape:?}", self.rank_needed()))
            })?;
            order.into_iter().try_for_each(&mut place)?;
        }
        Ok(strides)
    }

    fn rank_needed(self) -> usize {
        match self {
            MemoryFormat::Contiguous => 0,
            MemoryFormat::ChannelsLast => 4,
            MemoryFormat::ChannelsLast3d => 5,
        }
    }
}

/// PyTorch's `suggest_memory_format`: `is_channels_last_strides_2d` / `_3d` on the strides.
pub(super) fn suggest(shape: &[usize], strides: &[isize]) -> MemoryFormat {
    let (format, order): (MemoryFormat, &[usize]) = match shape.len() {
        4 => (MemoryFormat::ChannelsLast, &[1, 3, 2, 0]),
        5 => (MemoryFormat::ChannelsLast3d, &[1, 4, 3, 2, 0]),
        _ => return MemoryFormat::Contiguous,
    };
    // Trivial C dim: default to NCHW.
    if strides[1] == 0 {
        return MemoryFormat::Contiguous;
    }
    let mut min: i128 = 0;
    for &d in order {
        if shape[d] == 0 || (strides[d] as i128) < min {
            return MemoryFormat::Contiguous;
        }
        // N111-like ambiguity: fall back to NCHW.
        if d == 0 && min == strides[1] as i128 {
            return MemoryFormat::Contiguous;
        }
        min = strides[d] as i128;
        if shape[d] > 1 {
            min *= shape[d] as i128;
        }
    }
    format
}
