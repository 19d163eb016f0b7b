//! Split-K: how a tiled GEMM's reduction is cut into slices when its output has too few tiles to
//! fill a GPU (the convolution's `GemmNchwSplit` / `GemmNhwcSplit`, the matrix products'
//! `GemmSplit`). Each workgroup walks one slice of one tile and stores the tile's partial sums;
//! a second dispatch adds each output's slices in slice order (the same bits at every run) and
//! applies the epilogue. Host code only.

/// The workgroups a split call aims at: enough tiles to keep every multiprocessor of a large
/// GPU busy (an NVIDIA H200 has 132, each holding several 256-invocation workgroups).
pub(crate) const SPLIT_TARGET: u64 = 1024;

/// Whether a GPU's default cuts a convolution of `tiles` output tiles of 64 x 64 (groups
/// included) over a reduction of `r_len` steps (C/groups * kh * kw): under 256 tiles (a GPU of
/// 100+ multiprocessors would run a workgroup or two on each) and at least 1024 steps (each
/// slice still walks hundreds). ResNet-18 at batch 8 on an NVIDIA H200: its 3x3 layers at
/// 28x28, 14x14 and 7x7 (196, 100 and 56 tiles of 1152-4608 steps) ran at 10, 6.5 and 3.1
/// TFLOP/s unsplit (BENCHMARKS.md). The default's choice of `GemmNchwSplit` / `GemmNhwcSplit`
/// (on the class's magnitudes) and the wide kernels' own cut (on the call's sizes) both ask it.
pub(crate) fn conv_wants_split(tiles: usize, r_len: usize) -> bool {
    tiles < 256 && r_len >= 1024
}

/// Whether a GPU's default cuts a matrix product of `tiles` output tiles of 64 x 64 (batch
/// included) over k: under 128 tiles and k of at least 256. A classifier's `linear` [8, 512] x
/// [1000, 512]^T (16 tiles) took 0.089 ms of an NVIDIA H200 unsplit (BENCHMARKS.md). The
/// default's choice of `GemmSplit` and `GemmWide`'s own cut both ask it.
pub(crate) fn matmul_wants_split(tiles: usize, k: usize) -> bool {
    tiles < 128 && k >= 256
}

/// The fewest reduction steps a slice walks (4 of the GEMM engine's 16-step stages).
const SLICE_MIN: usize = 64;

/// The slices of a call of `tiles` output tiles over a reduction of `r_len` steps whose partial
/// buffer takes `bytes_per_slice` a slice, within `limit` bytes: (slices, steps per slice, a
/// multiple of 16). One slice (no split) where the tiles already reach [`SPLIT_TARGET`], the
/// reduction is too short to cut (under 2 x 64 steps), or a second slice would not fit.
pub(crate) fn slices(tiles: u64, r_len: usize, bytes_per_slice: u64, limit: u64) -> (usize, usize) {
    let want = SPLIT_TARGET.div_ceil(tiles.max(1)) as usize;
    let most = (r_len / SLICE_MIN).min((limit / bytes_per_slice.max(1)) as usize).max(1);
    let s = want.min(most).max(1);
    let chunk = (r_len.div_ceil(s).div_ceil(16) * 16).max(16);
    (r_len.div_ceil(chunk).max(1), chunk)
}

#[cfg(test)]
mod tests {
    use super::slices;

    #[test]
    fn slices_cover_the_reduction_in_whole_stages() {
        // ResNet-18's last 3x3 stage at batch 8: 56 tiles of 4608 steps.
        assert_eq!(slices(56, 4608, 1 << 20, 1 << 30), (18, 256));
        // Enough tiles already, or too short a reduction: one slice.
        assert_eq!(slices(2048, 4608, 1 << 20, 1 << 30).0, 1);
        assert_eq!(slices(4, 100, 1 << 20, 1 << 30).0, 1);
        // The binding limit caps the slices.
        assert_eq!(slices(1, 4096, 1 << 20, 3 << 20).0, 3);
        for (tiles, r) in [(1u64, 128usize), (7, 1000), (100, 2304), (16, 512), (3, 65536)] {
            let (s, chunk) = slices(tiles, r, 1 << 20, 1 << 30);
            assert!(chunk % 16 == 0 && s * chunk >= r && (s - 1) * chunk < r, "{tiles} tiles, {r} steps: {s} x {chunk}");
        }
    }
}
