//! The host's side of the GPU ABI. Every struct the host writes into a uniform buffer is
//! declared through [`uniform!`], which makes it `#[repr(C)]` and `Pod` and records each
//! member's name, offset, size and scalar type; the uniform writers take only such structs
//! ([`Uniform`]: `conv::dispatch`, [`bytes`]). The WGSL side stays in the shaders, and this
//! module's test holds the two together: it reflects every `var<uniform>` of every registered
//! kernel, as the registry composes it, through naga, and compares each struct member by member
//! with its Rust twin (names, offsets, sizes, scalar types, total size); a uniform it has no
//! twin for fails it, and so does a `uniform!` struct that no kernel binds.

/// The uniform slot the host allocates per dispatch, in bytes: every [`Uniform`] fits in one.
pub(crate) const SLOT_BYTES: usize = crate::runtime::record::SLOT_BYTES as usize;

/// A struct the host writes into a uniform buffer, laid out as the WGSL struct of the same
/// members. Implemented only by [`uniform!`].
pub(crate) trait Uniform: bytemuck::Pod {
    /// Every member in declaration order.
    #[cfg(test)]
    const MEMBERS: &'static [Member];
}

/// The bytes of `u`, as a uniform buffer receives them.
pub(crate) fn bytes<U: Uniform>(u: &U) -> &[u8] {
    bytemuck::bytes_of(u)
}

/// One member of a [`Uniform`], as `offset_of!` and `size_of` give it.
#[cfg(test)]
#[derive(Debug, PartialEq)]
pub(crate) struct Member {
    pub name: &'static str,
    pub offset: usize,
    pub size: usize,
    pub scalar: Scalar,
}

/// The scalar type a member is made of (a WGSL vector or array member: its elements').
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Scalar {
    U32,
    I32,
    F32,
}

/// The types a [`Uniform`] member may have: u32, i32, f32 and arrays of them.
#[cfg(test)]
pub(crate) trait Field {
    const SCALAR: Scalar;
}

#[cfg(test)]
impl Field for u32 {
    const SCALAR: Scalar = Scalar::U32;
}

#[cfg(test)]
impl Field for i32 {
    const SCALAR: Scalar = Scalar::I32;
}

#[cfg(test)]
impl Field for f32 {
    const SCALAR: Scalar = Scalar::F32;
}

#[cfg(test)]
impl<T: Field, const N: usize> Field for [T; N] {
    const SCALAR: Scalar = T::SCALAR;
}

/// Declares a struct the host writes into a uniform buffer: `#[repr(C)]`, `Clone`, `Copy`,
/// `Pod`, `Zeroable`, no larger than [`SLOT_BYTES`], and a [`Uniform`] whose members the ABI
/// test compares with the WGSL struct of the same name in its table.
macro_rules! uniform {
    ($(#[$attr:meta])* $vis:vis struct $name:ident { $($(#[$fattr:meta])* $fvis:vis $field:ident: $ty:ty),* $(,)? }) => {
        $(#[$attr])*
        #[repr(C)]
        #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
        $vis struct $name {
            $($(#[$fattr])* $fvis $field: $ty),*
        }

        impl $crate::kernels::abi::Uniform for $name {
            #[cfg(test)]
            const MEMBERS: &'static [$crate::kernels::abi::Member] = &[$($crate::kernels::abi::Member {
                name: stringify!($field),
                offset: ::std::mem::offset_of!($name, $field),
                size: ::std::mem::size_of::<$ty>(),
                scalar: <$ty as $crate::kernels::abi::Field>::SCALAR,
            }),*];
        }

        const _: () = assert!(::std::mem::size_of::<$name>() <= $crate::kernels::abi::SLOT_BYTES);
    };
}
pub(crate) use uniform;

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::{Member, Scalar, Uniform};
    use crate::kernels::conv::{blocked, depthwise, gemm};
    use crate::kernels::shaders::{source, KERNELS};
    use crate::kernels::{copy, elementwise};

    /// A WGSL uniform struct and its Rust twin.
    struct Twin {
        wgsl: &'static str,
        rust: &'static str,
        size: usize,
        members: &'static [Member],
    }

    fn twin<U: Uniform>(wgsl: &'static str) -> Twin {
        let rust = std::any::type_name::<U>().rsplit("::").next().unwrap();
        Twin { wgsl, rust, size: std::mem::size_of::<U>(), members: U::MEMBERS }
    }

    /// Every uniform struct of the shaders (by WGSL name) and the Rust struct the host writes
    /// into it. All are bound at group 0, binding 0.
    fn twins() -> Vec<Twin> {
        vec![
            twin::<copy::PlanUniform>("Plan"),
            twin::<elementwise::IterUniform>("Iter"),
            twin::<crate::kernels::reduce::abi::RedUniform>("Red"),
            twin::<blocked::ConvParams>("ConvParams"),
            twin::<gemm::GemmParams>("GemmParams"),
            twin::<depthwise::DepthwiseParams>("DepthwiseParams"),
            twin::<depthwise::RowsParams>("RowsParams"),
            twin::<crate::kernels::matmul::MatmulParams>("MatmulParams"),
            twin::<crate::kernels::pool::PoolParams>("PoolParams"),
            twin::<crate::kernels::norm::NormParams>("NormParams"),
        ]
    }

    /// Uniforms that are not structs, by variable name: (binding, bytes, scalar). `wu` (conv.wgsl)
    /// is a window's weight block, packed by the host as `kernel::BLOCK` f32.
    const ARRAYS: &[(&str, u32, usize, Scalar)] = &[("wu", 2, crate::kernels::conv::kernel::BLOCK * 4, Scalar::F32)];

    /// The scalar a naga type is made of (vectors, matrices and arrays: their elements').
    fn scalar(module: &naga::Module, ty: naga::Handle<naga::Type>) -> Option<Scalar> {
        use naga::{ScalarKind, TypeInner};
        let s = match module.types[ty].inner {
            TypeInner::Scalar(s) | TypeInner::Vector { scalar: s, .. } | TypeInner::Matrix { scalar: s, .. } => s,
            TypeInner::Array { base, .. } => return scalar(module, base),
            _ => return None,
        };
        match (s.kind, s.width) {
            (ScalarKind::Uint, 4) => Some(Scalar::U32),
            (ScalarKind::Sint, 4) => Some(Scalar::I32),
            (ScalarKind::Float, 4) => Some(Scalar::F32),
            _ => None,
        }
    }

    /// Every uniform of every registered kernel, as the registry composes it, has a Rust twin
    /// with the same members at the same offsets, of the same sizes and scalar types, and the
    /// same total size; every twin is bound by some kernel.
    #[test]
    fn every_wgsl_uniform_matches_its_rust_struct() {
        let twins = twins();
        let mut met = BTreeSet::new();
        for (name, _, _) in KERNELS {
            let src = source(name).unwrap();
            let module = naga::front::wgsl::parse_str(&src).unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(&src)));
            let mut layouter = naga::proc::Layouter::default();
            layouter.update(module.to_ctx()).unwrap_or_else(|e| panic!("{name}: {e}"));
            for (_, var) in module.global_variables.iter().filter(|(_, v)| v.space == naga::AddressSpace::Uniform) {
                let var_name = var.name.as_deref().unwrap_or("?");
                let binding = var.binding.as_ref().map(|b| (b.group, b.binding));
                // A uniform struct is bound as a one-element array, read at an index no compiler
                // sees (preludes/uniform_index.wgsl): the array binds the struct's bytes.
                let ty = match module.types[var.ty].inner {
                    naga::TypeInner::Array { base, size: naga::ArraySize::Constant(n), .. } if n.get() == 1 && matches!(module.types[base].inner, naga::TypeInner::Struct { .. }) => &module.types[base],
                    _ => &module.types[var.ty],
                };
                let naga::TypeInner::Struct { members, span } = &ty.inner else {
                    let (_, b, bytes, s) = ARRAYS.iter().find(|a| a.0 == var_name).unwrap_or_else(|| panic!("{name}: uniform `{var_name}` is neither a struct nor in the ABI test's ARRAYS"));
                    assert_eq!(binding, Some((0, *b)), "{name}: `{var_name}`");
                    assert_eq!(layouter[var.ty].size as usize, *bytes, "{name}: `{var_name}` bytes");
                    assert_eq!(scalar(&module, var.ty), Some(*s), "{name}: `{var_name}` scalar type");
                    met.insert(var_name.to_string());
                    continue;
                };
                let wgsl = ty.name.as_deref().unwrap_or("?");
                let t = twins.iter().find(|t| t.wgsl == wgsl).unwrap_or_else(|| panic!("{name}: uniform struct `{wgsl}` (`{var_name}`) has no Rust twin: declare the struct the host writes into it with uniform! and add it to the ABI test's twins()"));
                assert_eq!(binding, Some((0, 0)), "{name}: `{wgsl}` is bound where the host binds uniforms");
                // (name, offset, size, scalar) of each member, WGSL's and Rust's.
                let reflected: Vec<(&str, usize, usize, Option<Scalar>)> =
                    members.iter().map(|m| (m.name.as_deref().unwrap_or("?"), m.offset as usize, layouter[m.ty].size as usize, scalar(&module, m.ty))).collect();
                let rust: Vec<(&str, usize, usize, Option<Scalar>)> = t.members.iter().map(|m| (m.name, m.offset, m.size, Some(m.scalar))).collect();
                assert_eq!(reflected, rust, "{name}: WGSL `{wgsl}` (left) against Rust `{}` (right)", t.rust);
                assert_eq!(*span as usize, t.size, "{name}: size of WGSL `{wgsl}` against Rust `{}`", t.rust);
                met.insert(wgsl.to_string());
            }
        }
        let all: BTreeSet<String> = twins.iter().map(|t| t.wgsl.to_string()).chain(ARRAYS.iter().map(|a| a.0.to_string())).collect();
        assert_eq!(met, all, "an entry of the ABI test is bound by no kernel");
    }

    /// Every struct declared with `uniform!` under src/ is in [`twins`], and no other struct is
    /// `#[repr(C)]` (a struct the host writes into a buffer is declared with `uniform!`).
    #[test]
    fn every_uniform_struct_is_a_twin() {
        fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    rust_files(&p, out);
                } else if p.extension().is_some_and(|e| e == "rs") {
                    out.push(p);
                }
            }
        }
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let this = std::path::Path::new(file!()).file_name().unwrap();
        let mut declared = BTreeSet::new();
        for f in files.iter().filter(|f| !f.ends_with(std::path::Path::new("kernels").join(this))) {
            let text = std::fs::read_to_string(f).unwrap();
            assert!(!text.lines().any(|l| l.trim_start().starts_with("#[repr(C)]")), "{f:?}: a #[repr(C)] struct outside uniform!");
            for (i, _) in text.match_indices("uniform! {") {
                let rest = &text[i..];
                let name = rest[rest.find("struct ").unwrap() + 7..].split(|c: char| !c.is_alphanumeric() && c != '_').next().unwrap();
                declared.insert(name.to_string());
            }
        }
        let twins: BTreeSet<String> = twins().iter().map(|t| t.rust.to_string()).collect();
        assert_eq!(declared, twins, "uniform! structs under src/ against the ABI test's twins()");
        assert!(twins.len() >= 6);
    }
}
