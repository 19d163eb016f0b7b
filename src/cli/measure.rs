//! Timing the bench's rows: each row is timed with GPU timestamps around the recorded work
//! when the adapter has them (else wall clock around submit + wait), after warm-up, and
//! reported as the median of several runs. Rows are timed round-robin, each round timing every
//! row once, so that slow periods of a shared machine fall on all rows alike rather than on
//! whichever row was being timed. Each timed run directly follows `warm` untimed runs of the
//! same work (default [`DEFAULT_WARM`]), which bring its data back into the caches after the
//! previous row (the 64 MiB rows evict everything). A copy whose source the caches only just
//! hold needs several: on lavapipe, `slice_step` run over and over right after the 64 MiB copy
//! took 1.35-1.39, 1.12-1.25, 0.95-1.09, ... 0.60-0.65 ms on its 1st, 2nd, 3rd, ... 8th run,
//! while a contiguous copy of its output was steady from its 2nd run. `--warm 0` (or
//! `--interleave`) times every run with the caches the other rows left. GB/s counts bytes read
//! plus bytes written (each element moved is read once and written once).

use strided_wgpu::{Batch, DeviceTensor, DType, GpuContext, MemoryFormat, Result, Strided};
use strided_wgpu::advanced::GpuTimer;
use strided_wgpu::advanced::{vec4_default, CopyPath};

const WARMUP: usize = 3;
const RUNS: usize = 15;
/// Untimed runs of a copy directly before each of its timed runs, unless `--warm` says.
pub const DEFAULT_WARM: usize = 8;

/// One measured row.
pub struct Row {
    pub op: String,
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub times_ms: Vec<f64>,
    pub bytes: f64,
    pub note: String,
    /// The median of a contiguous copy kernel moving the same bytes, timed in the same run
    /// with the same warm-up.
    pub copy_ms: f64,
}

impl Row {
    pub fn median(&self) -> f64 {
        median(&self.times_ms)
    }
    pub fn gbps(&self) -> f64 {
        self.bytes / (self.median() * 1e-3) / 1e9
    }
    /// GB/s over the same-bytes copy's GB/s.
    pub fn ratio_to_copy(&self) -> f64 {
        self.copy_ms / self.median()
    }
}

/// How the rows on `ctx` are timed: GPU timestamps where the adapter has them, else the wall
/// clock around submit and wait (named in the header and JSON rows of the parts timed on the
/// GPU, `"timing"`).
pub fn timing(ctx: &GpuContext) -> &'static str {
    let a = ctx.adapter();
    if a.timestamps || a.pass_timestamps {
        "GPU timestamps"
    } else {
        "wall clock"
    }
}

/// The end of a part whose rows ran in child processes: an error when `failed` of its `rows`
/// could not be measured (their errors are in the rows printed), so that the program exits 1.
pub fn child_failures(op: &'static str, failed: usize, rows: usize) -> Result<()> {
    if failed == 0 {
        return Ok(());
    }
    Err(strided_wgpu::Error::Gpu { op, message: format!("{failed} of {rows} rows measured in a fresh process failed (their errors are printed in the rows)") })
}

/// The median as Python's `statistics.median` takes it (the peer scripts' rule): the middle
/// value, or the mean of the two middle values of an even count; NaN of no values.
pub fn median(t: &[f64]) -> f64 {
    let mut t = t.to_vec();
    t.sort_by(f64::total_cmp);
    match t.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => t[n / 2],
        n => (t[n / 2 - 1] + t[n / 2]) / 2.0,
    }
}

/// What a case records into a batch each time it is timed.
pub type Work = Box<dyn Fn(&mut Batch<'_>) -> Result<()>>;

/// A benchmark case: work to time, the bytes it reads and writes, and how to report it.
pub struct Case {
    pub op: String,
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub bytes: f64,
    pub note: String,
    pub work: Work,
}

impl Case {
    /// A copy from `src` into `dst` through `path`.
    pub(crate) fn copy(op: &str, shape: &[usize], dst: &DeviceTensor, src: &DeviceTensor, path: CopyPath) -> Case {
        let (d, s) = (dst.clone(), src.clone());
        Case {
            op: op.into(),
            shape: shape.to_vec(),
            dtype: src.dtype(),
            bytes: (dst.numel() * dst.dtype().size() + src.numel() * src.dtype().size()) as f64,
            note: String::new(),
            work: Box::new(move |b| b.copy_with(&d, &s, path)),
        }
    }
}

/// The reference copies of `cases`: the distinct element counts, in order of first use (f32
/// elements, half the bytes each way, whole vec4 words), and for each case the index in
/// `cases` followed by those copies of its own. (Until 2026-11-26 the copies were appended in
/// ascending size while the indices counted first uses, so rows of different byte counts were
/// compared with another row's copy, scaled.)
fn reference_copies(cases: &[Case]) -> (Vec<usize>, Vec<usize>) {
    let mut sizes: Vec<usize> = Vec::new();
    let ref_of = cases
        .iter()
        .map(|c| {
            let n = ((c.bytes / 8.0) as usize / 4 * 4).max(4);
            let k = sizes.iter().position(|&m| m == n).unwrap_or_else(|| {
                sizes.push(n);
                sizes.len() - 1
            });
            cases.len() + k
        })
        .collect();
    (sizes, ref_of)
}

/// Times every case RUNS times after WARMUP rounds, round-robin, together with a contiguous
/// copy kernel moving the same bytes as each (half read, half written): each timed run of
/// either directly follows `warm` untimed runs of the same work.
pub fn measure(ctx: &GpuContext, timer: &GpuTimer, cases: Vec<Case>, warm: usize) -> Result<Vec<Row>> {
    // One reference copy per byte count: whole vec4 words of f32, each way.
    let (sizes, ref_of) = reference_copies(&cases);
    let mut all = cases;
    for &n in &sizes {
        let a = DeviceTensor::zeros(ctx, &[n], DType::F32, MemoryFormat::Contiguous)?;
        let b = DeviceTensor::zeros(ctx, &[n], DType::F32, MemoryFormat::Contiguous)?;
        // The contiguous copy kernel at the shape the crate runs on this adapter.
        all.push(Case::copy("same_bytes_copy", &[n], &b, &a, vec4_default(ctx.adapter().device_type)));
    }
    let mut times = vec![Vec::new(); all.len()];
    for round in 0..WARMUP + RUNS {
        for (c, t) in all.iter().zip(&mut times) {
            for _ in 0..warm {
                timer.time(|b| (c.work)(b))?;
            }
            let ms = timer.time(|b| (c.work)(b))?;
            if round >= WARMUP {
                t.push(ms);
            }
        }
    }
    let n_cases = ref_of.len();
    Ok(all
        .iter()
        .zip(&times)
        .take(n_cases)
        .zip(&ref_of)
        .map(|((c, times_ms), &r)| Row {
            op: c.op.clone(),
            shape: c.shape.clone(),
            dtype: c.dtype,
            times_ms: times_ms.clone(),
            bytes: c.bytes,
            note: c.note.clone(),
            copy_ms: median(&times[r]) * c.bytes / all[r].bytes,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(bytes: f64) -> Case {
        Case { op: String::new(), shape: vec![], dtype: DType::F32, bytes, note: String::new(), work: Box::new(|_| Ok(())) }
    }

    /// Each case's reference is the copy of its own byte count, whatever order the sizes
    /// come in (the pooling rows come largest first).
    #[test]
    fn each_row_is_compared_with_the_copy_of_its_own_bytes() {
        let bytes = [32e6, 8e6, 131072.0, 32e6, 25.6e6, 8e6];
        let cases: Vec<Case> = bytes.iter().map(|&b| case(b)).collect();
        let (sizes, ref_of) = reference_copies(&cases);
        assert_eq!(sizes.len(), 4, "{sizes:?}");
        for (i, &b) in bytes.iter().enumerate() {
            let n = sizes[ref_of[i] - cases.len()];
            assert_eq!(n, ((b / 8.0) as usize / 4 * 4), "case {i} of {b} bytes got the copy of {n} floats");
        }
    }

    /// The peer scripts' median (Python's `statistics.median`): an even count averages its two
    /// middle values.
    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_its_middle_values() {
        assert_eq!(median(&[10.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert!(median(&[]).is_nan());
    }
}
