// The fragments of the tensor-core kernels: 16 x 16 x 16, f16 x f16 + f32 (NVIDIA, AMD).
const FRAG: u32 = 16u;
alias FragA = coop_mat16x16<f16, A>;
alias FragB = coop_mat16x16<f16, B>;
alias FragC = coop_mat16x16<f32, C>;
