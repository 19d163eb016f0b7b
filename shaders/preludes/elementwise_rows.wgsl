// The rows kernels' shared code (elementwise_rows_runs, elementwise_rows_columns,
// elementwise_rows_blocks: one traversal each, so that a driver, which inlines every call
// before it folds the override constants, compiles one copy of `quad` per pipeline, not three).
//
// Elementwise ops on rows: plan dim 0 is contiguous in the output; its size, the output's
// offset and its other strides are multiples of 4. Each invocation computes EPT quads (4
// consecutive elements of dim 0, WG quads apart; or, with COLUMNS, QPR quads of each of EPT
// rows) and writes the output's quad whole, so no store needs atomics (the output's binding
// and stores: elementwise_rows_out4 for 4-byte elements, a vec4 word a quad;
// elementwise_rows_out_narrow for 2- and 1-byte ones, u32 words). An input is contiguous
// along dim 0 with its offset and other strides multiples of 4 (its quad is one piece of a
// vec4 word: 16 bytes of 4-byte elements, half a word of 2-byte ones, a quarter of 1-byte
// ones), broadcast (stride 0: one element per row), gathered (any other stride: four
// element loads per quad), or, in quad-column mode, transposed: contiguous along dim 1 with
// its offset and other strides multiples of 4, read as 4 x 4 blocks (4 quads along dim 1 at
// the 4 elements of the output's quad, transposed in registers) when the host guarantees that
// every invocation's rows come in whole groups of 4. Slots, types and aliasing:
// elementwise_slots.

// Bit k set: plan operand k is broadcast along dim 0 (stride 0; one element per row).
override BCAST: u32 = 0u;
// Bit k set: plan operand k is gathered along dim 0 (neither contiguous and aligned nor
// broadcast; read element by element at its dim-0 stride).
override GATHER: u32 = 0u;
// Bit k set: plan operand k is transposed (read as 4 x 4 blocks; elementwise_rows_blocks only).
override TRANS: u32 = 0u;
// Quads of a row per invocation and row in quad-column mode.
override QPR: u32 = 4u;

@group(0) @binding(2) var<storage, read> in1: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> in2: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> in3: array<vec4<u32>>;

// Component c of v, by selects (a dynamic index costs a trip through memory on CPU adapters).
fn component(v: vec4<u32>, c: u32) -> u32 {
    return select(select(v.x, v.y, c == 1u), select(v.z, v.w, c == 3u), c >= 2u);
}

// vec4 word w of operand k's binding.
fn quad_word(k: u32, w: u32) -> vec4<u32> {
    if (aliased(k)) {
        return out_word(w);
    }
    switch k {
        case 1u: {
            return in1[w];
        }
        case 2u: {
            return in2[w];
        }
        default: {
            return in3[w];
        }
    }
}

// The 4 elements (of type t) of operand k from element e on (e a multiple of 4), as
// zero-extended bits.
fn load_quad(k: u32, e: u32, t: u32) -> vec4<u32> {
    if (aliased(k)) {
        return out_quad(e, t);
    }
    let b = dt_bytes(t);
    return quad_in(quad_word(k, (e * b) >> 4u), e, b);
}

// The 4 elements of b bytes from element e on (e a multiple of 4) within v, the vec4 word
// that holds them, as zero-extended bits.
fn quad_in(v: vec4<u32>, e: u32, b: u32) -> vec4<u32> {
    if (b == 4u) {
        return v;
    }
    if (b == 2u) {
        let p = select(v.xy, v.zw, (e & 4u) != 0u);
        return vec4<u32>(p.x & 0xffffu, p.x >> 16u, p.y & 0xffffu, p.y >> 16u);
    }
    let w = component(v, (e >> 2u) & 3u);
    return (vec4<u32>(w) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(0xffu);
}

// Element e (of type t) of operand k (a broadcast operand reads one element per quad).
fn load_one(k: u32, e: u32, t: u32) -> u32 {
    let b = dt_bytes(t);
    let w = component(quad_word(k, (e * b) >> 4u), ((e * b) >> 2u) & 3u);
    if (b == 4u) {
        return w;
    }
    if (b == 2u) {
        return (w >> ((e & 1u) * 16u)) & 0xffffu;
    }
    return (w >> ((e & 3u) * 8u)) & 0xffu;
}

// Slot j's 4 values (reading plan operand k at element e, or its scalar) in the
// computation's representation.
fn slot_quad(j: u32, k: u32, e: u32) -> vec4<u32> {
    if (k == 0u) {
        return vec4<u32>(it_u[pz()].scalars[j]);
    }
    let t = operand_type(k);
    var v: vec4<u32>;
    if (((BCAST >> k) & 1u) == 1u) {
        v = vec4<u32>(load_one(k, e, t));
    } else if (((GATHER >> k) & 1u) == 1u) {
        let s = iter_strides(0u)[k];
        v = vec4<u32>(load_one(k, e, t), load_one(k, e + s, t), load_one(k, e + 2u * s, t), load_one(k, e + 3u * s, t));
    } else {
        v = load_quad(k, e, t);
    }
    return quad_repr(v, t);
}

// The 4 elements of a quad (of type t) in the computation's representation. A loop, not four
// calls: a driver inlines every call before it folds the override constants, and four copies
// of every conversion per quad (of which the constants keep one path) cost seconds of
// compilation on CPU adapters; the loop is unrolled after folding.
fn quad_repr(v: vec4<u32>, t: u32) -> vec4<u32> {
    var w = v;
    for (var i = 0u; i < 4u; i = i + 1u) {
        w[i] = to_repr(v[i], t);
    }
    return w;
}

// Whether plan operand k is broadcast along dim 0 (0 is the scalar slot's "operand").
fn broadcast(k: u32) -> bool {
    return k != 0u && ((BCAST >> k) & 1u) == 1u;
}

// Whether plan operand k is read as transposed 4 x 4 blocks.
fn transposed(k: u32) -> bool {
    return k != 0u && ((TRANS >> k) & 1u) == 1u;
}

// A quad of every slot, in the computation's representation (a slot past ARITY: zeros).
alias Slots = array<vec4<u32>, 3>;

// The values of the slots whose operands are broadcast along dim 0 (the same for every quad of
// a row, so loaded once per row) at o; zeros for the others.
fn row_values(o: vec4<u32>) -> Slots {
    var v = Slots();
    if (broadcast(IN0)) {
        v[0] = slot_quad(0u, IN0, o[IN0]);
    }
    if (ARITY > 1u && broadcast(IN1)) {
        v[1] = slot_quad(1u, IN1, o[IN1]);
    }
    if (ARITY > 2u && broadcast(IN2)) {
        v[2] = slot_quad(2u, IN2, o[IN2]);
    }
    return v;
}

// A transposed operand's block: column c holds the elements of dim-0 position 4q + c at 4
// consecutive rows, in the computation's representation.
struct Block {
    c0: vec4<u32>,
    c1: vec4<u32>,
    c2: vec4<u32>,
    c3: vec4<u32>,
}

// Slot j's block at o when it is a slot of the op and its operand k is transposed (dim-0
// stride s), else zeros.
fn block_at(j: u32, k: u32, o: vec4<u32>, s: vec4<u32>) -> Block {
    if (j >= ARITY || !transposed(k)) {
        return Block();
    }
    let e = o[k];
    let d = s[k];
    return Block(slot_quad(j, k, e), slot_quad(j, k, e + d), slot_quad(j, k, e + 2u * d), slot_quad(j, k, e + 3u * d));
}

// Row r of a block: the operand's quad at that row.
fn block_row(b: Block, r: u32) -> vec4<u32> {
    return vec4<u32>(component(b.c0, r), component(b.c1, r), component(b.c2, r), component(b.c3, r));
}

// The quad at o (each operand's element index); p: the slots' row values (row_values, and the
// rows of transposed blocks). The slots are read one by one (constant indices: a loop over
// them that the driver does not unroll would make every operand's type and binding dynamic).
// The op runs in a loop over the quad's 4 elements (see quad_repr); the conversions to the
// output's type are written out, as a loop over them (f32 -> f16) is left rolled by lavapipe
// and costs 6% on a conversion.
fn quad(o: vec4<u32>, p: Slots) {
    var v = p;
    if (!broadcast(IN0) && !transposed(IN0)) {
        v[0] = slot_quad(0u, IN0, o[IN0]);
    }
    if (ARITY > 1u && !broadcast(IN1) && !transposed(IN1)) {
        v[1] = slot_quad(1u, IN1, o[IN1]);
    }
    if (ARITY > 2u && !broadcast(IN2) && !transposed(IN2)) {
        v[2] = slot_quad(2u, IN2, o[IN2]);
    }
    let a = v[0];
    let b = v[1];
    let c = v[2];
    var r = vec4<u32>(0u);
    for (var i = 0u; i < 4u; i = i + 1u) {
        r[i] = apply_op(a[i], b[i], c[i]);
    }
    store_quad(o.x, vec4<u32>(to_out(r.x), to_out(r.y), to_out(r.z), to_out(r.w)));
}

// Quad columns (elementwise_rows_columns and _blocks; plans of 2 dims or more): a row's quads
// are dealt to it.inner_chunks lanes (a multiple of 8), QPR each, it.inner_chunks apart;
// invocation t takes lane t % inner_chunks of EPT consecutive rows along plan dim 1
// (it.extra.x blocks of them per dim-1 run), so that neighbouring invocations touch
// neighbouring words, the index arithmetic is paid once per column, and a broadcast operand is
// loaded once per row.
struct Column {
    // The invocation's lane: its first quad of a row (none when w >= q0).
    w: u32,
    // Quads per row; lanes per row (the distance between a lane's quads).
    q0: u32,
    lanes: u32,
    // Each operand's element index of the first row's first quad, and its dim-1 stride.
    base: vec4<u32>,
    s1: vec4<u32>,
    // Rows the invocation takes.
    rows: u32,
}

// Invocation gid's column; w >= q0 (no work) past the plan's invocations.
fn column(gid: vec3<u32>) -> Column {
    let t = iter_invocation(gid);
    let q0 = it_u[pz()].sizes[0].x >> 2u;
    let lanes = it_u[pz()].inner_chunks;
    let block = t / lanes;
    let w = select(t - block * lanes, q0, t >= it_u[pz()].threads);
    if (w >= q0) {
        return Column(w, q0, lanes, vec4<u32>(0u), vec4<u32>(0u), 0u);
    }
    let n1 = it_u[pz()].sizes[0].y;
    let outer = block / it_u[pz()].extra.x;
    let j0 = (block - outer * it_u[pz()].extra.x) * EPT;
    let base = iter_offsets((outer * n1 + j0) * it_u[pz()].sizes[0].x + 4u * w);
    return Column(w, q0, lanes, base, iter_strides(1u), min(EPT, n1 - j0));
}
