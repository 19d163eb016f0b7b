// Cooperative-matrix probes: one subgroup (workgroup of 32) on one 16 x 16 x 16 product, each
// entry point one way of loading, multiplying and storing. examples/coop_probe.rs compares each
// output with the candidates (A B, B A, A^T B, ..., the input itself) and prints which it equals.
enable f16;
enable wgpu_cooperative_matrix;

@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read> b: array<f16>;
@group(0) @binding(2) var<storage, read> cin: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

var<workgroup> wa: array<f16, 384>;
var<workgroup> wb: array<f16, 384>;
var<workgroup> wc: array<f32, 320>;

// Row-major load and store of an accumulator: out = cin.
@compute @workgroup_size(32)
fn store_rm() {
    let m = coopLoadT<coop_mat16x16<f32, C>>(&cin[0], 16u);
    coopStoreT(m, &out[0], 16u);
}

// Column-major load and store: out = cin.
@compute @workgroup_size(32)
fn store_cm() {
    let m = coopLoad<coop_mat16x16<f32, C>>(&cin[0], 16u);
    coopStore(m, &out[0], 16u);
}

// Row-major load, column-major store: out = cin^T.
@compute @workgroup_size(32)
fn store_mixed() {
    let m = coopLoadT<coop_mat16x16<f32, C>>(&cin[0], 16u);
    coopStore(m, &out[0], 16u);
}

// Everything row-major, C = cin: out = A B + cin.
@compute @workgroup_size(32)
fn mma_rr() {
    let x = coopLoadT<coop_mat16x16<f16, A>>(&a[0], 16u);
    let y = coopLoadT<coop_mat16x16<f16, B>>(&b[0], 16u);
    let z = coopLoadT<coop_mat16x16<f32, C>>(&cin[0], 16u);
    coopStoreT(coopMultiplyAdd(x, y, z), &out[0], 16u);
}

// Everything column-major: out^T = A^T B^T + cin^T, so out = B A + cin.
@compute @workgroup_size(32)
fn mma_cc() {
    let x = coopLoad<coop_mat16x16<f16, A>>(&a[0], 16u);
    let y = coopLoad<coop_mat16x16<f16, B>>(&b[0], 16u);
    let z = coopLoad<coop_mat16x16<f32, C>>(&cin[0], 16u);
    coopStore(coopMultiplyAdd(x, y, z), &out[0], 16u);
}

// A zero-constructed accumulator: out = A B.
@compute @workgroup_size(32)
fn mma_zero() {
    let x = coopLoadT<coop_mat16x16<f16, A>>(&a[0], 16u);
    let y = coopLoadT<coop_mat16x16<f16, B>>(&b[0], 16u);
    coopStoreT(coopMultiplyAdd(x, y, coop_mat16x16<f32, C>()), &out[0], 16u);
}

// k = 32 from A [16, 32] and B [32, 16] (row-major, buffers of 512): two products into one
// accumulator through offset pointers and a stride: out = A32 B32 + cin.
@compute @workgroup_size(32)
fn mma_k32() {
    var z = coopLoadT<coop_mat16x16<f32, C>>(&cin[0], 16u);
    for (var kk = 0u; kk < 32u; kk = kk + 16u) {
        let x = coopLoadT<coop_mat16x16<f16, A>>(&a[kk], 32u);
        let y = coopLoadT<coop_mat16x16<f16, B>>(&b[kk * 16u], 16u);
        z = coopMultiplyAdd(x, y, z);
    }
    coopStoreT(z, &out[0], 16u);
}

// Staged through workgroup memory (row pitches 24 halves and 20 floats), as a tiled GEMM does:
// out = A B + cin.
@compute @workgroup_size(32)
fn mma_wg(@builtin(local_invocation_index) lid: u32) {
    for (var e = lid; e < 256u; e = e + 32u) {
        wa[(e / 16u) * 24u + e % 16u] = a[e];
        wb[(e / 16u) * 24u + e % 16u] = b[e];
    }
    workgroupBarrier();
    let x = coopLoadT<coop_mat16x16<f16, A>>(&wa[0], 24u);
    let y = coopLoadT<coop_mat16x16<f16, B>>(&wb[0], 24u);
    let z = coopLoadT<coop_mat16x16<f32, C>>(&cin[0], 16u);
    coopStoreT(coopMultiplyAdd(x, y, z), &wc[0], 20u);
    workgroupBarrier();
    for (var e = lid; e < 256u; e = e + 32u) {
        out[e] = wc[(e / 16u) * 20u + e % 16u];
    }
}
