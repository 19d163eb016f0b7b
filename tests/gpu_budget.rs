//! Register budget of the convolution, elementwise, converting-copy and matrix-product pipelines, measured
//! with a real GPU compiler and no GPU.
//!
//! Every pipeline of [`strided_wgpu::advanced::internal::conv_gpu_pipelines`],
//! [`strided_wgpu::advanced::internal::elementwise_gpu_pipelines`], [`strided_wgpu::advanced::internal::copy_gpu_pipelines`],
//! [`strided_wgpu::advanced::internal::matmul_gpu_pipelines`], [`strided_wgpu::advanced::internal::reduce_gpu_pipelines`] and
//! [`strided_wgpu::advanced::internal::pool_gpu_pipelines`] and
//! [`strided_wgpu::advanced::internal::norm_gpu_pipelines`] is
//! compiled the way wgpu compiles it
//! on Vulkan (WGSL -> naga, override constants applied -> SPIR-V) and handed to Mesa's RADV
//! driver with `RADV_FORCE_FAMILY=navi21`: RADV then opens a "null" AMD RDNA2 device that
//! compiles with the real ACO back end but cannot run anything. The compiler's statistics come
//! back through `VK_KHR_pipeline_executable_properties` (VGPRs, spilled VGPRs/SGPRs, scratch,
//! LDS, subgroups per SIMD).
//!
//! Why: a kernel that spills registers to scratch memory, or that holds so many VGPRs that few
//! waves fit on a SIMD, runs many times slower on real GPUs than on the CPU adapters the other
//! tests use, and nothing else would notice. A pipeline fails when it spills (VGPRs or SGPRs),
//! uses scratch memory, or, for a `gemm` kernel, leaves fewer than [`GEMM_MIN_WAVES`] waves per
//! SIMD (divided by the register blocks an invocation holds: the wide tiles' PM x PN).
//!
//! Output: one line per pipeline, `gpu budget <kernel> <constants>: vgprs=V spilled=S waves=W
//! ...`, then `gpu budget: N passed, M failed`; the exit status is non-zero when any failed.
//! Without Mesa RADV (a Vulkan loader and `mesa-vulkan-drivers`) it says so loudly and passes,
//! unless `STRIDED_WGPU_REQUIRE_ADAPTER=1`.

#[cfg(target_arch = "wasm32")]
fn main() {}

/// Its outcome, for the summary at the end of `cargo test` (tests/zz_gpu_summary.rs).
#[cfg(not(target_arch = "wasm32"))]
#[allow(dead_code)]
#[path = "common/skips.rs"]
mod skips;

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    native::main()
}

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use ash::vk;
    use std::ffi::CStr;
    use strided_wgpu::advanced::internal::PipelineSpec;

    /// Fewest waves per SIMD a `gemm` kernel may leave room for, as RADV's "Subgroups per SIMD"
    /// counts them: on RDNA in wave32 units, so a wave64 shader's figure is twice its wave64
    /// waves. 16 is 8 waves in either unit: 8 wave64 waves (at most 64 VGPRs), which also
    /// leaves 16 wave32 waves.
    /// A wide tile (`PM`, `PN` > 1: an invocation holds PM x PN register blocks of 4 x 4) gives
    /// each wave PM x PN times the independent multiply-adds for every value it waits on, so
    /// it may leave PM x PN times fewer waves: 128 x 128 tiles (8 x 8 blocks, about 110 VGPRs)
    /// keep 4 wave64 waves, as CUTLASS's SIMT kernels of 128 x 128 tiles run 16 warps of an
    /// NVIDIA multiprocessor's 64.
    const GEMM_MIN_WAVES: i64 = 16;

    const SKIP: &str = "gpu budget: skipped, no Mesa RADV driver (install mesa-vulkan-drivers)";

    pub fn main() {
        // Read by Mesa when the Vulkan driver loads, so before anything touches Vulkan.
        // (Edition 2021: set_var is safe; this binary has one thread at this point.)
        std::env::set_var("RADV_FORCE_FAMILY", "navi21");
        std::env::set_var("MESA_SHADER_CACHE_DISABLE", "true");
        std::env::set_var("RADV_DEBUG", "nocache");

        let radv = match unsafe { Radv::open() } {
            Ok(radv) => radv,
            Err(why) => {
                println!("{SKIP} [{why}]");
                if std::env::var("STRIDED_WGPU_REQUIRE_ADAPTER").as_deref() == Ok("1") {
                    eprintln!("gpu budget: failing, as STRIDED_WGPU_REQUIRE_ADAPTER=1 requires the RADV driver");
                    std::process::exit(1);
                }
                super::skips::record(super::skips::Outcome::Skipped(format!("no Mesa RADV driver for the register budget ({why})")));
                return;
            }
        };
        super::skips::record(super::skips::Outcome::Ran(vec!["RADV navi21 null device".into()]));
        let specs: Vec<PipelineSpec> = strided_wgpu::advanced::internal::conv_gpu_pipelines().into_iter().chain(strided_wgpu::advanced::internal::elementwise_gpu_pipelines()).chain(strided_wgpu::advanced::internal::copy_gpu_pipelines()).chain(strided_wgpu::advanced::internal::matmul_gpu_pipelines()).chain(strided_wgpu::advanced::internal::reduce_gpu_pipelines()).chain(strided_wgpu::advanced::internal::pool_gpu_pipelines()).chain(strided_wgpu::advanced::internal::norm_gpu_pipelines()).collect();
        // `GPU_BUDGET_KERNELS=a,b` checks those kernels' pipelines only (a kernel's work in
        // progress; CI checks them all).
        let only = std::env::var("GPU_BUDGET_KERNELS").ok();
        let specs: Vec<PipelineSpec> = match &only {
            Some(names) => specs.into_iter().filter(|s| names.split(',').any(|n| n.trim() == s.kernel)).collect(),
            None => specs,
        };
        if let Some(names) = &only {
            println!("gpu budget: only the kernels {names} (GPU_BUDGET_KERNELS)");
        }
        // The compiler dominates (about a second a pipeline): one worker per core, each taking
        // the next pipeline; the lines come out in the list's order.
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(specs.len().max(1));
        let next = std::sync::atomic::AtomicUsize::new(0);
        let mut results: Vec<(usize, bool, String)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    scope.spawn(|| {
                        let mut done = Vec::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(spec) = specs.get(i) else { break };
                            let (ok, report) = match unsafe { radv.stats(spec) } {
                                Ok(stats) => {
                                    let blocks: i64 = ["PM", "PN"].iter().map(|p| spec.constants.iter().find(|(k, _)| k == p).map_or(1, |c| c.1)).product();
                                    let reasons = stats.failures(spec.kernel, GEMM_MIN_WAVES / blocks.max(1));
                                    let verdict = if reasons.is_empty() { String::new() } else { format!(" FAIL: {}", reasons.join(", ")) };
                                    (reasons.is_empty(), format!("{stats}{verdict}"))
                                }
                                Err(e) => (false, format!("FAIL: {e}")),
                            };
                            done.push((i, ok, report));
                        }
                        done
                    })
                })
                .collect();
            handles.into_iter().flat_map(|h| h.join().expect("a budget worker panicked")).collect()
        });
        results.sort_by_key(|r| r.0);
        let (mut passed, mut failed) = (0, 0);
        for (i, ok, report) in results {
            let spec = &specs[i];
            let constants = spec.constants.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ");
            println!("gpu budget {} {constants}: {report}", spec.kernel);
            if ok { passed += 1 } else { failed += 1 }
        }
        unsafe { radv.close() };
        println!("gpu budget: {passed} passed, {failed} failed");
        if failed > 0 {
            std::process::exit(1);
        }
        // No pipeline compiled is no budget checked (the lists came back empty).
        if passed == 0 {
            println!("gpu budget: no pipeline was compiled");
            std::process::exit(1);
        }
    }

    /// What the compiler reports for one pipeline (the largest over its executables).
    #[derive(Default)]
    struct Stats {
        vgprs: i64,
        sgprs: i64,
        spilled_vgprs: i64,
        spilled_sgprs: i64,
        scratch: i64,
        lds: i64,
        /// The compiled code's instructions (static code size).
        instructions: i64,
        waves: Option<i64>,
        /// Subgroup (wave) size the driver compiled for.
        wave_size: u32,
        /// Every statistic's name, to say what was there when an expected one is missing.
        names: Vec<String>,
    }

    impl Stats {
        fn record(&mut self, name: &str, value: i64) {
            self.names.push(name.to_owned());
            let n = name.to_ascii_lowercase();
            let max = |slot: &mut i64| *slot = (*slot).max(value);
            match n.as_str() {
                _ if n.contains("spill") && n.contains("vgpr") => max(&mut self.spilled_vgprs),
                _ if n.contains("spill") && n.contains("sgpr") => max(&mut self.spilled_sgprs),
                // Exact: RADV also reports "Pre-Sched VGPRs", the pressure before scheduling.
                "vgprs" => max(&mut self.vgprs),
                "sgprs" => max(&mut self.sgprs),
                _ if n.contains("scratch") => max(&mut self.scratch),
                _ if n.contains("lds") => max(&mut self.lds),
                "instructions" => max(&mut self.instructions),
                _ if n.contains("per simd") || n.contains("waves") => self.waves = Some(self.waves.map_or(value, |w| w.min(value))),
                _ => {}
            }
        }

        fn failures(&self, kernel: &str, min_waves: i64) -> Vec<String> {
            let mut why = vec![];
            if self.spilled_vgprs > 0 {
                why.push(format!("{} VGPRs spilled", self.spilled_vgprs));
            }
            if self.spilled_sgprs > 0 {
                why.push(format!("{} SGPRs spilled", self.spilled_sgprs));
            }
            if self.scratch > 0 {
                why.push(format!("{} scratch bytes", self.scratch));
            }
            if kernel.contains("gemm") {
                match self.waves {
                    Some(w) if w < min_waves => why.push(format!("{w} waves per SIMD < {min_waves}")),
                    Some(_) => {}
                    None => why.push(format!("no waves-per-SIMD statistic among {:?}", self.names)),
                }
            }
            if !self.names.iter().any(|n| n.to_ascii_lowercase().contains("spill")) {
                why.push(format!("no spill statistics among {:?}", self.names));
            }
            why
        }
    }

    impl std::fmt::Display for Stats {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            let waves = self.waves.map_or("?".into(), |w| w.to_string());
            write!(f, "vgprs={} spilled={} waves={waves} wave_size={} ", self.vgprs, self.spilled_vgprs, self.wave_size)?;
            write!(f, "sgprs={} spilled_sgprs={} scratch={} lds={} instructions={}", self.sgprs, self.spilled_sgprs, self.scratch, self.lds, self.instructions)
        }
    }

    /// A Vulkan device on Mesa RADV's null AMD device, able to report pipeline statistics.
    struct Radv {
        _entry: ash::Entry,
        instance: ash::Instance,
        device: ash::Device,
        executables: ash::khr::pipeline_executable_properties::Device,
        /// Whether the device zero-initializes workgroup memory itself (as wgpu then asks naga).
        native_zero_init: bool,
    }

    impl Radv {
        unsafe fn open() -> Result<Self, String> {
            let entry = ash::Entry::load().map_err(|e| format!("no Vulkan loader: {e}"))?;
            let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
            let instance = entry
                .create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None)
                .map_err(|e| format!("no Vulkan instance: {e}"))?;
            let found = instance.enumerate_physical_devices().unwrap_or_default().into_iter().find(|&p| {
                let props = instance.get_physical_device_properties(p);
                props.device_name_as_c_str().is_ok_and(|n| n.to_string_lossy().contains("RADV"))
            });
            let Some(pd) = found else {
                instance.destroy_instance(None);
                return Err("no RADV device".into());
            };
            let ext = ash::khr::pipeline_executable_properties::NAME;
            let has_ext = instance
                .enumerate_device_extension_properties(pd)
                .unwrap_or_default()
                .iter()
                .any(|e| e.extension_name_as_c_str() == Ok(ext));

            // What the device supports; enable the features shaders may use where supported.
            let mut s11 = vk::PhysicalDeviceVulkan11Features::default();
            let mut s12 = vk::PhysicalDeviceVulkan12Features::default();
            let mut s13 = vk::PhysicalDeviceVulkan13Features::default();
            let mut spe = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default();
            let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut s11).push_next(&mut s12).push_next(&mut s13).push_next(&mut spe);
            instance.get_physical_device_features2(pd, &mut f2);
            if !has_ext || spe.pipeline_executable_info == vk::FALSE {
                instance.destroy_instance(None);
                return Err("RADV without VK_KHR_pipeline_executable_properties".into());
            }
            let mut f11 = vk::PhysicalDeviceVulkan11Features::default().storage_buffer16_bit_access(s11.storage_buffer16_bit_access == vk::TRUE);
            let mut f12 = vk::PhysicalDeviceVulkan12Features::default()
                .shader_int8(s12.shader_int8 == vk::TRUE)
                .shader_float16(s12.shader_float16 == vk::TRUE)
                .storage_buffer8_bit_access(s12.storage_buffer8_bit_access == vk::TRUE)
                .vulkan_memory_model(s12.vulkan_memory_model == vk::TRUE);
            let native_zero_init = s13.shader_zero_initialize_workgroup_memory == vk::TRUE;
            let mut f13 = vk::PhysicalDeviceVulkan13Features::default().shader_zero_initialize_workgroup_memory(native_zero_init);
            let mut fpe = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default().pipeline_executable_info(true);
            let prio = [1.0f32];
            let queues = [vk::DeviceQueueCreateInfo::default().queue_family_index(0).queue_priorities(&prio)];
            let exts = [ext.as_ptr()];
            let info = vk::DeviceCreateInfo::default()
                .queue_create_infos(&queues)
                .enabled_extension_names(&exts)
                .push_next(&mut f11)
                .push_next(&mut f12)
                .push_next(&mut f13)
                .push_next(&mut fpe);
            let device = match instance.create_device(pd, &info, None) {
                Ok(d) => d,
                Err(e) => {
                    instance.destroy_instance(None);
                    return Err(format!("cannot open the RADV device: {e}"));
                }
            };
            let executables = ash::khr::pipeline_executable_properties::Device::new(&instance, &device);
            Ok(Radv { _entry: entry, instance, device, executables, native_zero_init })
        }

        unsafe fn close(self) {
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }

        /// SPIR-V for one pipeline, with the options wgpu's Vulkan back end gives naga on RADV.
        fn spirv(&self, spec: &PipelineSpec) -> Result<(Vec<u32>, Vec<vk::DescriptorSetLayoutBinding<'static>>), String> {
            use naga::proc::{BoundsCheckPolicies, BoundsCheckPolicy};
            let src = spec.source();
            let module = naga::front::wgsl::parse_str(&src).map_err(|e| format!("WGSL: {}", e.emit_to_string(&src)))?;
            let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
                .validate(&module)
                .map_err(|e| format!("validation: {e:?}"))?;
            let constants = spec.constants.iter().map(|&(k, v)| (k.to_string(), v as f64)).collect();
            let (module, info) = naga::back::pipeline_constants::process_overrides(&module, &info, Some((naga::ShaderStage::Compute, "main")), &constants)
                .map_err(|e| format!("override constants: {e:?}"))?;
            let options = naga::back::spv::Options {
                lang_version: (1, 3),
                // wgpu: indices clamped; buffers left to robustBufferAccess2, which RADV has.
                bounds_check_policies: BoundsCheckPolicies {
                    index: BoundsCheckPolicy::Restrict,
                    buffer: BoundsCheckPolicy::Unchecked,
                    image_load: BoundsCheckPolicy::Unchecked,
                    binding_array: BoundsCheckPolicy::Unchecked,
                },
                // As the runtime creates its modules for GPUs (`Runtime::pipeline`: trusted, no
                // loop counters; the crate's loops all end).
                force_loop_bounding: false,
                zero_initialize_workgroup_memory: if self.native_zero_init {
                    naga::back::spv::ZeroInitializeWorkgroupMemoryMode::Native
                } else {
                    naga::back::spv::ZeroInitializeWorkgroupMemoryMode::Polyfill
                },
                ..Default::default()
            };
            let pipeline = naga::back::spv::PipelineOptions { shader_stage: naga::ShaderStage::Compute, entry_point: "main".into() };
            let words = naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline)).map_err(|e| format!("SPIR-V: {e:?}"))?;
            let bindings = module
                .global_variables
                .iter()
                .filter_map(|(_, var)| {
                    let ty = match var.space {
                        naga::AddressSpace::Uniform => vk::DescriptorType::UNIFORM_BUFFER,
                        naga::AddressSpace::Storage { .. } => vk::DescriptorType::STORAGE_BUFFER,
                        _ => return None,
                    };
                    let b = var.binding.as_ref()?;
                    Some((b.group, vk::DescriptorSetLayoutBinding::default().binding(b.binding).descriptor_type(ty).descriptor_count(1).stage_flags(vk::ShaderStageFlags::COMPUTE)))
                })
                .map(|(group, b)| if group == 0 { Ok(b) } else { Err(format!("bind group {group}: only group 0 is supported here")) })
                .collect::<Result<_, _>>()?;
            Ok((words, bindings))
        }

        /// Compiles one pipeline and reads the compiler's statistics.
        unsafe fn stats(&self, spec: &PipelineSpec) -> Result<Stats, String> {
            let (words, bindings) = self.spirv(spec)?;
            let d = &self.device;
            let module = d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None).map_err(|e| format!("shader module: {e}"))?;
            let set = d.create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings), None).map_err(|e| format!("set layout: {e}"))?;
            let sets = [set];
            let layout = d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&sets), None).map_err(|e| format!("layout: {e}"))?;
            let stage = vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::COMPUTE).module(module).name(c"main");
            let info = [vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout).flags(vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR)];
            let created = d.create_compute_pipelines(vk::PipelineCache::null(), &info, None);
            let result = match created {
                Ok(p) => {
                    let stats = self.read(p[0]);
                    d.destroy_pipeline(p[0], None);
                    stats
                }
                Err((_, e)) => Err(format!("pipeline creation: {e}")),
            };
            d.destroy_pipeline_layout(layout, None);
            d.destroy_descriptor_set_layout(set, None);
            d.destroy_shader_module(module, None);
            result
        }

        unsafe fn read(&self, pipeline: vk::Pipeline) -> Result<Stats, String> {
            let executables = self.executables.get_pipeline_executable_properties(&vk::PipelineInfoKHR::default().pipeline(pipeline)).map_err(|e| format!("executables: {e}"))?;
            let mut stats = Stats::default();
            for (index, executable) in (0u32..).zip(&executables) {
                stats.wave_size = stats.wave_size.max(executable.subgroup_size);
                let info = vk::PipelineExecutableInfoKHR::default().pipeline(pipeline).executable_index(index);
                for s in self.executables.get_pipeline_executable_statistics(&info).map_err(|e| format!("statistics: {e}"))? {
                    let value = match s.format {
                        vk::PipelineExecutableStatisticFormatKHR::BOOL32 => s.value.b32 as i64,
                        vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64,
                        vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64 as i64,
                        _ => s.value.f64 as i64,
                    };
                    let name = CStr::from_ptr(s.name.as_ptr()).to_string_lossy();
                    stats.record(&name, value);
                }
            }
            Ok(stats)
        }
    }
}
