//! PyTorch conformance: replays tests/data/views.jsonl (or the file named by
//! `CONFORMANCE_VIEWS`) on host tensors and prints `conformance views: N passed, M failed`.

mod common;

use common::views::{self, Replay};
use strided_wgpu::{Error, HostTensor, MemoryFormat};

impl Replay for HostTensor {
    fn contiguous_fmt(&self, f: MemoryFormat) -> Result<Self, Error> {
        self.contiguous(f)
    }
    fn flatten_(&self, a: isize, b: isize) -> Result<Self, Error> {
        self.flatten(a, b)
    }
    fn as_strided_(&self, shape: &[usize], strides: &[isize], offset: usize) -> Result<Self, Error> {
        self.as_strided(shape, strides, offset)
    }
    fn same_storage(&self, other: &Self) -> bool {
        self.shares_storage(other)
    }
    fn values(&self) -> Result<Vec<f64>, Error> {
        Ok(self.to_vec::<f32>()?.into_iter().map(f64::from).collect())
    }
}

fn host_views() -> bool {
    let (path, cases) = views::load("views.jsonl", "CONFORMANCE_VIEWS");
    let (mut pass, mut fail) = (0, 0);
    for case in &cases {
        let numel: usize = case.base_shape.iter().product();
        let base = HostTensor::from_vec((0..numel).map(|i| i as f32).collect(), &case.base_shape).expect("base tensor");
        let errs = views::check(case, &base);
        if errs.is_empty() {
            pass += 1;
        } else {
            fail += 1;
            eprintln!("FAIL {} ({path}) ops {:?}:\n  {}", case.id, case.ops, errs.join("\n  "));
        }
    }
    assert!(pass + fail > 0, "{path} holds no cases");
    println!("conformance views: {pass} passed, {fail} failed");
    fail == 0
}

fn main() {
    let ok = host_views();
    if !ok {
        std::process::exit(1);
    }
}
