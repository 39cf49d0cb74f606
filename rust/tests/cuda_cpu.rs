//! CUDA backend checks that need no GPU: the probe fails cleanly where CUDA is missing, the
//! diagnostics never panic, the public GEMM mapping gives cuBLAS's hand-derived arguments, and
//! every kernel compiles through NVRTC when libnvrtc is loadable (TLRS_NVRTC_LIB or the loader).

use tlrs::backend::cuda::{self, blas, kernels};
use tlrs::dtype::DType;

use std::sync::OnceLock;

/// Loads the library named by TLRS_NVRTC_LIB by full path and keeps it loaded for the whole
/// process, so cudarc's later dlopen("libnvrtc.so.13") finds it by soname. Every test calls it
/// first: the probe is cached per process, so it must see the same libraries whatever runs first.
fn preload_nvrtc() -> Result<Option<String>, String> {
    static PRELOADED: OnceLock<Result<Option<String>, String>> = OnceLock::new();
    PRELOADED
        .get_or_init(|| {
            let Ok(path) = std::env::var("TLRS_NVRTC_LIB") else {
                return Ok(None);
            };
            // SAFETY: loading runs the library's initialisers; libnvrtc's are benign.
            let lib = unsafe { libloading::Library::new(&path) }
                .map_err(|e| format!("TLRS_NVRTC_LIB={path} cannot be loaded: {e}"))?;
            std::mem::forget(lib);
            Ok(Some(path))
        })
        .clone()
}

#[test]
fn probe_is_an_error_value_where_cuda_is_missing() {
    preload_nvrtc().unwrap_or_else(|e| panic!("{e}"));
    match cuda::probe() {
        Ok(info) => {
            // A real GPU machine: the probe must describe a device, and count agrees.
            assert!(info.device_count >= 1 && !info.device_name.is_empty());
            assert_eq!(cuda::device_count(), info.device_count);
            eprintln!("CUDA available: {info:?}");
        }
        Err(e) => {
            let msg = e.to_string();
            eprintln!("probe error (expected on CPU-only machines):\n{msg}");
            assert!(msg.starts_with("CUDA is not available"), "{msg}");
            if let cuda::CudaUnavailable::MissingLibraries { missing, .. } = &e {
                for m in missing {
                    assert!(msg.contains("cannot load") && msg.contains(m.lib), "{msg}");
                    for name in &m.searched {
                        assert!(msg.contains(name.as_str()), "{name} not in {msg}");
                    }
                }
                if missing.iter().any(|m| m.lib == "cuda") {
                    assert!(msg.contains("libcuda.so.1") && msg.contains("NVIDIA driver"));
                }
            }
            assert_eq!(cuda::device_count(), 0);
            // Asked again, the cached answer is the same error, not a retry that could panic.
            assert_eq!(cuda::probe().unwrap_err(), e);
            let as_core: tlrs::error::Error = e.into();
            assert!(matches!(as_core, tlrs::error::Error::CudaUnavailable(_)));
        }
    }
}

#[test]
fn diagnostics_list_the_binding_libraries_and_status() {
    preload_nvrtc().unwrap_or_else(|e| panic!("{e}"));
    let d = cuda::diagnostics();
    for (k, v) in &d {
        eprintln!("{k}: {v}");
    }
    let get = |key: &str| d.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    assert_eq!(get("binding").as_deref(), Some("cuda-13000"));
    for key in [
        "driver library",
        "cublas library",
        "nvrtc library",
        "driver version",
        "status",
    ] {
        assert!(get(key).is_some(), "missing {key}");
    }
    let driver = get("driver library").unwrap_or_default();
    assert!(
        driver == "found" || driver.contains("libcuda.so.1"),
        "{driver}"
    );
}

#[test]
fn public_gemm_mapping_matches_the_row_major_trick() {
    // Row-major A[M,K]·B[K,N] is column-major gemm(N, N, m=N, n=M, k=K, B first (lda=N),
    // A second (ldb=K), ldc=N): the recipe cudarc's own sgemm test and candle use.
    let (m, n, k) = (5, 3, 7);
    let call = blas::RowMajorMatmul::new(m, n, k, false, false)
        .batched(4, m * k, 0, m * n)
        .to_gemm()
        .expect("valid product");
    assert_eq!(
        (call.first, call.second),
        (blas::Operand::B, blas::Operand::A)
    );
    assert_eq!((call.m, call.n, call.k), (n, m, k));
    assert_eq!((call.lda, call.ldb, call.ldc), (n, k, n));
    assert_eq!(
        (call.stride_a, call.stride_b, call.stride_c),
        (0, m * k, m * n)
    );
    let rule = blas::precision_rule(DType::F64, blas::GpuMatmulPrecision::Fp32);
    assert_eq!(rule.routine, blas::GemmRoutine::Sgemm);
}

#[test]
fn every_kernel_compiles_through_nvrtc_for_sm_90() {
    let preloaded = preload_nvrtc().unwrap_or_else(|e| panic!("{e}"));
    if !cuda::probe::library_present("nvrtc") {
        // Without libnvrtc the compile must fail as an error, not a panic.
        let err = kernels::compile_all_for("sm_90").unwrap_err();
        assert!(err.contains("NVRTC is not loadable"), "{err}");
        eprintln!(
            "SKIPPED nvrtc compile: libnvrtc not loadable (TLRS_NVRTC_LIB unset and \
             libnvrtc.so.13 not on the loader path); \
             set TLRS_NVRTC_LIB=<site-packages>/nvidia/cu13/lib/libnvrtc.so.13"
        );
        return;
    }
    eprintln!(
        "nvrtc: {}",
        preloaded.as_deref().unwrap_or("found by the loader")
    );
    let sizes = kernels::compile_all_for("sm_90").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sizes.len(), kernels::FAMILIES.len() * 2);
    for (name, size) in &sizes {
        eprintln!("PTX {name}: {size} bytes");
        assert!(*size > 0, "{name}: empty PTX");
    }
    for family in kernels::FAMILIES {
        for dtype in [DType::F32, DType::F64] {
            let ptx = kernels::compile(family, dtype, "sm_90").unwrap_or_else(|e| panic!("{e}"));
            assert!(ptx.contains(".target sm_90"), "{family}: wrong target");
            for name in kernels::kernel_names(family, dtype) {
                assert!(
                    ptx.contains(&format!(".entry {name}(")),
                    "{name} not in PTX"
                );
            }
        }
    }
    // The image the backend loads is a CUBIN (an ELF file) for the exact architecture.
    for family in kernels::FAMILIES {
        let src = kernels::source(family, DType::F32).unwrap();
        let cubin = kernels::compile_cubin(&src, "sm_90").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&cubin[..4], b"\x7fELF", "{family}: not a CUBIN");
    }
    // compile_image keeps the CUBIN in the on-disk cache, under a name keyed by the source.
    let dir = std::env::temp_dir().join(format!("tlrs-kernel-cache-{}", std::process::id()));
    std::env::set_var("TLRS_CACHE_DIR", &dir);
    let src = kernels::source("reduce", DType::F64).unwrap();
    kernels::compile_image("reduce_f64.cu", &src, "sm_90").unwrap();
    let cached: Vec<_> = std::fs::read_dir(dir.join("kernels"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(cached.len(), 1, "one cached image");
    kernels::compile_image("reduce_f64.cu", &src, "sm_90").unwrap();
    assert_eq!(std::fs::read_dir(dir.join("kernels")).unwrap().count(), 1);
    std::env::remove_var("TLRS_CACHE_DIR");
    let _ = std::fs::remove_dir_all(&dir);
    // A kernel with a type error must come back as an error carrying NVRTC's log.
    let src = "extern \"C\" __global__ void bad(float* y) { y[0] = undeclared_name; }";
    let bad = kernels::compile_source("bad.cu", src, "sm_90").unwrap_err();
    eprintln!("expected compile error: {bad}");
    assert!(
        bad.contains("compilation failed") && bad.contains("undeclared_name"),
        "{bad}"
    );
}

#[test]
fn generated_chain_kernels_compile_through_nvrtc() {
    use tlrs::op_table::{BinaryOp, ChainStep, UnaryOp};
    preload_nvrtc().unwrap_or_else(|e| panic!("{e}"));
    // Ops with scalar parameters (baked in as constants) and ones calling the libm ports, then
    // the four binary steps with the running value on either side.
    let mut steps: Vec<ChainStep> = [
        UnaryOp::Exp {},
        UnaryOp::LeakyRelu {
            negative_slope: 0.2,
        },
        UnaryOp::Hardtanh {
            min_val: -0.5,
            max_val: 2.0,
        },
        UnaryOp::Softplus {
            beta: 2.0,
            threshold: 1.5,
        },
        UnaryOp::Gelu {},
        UnaryOp::Sin {},
    ]
    .into_iter()
    .map(ChainStep::Unary)
    .collect();
    for (k, op) in [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div]
        .into_iter()
        .enumerate()
    {
        for (j, value_left) in [true, false].into_iter().enumerate() {
            let operand = 1 + 2 * k + j;
            steps.push(ChainStep::Binary {
                op,
                operand,
                value_left,
            });
        }
    }
    let n_inputs = 9;
    let mut want = vec![true; n_inputs];
    want[4] = false;
    for dtype in [DType::F32, DType::F64] {
        let families = [
            cuda::ops::forward_family(&steps, n_inputs, 0, dtype).unwrap(),
            cuda::ops::backward_family(&steps, 0, &want, dtype).unwrap(),
        ];
        for family in families {
            if !cuda::probe::library_present("nvrtc") {
                let err = kernels::compile(&family, dtype, "sm_90").unwrap_err();
                assert!(err.contains("NVRTC is not loadable"), "{err}");
                continue;
            }
            let ptx = kernels::compile(&family, dtype, "sm_90").unwrap_or_else(|e| panic!("{e}"));
            let name = kernels::kernel_names(&family, dtype);
            assert_eq!(name.len(), 1, "{family}");
            assert!(ptx.contains(&format!(".entry {}(", name[0])), "{family}");
        }
    }
}
