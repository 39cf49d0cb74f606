//! The CUDA "nn" kernels (softmax, NLL, convolution, pooling) on the host emulator against the
//! CPU reference kernels: the same inputs on both sides, f32 and f64. Kernels that fold in the
//! CPU's order must agree bit for bit (pooling, NLL, bias gradient); those with exp/log or a
//! GEMM within 1e-5 (f32) or 1e-12 (f64) of the result's scale.

use std::sync::{Arc, Mutex, MutexGuard};

use tlrs::backend::cpu::conv as cconv;
use tlrs::backend::cpu::exp_lanes::ExpRow;
use tlrs::backend::cpu::matmul::GemmElem;
use tlrs::backend::cpu::pool as cpool;
use tlrs::backend::cpu::softmax as csoft;
use tlrs::backend::cuda::blas::GpuMatmulPrecision;
use tlrs::backend::cuda::ops::{matmul as dmat, nn};
use tlrs::backend::cuda::{DeviceBuffer, Gpu};
use tlrs::dtype::Float;
use tlrs::geometry::{Activation, ConvDims, PoolDims};
use tlrs::{DType, Tensor};

fn dev() -> Arc<Gpu> {
    std::env::set_var("TLRS_CUDA_EMULATOR", "1");
    let g = tlrs::backend::cuda::gpu(0).expect("emulated cuda:0");
    assert!(g.is_emulated());
    g
}

/// The GEMM precision is process-wide: tests that run GEMMs hold this lock and pick the
/// precision of their dtype, so no operand is converted (f64 stays DGEMM, f32 SGEMM).
fn gemm_precision<T: Float>() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    let guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    dmat::set_matmul_precision(match T::DTYPE {
        DType::F32 => GpuMatmulPrecision::Fp32,
        _ => GpuMatmulPrecision::Fp64,
    });
    guard
}

/// SplitMix64 values uniform in [lo, hi).
fn rand<T: Float>(seed: u64, n: usize, lo: f64, hi: f64) -> Vec<T> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            let u = ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64;
            T::from_f64(lo + (hi - lo) * u)
        })
        .collect()
}

/// Values on a grid of quarters in [-2, 2): many ties, to check the first-maximum rule.
fn coarse<T: Float>(seed: u64, n: usize) -> Vec<T> {
    rand::<f64>(seed, n, -8.0, 8.0)
        .into_iter()
        .map(|v| T::from_f64(v.floor() / 4.0))
        .collect()
}

fn up<T: Float>(gpu: &Arc<Gpu>, v: &[T]) -> DeviceBuffer {
    gpu.upload(T::DTYPE, v).expect("upload")
}

fn down<T: Float + Default>(b: &DeviceBuffer) -> Vec<T> {
    assert_eq!(b.dtype(), T::DTYPE);
    b.gpu().download::<T>(b).expect("download")
}

fn tol<T: Float>() -> f64 {
    match T::DTYPE {
        DType::F32 => 1e-5,
        _ => 1e-12,
    }
}

/// Bitwise equality, NaNs equal to NaNs.
fn assert_exact<T: Float>(what: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let same = (g.is_nan() && w.is_nan()) || g.to_f64().to_bits() == w.to_f64().to_bits();
        assert!(same, "{what}[{i}]: got {g:?}, want {w:?} (bitwise)");
    }
}

/// Within `tol` of the larger of |want| and the largest |want| (GEMM sums can cancel).
fn assert_close<T: Float>(what: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let scale = want
        .iter()
        .map(|v| v.to_f64().abs())
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let mut exact = 0;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let (g, w) = (g.to_f64(), w.to_f64());
        if (g.is_nan() && w.is_nan()) || g == w {
            exact += 1;
            continue;
        }
        let bound = tol::<T>() * w.abs().max(scale).max(f64::MIN_POSITIVE);
        assert!(
            (g - w).abs() <= bound,
            "{what}[{i}]: got {g:e}, want {w:e} (bound {bound:e})"
        );
    }
    eprintln!("{what}: {exact}/{} bitwise equal", want.len());
}

// ---------------------------------------------------------------- softmax

fn softmax_case<T: ExpRow + Default>(outer: usize, len: usize, inner: usize, log: bool, x: &[T]) {
    let gpu = dev();
    let what = format!("{} softmax [{outer},{len},{inner}] log={log}", T::DTYPE);
    let want = csoft::softmax(x, outer, len, inner, log);
    let y = nn::softmax(&up(&gpu, x), outer, len, inner, log).unwrap();
    let got = down::<T>(&y);
    assert_close(&what, &got, &want);
    // The gradient from the CPU's forward output, so both sides see the same y.
    let g = rand::<T>(7 + len as u64, x.len(), -1.0, 1.0);
    let want_g = csoft::softmax_grad(&want, &g, outer, len, inner, log);
    let gx = nn::softmax_grad(&up(&gpu, &want), &up(&gpu, &g), outer, len, inner, log).unwrap();
    assert_close(&format!("{what} grad"), &down::<T>(&gx), &want_g);
}

fn softmax_all<T: ExpRow + Default>() {
    for (seed, &(outer, len, inner)) in [
        (3, 5, 1),
        (2, 4, 3),
        (1, 1, 1),
        (4, 7, 2),
        (1, 9, 5),
        (2, 1, 4),
    ]
    .iter()
    .enumerate()
    {
        let x = rand::<T>(seed as u64, outer * len * inner, -4.0, 4.0);
        for log in [false, true] {
            softmax_case(outer, len, inner, log, &x);
        }
    }
    // -inf entries, a NaN lane, a lane that is all -inf (NaN out), and a large-valued lane.
    let ninf = T::NEG_INFINITY;
    let nan = T::from_f64(f64::NAN);
    let f = T::from_f64;
    let x = vec![
        f(1.0),
        ninf,
        f(0.5),
        f(-2.0), //
        f(0.0),
        nan,
        f(3.0),
        f(1.0), //
        ninf,
        ninf,
        ninf,
        ninf, //
        f(80.0),
        f(79.0),
        f(-80.0),
        f(80.0),
    ];
    for log in [false, true] {
        softmax_case(4, 4, 1, log, &x);
        softmax_case(1, 4, 4, log, &x);
    }
}

#[test]
fn softmax_matches_cpu_f32() {
    softmax_all::<f32>();
}

#[test]
fn softmax_matches_cpu_f64() {
    softmax_all::<f64>();
}

#[test]
fn softmax_of_empty_and_wrong_sizes() {
    let gpu = dev();
    let e = nn::softmax(&up::<f64>(&gpu, &[]), 3, 0, 2, true).unwrap();
    assert_eq!(e.len(), 0);
    let e = nn::softmax_grad(&up::<f32>(&gpu, &[]), &up::<f32>(&gpu, &[]), 0, 4, 2, false).unwrap();
    assert_eq!(e.len(), 0);
    assert!(nn::softmax(&up::<f64>(&gpu, &[1.0; 5]), 2, 3, 1, false).is_err());
    let (a, b) = (up::<f64>(&gpu, &[0.5; 6]), up::<f32>(&gpu, &[0.5; 6]));
    assert!(nn::softmax_grad(&a, &b, 2, 3, 1, false).is_err());
}

// ---------------------------------------------------------------- nll

fn nll_case<T: ExpRow + Default>(rows: usize, classes: usize) {
    let gpu = dev();
    let what = format!("{} nll [{rows},{classes}]", T::DTYPE);
    let logits = rand::<T>(rows as u64 * 31 + classes as u64, rows * classes, -3.0, 3.0);
    let target: Vec<usize> = (0..rows).map(|r| (r * 7 + 3) % classes).collect();
    let t_i64: Vec<i64> = target.iter().map(|&t| t as i64).collect();
    let wide: Vec<f64> = logits.iter().map(|v| v.to_f64()).collect();
    let x = match T::DTYPE {
        DType::F32 => Tensor::from_vec_f32(
            logits.iter().map(|v| v.to_f64() as f32).collect(),
            vec![rows, classes],
        ),
        _ => Tensor::from_vec_f64(wide, vec![rows, classes]),
    }
    .unwrap()
    .detach_with_grad(true);
    let loss = tlrs::ops::cross_entropy(&x, tlrs::ops::Target::Indices(&t_i64)).unwrap();

    // The CPU's log-probabilities (cross_entropy's log_softmax) uploaded: the NLL itself must
    // then agree bit for bit.
    let logp = csoft::softmax(&logits, rows, classes, 1, true);
    let lp = up(&gpu, &logp);
    let y = nn::nll(&lp, rows, classes, &target).unwrap();
    assert_exact(&what, &down::<T>(&y), &[T::from_f64(loss.item().unwrap())]);

    // nll_grad against ops/loss.rs nll_grad_typed's loop, for a few upstream values.
    for gv in [1.0, -0.37, 2.5e-3] {
        let g = up(&gpu, &[T::from_f64(gv)]);
        let got = down::<T>(&nn::nll_grad(rows, classes, &target, &g).unwrap());
        let mut want = vec![T::ZERO; rows * classes];
        let w = -(T::from_f64(gv) / T::from_f64(rows as f64));
        for (n, &t) in target.iter().enumerate() {
            want[n * classes + t] = want[n * classes + t] + w;
        }
        assert_exact(&format!("{what} grad g={gv}"), &got, &want);
    }

    // The whole cross-entropy backward on the device against CPU autograd.
    let gx_cpu = tlrs::autograd::grad(&loss, &[x])
        .unwrap()
        .remove(0)
        .to_f64_vec()
        .unwrap();
    let one = up(&gpu, &[T::ONE]);
    let gl = nn::nll_grad(rows, classes, &target, &one).unwrap();
    let gx = nn::softmax_grad(&lp, &gl, rows, classes, 1, true).unwrap();
    let want: Vec<T> = gx_cpu.into_iter().map(T::from_f64).collect();
    assert_close(
        &format!("{what} cross-entropy grad"),
        &down::<T>(&gx),
        &want,
    );
}

#[test]
fn nll_matches_cpu() {
    for (rows, classes) in [(1, 1), (5, 3), (8, 10), (33, 4)] {
        nll_case::<f32>(rows, classes);
        nll_case::<f64>(rows, classes);
    }
}

#[test]
fn nll_rejects_bad_targets() {
    let gpu = dev();
    let lp = up::<f64>(&gpu, &[-1.0; 6]);
    assert!(nn::nll(&lp, 2, 3, &[0, 3]).is_err());
    assert!(nn::nll(&lp, 2, 3, &[0]).is_err());
    assert!(nn::nll(&lp, 3, 3, &[0, 1, 2]).is_err());
    let g = up::<f64>(&gpu, &[1.0, 2.0]);
    assert!(nn::nll_grad(2, 3, &[0, 1], &g).is_err());
    let g = up::<f64>(&gpu, &[1.0]);
    assert!(nn::nll_grad(2, 3, &[0, 5], &g).is_err());
}

// ---------------------------------------------------------------- conv2d

/// (n, c, h, w, oc, kh, kw, stride, pad)
const CONV_CASES: [[usize; 9]; 6] = [
    [2, 3, 7, 6, 4, 3, 2, 2, 1],   // non-square kernel, stride 2, padding 1
    [1, 2, 5, 5, 3, 3, 3, 1, 0],   // plain
    [3, 1, 6, 9, 2, 1, 4, 3, 2],   // padding wider than the kernel height, stride 3
    [2, 2, 10, 10, 3, 3, 3, 1, 1], // OH·OW >= 64: the CPU's per-image gradient path
    [1, 3, 4, 4, 2, 4, 4, 1, 0],   // kernel = image: one output
    [2, 2, 9, 7, 3, 2, 3, 2, 2],   // stride 2 with padding 2
];

fn conv_dims(case: [usize; 9]) -> ConvDims {
    let [n, c, h, w, oc, kh, kw, stride, pad] = case;
    ConvDims {
        n,
        c,
        h,
        w,
        oc,
        kh,
        kw,
        stride,
        pad,
        oh: (h + 2 * pad - kh) / stride + 1,
        ow: (w + 2 * pad - kw) / stride + 1,
    }
}

fn conv_all<T: GemmElem + Default>() {
    let _precision = gemm_precision::<T>();
    let gpu = dev();
    for (i, case) in CONV_CASES.into_iter().enumerate() {
        let d = conv_dims(case);
        let what = format!("{} conv {case:?}", T::DTYPE);
        let x = rand::<T>(100 + i as u64, d.n * d.c * d.h * d.w, -1.0, 1.0);
        let w = rand::<T>(200 + i as u64, d.oc * d.c * d.kh * d.kw, -1.0, 1.0);
        let b = rand::<T>(300 + i as u64, d.oc, -1.0, 1.0);
        let g = rand::<T>(400 + i as u64, d.n * d.oc * d.oh * d.ow, -1.0, 1.0);
        let (xd, wd, bd, gd) = (up(&gpu, &x), up(&gpu, &w), up(&gpu, &b), up(&gpu, &g));

        let want = cconv::conv2d(&x, &w, Some(&b), d, Activation::None, false);
        assert_close(
            &format!("{what} y"),
            &down::<T>(&nn::conv2d(&xd, &wd, Some(&bd), d).unwrap()),
            &want,
        );
        let want = cconv::conv2d(&x, &w, None, d, Activation::None, false);
        assert_close(
            &format!("{what} y (no bias)"),
            &down::<T>(&nn::conv2d(&xd, &wd, None, d).unwrap()),
            &want,
        );

        let (gx, gw) =
            tlrs::backend::cpu::conv_grad::conv2d_grads(&g, &x, &w, d, false, [true, true])
                .unwrap();
        let gx = gx.expect("the input gradient was asked for");
        let gw = gw.expect("the weight gradient was asked for");
        let gb = cconv::conv2d_grad_bias(&g, d);
        let [dgx, dgw, dgb] = nn::conv2d_grads(&xd, &wd, &gd, d).unwrap();
        assert_close(&format!("{what} gx"), &down::<T>(&dgx), &gx);
        assert_close(&format!("{what} gw"), &down::<T>(&dgw), &gw);
        assert_exact(&format!("{what} gb"), &down::<T>(&dgb), &gb);
    }
}

#[test]
fn conv2d_matches_cpu_f32() {
    conv_all::<f32>();
}

#[test]
fn conv2d_matches_cpu_f64() {
    conv_all::<f64>();
}

#[test]
fn conv2d_checks_buffer_sizes() {
    let _precision = gemm_precision::<f64>();
    let gpu = dev();
    let d = conv_dims([1, 2, 5, 5, 3, 3, 3, 1, 0]);
    let x = up::<f64>(&gpu, &vec![0.5; 50]);
    let w = up::<f64>(&gpu, &vec![0.5; 54]);
    let short = up::<f64>(&gpu, &vec![0.5; 49]);
    assert!(nn::conv2d(&short, &w, None, d).is_err());
    assert!(nn::conv2d(&x, &short, None, d).is_err());
    assert!(nn::conv2d(&x, &w, Some(&short), d).is_err());
    assert!(nn::conv2d_grads(&x, &w, &short, d).is_err());
    let w32 = up::<f32>(&gpu, &vec![0.5; 54]);
    assert!(nn::conv2d(&x, &w32, None, d).is_err());
    assert!(nn::conv2d(&x, &w, None, ConvDims { stride: 0, ..d }).is_err());
}

// ---------------------------------------------------------------- pooling

/// (planes, h, w, kh, kw, stride, pad)
const POOL_CASES: [[usize; 7]; 6] = [
    [6, 7, 6, 3, 3, 2, 1], // stride 2, padding 1
    [2, 5, 8, 2, 3, 1, 1], // non-square, overlapping windows
    [3, 4, 4, 2, 2, 2, 0], // disjoint windows
    [1, 9, 9, 3, 3, 3, 1], // padding on the far edge too
    [4, 3, 5, 3, 1, 1, 1], // 3x1 windows
    [2, 6, 6, 4, 4, 1, 2], // padding = half the kernel
];

fn pool_dims(case: [usize; 7]) -> PoolDims {
    let [planes, h, w, kh, kw, stride, pad] = case;
    PoolDims {
        kw,
        ..PoolDims::square(
            planes,
            h,
            w,
            kh,
            stride,
            pad,
            (h + 2 * pad - kh) / stride + 1,
            (w + 2 * pad - kw) / stride + 1,
        )
    }
}

fn pool_all<T: Float + Default>() {
    let gpu = dev();
    for (i, case) in POOL_CASES.into_iter().enumerate() {
        let d = pool_dims(case);
        let what = format!("{} pool {case:?}", T::DTYPE);
        let nx = d.planes * d.h * d.w;
        let ny = d.planes * d.oh * d.ow;
        let g = rand::<T>(600 + i as u64, ny, -1.0, 1.0);
        let gd = up(&gpu, &g);
        let mut inputs = vec![
            rand::<T>(500 + i as u64, nx, -2.0, 2.0),
            coarse::<T>(700 + i as u64, nx),
        ];
        // NaNs: a NaN wins its window and keeps it.
        let mut with_nan = coarse::<T>(800 + i as u64, nx);
        for k in (0..nx).step_by(7) {
            with_nan[k] = T::from_f64(f64::NAN);
        }
        inputs.push(with_nan);
        for (j, x) in inputs.iter().enumerate() {
            let xd = up(&gpu, x);
            let (want, want_arg) = cpool::max_pool(x, d);
            let (y, arg) = nn::max_pool2d(&xd, d).unwrap();
            assert_exact(&format!("{what} max #{j}"), &down::<T>(&y), &want);
            assert_eq!(arg, want_arg, "{what} argmax #{j}");
            let gx = nn::max_pool2d_grad(&gd, &arg, d).unwrap();
            assert_exact(
                &format!("{what} max grad #{j}"),
                &down::<T>(&gx),
                &cpool::max_pool_grad(&g, &want_arg, d),
            );

            let y = nn::avg_pool2d(&xd, d).unwrap();
            assert_exact(
                &format!("{what} avg #{j}"),
                &down::<T>(&y),
                &cpool::avg_pool(x, d),
            );
        }
        let gx = nn::avg_pool2d_grad(&gd, d).unwrap();
        assert_exact(
            &format!("{what} avg grad"),
            &down::<T>(&gx),
            &cpool::avg_pool_grad(&g, d),
        );
    }
}

#[test]
fn pooling_matches_cpu_f32() {
    pool_all::<f32>();
}

#[test]
fn pooling_matches_cpu_f64() {
    pool_all::<f64>();
}

#[test]
fn max_pool_of_an_empty_window_and_bad_argmax() {
    let gpu = dev();
    // Windows past the image (possible only through a hand-made PoolDims): -inf and no winner,
    // as on the CPU, and no gradient flows.
    let d = PoolDims::square(1, 2, 2, 1, 3, 0, 2, 1);
    let x = [1.0f64, 2.0, 3.0, 4.0];
    let (want, want_arg) = cpool::max_pool(&x, d);
    let (y, arg) = nn::max_pool2d(&up(&gpu, &x), d).unwrap();
    assert_exact("empty window", &down::<f64>(&y), &want);
    assert_eq!(arg, want_arg);
    assert_eq!(arg[1], usize::MAX);
    let g = up(&gpu, &[0.5f64, 0.25]);
    assert_exact(
        "empty window grad",
        &down::<f64>(&nn::max_pool2d_grad(&g, &arg, d).unwrap()),
        &cpool::max_pool_grad(&[0.5, 0.25], &arg, d),
    );

    let d = pool_dims([1, 4, 4, 2, 2, 2, 0]);
    let g = up(&gpu, &[1.0f64; 4]);
    // Output 0's window is cells {0, 1, 4, 5}; 2 lies outside it.
    assert!(nn::max_pool2d_grad(&g, &[2, 2, 8, 10], d).is_err());
    assert!(nn::max_pool2d_grad(&g, &[0, 2], d).is_err());
    assert!(nn::max_pool2d(&up(&gpu, &[1.0f64; 15]), d).is_err());
    assert!(nn::avg_pool2d_grad(&up(&gpu, &[1.0f64; 3]), d).is_err());
    assert!(nn::avg_pool2d(&up(&gpu, &[1.0f64; 16]), PoolDims { sh: 0, sw: 0, ..d }).is_err());
}

// ---------------------------------------------------------------- compilation

const NN_KERNELS: [&str; 21] = [
    "softmax_stats",
    "softmax_apply",
    "softmax_grad_stats",
    "softmax_grad_apply",
    "nll",
    "nll_grad",
    "im2col",
    "conv_out",
    "conv_gout_cnp",
    "col2im",
    "max_pool",
    "max_pool_grad",
    "avg_pool",
    "avg_pool_grad",
    "gemm_exact",
    "gemm_exact_tiled",
    "gemm_exact_block",
    // Not kernels: the device helpers must stay non-exported.
    "nn_taps",
    "nn_covering",
    "nn_on_tap",
    "nn_avg_divisor",
];

#[test]
fn every_nn_kernel_compiles_in_the_emulator() {
    use tlrs::backend::cuda::{emu, kernels};
    for dtype in [DType::F32, DType::F64] {
        let sfx = match dtype {
            DType::F32 => "f32",
            _ => "f64",
        };
        let mut names = kernels::kernel_names("nn", dtype);
        names.sort();
        let mut want: Vec<String> = NN_KERNELS[..17]
            .iter()
            .map(|k| format!("{k}_{sfx}"))
            .collect();
        want.sort();
        assert_eq!(names, want);
        // Each dtype's kernels name only their own type: no silent promotion or narrowing (the
        // libm device functions before them follow the libm crate, whose binary32 sin and cos
        // compute in binary64).
        let dev_src = kernels::family_source("nn", dtype).expect("the nn family");
        assert!(!dev_src.contains(if dtype == DType::F32 {
            "double"
        } else {
            "float"
        }));
        let src = emu::host_source("nn", dtype).expect("the nn family");
        for k in &NN_KERNELS[17..] {
            assert!(src.contains(k) && !names.iter().any(|n| n.starts_with(k)));
        }
        // Compile the emulator's translation unit the way it does, warnings as errors.
        let dir = std::env::temp_dir().join(format!("tlrs-emu-nn-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cpp = dir.join(format!("nn_{sfx}.cpp"));
        std::fs::write(&cpp, &src).unwrap();
        let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_string());
        let out = std::process::Command::new(cxx)
            .args([
                "-std=c++14",
                "-O2",
                "-ffp-contract=off",
                "-shared",
                "-fPIC",
                "-Wall",
                "-Werror",
                "-o",
            ])
            .arg(dir.join(format!("libnn_{sfx}.so")))
            .arg(&cpp)
            .output()
            .expect("a C++ compiler");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The nn family through real NVRTC for sm_90 where libnvrtc is loadable (TLRS_NVRTC_LIB names
/// it by full path, as in cuda_cpu.rs); skipped, with a note, where it is not.
#[test]
fn nn_family_compiles_through_nvrtc_when_available() {
    use tlrs::backend::cuda::{kernels, probe};
    if let Ok(path) = std::env::var("TLRS_NVRTC_LIB") {
        // SAFETY: libnvrtc's initialisers are benign; kept loaded so cudarc finds it by soname.
        let lib =
            unsafe { libloading::Library::new(&path) }.unwrap_or_else(|e| panic!("{path}: {e}"));
        std::mem::forget(lib);
    }
    if !probe::library_present("nvrtc") {
        eprintln!("SKIPPED: libnvrtc not loadable (set TLRS_NVRTC_LIB)");
        return;
    }
    for dtype in [DType::F32, DType::F64] {
        let ptx = kernels::compile("nn", dtype, "sm_90").unwrap_or_else(|e| panic!("{e}"));
        for name in kernels::kernel_names("nn", dtype) {
            assert!(
                ptx.contains(&format!(".entry {name}(")),
                "{name} not in PTX"
            );
        }
        // No double arithmetic sneaks into the f32 kernels (a stray literal would promote).
        if dtype == DType::F32 {
            assert!(
                !ptx.contains(".f64"),
                "f64 instructions in the f32 nn kernels"
            );
        }
    }
}
