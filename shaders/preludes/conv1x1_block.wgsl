// The 1x1 kernels' inner product (conv1x1_nchw.wgsl, conv1x1_nhwc.wgsl), after conv.wgsl:
// every held input quad into 4 output channels through the kernel's `step`.

// One 4x4 block per quad of pixels: every held quad into the 4 output channels whose weight
// rows `k` holds (the kernel's `step` says which rows; conv_weights.wgsl how they are read).
fn block(h: Held, k: Weights) -> Acc {
    var a = Acc();
    a = step(a, h.q0, k, 0u);
    a = step(a, h.q1, k, 1u);
    a = step(a, h.q2, k, 2u);
    a = step(a, h.q3, k, 3u);
    a = step(a, h.q4, k, 4u);
    a = step(a, h.q5, k, 5u);
    a = step(a, h.q6, k, 6u);
    a = step(a, h.q7, k, 7u);
    a = step(a, h.q8, k, 8u);
    a = step(a, h.q9, k, 9u);
    a = step(a, h.q10, k, 10u);
    a = step(a, h.q11, k, 11u);
    a = step(a, h.q12, k, 12u);
    a = step(a, h.q13, k, 13u);
    a = step(a, h.q14, k, 14u);
    a = step(a, h.q15, k, 15u);
    return a;
}
