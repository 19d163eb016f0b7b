// The bindings every convolution kernel shares, as the host binds them (kernels::conv::dispatch):
// the input, the bias, the output, and the same windows of input and output again as vec4 words
// (used under VIN / VOUT). The output is bound writable once, as f32 (y) or as vec4 words (y4);
// the other gets a scratch word the kernel never touches. Binding 0 is each family's uniform and
// binding 2 its weights, declared by the family's own prelude or kernel file.
//
// The kernels that also run on float16 and bfloat16 operands (the GEMM and depthwise ones) read
// and write them only through the functions below; conv_io16.wgsl, their 16-bit twin, binds the
// same operands as 16-bit words and defines the same functions. Element indices are within the
// bound windows.

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read> x4: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> y4: array<vec4<f32>>;

fn x_at(i: u32) -> f32 {
    return x[i];
}

// A weight read in place, bound as u32 words (binding 2 of the GEMM and depthwise kernels):
// element i lies in word i / WORD_ELEMS, and `w_elem` gives it from that word.
const WORD_ELEMS: u32 = 1u;

fn w_elem(word: u32, i: u32) -> f32 {
    return bitcast<f32>(word);
}

// Elements i .. i+3 (i a multiple of 4).
fn x4_at(i: u32) -> vec4<f32> {
    return x4[i / 4u];
}

fn bias_elem(i: u32) -> f32 {
    return bias[i];
}

// Values rounded to the output's type (float32: as they are).
fn y_round(v: vec4<f32>) -> vec4<f32> {
    return v;
}

fn y_store(i: u32, v: f32) {
    y[i] = v;
}

// Elements i .. i+3 of the output (i a multiple of 4).
fn y4_store(i: u32, v: vec4<f32>) {
    y4[i / 4u] = v;
}
