// The GEMM engine every tiled product shares (conv2d_gemm.wgsl: A gathered through the im2col
// mapping; matmul_gemm.wgsl: A and B addressed through their strides). A workgroup of 256
// invocations computes a 64 x 64 tile of C = A @ B; each invocation a 4 x 4 register block (16
// accumulators). The reduction is walked 16 at a time: the workgroup stages a 16 x 64 slice of A
// and of B in workgroup memory (8 KiB), then every invocation takes 16 steps of one vec4 of A
// and one of B. So each element loaded from memory feeds 64 multiply-adds, and an invocation
// holds about 50 values: room for 8 or more waves per SIMD on a GPU. (A wide form, 64
// invocations of 8 x 8 blocks staging for four each, ran 1.3-2x slower on an NVIDIA H200,
// 2026-11-28: BENCHMARKS.md.)
//
// The kernel that includes this prelude defines how elements are fetched:
//   struct GemmFeed                 what an invocation keeps to address its loads,
//   fn gemm_fetch_a(f: GemmFeed, lid: u32, r0: u32) -> vec4<f32>
//                                   the 4 values of A it stages at reduction step r0, in the
//                                   order the staging mode (`sa` below) names,
//   fn gemm_fetch_b(f: GemmFeed, lid: u32, r0: u32) -> vec4<f32>
//                                   the 4 values of B it stages (4 consecutive columns of one
//                                   reduction step), placed by `sb`.
// Out-of-range elements (past the rows, the columns or the reduction) are fetched as 0.

const BM: u32 = 64u;
const BN: u32 = 64u;
const BK: u32 = 16u;

// Staging of A: which 4 elements invocation `lid` fetches.
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

// The staged slices: ta[r * 16 + i] holds rows 4i .. 4i+3 of reduction step r, tb[r * 16 + j]
// columns 4j .. 4j+3.
var<workgroup> ta: array<vec4<f32>, 256>;
var<workgroup> tb: array<vec4<f32>, 256>;

// The 4 x 4 block of invocation (tx, ty) over reduction steps [begin, end) (begin a multiple of
// BK; steps past the reduction fetch as 0, so `end` may pass it): acc[i] holds row 4tx + i at
// columns 4ty .. 4ty+3 of the tile. `sa` and `sb` are the staging modes (uniform across the
// workgroup, as are begin and end, so the barriers stay in uniform control flow). The next
// slice's loads are issued before the current slice's multiply-adds (register double
// buffering), so their latency hides behind the arithmetic.
fn gemm_tile(f: GemmFeed, lid: u32, tx: u32, ty: u32, begin: u32, end: u32, sa: u32, sb: u32) -> mat4x4<f32> {
    var acc = mat4x4<f32>();
    var av = vec4<f32>(0.0);
    var bv = vec4<f32>(0.0);
    if (begin < end) {
        av = gemm_fetch_a(f, lid, begin);
        bv = gemm_fetch_b(f, lid, begin);
    }
    for (var r0 = begin; r0 < end; r0 = r0 + BK) {
        workgroupBarrier();
        if (sa == STAGE_A_STEPS4) {
            let m = lid / 4u;
            for (var i = 0u; i < 4u; i = i + 1u) {
                ta[(4u * (lid % 4u) + i) * 16u + m / 4u][m % 4u] = av[i];
            }
        } else if (sa == STAGE_A_STEPS) {
            for (var i = 0u; i < 4u; i = i + 1u) {
                let m = lid / 16u + 16u * i;
                ta[(lid % 16u) * 16u + m / 4u][m % 4u] = av[i];
            }
        } else {
            let m = lid % 64u;
            for (var i = 0u; i < 4u; i = i + 1u) {
                ta[(lid / 64u + 4u * i) * 16u + m / 4u][m % 4u] = av[i];
            }
        }
        if (sb == STAGE_B_STEPS) {
            tb[(lid % 16u) * 16u + lid / 16u] = bv;
        } else {
            tb[lid] = bv;
        }
        workgroupBarrier();
        if (r0 + BK < end) {
            av = gemm_fetch_a(f, lid, r0 + BK);
            bv = gemm_fetch_b(f, lid, r0 + BK);
        }
        for (var kk = 0u; kk < BK; kk = kk + 1u) {
            let a = ta[kk * 16u + tx];
            let b = tb[kk * 16u + ty];
            acc[0] = acc[0] + a.x * b;
            acc[1] = acc[1] + a.y * b;
            acc[2] = acc[2] + a.z * b;
            acc[3] = acc[3] + a.w * b;
        }
    }
    return acc;
}
