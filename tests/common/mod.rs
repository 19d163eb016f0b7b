#![allow(dead_code)]
pub mod views;
pub mod gpu;
pub mod rng;
pub mod conv;
pub mod elementwise;
pub mod matmul;
pub mod reduce;
pub mod window;
pub mod raises;
pub mod skips;
