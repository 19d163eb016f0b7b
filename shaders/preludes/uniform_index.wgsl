// The index every kernel reads its uniform struct at: each binds it as a one-element array
// (`plan_u`, `cp_u`, ...) and reads `<name>_u[pz]`, and each entry point first sets
// pz = workgroup_id.z >> 31, which is 0 (a grid holds fewer than 2^31 workgroups along z) but
// not a value any compiler can see. Mesa's lavapipe 22.x inlines into a shader the uniforms that
// decide a branch or end a loop, when it reads them at constant offsets, at every dispatch;
// where that left the shader no smaller (a loop over the plan's dims, unrolled), it compiled one
// shader per distinct set of uniform values: each new shape of a copy, each tap and channel
// window of a blocked convolution, and every inference of a network again with the shader
// cache off (docs/architecture.md). Read at an unknown offset, nothing is inlined.
var<private> pz: u32;
