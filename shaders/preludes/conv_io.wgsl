// The bindings every convolution kernel shares, as the host binds them (kernels::conv::dispatch):
// the input, the bias, the output, and the same windows of input and output again as vec4 words
// (used under VIN / VOUT). The output is bound writable once, as f32 (y) or as vec4 words (y4);
// the other gets a scratch word the kernel never touches. Binding 0 is each family's uniform and
// binding 2 its weights, declared by the family's own prelude or kernel file.

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read> x4: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> y4: array<vec4<f32>>;
