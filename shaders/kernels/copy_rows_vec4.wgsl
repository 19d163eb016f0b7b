// Rows of whole 16-byte words, short ones (copy_vec4.wgsl's workgroups each move a run of
// WG * WPT words of one row) or stepped ones (a slice ::2 along the innermost dim). The plan
// counts vec4<u32> words; its dim 0 has destination stride 1 and source stride STEP.
// Invocations are laid out in word columns (plan.wgsl's word_column): each moves one word of
// several consecutive rows, so a row of 7 words keeps 7 of every 8 invocations busy.
//
// STEP, the source words per destination word: 1 copies the word; 2 keeps the even-numbered
// EB-byte elements of two consecutive source words (EB = 1, 2 or 4), which fill one word.

override WG: u32 = 256u;
override STEP: u32 = 1u;
override EB: u32 = 4u;

@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<u32>>;

// The even-numbered EB-byte elements of the 8 / EB elements in u32s a then b, packed in order.
fn evens(a: u32, b: u32) -> u32 {
    if (EB == 2u) {
        return (a & 0xffffu) | (b << 16u);
    }
    // EB == 1: bytes 0 and 2 of a, then of b.
    return (a & 0xffu) | ((a >> 8u) & 0xff00u) | ((b & 0xffu) << 16u) | ((b << 8u) & 0xff000000u);
}

// The destination word made of the even-numbered elements of source words a then b.
fn even_word(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    if (EB == 4u) {
        return vec4<u32>(a.x, a.z, b.x, b.z);
    }
    return vec4<u32>(evens(a.x, a.y), evens(a.z, a.w), evens(b.x, b.y), evens(b.z, b.w));
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = invocation_index(gid);
    if (t >= plan_u[pz()].threads) {
        return;
    }
    let col = word_column(t, 1u);
    let ds1 = bitcast<u32>(plan_u[pz()].dst_strides[0].y);
    let ss1 = bitcast<u32>(plan_u[pz()].src_strides[0].y);
    var d = col.x;
    var s = col.y;
    for (var r = 0u; r < col.z; r = r + 1u) {
        if (STEP == 2u) {
            dst[d] = even_word(src[s], src[s + 1u]);
        } else {
            dst[d] = src[s];
        }
        d = d + ds1;
        s = s + ss1;
    }
}
