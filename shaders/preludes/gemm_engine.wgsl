// The GEMM engine every tiled product shares (conv2d_gemm.wgsl: A gathered through the im2col
// mapping; matmul_gemm.wgsl: A and B addressed through their strides). A workgroup of 256
// invocations (16 x 16) computes a tile of C = A @ B of PM x PN parts of 64 x 64 (PM, PN: 1 or
// 2, so tiles of 64 x 64, 128 x 64, 64 x 128 or 128 x 128); each invocation a register block
// of PM x PN blocks of 4 x 4, block (a, b) at rows 64a + 4tx .. and columns 64b + 4ty .. of the
// tile. The reduction is walked 16 at a time: the workgroup stages a 16-step slice of A's rows
// and of B's columns in workgroup memory (8.5 KiB a 64 x 64 tile, 16 KiB a 128 x 128 one), then
// every invocation takes 16 steps of PM vec4 of A and PN of B.
//
// Each element loaded from memory feeds 64 multiply-adds at 64 x 64, 128 at 128 x 128; each
// vec4 read from workgroup memory feeds 8 multiply-adds at 64 x 64 and 16 at 128 x 128 (the
// ratio that bounds SIMT GEMMs on GPUs whose workgroup memory serves 128 bytes a clock: CUTLASS's
// SIMT kernels hold 8 x 8 blocks). The 64 x 64 form holds about 50 values an invocation, room
// for 8 or more waves per SIMD; the 128 x 128 one about 110. (A wide form of 64 invocations of
// 8 x 8 blocks over a 64 x 64 tile, each staging for four, ran 1.3-2x slower on an NVIDIA H200,
// 2026-11-28: BENCHMARKS.md. It loaded as much from memory per multiply-add as the 64 x 64 form
// with a quarter of the invocations.)
//
// The kernel that includes this prelude defines how elements are fetched:
//   struct GemmFeed                 what an invocation keeps to address its loads,
//   fn gemm_fetch_a(f: GemmFeed, lid: u32, r0: u32, p: u32) -> GemmRaw
//                                   the 4 values of A it stages at reduction step r0 for the
//                                   tile's 64-row part p, in the order the staging mode (`sa`
//                                   below) names, as loaded,
//   fn gemm_fetch_b(f: GemmFeed, lid: u32, r0: u32, p: u32) -> GemmRaw
//                                   the 4 values of B it stages (4 consecutive columns of one
//                                   reduction step) for the 64-column part p, placed by `sb`,
//   fn gemm_decode_a(r: GemmRaw) -> vec4<f32>, fn gemm_decode_b(r: GemmRaw) -> vec4<f32>
//                                   the 4 values of what a fetch of A (B) loaded.
// Out-of-range elements (past the rows, the columns or the reduction) are fetched as 0 words
// (which decode to 0).

// The tile's parts: 64-row parts along M, 64-column parts along N (the tile is 64PM x 64PN).
// naga 30 panics applying override constants (pipeline_constants::process_override, a handle
// vector's length assertion) when an override is declared after a workgroup array sized by
// an override (docs/architecture.md has a reproduction): every override of a module that
// includes this prelude is declared before the arrays below (preludes come first; SPLIT here).
override PM: u32 = 1u;
override PN: u32 = 1u;
// Split-K (the kernels' SPLIT forms): each workgroup sums one slice of the reduction and stores
// its tile's partial sums without the epilogue; a second dispatch adds the slices in slice
// order and applies it.
override SPLIT: bool = false;
const BK: u32 = 16u;

// Staging of A: which 4 elements invocation `lid` fetches, rows counted within the part.
// Lanes along the rows: row lid % 64 at steps lid / 64 + 4i.
const STAGE_A_ROWS: u32 = 0u;
// Lanes along the reduction: step lid % 16 at rows lid / 16 + 16i.
const STAGE_A_STEPS: u32 = 1u;
// One row (lid / 4) at 4 consecutive steps 4 * (lid % 4) + i (a vec4 word of the input).
const STAGE_A_STEPS4: u32 = 2u;
// Staging of B: lanes along the columns (step lid / 16, columns 4 * (lid % 16) ..), or along the
// reduction (step lid % 16, columns 4 * (lid / 16) ..).
const STAGE_B_COLS: u32 = 0u;
const STAGE_B_STEPS: u32 = 1u;

// The staged slices: ta[r * row_a() + 16p + i] holds rows 64p + 4i .. 64p + 4i + 3 of reduction step
// r, tb[r * row_b() + 16p + j] columns 64p + 4j .. 64p + 4j + 3, where a step's row (`row_a`, `row_b`) is
// 16PM (16PN) vec4, plus one of padding for a 64-wide part. A's words are arrays of 4 f32, not
// vec4: its stagings place one row's value an invocation, four invocations filling a word, and
// a store to one component of a vector may access the whole vector (WGSL's memory model; Metal
// and Direct3D compilers may read, modify and write it), a race between them, where an array's
// elements are memory locations of their own. A word is read as one vector load all the same
// (`ta_word`: one bounds clamp of the word index, constant element offsets; RADV: one
// `ds_read_b128`, as from a vec4 array). Unpadded, the stagings with lanes along
// the reduction (8 lanes storing a vec4 each at one column of 8 steps' rows: B of `linear`'s
// transposed weight and of a convolution weight read in place, A of NHWC convolutions) would
// hit the same 4 of 32 banks of workgroup memory (rows of a multiple of 128 bytes); padded,
// their rows start 4 banks apart. The padding costs no instruction (a constant offset per
// step) and 8.5 KiB a 64 x 64 tile; a 128-wide part stays unpadded, so that a 128 x 128 tile
// keeps to 16 KiB (WebGPU's default maxComputeWorkgroupStorageSize) and a 128 x 64 one takes
// 12.25 KiB.
var<workgroup> ta: array<array<f32, 4>, 16u * (16u * PM + 2u - PM)>;
var<workgroup> tb: array<vec4<f32>, 16u * (16u * PN + 2u - PN)>;

fn row_a() -> u32 {
    return 16u * PM + 2u - PM;
}

fn row_b() -> u32 {
    return 16u * PN + 2u - PN;
}

// Word w of A's staged slice (4 rows of one step).
fn ta_word(w: u32) -> vec4<f32> {
    return vec4<f32>(ta[w][0], ta[w][1], ta[w][2], ta[w][3]);
}

// Four values as loaded, decoded only when staged: w0 .. w3 the 32-bit words that hold them
// (as the kernel's fetch lays them out), sel two bits a value (value i at bits 2i) for the
// kernel's decode (16-bit operands: which half of its word). A fetch is not decoded where it
// is issued: the next slice's loads stay in flight across the current slice's multiply-adds
// (a 16-bit value picked out of its word where the load lands made the compiler wait for it
// there, before the multiply-adds). Four scalars, not a vec4: a vector held across the loop
// takes four consecutive registers, into which four separately loaded words would be copied,
// which waits for the loads.
struct GemmRaw {
    w0: u32,
    w1: u32,
    w2: u32,
    w3: u32,
    sel: u32,
}

// Value i's two bits of r.sel.
fn gemm_sel(r: GemmRaw, i: u32) -> u32 {
    return (r.sel >> (2u * i)) & 3u;
}

// An invocation's accumulators: block (a, b) is `bab`, acc[i] of it row 64a + 4tx + i at
// columns 64b + 4ty .. 64b + 4ty + 3 of the tile (blocks past PM, PN stay 0).
struct GemmAcc {
    b00: mat4x4<f32>,
    b01: mat4x4<f32>,
    b10: mat4x4<f32>,
    b11: mat4x4<f32>,
}

// Block (a, b) of `acc`.
fn gemm_block(acc: GemmAcc, a: u32, b: u32) -> mat4x4<f32> {
    if (a == 0u && b == 0u) {
        return acc.b00;
    } else if (a == 0u) {
        return acc.b01;
    } else if (b == 0u) {
        return acc.b10;
    }
    return acc.b11;
}

// The register block of invocation `lid` as (fast, slow): `fast` is the block coordinate the
// kernel's consecutive invocations run along (the fast dim of its output stores). The 64 x 64
// tile runs 16 consecutive invocations along it (a 32-lane subgroup spans 16 x 2 blocks); the
// wide tiles 8 x 4 in each 32 invocations (eight of them tiled 2 x 4), as CUTLASS's SIMT warps
// are laid out: a subgroup's step then reads 8 distinct vec4 of one staged operand and 4 of
// the other (two 128-byte rows of workgroup memory) where 16 x 2 reads 16 and 2 (three), with
// 128-byte runs of output stores. A bijection either way; each output's arithmetic is the
// same, so the bits are too.
fn gemm_lanes(lid: u32) -> vec2<u32> {
    if (PM * PN > 1u) {
        let w = lid / 32u;
        let l = lid % 32u;
        return vec2<u32>((w % 2u) * 8u + l % 8u, (w / 2u) * 4u + l / 8u);
    }
    return vec2<u32>(lid % 16u, lid / 16u);
}

fn gemm_outer(acc: mat4x4<f32>, a: vec4<f32>, b: vec4<f32>) -> mat4x4<f32> {
    return mat4x4<f32>(acc[0] + a.x * b, acc[1] + a.y * b, acc[2] + a.z * b, acc[3] + a.w * b);
}

fn gemm_stage_a(av: vec4<f32>, lid: u32, sa: u32, p: u32) {
    let row = row_a();
    if (sa == STAGE_A_STEPS4) {
        let m = lid / 4u;
        for (var i = 0u; i < 4u; i = i + 1u) {
            ta[(4u * (lid % 4u) + i) * row + 16u * p + m / 4u][m % 4u] = av[i];
        }
    } else if (sa == STAGE_A_STEPS) {
        for (var i = 0u; i < 4u; i = i + 1u) {
            let m = lid / 16u + 16u * i;
            ta[(lid % 16u) * row + 16u * p + m / 4u][m % 4u] = av[i];
        }
    } else {
        let m = lid % 64u;
        for (var i = 0u; i < 4u; i = i + 1u) {
            ta[(lid / 64u + 4u * i) * row + 16u * p + m / 4u][m % 4u] = av[i];
        }
    }
}

fn gemm_stage_b(bv: vec4<f32>, lid: u32, sb: u32, p: u32) {
    let row = row_b();
    if (sb == STAGE_B_STEPS) {
        tb[(lid % 16u) * row + 16u * p + lid / 16u] = bv;
    } else {
        tb[(lid / 16u) * row + 16u * p + lid % 16u] = bv;
    }
}

// The register block of invocation (tx, ty) over reduction steps [begin, end) (begin a
// multiple of BK; steps past the reduction fetch as 0, so `end` may pass it). `sa` and `sb` are
// the staging modes (uniform across the workgroup, as are begin and end, so the barriers stay
// in uniform control flow). The next slice's loads are issued before the current slice's
// multiply-adds (register double buffering), so their latency hides behind the arithmetic.
fn gemm_tile(f: GemmFeed, lid: u32, tx: u32, ty: u32, begin: u32, end: u32, sa: u32, sb: u32) -> GemmAcc {
    var acc: GemmAcc;
    var a0: GemmRaw;
    var a1: GemmRaw;
    var b0: GemmRaw;
    var b1: GemmRaw;
    if (begin < end) {
        a0 = gemm_fetch_a(f, lid, begin, 0u);
        b0 = gemm_fetch_b(f, lid, begin, 0u);
        if (PM > 1u) {
            a1 = gemm_fetch_a(f, lid, begin, 1u);
        }
        if (PN > 1u) {
            b1 = gemm_fetch_b(f, lid, begin, 1u);
        }
    }
    for (var r0 = begin; r0 < end; r0 = r0 + BK) {
        workgroupBarrier();
        gemm_stage_a(gemm_decode_a(a0), lid, sa, 0u);
        gemm_stage_b(gemm_decode_b(b0), lid, sb, 0u);
        if (PM > 1u) {
            gemm_stage_a(gemm_decode_a(a1), lid, sa, 1u);
        }
        if (PN > 1u) {
            gemm_stage_b(gemm_decode_b(b1), lid, sb, 1u);
        }
        workgroupBarrier();
        if (r0 + BK < end) {
            a0 = gemm_fetch_a(f, lid, r0 + BK, 0u);
            b0 = gemm_fetch_b(f, lid, r0 + BK, 0u);
            if (PM > 1u) {
                a1 = gemm_fetch_a(f, lid, r0 + BK, 1u);
            }
            if (PN > 1u) {
                b1 = gemm_fetch_b(f, lid, r0 + BK, 1u);
            }
        }
        for (var kk = 0u; kk < BK; kk = kk + 1u) {
            let x0 = ta_word(kk * row_a() + tx);
            let y0 = tb[kk * row_b() + ty];
            acc.b00 = gemm_outer(acc.b00, x0, y0);
            if (PN > 1u) {
                let y1 = tb[kk * row_b() + 16u + ty];
                acc.b01 = gemm_outer(acc.b01, x0, y1);
                if (PM > 1u) {
                    let x1 = ta_word(kk * row_a() + 16u + tx);
                    acc.b10 = gemm_outer(acc.b10, x1, y0);
                    acc.b11 = gemm_outer(acc.b11, x1, y1);
                }
            } else if (PM > 1u) {
                let x1 = ta_word(kk * row_a() + 16u + tx);
                acc.b10 = gemm_outer(acc.b10, x1, y0);
            }
        }
    }
    return acc;
}
