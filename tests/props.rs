//! Property tests on the host layer.
//!
//! * Lockstep (tinygrad's checker): random chains of view ops applied to a [`Layout`] and to a
//!   plainly materialized array whose ops move data by explicit index maps; every element is
//!   compared after every op.
//! * No panic: random, mostly invalid arguments to every op.
//! * Copies: random `copy_` pairs through the plan against an element-by-element walk.

mod common;

use common::rng::Rng;
use proptest::prelude::*;
use strided_wgpu::advanced::internal::{f32_to_bf16_bits, f32_to_f16_bits};
use strided_wgpu::{DType, HostTensor, Layout, MemoryFormat, Strided};
use strided_wgpu::layout::{CopyPlan, Reshape};

/// A dense row-major array of storage indices: what a view's elements must read.
#[derive(Clone, Debug)]
struct Model {
    shape: Vec<usize>,
    data: Vec<usize>,
}

fn strides_of(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

impl Model {
    /// Builds a model of `shape` whose element at each index is `f(index)`.
    fn build(shape: Vec<usize>, f: impl Fn(&[usize]) -> usize) -> Model {
        let n: usize = shape.iter().product();
        let st = strides_of(&shape);
        let data = (0..n)
            .map(|lin| {
                let idx: Vec<usize> = st.iter().zip(&shape).map(|(&s, &m)| (lin / s) % m).collect();
                f(&idx)
            })
            .collect();
        Model { shape, data }
    }
    fn at(&self, idx: &[usize]) -> usize {
        let st = strides_of(&self.shape);
        self.data[idx.iter().zip(&st).map(|(i, s)| i * s).sum::<usize>()]
    }
}

/// Applies one random op to both; returns false when the op was skipped.
fn step(rng: &mut Rng, l: &Layout, m: &Model) -> Option<(Layout, Model, String)> {
    let r = l.rank();
    let sh = m.shape.clone();
    match rng.below(11) {
        0 if r > 0 => {
            let mut p: Vec<usize> = (0..r).collect();
            for i in (1..r).rev() {
                p.swap(i, rng.below(i + 1));
            }
            let nl = l.permute(&p.iter().map(|&d| d as isize).collect::<Vec<_>>()).unwrap();
            let nm = Model::build(p.iter().map(|&d| sh[d]).collect(), |idx| {
                let mut src = vec![0; r];
                for (i, &d) in p.iter().enumerate() {
                    src[d] = idx[i];
                }
                m.at(&src)
            });
            Some((nl, nm, format!("permute{p:?}")))
        }
        1 if r > 0 => {
            let d = rng.below(r);
            let n = sh[d] as isize;
            let step = [1isize, 2, 3, -1, -2][rng.below(5)];
            let (a, b) = (rng.below(sh[d] + 1) as isize, rng.below(sh[d] + 1) as isize);
            let (start, end) = if step > 0 { (a.min(b), a.max(b)) } else { (a.max(b).min(n - 1), a.min(b) - 1) };
            // Python wraps a negative end: "before index 0" is spelled -n-1.
            let arg_end = if end < 0 { -n - 1 } else { end };
            let nl = l.slice(d as isize, start, arg_end, step).unwrap();
            let picks: Vec<usize> = if step > 0 {
                (start..end).step_by(step as usize).map(|i| i as usize).collect()
            } else {
                let mut v = vec![];
                let mut i = start;
                while i > end && i >= 0 {
                    v.push(i as usize);
                    i += step;
                }
                v
            };
            let mut ns = sh.clone();
            ns[d] = picks.len();
            let nm = Model::build(ns, |idx| {
                let mut s = idx.to_vec();
                s[d] = picks[idx[d]];
                m.at(&s)
            });
            Some((nl, nm, format!("slice({d},{start},{end},{step})")))
        }
        2 if r > 0 && sh.iter().all(|&n| n > 0) => {
            let d = rng.below(r);
            let i = rng.below(sh[d]);
            let nl = l.select(d as isize, i as isize).unwrap();
            let mut ns = sh.clone();
            ns.remove(d);
            let nm = Model::build(ns, |idx| {
                let mut s = idx.to_vec();
                s.insert(d, i);
                m.at(&s)
            });
            Some((nl, nm, format!("select({d},{i})")))
        }
        3 if r < 5 => {
            let d = rng.below(r + 1);
            let nl = l.unsqueeze(d as isize).unwrap();
            let mut ns = sh.clone();
            ns.insert(d, 1);
            let nm = Model::build(ns, |idx| {
                let mut s = idx.to_vec();
                s.remove(d);
                m.at(&s)
            });
            Some((nl, nm, format!("unsqueeze({d})")))
        }
        4 if r > 0 => {
            let d = rng.below(r);
            let nl = l.squeeze(d as isize).unwrap();
            if sh[d] != 1 {
                assert_eq!(&nl, l);
                return Some((nl, m.clone(), format!("squeeze({d}) (no-op)")));
            }
            let mut ns = sh.clone();
            ns.remove(d);
            let nm = Model::build(ns, |idx| {
                let mut s = idx.to_vec();
                s.insert(d, 0);
                m.at(&s)
            });
            Some((nl, nm, format!("squeeze({d})")))
        }
        5 if r < 5 => {
            let lead = rng.below(2);
            let mut target: Vec<usize> = (0..lead).map(|_| rng.below(3) + 1).collect();
            target.extend(sh.iter().map(|&n| if n == 1 { rng.below(3) + 1 } else { n }));
            let nl = l.expand(&target.iter().map(|&n| n as isize).collect::<Vec<_>>()).unwrap();
            let nm = Model::build(target.clone(), |idx| {
                let s: Vec<usize> = idx[lead..].iter().zip(&sh).map(|(&i, &n)| if n == 1 { 0 } else { i }).collect();
                m.at(&s)
            });
            Some((nl, nm, format!("expand{target:?}")))
        }
        6 => {
            // view / reshape to a random factorization of numel.
            let n: usize = sh.iter().product();
            let mut ns = vec![];
            let mut rest = n;
            while rest > 1 && ns.len() < 4 {
                let divs: Vec<usize> = (2..=rest).filter(|d| rest.is_multiple_of(*d)).collect();
                let f = divs[rng.below(divs.len())];
                ns.push(f);
                rest /= f;
            }
            if rest != 1 || ns.is_empty() {
                ns.push(rest);
            }
            if rng.below(2) == 0 {
                ns.insert(rng.below(ns.len() + 1), 1);
            }
            let req: Vec<isize> = ns.iter().map(|&x| x as isize).collect();
            let nm = Model { shape: ns.clone(), data: m.data.clone() };
            match l.reshape(&req).unwrap() {
                Reshape::View(nl) => {
                    assert_eq!(l.view(&req).unwrap(), nl);
                    Some((nl, nm, format!("view{ns:?}")))
                }
                Reshape::Copy(s) => {
                    assert_eq!(s, ns);
                    assert!(l.view(&req).is_err());
                    None
                }
            }
        }
        7 if r >= 2 => {
            let a = rng.below(r);
            let b = (a + 1 + rng.below(r - 1)) % r;
            let o = rng.below(5) as isize - 2;
            let nl = l.diagonal(o, a as isize, b as isize).unwrap();
            let ns = nl.shape().to_vec();
            let nm = Model::build(ns, |idx| {
                let k = idx[idx.len() - 1];
                let mut s: Vec<usize> = idx[..idx.len() - 1].to_vec();
                let (ia, ib) = if o >= 0 { (k, k + o as usize) } else { (k + (-o) as usize, k) };
                let (lo, hi) = if a < b { ((a, ia), (b, ib)) } else { ((b, ib), (a, ia)) };
                s.insert(lo.0, lo.1);
                s.insert(hi.0, hi.1);
                m.at(&s)
            });
            Some((nl, nm, format!("diagonal({o},{a},{b})")))
        }
        8 if r > 0 && r < 5 => {
            let d = rng.below(r);
            let size = rng.below(sh[d] + 1);
            let stp = rng.below(3) + 1;
            let nl = l.unfold(d as isize, size, stp).unwrap();
            let ns = nl.shape().to_vec();
            let nm = Model::build(ns, |idx| {
                let mut s = idx[..r].to_vec();
                s[d] = idx[d] * stp + idx[r];
                m.at(&s)
            });
            Some((nl, nm, format!("unfold({d},{size},{stp})")))
        }
        9 if r >= 2 => {
            let a = rng.below(r);
            let b = rng.below(r);
            let nl = l.transpose(a as isize, b as isize).unwrap();
            let mut ns = sh.clone();
            ns.swap(a, b);
            let nm = Model::build(ns, |idx| {
                let mut s = idx.to_vec();
                s.swap(a, b);
                m.at(&s)
            });
            Some((nl, nm, format!("transpose({a},{b})")))
        }
        10 if r > 0 => {
            let d = rng.below(r);
            let nl = l.flip(d as isize).unwrap();
            let nm = Model::build(sh.clone(), |idx| {
                let mut s = idx.to_vec();
                s[d] = sh[d] - 1 - idx[d];
                m.at(&s)
            });
            Some((nl, nm, format!("flip({d})")))
        }
        _ => None,
    }
}

fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(prop_oneof![3 => 1usize..5, 1 => Just(0usize), 1 => Just(1usize)], 0..5)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn lockstep_view_chains(shape in shape_strategy(), seed in any::<u64>(), len in 1usize..8) {
        let mut l = Layout::contiguous(&shape).unwrap();
        let n: usize = shape.iter().product();
        let mut m = Model { shape: shape.clone(), data: (0..n).collect() };
        let mut rng = Rng(seed);
        let mut trail = vec![];
        for _ in 0..len {
            if let Some((nl, nm, what)) = step(&mut rng, &l, &m) {
                trail.push(what);
                prop_assert_eq!(nl.shape(), &nm.shape[..], "after {:?}", trail);
                prop_assert_eq!(nl.storage_indices().unwrap(), nm.data.clone(), "after {:?}", trail);
                prop_assert_eq!(nl.is_contiguous(), nl.numel() == 0 || strided_dense(&nl), "contiguity after {:?}", trail);
                if nl.is_contiguous() && nl.numel() > 0 {
                    prop_assert!(nl.storage_indices().unwrap().windows(2).all(|w| w[1] == w[0] + 1));
                }
                l = nl;
                m = nm;
            }
        }
        // Materializing the final view through the copy plan gives the same elements.
        let base = HostTensor::from_vec((0..n as u32).collect::<Vec<_>>(), &shape).unwrap();
        let t = base.as_strided(l.shape(), l.strides(), l.offset()).unwrap();
        let got = t.contiguous(MemoryFormat::Contiguous).unwrap().to_vec::<u32>().unwrap();
        prop_assert_eq!(got.into_iter().map(|x| x as usize).collect::<Vec<_>>(), m.data);
    }

    #[test]
    fn copy_plans_match_elementwise_walk(
        shape in prop::collection::vec(1usize..5, 1..5), seed in any::<u64>(),
    ) {
        let mut rng = Rng(seed);
        let n: usize = shape.iter().product();
        let mut perm: Vec<isize> = (0..shape.len() as isize).collect();
        for i in (1..perm.len()).rev() { perm.swap(i, rng.below(i + 1)); }
        // Source: a permuted, maybe flipped, maybe stepped view of a bigger storage.
        let big: Vec<usize> = shape.iter().map(|&s| s * 2).collect();
        let src_storage = HostTensor::from_vec((0..big.iter().product::<usize>() as u32).collect::<Vec<_>>(), &big).unwrap();
        let mut src = src_storage.clone();
        for d in 0..shape.len() as isize {
            src = match rng.below(3) {
                0 => src.slice(d, 0, shape[d as usize] as isize * 2, 2).unwrap(),
                1 => src.narrow(d, 1, shape[d as usize]).unwrap().flip(d).unwrap(),
                _ => src.narrow(d, 0, shape[d as usize]).unwrap(),
            };
        }
        let src = src.permute(&perm).unwrap();
        let dst = HostTensor::zeros(src.shape(), DType::U32, [MemoryFormat::Contiguous, MemoryFormat::ChannelsLast][rng.below(2) * (src.rank() == 4) as usize]).unwrap();
        let dst = if rng.below(2) == 0 { dst.flip(0).unwrap() } else { dst };
        dst.copy_(&src).unwrap();
        let want: Vec<u32> = src.layout().storage_indices().unwrap().into_iter().map(|i| i as u32).collect();
        prop_assert_eq!(dst.to_vec::<u32>().unwrap(), want);
        let plan = CopyPlan::new(dst.layout(), src.layout()).unwrap();
        prop_assert_eq!(plan.numel(), n);
    }

    #[test]
    fn narrowing_matches_half_crate(bits in any::<u32>()) {
        let x = f32::from_bits(bits);
        if !x.is_nan() {
            prop_assert_eq!(f32_to_f16_bits(bits), half::f16::from_f32(x).to_bits());
            prop_assert_eq!(f32_to_bf16_bits(bits), half::bf16::from_f32(x).to_bits());
        } else {
            prop_assert!(half::f16::from_bits(f32_to_f16_bits(bits)).is_nan());
            prop_assert!(half::bf16::from_bits(f32_to_bf16_bits(bits)).is_nan());
        }
    }
}

/// PyTorch's contiguity, recomputed directly from the definition for the lockstep check.
fn strided_dense(l: &Layout) -> bool {
    let mut expected = 1isize;
    for d in (0..l.rank()).rev() {
        if l.shape()[d] != 1 {
            if l.strides()[d] != expected {
                return false;
            }
            expected *= l.shape()[d] as isize;
        }
    }
    true
}

fn arb_isize() -> impl Strategy<Value = isize> {
    prop_oneof![4 => -6isize..8, 1 => any::<isize>(), 1 => Just(isize::MAX), 1 => Just(isize::MIN), 1 => Just(-1isize)]
}
fn arb_usize() -> impl Strategy<Value = usize> {
    prop_oneof![4 => 0usize..8, 1 => any::<usize>(), 1 => Just(usize::MAX)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    /// Random, mostly invalid arguments to every op: errors are fine, panics are not.
    #[test]
    fn no_op_panics(
        shape in prop::collection::vec(arb_usize(), 0..5),
        strides in prop::collection::vec(arb_isize(), 0..5),
        offset in arb_usize(),
        op in 0usize..18,
        a in arb_isize(), b in arb_isize(), c in arb_isize(), d in arb_isize(),
        sizes in prop::collection::vec(arb_isize(), 0..5),
        storage_len in arb_usize(),
    ) {
        let l = Layout::new(shape.clone(), strides.clone(), offset)
            .or_else(|_| Layout::contiguous(&shape))
            .unwrap_or_else(|_| Layout::contiguous(&[2, 3]).unwrap());
        let us: Vec<usize> = sizes.iter().map(|&x| x as usize).collect();
        let _ = match op {
            0 => l.permute(&sizes).map(drop),
            1 => l.transpose(a, b).map(drop),
            2 => l.slice(a, b, c, d).map(drop),
            3 => l.narrow(a, b, c as usize).map(drop),
            4 => l.select(a, b).map(drop),
            5 => l.unsqueeze(a).map(drop),
            6 => l.squeeze(a).map(drop),
            7 => l.expand(&sizes).map(drop),
            8 => l.view(&sizes).map(drop),
            9 => l.reshape(&sizes).map(drop),
            10 => l.flatten(a, b).map(drop),
            11 => l.diagonal(a, b, c).map(drop),
            12 => Layout::as_strided(&us, &strides, offset, storage_len).map(drop),
            13 => l.unfold(a, b as usize, c as usize).map(drop),
            14 => l.broadcast_to(&us).map(drop),
            15 => { let _ = (l.has_internal_overlap(), l.span(), l.suggest_memory_format()); Ok(()) }
            16 => Layout::new(us.clone(), strides.clone(), offset).map(|m| { let _ = m.overlap(&l); }),
            _ => CopyPlan::new(&l, &Layout::new(us, strides, offset).unwrap_or_else(|_| l.clone())).map(|p| { let _ = p.kind(); }),
        };
    }
}
