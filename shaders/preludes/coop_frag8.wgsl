// The fragments of the tensor-core kernels: 8 x 8 x 8, f16 x f16 + f32 (adapters that report
// only that size: Mesa's lavapipe; Apple GPUs' simdgroup matrices are 8 x 8).
const FRAG: u32 = 8u;
alias FragA = coop_mat8x8<f16, A>;
alias FragB = coop_mat8x8<f16, B>;
alias FragC = coop_mat8x8<f32, C>;
