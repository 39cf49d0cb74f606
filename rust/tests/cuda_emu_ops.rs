//! The CUDA backend against the CPU, op by op, forward and backward, in f32 and f64, run on the
//! CUDA emulator (TLRS_CUDA_EMULATOR=1: the same kernels, argument lists and cuBLAS call mapping,
//! executed on the host). Inputs are uploaded, the op runs on `cuda:0`, and outputs and input
//! gradients come back to be compared with the CPU reference.

// Cases build their input lists inline; a clone per case keeps them readable.
#![allow(clippy::cloned_ref_to_slice_refs)]

mod common;

use common::{rand_vec, rand_vec_away_from_zero};
use tlrs::autograd::grad;
use tlrs::ops;
use tlrs::{DType, Device, Result, Tensor};

/// The GPU matmul precision is process-wide: tests that run GEMMs hold this while they do.
static GEMM_PRECISION: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn cuda() -> Device {
    std::env::set_var("TLRS_CUDA_EMULATOR", "1");
    Device::Cuda(0)
}

fn leaf(values: &[f64], shape: &[usize], dtype: DType, device: Device) -> Tensor {
    let t = Tensor::from_vec_f64(values.to_vec(), shape.to_vec())
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
        .to_device(device)
        .unwrap();
    t.detach_with_grad(true)
}

/// Runs `f` on the CPU and on CUDA with the same inputs; compares outputs and the gradients of
/// Σ out·w (w fixed pseudo-random weights) with respect to every input.
fn check(name: &str, inputs: &[(Vec<f64>, Vec<usize>)], f: impl Fn(&[Tensor]) -> Result<Tensor>) {
    check_tol(name, inputs, 1e-12, f)
}

/// `check` with the f64 tolerance given (f32 always gets 2e-5).
fn check_tol(
    name: &str,
    inputs: &[(Vec<f64>, Vec<usize>)],
    tol64: f64,
    f: impl Fn(&[Tensor]) -> Result<Tensor>,
) {
    for dtype in [DType::F32, DType::F64] {
        let tol = if dtype == DType::F32 { 2e-5 } else { tol64 };
        let mut results = Vec::new();
        for device in [Device::Cpu, cuda()] {
            let xs: Vec<Tensor> = inputs
                .iter()
                .map(|(v, s)| leaf(v, s, dtype, device))
                .collect();
            let y = f(&xs).unwrap_or_else(|e| panic!("{name} on {device}: {e}"));
            assert_eq!(y.device(), device, "{name}: output device");
            let w = Tensor::from_vec_f64(rand_vec(99, y.numel(), -1.0, 1.0), y.dims().to_vec())
                .unwrap()
                .to_dtype(dtype)
                .unwrap()
                .to_device(device)
                .unwrap();
            let loss = ops::sum(&ops::mul(&y, &w).unwrap(), None, false).unwrap();
            let gs =
                grad(&loss, &xs).unwrap_or_else(|e| panic!("{name} backward on {device}: {e}"));
            let mut vals = vec![y.to_f64_vec().unwrap()];
            vals.extend(gs.iter().map(|g| g.to_f64_vec().unwrap()));
            results.push((y.dims().to_vec(), vals));
        }
        let (cpu, dev) = (&results[0], &results[1]);
        assert_eq!(cpu.0, dev.0, "{name} {dtype}: shape");
        for (k, (a, b)) in cpu.1.iter().zip(&dev.1).enumerate() {
            assert_eq!(a.len(), b.len(), "{name} {dtype} #{k}: length");
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                let ok = (x.is_nan() && y.is_nan()) || (x - y).abs() <= tol * (1.0 + x.abs());
                assert!(
                    ok,
                    "{name} {dtype} {}[{i}]: cpu {x} cuda {y}",
                    if k == 0 { "out" } else { "grad" }
                );
            }
        }
    }
}

fn input(seed: u64, shape: &[usize]) -> (Vec<f64>, Vec<usize>) {
    (
        rand_vec(seed, shape.iter().product(), -2.0, 2.0),
        shape.to_vec(),
    )
}

fn positive(seed: u64, shape: &[usize]) -> (Vec<f64>, Vec<usize>) {
    (
        rand_vec(seed, shape.iter().product(), 0.2, 3.0),
        shape.to_vec(),
    )
}

#[test]
fn unary_ops_match_the_cpu() {
    let x = input(1, &[3, 17]);
    let away = (rand_vec_away_from_zero(2, 51, 0.1, 2.0), vec![3, 17]);
    for op in [
        ops::UnaryOp::Neg,
        ops::UnaryOp::Exp,
        ops::UnaryOp::Tanh,
        ops::UnaryOp::Sigmoid,
        ops::UnaryOp::Gelu,
        ops::UnaryOp::GeluTanh,
        ops::UnaryOp::Softplus {
            beta: 1.0,
            threshold: 20.0,
        },
        ops::UnaryOp::Softplus {
            beta: 2.5,
            threshold: 1.5,
        },
        ops::UnaryOp::Trunc,
        ops::UnaryOp::Floor,
    ] {
        check(op.name(), std::slice::from_ref(&x), |t| {
            ops::unary(op, &t[0])
        });
    }
    for op in [ops::UnaryOp::Abs, ops::UnaryOp::Relu] {
        check(op.name(), &[away.clone()], |t| ops::unary(op, &t[0]));
    }
    for op in [ops::UnaryOp::Log, ops::UnaryOp::Sqrt] {
        check(op.name(), &[positive(3, &[5, 7])], |t| {
            ops::unary(op, &t[0])
        });
    }
    check("pow", &[positive(4, &[4, 6])], |t| ops::pow(&t[0], 2.5));
    check("clamp", &[x.clone()], |t| {
        ops::clamp(&t[0], Some(-0.5), Some(1.0))
    });
    check("clamp_lo", &[x], |t| ops::clamp(&t[0], Some(-0.5), None));
}

#[test]
fn broadcast_binary_ops_match_the_cpu() {
    let shapes: [(&[usize], &[usize]); 5] = [
        (&[4, 5], &[4, 5]),
        (&[4, 5], &[5]),
        (&[2, 1, 5], &[3, 1]),
        (&[3, 4], &[]),
        (&[2, 3, 4, 5], &[1, 3, 1, 5]),
    ];
    for (i, (a, b)) in shapes.iter().enumerate() {
        let (xa, xb) = (
            input(10 + i as u64, a),
            (
                rand_vec_away_from_zero(20 + i as u64, b.iter().product(), 0.3, 2.0),
                b.to_vec(),
            ),
        );
        for op in [
            ops::BinaryOp::Add,
            ops::BinaryOp::Sub,
            ops::BinaryOp::Mul,
            ops::BinaryOp::Div,
            ops::BinaryOp::Maximum,
            ops::BinaryOp::Minimum,
            ops::BinaryOp::FloorDivide,
        ] {
            check(op.name(), &[xa.clone(), xb.clone()], |t| {
                ops::binary(op, &t[0], &t[1])
            });
        }
    }
}

#[test]
fn a_cpu_scalar_joins_a_device_tensor_and_other_mixes_are_errors() {
    let d = cuda();
    let x = leaf(&[1.0, 2.0, 3.0], &[3], DType::F32, d);
    let y = ops::mul(&x, &Tensor::scalar(2.0, DType::F32)).unwrap();
    assert_eq!(y.device(), d);
    assert_eq!(y.to_f64_vec().unwrap(), vec![2.0, 4.0, 6.0]);
    let cpu = Tensor::from_vec_f64(vec![1.0, 2.0, 3.0], vec![3])
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap();
    let err = ops::add(&x, &cpu).unwrap_err().to_string();
    assert!(err.contains("cuda:0") && err.contains("cpu"), "{err}");
}

#[test]
fn reductions_match_the_cpu() {
    let x = input(30, &[3, 4, 5]);
    for axis in [None, Some(0), Some(1), Some(2)] {
        check("sum", &[x.clone()], |t| ops::sum(&t[0], axis, false));
        check("mean", &[x.clone()], |t| ops::mean(&t[0], axis, true));
        check("max", &[x.clone()], |t| ops::max(&t[0], axis, false));
    }
    check("sum_to_shape", &[x.clone()], |t| {
        ops::sum_to_shape(&t[0], &tlrs::Shape(vec![4, 1]))
    });
    check("broadcast_to", &[input(31, &[4, 1])], |t| {
        ops::broadcast_to(&t[0], &tlrs::Shape(vec![2, 4, 3]))
    });
}

#[test]
fn layout_ops_match_the_cpu() {
    let x = input(40, &[2, 3, 4]);
    check("permute", &[x.clone()], |t| ops::permute(&t[0], &[2, 0, 1]));
    check("transpose", &[x.clone()], |t| ops::transpose(&t[0], 0, 2));
    check("reshape", &[x.clone()], |t| ops::reshape(&t[0], &[4, -1]));
    check("slice", &[x.clone()], |t| ops::slice(&t[0], 1, 1, 3));
    check("concat", &[x.clone(), input(41, &[2, 2, 4])], |t| {
        ops::concat(&[t[0].clone(), t[1].clone()], 1)
    });
    check("index_select", &[x.clone()], |t| {
        ops::index_select(&t[0], 1, &[2, 0, 2, 1])
    });
    check("gather", &[x.clone()], |t| {
        ops::gather(&t[0], 2, &[0, 3, 3, 1, 2, 2], &[1, 2, 3])
    });
    check("scatter_add", &[x.clone(), input(42, &[2, 1, 4])], |t| {
        ops::scatter_add(&t[0], 1, &[0, 2, 2, 1, 0, 0, 1, 2], &t[1])
    });
    check("embedding", &[input(43, &[5, 3])], |t| {
        ops::embedding(&[4, 0, 4, 2], &[2, 2], &t[0])
    });
    let mask = [true, false, false, true];
    check("masked_fill", &[x], |t| {
        ops::masked_fill(&t[0], &mask, &[1, 1, 4], -1.5)
    });
}

/// The only test in this binary that runs GEMMs, so it alone sets the global GPU matmul
/// precision: fp32 (SGEMM, f64 operands rounded to f32) and fp64 (DGEMM, exact to f64 rounding).
#[test]
fn matmul_matches_the_cpu_at_both_gpu_precisions() {
    use tlrs::backend::cuda::blas::GpuMatmulPrecision;
    use tlrs::backend::cuda::ops::set_matmul_precision;
    let _held = GEMM_PRECISION.lock().unwrap_or_else(|e| e.into_inner());
    for (precision, tol64) in [
        (GpuMatmulPrecision::Fp32, 2e-5),
        (GpuMatmulPrecision::Fp64, 1e-12),
    ] {
        set_matmul_precision(precision);
        check_tol(
            "matmul 2d",
            &[input(50, &[5, 7]), input(51, &[7, 3])],
            tol64,
            |t| ops::matmul(&t[0], &t[1]),
        );
        check_tol(
            "matmul batched",
            &[input(52, &[2, 4, 6]), input(53, &[2, 6, 3])],
            tol64,
            |t| ops::matmul(&t[0], &t[1]),
        );
        check_tol(
            "matmul shared b",
            &[input(54, &[3, 4, 6]), input(55, &[6, 2])],
            tol64,
            |t| ops::matmul(&t[0], &t[1]),
        );
        check_tol(
            "matmul vector",
            &[input(56, &[6]), input(57, &[6, 2])],
            tol64,
            |t| ops::matmul(&t[0], &t[1]),
        );
        check_tol(
            "linear",
            &[input(58, &[4, 6]), input(59, &[3, 6]), input(60, &[3])],
            tol64,
            |t| ops::linear(&t[0], &t[1], Some(&t[2])),
        );
    }
    // With fast kernels at fp32 an f64 product really is computed in f32: it differs from the
    // f64 CPU result. With reference kernels the flag does not apply: the f64 product is the CPU's.
    set_matmul_precision(GpuMatmulPrecision::Fp32);
    let (a, b) = (input(61, &[8, 9]), input(62, &[9, 4]));
    let run = |d: Device| {
        ops::matmul(
            &leaf(&a.0, &a.1, DType::F64, d),
            &leaf(&b.0, &b.1, DType::F64, d),
        )
        .unwrap()
        .to_f64_vec()
        .unwrap()
    };
    let fast = tlrs::backend::cpu::parallel::with_fast_kernels(true, || run(cuda()));
    assert_ne!(run(Device::Cpu), fast);
    assert_eq!(run(Device::Cpu), run(cuda()));
    set_matmul_precision(GpuMatmulPrecision::Fp64);
}

#[test]
fn casts_and_transfers_round_trip() {
    let d = cuda();
    let v = rand_vec(70, 10, -3.0, 3.0);
    let x = leaf(&v, &[2, 5], DType::F64, d);
    let y = x.to_dtype(DType::F32).unwrap();
    assert_eq!((y.device(), y.dtype()), (d, DType::F32));
    let cpu32 = Tensor::from_vec_f64(v.clone(), vec![2, 5])
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap();
    assert_eq!(y.to_f64_vec().unwrap(), cpu32.to_f64_vec().unwrap());
    let back = y.to_device(Device::Cpu).unwrap();
    assert_eq!(back.device(), Device::Cpu);
    // Gradients flow back through a device copy and a cast.
    let g = grad(&ops::sum(&y, None, false).unwrap(), &[x.clone()]).unwrap();
    assert_eq!((g[0].device(), g[0].dtype()), (d, DType::F64));
    assert_eq!(g[0].to_f64_vec().unwrap(), vec![1.0; 10]);
    let h = leaf(&v, &[10], DType::F32, Device::Cpu);
    let gh = grad(
        &ops::sum(&h.to_device(d).unwrap(), None, false).unwrap(),
        &[h.clone()],
    )
    .unwrap();
    assert_eq!(gh[0].device(), Device::Cpu);
}

#[test]
fn init_and_dropout_on_the_device_equal_the_cpu_values() {
    let d = cuda();
    let init = tlrs::init::FloatInit::XavierUniform {
        fan_in: 7,
        fan_out: 5,
        seed: 1234,
    };
    for dtype in [DType::F32, DType::F64] {
        let a = init.tensor_on(&[5, 7], dtype, Device::Cpu).unwrap();
        let b = init.tensor_on(&[5, 7], dtype, d).unwrap();
        assert_eq!(b.device(), d);
        assert_eq!(a.to_f64_vec().unwrap(), b.to_f64_vec().unwrap(), "{dtype}");
        let x = Tensor::from_vec_f64(rand_vec(80, 64, -1.0, 1.0), vec![64])
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        let cpu = tlrs::random::dropout(&x, 0.3, Some(77)).unwrap();
        let dev = tlrs::random::dropout(&x.to_device(d).unwrap(), 0.3, Some(77)).unwrap();
        assert_eq!(
            cpu.to_f64_vec().unwrap(),
            dev.to_f64_vec().unwrap(),
            "dropout {dtype}"
        );
    }
}

#[test]
fn device_results_repeat_bit_for_bit() {
    let d = cuda();
    let x = leaf(&rand_vec(90, 4000, -1.0, 1.0), &[40, 100], DType::F32, d);
    let run = || {
        ops::sum(&ops::tanh(&x).unwrap(), Some(1), false)
            .unwrap()
            .to_f64_vec()
            .unwrap()
    };
    assert_eq!(run(), run());
}

#[test]
fn softmax_losses_and_norms_match_the_cpu() {
    let x = input(100, &[4, 6]);
    check("softmax", &[x.clone()], |t| ops::softmax(&t[0], -1));
    check("log_softmax axis 0", &[x.clone()], |t| {
        ops::log_softmax(&t[0], 0)
    });
    check("cross_entropy", &[x.clone()], |t| {
        ops::cross_entropy(&t[0], ops::Target::Indices(&[1, 5, 0, 1]))
    });
    check(
        "cross_entropy probs",
        &[x.clone(), positive(101, &[4, 6])],
        |t| ops::cross_entropy(&t[0], ops::Target::Probs(&t[1])),
    );
    check("mse", &[x.clone(), input(102, &[4, 6])], |t| {
        ops::mse_loss(&t[0], &t[1])
    });
    check(
        "layer_norm",
        &[x, input(103, &[6]), input(104, &[6])],
        |t| ops::layer_norm(&t[0], &[6], Some(&t[1]), Some(&t[2]), 1e-5),
    );
    check(
        "batch_norm",
        &[
            input(105, &[3, 2, 4, 4]),
            input(106, &[2]),
            input(107, &[2]),
        ],
        |t| Ok(ops::batch_norm_batch_stats(&t[0], Some(&t[1]), Some(&t[2]), 1e-5)?.0),
    );
}

#[test]
fn convolution_pooling_and_attention_match_the_cpu() {
    use tlrs::backend::cuda::blas::GpuMatmulPrecision;
    use tlrs::backend::cuda::ops::set_matmul_precision;
    // DGEMM so f64 agrees to rounding.
    let _held = GEMM_PRECISION.lock().unwrap_or_else(|e| e.into_inner());
    set_matmul_precision(GpuMatmulPrecision::Fp64);
    let x = input(110, &[2, 3, 7, 6]);
    check(
        "conv2d",
        &[x.clone(), input(111, &[4, 3, 3, 2]), input(112, &[4])],
        |t| ops::conv2d(&t[0], &t[1], Some(&t[2]), 2, 1),
    );
    // The compiled backend's fused ReLU: the device runs the relu kernel after the conv.
    check(
        "conv2d_relu",
        &[x.clone(), input(111, &[4, 3, 3, 2]), input(112, &[4])],
        |t| {
            let act = tlrs::geometry::Activation::Relu;
            ops::conv::conv2d_act(&t[0], &t[1], Some(&t[2]), 2, 1, act)
        },
    );
    check("max_pool2d", &[x.clone()], |t| {
        ops::max_pool2d(&t[0], 2, None, 0)
    });
    check("avg_pool2d", &[x.clone()], |t| {
        ops::avg_pool2d(&t[0], 3, Some(2), 1)
    });
    check("global_avg_pool2d", &[x], |t| ops::global_avg_pool2d(&t[0]));
    let ws: Vec<_> = (0..4).map(|i| input(120 + i, &[8, 8])).collect();
    let mut inputs = vec![input(119, &[2, 5, 8])];
    inputs.extend(ws);
    let mask: Vec<bool> = (0..25).map(|i| i % 5 > i / 5).collect();
    check("attention", &inputs, |t| {
        ops::multi_head_attention(&t[0], &t[1], &t[2], &t[3], &t[4], 2, Some(&mask))
    });
}

#[test]
fn cpu_scalars_go_to_kernels_by_value_on_either_side() {
    let d = cuda();
    let v = rand_vec_away_from_zero(130, 12, 0.2, 2.0);
    for dtype in [DType::F32, DType::F64] {
        let s = Tensor::scalar(0.75, dtype);
        for op in [
            ops::BinaryOp::Add,
            ops::BinaryOp::Sub,
            ops::BinaryOp::Mul,
            ops::BinaryOp::Div,
            ops::BinaryOp::Maximum,
            ops::BinaryOp::Minimum,
        ] {
            for left in [false, true] {
                let run = |device: Device| {
                    let x = leaf(&v, &[3, 4], dtype, device);
                    let y = if left {
                        ops::binary(op, &s, &x)
                    } else {
                        ops::binary(op, &x, &s)
                    }
                    .unwrap();
                    assert_eq!(y.device(), device);
                    let g = grad(&ops::sum(&y, None, false).unwrap(), &[x]).unwrap();
                    (y.to_f64_vec().unwrap(), g[0].to_f64_vec().unwrap())
                };
                assert_eq!(
                    run(Device::Cpu),
                    run(d),
                    "{} left={left} {dtype}",
                    op.name()
                );
            }
        }
    }
}

#[test]
fn long_sums_fold_in_fixed_chunks() {
    // Beyond SUM_CHUNK elements per output the device folds chunks, then the chunk sums: within
    // the rounding of either order of the CPU's single fold, and the same bits on every run.
    let n = 3 * tlrs::backend::cuda::ops::SUM_CHUNK + 17;
    let d = cuda();
    let v = rand_vec(140, 6 * n, -1.0, 1.0);
    for dtype in [DType::F32, DType::F64] {
        let eps = if dtype == DType::F32 { 6e-8 } else { 1.2e-16 };
        for (shape, axis) in [
            (vec![6 * n], None),
            (vec![2, n, 3], Some(1)),
            (vec![n, 6], Some(0)),
        ] {
            let sum = |device: Device| {
                let x = leaf(&v, &shape, dtype, device);
                ops::sum(&x, axis, false).unwrap().to_f64_vec().unwrap()
            };
            let (cpu, dev) = (sum(Device::Cpu), sum(d));
            let bound = 2.0 * eps * (6 * n) as f64 * v.iter().map(|x| x.abs()).sum::<f64>();
            for (a, b) in cpu.iter().zip(&dev) {
                assert!(
                    (a - b).abs() <= bound,
                    "{dtype} {shape:?}: cpu {a} cuda {b}"
                );
            }
            assert_eq!(dev, sum(d), "{dtype} {shape:?}: repeatable");
        }
    }
}

#[test]
fn the_emulator_poisons_new_device_memory() {
    cuda();
    let gpu = tlrs::backend::cuda::gpu(0).unwrap();
    assert!(gpu.is_emulated());
    let b64 = gpu.alloc(DType::F64, 3).unwrap();
    let v: Vec<f64> = gpu.download(&b64).unwrap();
    assert!(v.iter().all(|x| x.is_nan()), "{v:?}");
    let b32 = gpu.alloc(DType::F32, 5).unwrap();
    let v: Vec<f32> = gpu.download(&b32).unwrap();
    assert!(v.iter().all(|x| x.is_nan()), "{v:?}");
    // Uploaded values replace the poison.
    let up = gpu.upload(DType::F64, &[1.0f64, 2.0]).unwrap();
    assert_eq!(gpu.download::<f64>(&up).unwrap(), vec![1.0, 2.0]);
}
