//! [`MatmulKernel::Blocked`](super::MatmulKernel::Blocked): the 1x1 convolution's
//! register-blocked CPU-adapter inner product (`conv1x1_nchw_step.wgsl`, `conv1x1_block.wgsl`)
//! over a batch of weights in storage (`matmul_blocked.wgsl`, `matmul_weights.wgsl`). One
//! dispatch per chunk of 4*CQ reduction steps covers every batch matrix and every output: the
//! batch is a grid dimension of up to two levels (two batch dims that do not merge; strides of
//! any sign, 0 for a broadcast operand), where the `Conv1x1` route records one convolution per
//! batch matrix.
//!
//! The product runs as `out = X @ W^T` with "pixels" along X's rows: the product's rows (X = A,
//! W = B^T: the bias per column is the convolution's bias per output), or, where the output's
//! columns have unit stride, the product's columns (X = B^T, W = A, out^T: the output's stores,
//! the kernel's main traffic, move as vec4 words). C constant along the pixels is read as a
//! bias per output (and per batch matrix); else, along the columns, C of any strides starts the
//! output as a copy of it. W is read in place where its rows are unit-stride whole chunks, else
//! packed first by one strided copy per part (`[outer, inner, chunk, output, 4*CQ steps]`, zero
//! past the reduction), once per distinct matrix (a level over which W does not move packs once).

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::conv::blocked::ConvParams;
use crate::kernels::conv::common::out_bindings;
use crate::kernels::copy;
use crate::kernels::dispatch::{self, i32_of, u32_of, Dispatch};
use crate::layout::Layout;
use crate::matmul::Activation;
use crate::plan::CopyPlan;
use crate::runtime::record::Recorder;
use crate::runtime::{AdapterReport, PipelineKey, Runtime, Slot};

use super::product::{window, Product, Shapes};

/// Bindings: the uniform, X, the packed weights, the bias, the output as f32, X as vec4 words,
/// the output as vec4 words (the output is bound writable once; the other gets a scratch word).
const SLOTS: &[Slot] = &[
    Slot::Uniform,
    Slot::Read,
    Slot::Read,
    Slot::Read,
    Slot::Write,
    Slot::Read,
    Slot::Write,
];

/// Invocations per workgroup (8 units of 8 lanes).
const WG: usize = 64;
/// Pixels per tile of a unit (8 lanes, two quads of 4 pixels each); a unit holds 1 or 2 tiles.
const UNIT_PIXELS: usize = 64;
/// The units a dispatch should have at least before its outputs are split into blocks.
const MIN_UNITS: usize = 64;

/// The most outputs (a multiple of 4) one invocation stores, within the software adapters'
/// loop bound (`SOFTWARE_LOOP_ITERATIONS`).
const BLOCK_OUTPUTS: usize = 2048;

/// The product as the kernel sees it: X [outer, inner, channels, pixels], W [outer, inner,
/// outputs, channels], out [outer, inner, outputs, pixels], each as (outer batch, inner batch,
/// second, third) strides and offset.
struct Orient<'a> {
    /// Whether the pixels are the product's columns (out^T = B^T A^T).
    along_n: bool,
    pixels: usize,
    outputs: usize,
    x: (&'a wgpu::Buffer, [isize; 4], usize),
    w: (&'a wgpu::Buffer, [isize; 4], usize),
    y: ([isize; 4], usize),
}

/// The kernel's two batch levels (outer, inner) of `s` (at most two batch dims).
fn batch_of(s: &Shapes) -> (usize, usize) {
    match s.batch[..] {
        [] => (1, 1),
        [z] => (1, z),
        [z0, z1, ..] => (z0, z1),
    }
}

/// Operand `i`'s (outer, inner) batch strides in `s`.
fn batch_strides(s: &Shapes, i: usize) -> (isize, isize) {
    match s.batch.len() {
        0 => (0, 0),
        1 => (0, s.strides[i][0]),
        _ => (s.strides[i][0], s.strides[i][1]),
    }
}

fn orient<'a>(p: &Product<'a>, s: &Shapes) -> Orient<'a> {
    let nb = s.batch.len();
    let z = |i: usize| batch_strides(s, i);
    let (sa, sb, so) = (
        &s.strides[0][nb..],
        &s.strides[1][nb..],
        &s.strides[3][nb..],
    );
    let with = |i: usize, second: isize, third: isize| [z(i).0, z(i).1, second, third];
    // Pixels along the output's unit-stride columns: then the stores (every output element once
    // per chunk, the kernel's main traffic) move as vec4 words.
    if so[1] == 1 && s.n > 1 {
        Orient {
            along_n: true,
            pixels: s.n,
            outputs: s.m,
            x: (p.b.buffer, with(1, sb[0], sb[1]), s.offsets[1]),
            w: (p.a.buffer, with(0, sa[0], sa[1]), s.offsets[0]),
            y: (with(3, so[0], so[1]), s.offsets[3]),
        }
    } else {
        Orient {
            along_n: false,
            pixels: s.m,
            outputs: s.n,
            x: (p.a.buffer, with(0, sa[1], sa[0]), s.offsets[0]),
            w: (p.b.buffer, with(1, sb[1], sb[0]), s.offsets[1]),
            y: (with(3, so[1], so[0]), s.offsets[3]),
        }
    }
}

/// Where the kernel reads C as a bias per output (the first chunk starting from it, MODE 1):
/// its element stride from one output to the next. C is then constant along the pixels (a
/// bias per column where the pixels are the product's rows, per row where they are its
/// columns) and its buffer binds whole; its batch strides are the bias's per batch matrix.
/// Else, along n, the output starts as a copy of C (of any strides) and every chunk adds into
/// it; along m C must be such a bias (`eligible`).
fn bias_stride(report: &AdapterReport, p: &Product<'_>, s: &Shapes, o: &Orient<'_>) -> Option<isize> {
    let c = p.c?;
    let nb = s.batch.len();
    let (rows, cols) = (s.strides[2][nb], s.strides[2][nb + 1]);
    let (along, per) = if o.along_n { (cols, rows) } else { (rows, cols) };
    (along == 0 && c.buffer.size() <= report.max_storage_buffer_binding_size).then_some(per)
}

/// Channel quads an invocation holds (a power of two, at most 16) for a reduction of `k`.
fn cq_of(k: usize) -> usize {
    k.div_ceil(4).max(1).next_power_of_two().min(16)
}

/// The distinct weight matrices (outer, inner): a batch level over which W does not move has
/// one.
fn weight_batch(s: &Shapes, o: &Orient<'_>) -> (usize, usize) {
    let (z0, z1) = batch_of(s);
    (if o.w.1[0] == 0 { 1 } else { z0 }, if o.w.1[1] == 0 { 1 } else { z1 })
}

/// The packed weights' vec4 rows per batch matrix and in all.
fn packed_rows(s: &Shapes, o: &Orient<'_>) -> (usize, usize) {
    let cq = cq_of(s.k);
    let per = s.k.div_ceil(4 * cq) * o.outputs * cq;
    let (w0, w1) = weight_batch(s, o);
    (per, per * w0 * w1)
}

/// Whether the kernel serves `p` (the one check, for the candidates and forced kernels alike).
pub(super) fn eligible(report: &AdapterReport, p: &Product<'_>, s: &Shapes) -> Result<()> {
    let nb = s.batch.len();
    let max = report.max_storage_buffer_binding_size;
    let o = orient(p, s);
    let along_n = o.along_n;
    let why = if report.device_type != wgpu::DeviceType::Cpu || !report.shuffled_weights {
        "it is a CPU-adapter kernel that needs subgroups of at least 8 invocations"
    } else if p.dtype != DType::F32 {
        "it reads float32 operands"
    } else if p.alpha != 1.0 {
        "it does not scale the product (alpha != 1)"
    } else if nb > 2 {
        "it takes two batch dims at most (after merging)"
    } else if p.c.is_some() && (p.beta != 1.0 || (!along_n && bias_stride(report, p, s, &o).is_none())) {
        "its only addend is C with beta == 1, the same for every row of a matrix (and binding whole) unless the output's columns have unit stride"
    } else if !matches!(p.activation, Activation::None | Activation::Relu) {
        "its only activation is ReLU"
    } else if s.k == 0 {
        "it needs a reduction of at least one step"
    } else if packed_rows(s, &o).1 as u64 * 16 > max
        || !fits(report, s, &o)?
    {
        "an operand exceeds one binding (the GEMM splits such products)"
    } else {
        return Ok(());
    };
    Err(Error::unsupported(
        p.op,
        format!("the Blocked kernel does not apply: {why}"),
    ))
}

/// The byte windows of X and out over the whole batch.
fn windows(report: &AdapterReport, s: &Shapes, o: &Orient<'_>) -> Result<[((u64, u64), usize); 2]> {
    let align = report.min_storage_buffer_offset_alignment as u64;
    let (z0, z1) = batch_of(s);
    Ok([
        window(&[z0, z1, s.k, o.pixels], &o.x.1, o.x.2, 4, align)?,
        window(&[z0, z1, o.outputs, o.pixels], &o.y.0, o.y.1, 4, align)?,
    ])
}

fn fits(report: &AdapterReport, s: &Shapes, o: &Orient<'_>) -> Result<bool> {
    let max = report.max_storage_buffer_binding_size;
    Ok(windows(report, s, o)?.iter().all(|(w, _)| w.1 <= max))
}

/// Records the copy of the view `src` of `from` into the view `dst` of `packed`.
fn pack(
    rt: &Runtime,
    rec: &mut Recorder,
    dst: &Layout,
    src: &Layout,
    packed: &wgpu::Buffer,
    from: &wgpu::Buffer,
) -> Result<()> {
    let report = &rt.report;
    let plan = CopyPlan::new(dst, src)?;
    // A buffer copy needs both usages (a caller's output may be STORAGE alone).
    let buffer_copy = from.usage().contains(wgpu::BufferUsages::COPY_SRC) && packed.usage().contains(wgpu::BufferUsages::COPY_DST);
    let Some(path) = copy::auto_path(report, &plan, DType::F32, DType::F32, buffer_copy, |c| {
        copy::transpose_default(report, c)
    }) else {
        return Ok(());
    };
    let prepared = copy::prepare(report, &plan, DType::F32, DType::F32, path)?;
    copy::record(rt, rec, prepared, packed, from)
}

/// Records `p` (eligible, at least one output element) into `enc`.
pub(super) fn record(
    rt: &Runtime,
    rec: &mut Recorder,
    p: &Product<'_>,
    s: &Shapes,
) -> Result<()> {
    let op = p.op;
    let o = orient(p, s);
    let (k, n_out, px) = (s.k, o.outputs, o.pixels);
    let (z0, z1) = batch_of(s);
    let z = z0 * z1;
    let cq = cq_of(k);
    let chunk = 4 * cq;
    let chunks = k.div_ceil(chunk);
    let (per, rows) = packed_rows(s, &o);
    let (w0, w1) = weight_batch(s, &o);
    // Units of 8 lanes: 64 pixels of one batch matrix (2 tiles: 128) x one block of outputs.
    // Two tiles read each weight once for twice the pixels (bmm [96,128,64] @ [96,64,128]:
    // 0.97-0.99 of its convolution against 0.91-0.92); only where the batch alone gives
    // MIN_UNITS units: elsewhere the outputs split into blocks and the dispatch gets fewer
    // workgroups (linear [512,768] x [3072,768]^T: 9 rather than 12, 10% slower).
    let tiles = if px > UNIT_PIXELS && z * px.div_ceil(2 * UNIT_PIXELS) >= MIN_UNITS { 2 } else { 1 };
    let pu = px.div_ceil(tiles * UNIT_PIXELS);
    let blocks = if z * pu >= MIN_UNITS {
        1
    } else {
        MIN_UNITS.div_ceil(z * pu).min(n_out.div_ceil(16)).max(1)
    };
    // At most BLOCK_OUTPUTS outputs an invocation: Mesa's llvmpipe leaves its loops past
    // 65,535 turns an invocation, silently (up to about 80 a quad of outputs here; a bmm of
    // [64, 8192, 4] x [64, 4, 2] left rows past 6,390 of each matrix unwritten).
    let per_block = n_out.div_ceil(blocks).next_multiple_of(4).min(BLOCK_OUTPUTS);
    let blocks = n_out.div_ceil(per_block);
    let units = z as u64 * blocks as u64 * pu as u64;
    let grid = dispatch::grid(
        rt,
        op,
        units.div_ceil((WG / 8) as u64),
        &format!("{units} units of 8 invocations"),
    )?;
    let [(xw, xrel), (yw, yrel)] = windows(&rt.report, s, &o)?;
    // Strides: (outer batch, inner batch, channel or output, pixel or channel).
    let (xs, ws, ys) = (o.x.1, o.w.1, o.y.0);
    let m4 = |v: isize| v.rem_euclid(4) == 0;
    let batch4 = |st: [isize; 4]| (z0 == 1 || m4(st[0])) && (z1 == 1 || m4(st[1]));
    let vin = xs[3] == 1 && px % 4 == 0 && batch4(xs) && m4(xs[2]) && m4(xrel as isize);
    // A transposed X (channels unit-stride, pixels 4-aligned apart) loads a quad as 4 words.
    let xt = !vin && xs[2] == 1 && k % 4 == 0 && m4(xs[3]) && batch4(xs) && m4(xrel as isize);
    let vout = ys[3] == 1 && px % 4 == 0 && batch4(ys) && m4(ys[2]) && m4(yrel as isize);
    let bias_read = bias_stride(&rt.report, p, s, &o);
    let (bias_base, bias_stride, bias_batch) = match bias_read {
        Some(st) => (s.offsets[2] as isize, st, batch_strides(s, 2)),
        None => (0, 0, (0, 0)),
    };
    // W read in place where its rows already are whole unit-stride chunks, 4-aligned (no zero
    // padding needed): mm, bmm and linear's row-major operands. Else packed.
    let (ww, wrel) = window(&[z0, z1, n_out, k], &ws, o.w.2, 4, rt.report.min_storage_buffer_offset_alignment as u64)?;
    let in_place = ws[3] == 1
        && k % chunk == 0
        && ws[2] > 0
        && m4(ws[2])
        && ws[0] >= 0
        && m4(ws[0])
        && ws[1] >= 0
        && m4(ws[1])
        && m4(wrel as isize)
        && ww.1 <= rt.report.max_storage_buffer_binding_size;
    // Weight rows per (outer, inner) batch matrix and from one output to the next; chunk c's
    // first.
    let (wo, wi, wout) = if in_place {
        (ws[0] / 4, ws[1] / 4, ws[2] / 4)
    } else {
        (if w0 == 1 { 0 } else { (per * w1) as isize }, if w1 == 1 { 0 } else { per as isize }, cq as isize)
    };
    let wfirst = |c: usize| if in_place { (wrel / 4 + c * cq) as isize } else { (c * n_out * cq) as isize };
    // Every parameter is checked before anything is recorded.
    let mut params = Vec::with_capacity(chunks);
    for c in 0..chunks {
        let cn = chunk.min(k - c * chunk);
        let xbase = xrel as isize + (c * chunk) as isize * xs[2];
        params.push(ConvParams {
            xs: [
                i32_of(op, xs[1], "batch stride")?,
                i32_of(op, xs[2], "stride")?,
                i32_of(op, xs[3], "stride")?,
                i32_of(op, xs[0], "batch stride")?,
            ],
            ys: [
                i32_of(op, ys[1], "batch stride")?,
                i32_of(op, ys[2], "stride")?,
                i32_of(op, ys[3], "stride")?,
                i32_of(op, ys[0], "batch stride")?,
            ],
            geo: [
                u32_of(op, px, "rows")?,
                u32_of(op, pu, "row units")?,
                u32_of(op, blocks, "output blocks")?,
                u32_of(op, per_block, "outputs per block")?,
            ],
            conv: [
                i32_of(op, wi, "weight rows")?,
                i32_of(op, wfirst(c), "weight rows")?,
                i32_of(op, z as isize, "batch")?,
                i32_of(op, wout, "weight rows")?,
            ],
            base: [
                i32_of(op, xbase, "offset")?,
                i32_of(op, yrel as isize, "offset")?,
                i32_of(op, bias_base, "bias offset")?,
                i32_of(op, bias_stride, "bias stride")?,
            ],
            work: [0, cn as u32, u32_of(op, n_out, "outputs")?, 0],
            taps: [
                i32_of(op, z1 as isize, "batch")?,
                i32_of(op, wo, "weight rows")?,
                i32_of(op, bias_batch.1, "bias batch stride")?,
                i32_of(op, bias_batch.0, "bias batch stride")?,
            ],
            finish: [(p.activation == Activation::Relu && c + 1 == chunks) as u32, 0, 0, 0],
        });
    }
    // Pack W: [w0, w1, chunks, outputs, chunk] f32 (zero past the reduction).
    let total = if in_place { 4 } else { rows * 4 };
    let packed = rt.held_scratch(rec, op, total as u64 * 4, wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST)?;
    let full = if in_place { chunks } else { k / chunk };
    if full < chunks {
        rec.clear_buffer(&packed, 0, None);
    }
    let ds = [
        (per * w1 * 4) as isize,
        (per * 4) as isize,
        (n_out * cq * 4) as isize,
        (cq * 4) as isize,
        1,
    ];
    if full > 0 && !in_place {
        let dst = Layout::as_strided(&[w0, w1, full, n_out, chunk], &ds, 0, total)?;
        let src = Layout::new(
            vec![w0, w1, full, n_out, chunk],
            vec![ws[0], ws[1], chunk as isize * ws[3], ws[2], ws[3]],
            o.w.2,
        )?;
        pack(rt, rec, &dst, &src, &packed, o.w.0)?;
    }
    if full < chunks {
        let rem = k - full * chunk;
        let dst = Layout::as_strided(
            &[w0, w1, n_out, rem],
            &[ds[0], ds[1], ds[3], 1],
            full * n_out * cq * 4,
            total,
        )?;
        let src = Layout::new(
            vec![w0, w1, n_out, rem],
            vec![ws[0], ws[1], ws[2], ws[3]],
            (o.w.2 as isize + (full * chunk) as isize * ws[3]) as usize,
        )?;
        pack(rt, rec, &dst, &src, &packed, o.w.0)?;
    }
    // Along n, unless the kernel reads C as a bias, the output starts as a copy of the addend
    // and every chunk adds into it.
    if let (true, Some(c), None) = (o.along_n, p.c, bias_read) {
        pack(rt, rec, p.out.layout, c.layout, p.out.buffer, c.buffer)?;
    }
    let scratch = rt.held_scratch(rec, op, 16, wgpu::BufferUsages::STORAGE)?;
    // The bias binding: the addend where the kernel reads it (a bias per output).
    let bias = match p.c {
        Some(c) if bias_read.is_some() => (c.buffer, (0, c.buffer.size())),
        _ => (&packed, (0, 16)),
    };
    let [y1, y4] = out_bindings(p.out.buffer, yw, &scratch, vout);
    let dispatches: Vec<Dispatch<'_, ConvParams>> = params
        .into_iter()
        .enumerate()
        .map(|(c, params)| {
            let mode = if c > 0 || (p.c.is_some() && bias_read.is_none()) { 2 } else { bias_read.is_some() as i64 };
            let mut constants = vec![
                ("WG", WG as i64),
                ("CQ", cq as i64),
                ("TILED", 0),
                ("MODE", mode),
                ("VIN", vin as i64),
                ("VOUT", vout as i64),
            ];
            if xt {
                constants.push(("XT", 1));
            }
            if tiles == 2 {
                constants.push(("TILES", 2));
            }
            Dispatch {
                key: PipelineKey {
                    shader: "matmul_blocked",
                    constants,
                },
                params,
                bindings: vec![
                    (o.x.0, xw),
                    if in_place { dispatch::read_words(rt, o.w.0, ww, 16) } else { (&packed, (0, total as u64 * 4)) },
                    bias,
                    y1,
                    dispatch::read_words(rt, o.x.0, xw, 16),
                    y4,
                ],
                grid,
            }
        })
        .collect();
    dispatch::record(rt, rec, op, SLOTS, &dispatches)?;
    Ok(())
}
