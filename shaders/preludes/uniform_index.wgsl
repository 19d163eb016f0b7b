// The index every kernel reads its uniform struct at on CPU adapters: each binds it as a
// one-element array (`plan_u`, `cp_u`, ...) and reads `<name>_u[pz()]`, where its `pz()` is
// uniform_index of a u32 member of element 0 below 2^31 (`rank`, `geo.x`, ...): that member
// >> 31, 0, but not a value any compiler can see. Mesa's lavapipe 22.x inlines into a shader the
// uniforms that decide a branch or end a loop, when it reads them at constant offsets, at every
// dispatch; where that left the shader no smaller (a loop over the plan's dims, unrolled), it
// compiled one shader per distinct set of uniform values: each new shape of a copy, each tap
// and channel window of a blocked convolution, and every inference of a network again with the
// shader cache off (docs/architecture.md). Read at an unknown offset, nothing is inlined. A
// uniform value, so browsers' uniformity analysis accepts the barriers after it (a private
// variable set by the entry point failed Chromium's). GPUs compile the kernels with the plain
// struct (`shaders::source_for`): an NVIDIA H200 ran some slower reading it through the array.

fn uniform_index(below_2_31: u32) -> u32 {
    return below_2_31 >> 31u;
}
