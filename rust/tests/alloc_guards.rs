//! Inputs whose results or workspaces would be larger than any machine's memory, or whose
//! zero-size data would have the kernels walk 2^40 empty rows: each is an out-of-memory or shape
//! error, or a quick result, never an abort (which would kill this test binary) or a hang.
//! Tensors with a zero-size axis cost nothing, so 2^40-long axes are cheap here.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use tlrs::backend::cpu::host_buf::HostBuf;
use tlrs::backend::cpu::parallel::with_fast_kernels;
use tlrs::geometry::{ConvDims, MatmulDims};
use tlrs::storage::{CpuStorage, Storage};
use tlrs::{ops, DType, Device, Error, Result, Shape, Tensor};

const BIG: usize = 1 << 40;

fn z(shape: &[usize]) -> Tensor {
    Tensor::zeros(shape.to_vec(), DType::F64)
}

fn leaf(shape: &[usize], value: f64, dtype: DType) -> Tensor {
    Tensor::full(shape.to_vec(), value, dtype).detach_with_grad(true)
}

/// Runs `f`, failing the test on a panic or an `Ok`; returns the error.
fn expect_err<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Error {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(_)) => panic!("{what}: expected an error, got Ok"),
        Ok(Err(e)) => e,
        Err(_) => panic!("{what}: panicked instead of returning an error"),
    }
}

/// Runs `f`, expecting `op`'s out-of-memory error naming the bytes.
fn expect_oom<T>(op: &str, f: impl FnOnce() -> Result<T>) {
    let e = expect_err(op, f);
    assert!(
        matches!(&e, Error::OutOfMemory(m)
            if m.starts_with(&format!("{op}: cannot allocate")) && m.ends_with(" bytes)")),
        "{op}: expected its out-of-memory error naming the bytes, got {e:?}"
    );
}

fn expect_shape<T>(what: &str, f: impl FnOnce() -> Result<T>) {
    let e = expect_err(what, f);
    assert!(
        matches!(e, Error::Shape { .. }),
        "{what}: expected a shape error, got {e:?}"
    );
}

fn expect_ok<T>(what: &str, f: impl FnOnce() -> Result<T>) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => panic!("{what}: unexpected error {e}"),
        Err(_) => panic!("{what}: panicked"),
    }
}

/// A tensor of `shape` over borrowed (non-owned) memory: layout ops copy it through the kernels
/// rather than returning views.
fn borrowed_empty(shape: &[usize]) -> Tensor {
    let owner: Arc<()> = Arc::new(());
    let ptr = std::ptr::NonNull::<f64>::dangling().as_ptr();
    // SAFETY: zero elements are read from the (aligned, non-null) pointer.
    let buf = unsafe { HostBuf::borrowed(ptr, 0, owner) };
    Tensor::from_cpu(CpuStorage::F64(buf), shape.to_vec()).unwrap()
}

#[test]
fn index_select_and_embedding_refuse_results_larger_than_memory() {
    // 2^21 indices into rows of 2^20: a result of 2^41 elements from 16 MiB of indices.
    let long = vec![0i64; 1 << 21];
    let x = Tensor::zeros(vec![1, 1 << 20], DType::F32);
    expect_oom("index_select", || ops::index_select(&x, 0, &long));
    expect_oom("embedding", || ops::embedding(&long, &[1 << 21], &x));
}

#[test]
fn overflowing_user_shapes_are_shape_errors() {
    // Each product overflows; wrapped, it would match the empty value list.
    let w = z(&[1, 3]);
    expect_shape("embedding", || ops::embedding(&[], &[1 << 32, 1 << 32], &w));
    expect_shape("gather", || {
        ops::gather(&z(&[0, BIG]), 0, &[], &[1 << 30, BIG])
    });
    expect_shape("masked_fill", || {
        ops::masked_fill(&z(&[2, 3]), &[], &[1 << 32, 1 << 32], 1.0)
    });
    let wq = z(&[1, 1]);
    expect_shape("attention mask of n·n values", || {
        ops::multi_head_attention(&z(&[0, 1 << 32, 1]), &wq, &wq, &wq, &wq, 1, Some(&[]))
    });
    // Zero elements, but strides past isize::MAX: no tensor may have that shape.
    expect_shape("reshape", || ops::reshape(&z(&[0]), &[0, 1 << 40, 1 << 40]));
}

#[test]
fn sum_to_shape_refuses_a_result_larger_than_its_empty_input() {
    let e = z(&[0, BIG]);
    expect_oom("sum_to_shape", || {
        ops::sum_to_shape(&e, &Shape(vec![1, BIG]))
    });
}

#[test]
fn matmul_of_empty_batches_sizes_nothing_by_the_batch() {
    let b = z(&[3, 5]).detach_with_grad(true);
    let a = z(&[BIG, 0, 3]).detach_with_grad(true);
    let y = expect_ok("matmul", || ops::matmul(&a, &b));
    assert_eq!(y.dims(), [BIG, 0, 5]);
    // A transposed view is read in place: its per-product offsets must not be built either.
    let at = expect_ok("transpose", || ops::transpose(&z(&[BIG, 3, 0]), 1, 2));
    let yt = expect_ok("matmul of a view", || ops::matmul(&at, &b));
    assert_eq!(yt.dims(), [BIG, 0, 5]);
    // The storage kernel itself, for an empty batch of 2^40 products.
    let d = MatmulDims {
        batch: BIG,
        m: 0,
        n: 5,
        k: 3,
        ta: false,
        tb: false,
        a_batch_stride: 0,
        b_batch_stride: 15,
    };
    let s = expect_ok("storage matmul", || {
        Storage::Cpu(CpuStorage::zeros(DType::F64, 0)).matmul(b.storage(), d)
    });
    assert_eq!(s.len(), 0);
    // b's gradient is one product over all of a's rows (none): zeros [3, 5], sized by the
    // product, not by the 2^40 empty batches.
    let loss = ops::sum(&y, None, false).unwrap();
    let g = expect_ok("matmul gradient", || {
        tlrs::autograd::grad(&loss, std::slice::from_ref(&b))
    });
    let gb = &g[0];
    assert_eq!(gb.dims(), [3, 5]);
    assert!(gb.to_f64_vec().unwrap().iter().all(|&v| v == 0.0));
}

#[test]
fn batch_norm_of_empty_planes_keeps_no_statistics() {
    let x = leaf(&[BIG, 1, 0, 5], 0.0, DType::F64);
    let y = expect_ok("batch_norm", || {
        ops::batch_norm_per_image(&x, None, None, 1e-5)
    });
    assert_eq!(y.dims(), x.dims());
    let (w, b) = (leaf(&[1], 2.0, DType::F64), leaf(&[1], 3.0, DType::F64));
    let y = expect_ok("batch_norm with γ, β", || {
        ops::batch_norm_per_image(&x, Some(&w), Some(&b), 1e-5)
    });
    let loss = ops::sum(&y, None, false).unwrap();
    let g = expect_ok("gradients", || {
        tlrs::autograd::grad(&loss, &[x.clone(), w.clone(), b.clone()])
    });
    assert_eq!(g[0].dims(), x.dims());
    for t in &g[1..] {
        assert_eq!(t.to_f64_vec().unwrap(), [0.0]);
    }
}

#[test]
fn layout_ops_do_no_work_per_empty_row() {
    // Backward of slice and index_select writes into zeros of x: 2^40 empty rows of it.
    let x = leaf(&[BIG, 4, 0], 0.0, DType::F64);
    let loss = ops::sum(&ops::slice(&x, 1, 0, 2).unwrap(), None, false).unwrap();
    let g = expect_ok("slice gradient", || {
        tlrs::autograd::grad(&loss, std::slice::from_ref(&x))
    });
    assert_eq!(g[0].dims(), x.dims());
    let x1 = leaf(&[BIG, 1, 0], 0.0, DType::F64);
    let y = expect_ok("index_select", || ops::index_select(&x1, 1, &[0, 0]));
    assert_eq!(y.dims(), [BIG, 2, 0]);
    let loss = ops::sum(&y, None, false).unwrap();
    let g = expect_ok("index_select gradient", || {
        tlrs::autograd::grad(&loss, std::slice::from_ref(&x1))
    });
    assert_eq!(g[0].dims(), x1.dims());
    // Borrowed memory is copied by the kernels, not viewed.
    let xb = borrowed_empty(&[BIG, 4, 0]);
    let s = expect_ok("slice of borrowed", || ops::slice(&xb, 1, 1, 3));
    assert_eq!(s.dims(), [BIG, 2, 0]);
    let s = expect_ok("index_select of borrowed", || {
        ops::index_select(&xb, 1, &[3])
    });
    assert_eq!(s.dims(), [BIG, 1, 0]);
}

#[test]
fn convolution_with_a_huge_padding_and_stride_copies_no_padded_plane() {
    // One output, reading padding only: a padded copy would be (2^21 + 1)^2 cells a plane.
    for dtype in [DType::F32, DType::F64] {
        let (x, w) = (
            leaf(&[1, 1, 1, 1], 1.0, dtype),
            leaf(&[1, 1, 1, 1], 1.0, dtype),
        );
        let y = expect_ok("conv2d", || ops::conv2d(&x, &w, None, 1 << 30, 1 << 20));
        assert_eq!(y.to_f64_vec().unwrap(), [0.0], "{dtype}");
    }
}

#[test]
fn convolution_weight_gradient_with_a_huge_padding_and_stride() {
    // 8 × 8 outputs of 3 × 3 windows, one of which (output (4, 4), tap (0, 0)) reads the one
    // input cell: the direct weight gradient (f32 on AVX-512) would copy x padded to
    // (2^20 + 1)^2 cells. f64 takes the lowering.
    let s = 1 << 17;
    let grads = |dtype| {
        let (x, w) = (
            leaf(&[1, 1, 1, 1], 1.0, dtype),
            leaf(&[32, 1, 3, 3], 1.0, dtype),
        );
        let y = ops::conv2d(&x, &w, None, s, 4 * s)?;
        assert_eq!(y.dims(), [1, 32, 8, 8]);
        let loss = ops::sum(&y, None, false)?;
        tlrs::autograd::grad(&loss, &[x, w])
    };
    let mut gw = vec![0.0; 32 * 9];
    gw.iter_mut().step_by(9).for_each(|v| *v = 1.0);
    for dtype in [DType::F32, DType::F64] {
        let g = expect_ok("conv2d gradients", || grads(dtype));
        assert_eq!(g[0].to_f64_vec().unwrap(), [32.0], "{dtype} x");
        assert_eq!(g[1].to_f64_vec().unwrap(), gw, "{dtype} w");
    }
}

/// x [n, c, 0, 0] (empty), W [1, c, 1, 1] and gY [n, 1, oh, oh] of zeros, padding `pad`.
fn empty_input_conv(n: usize, c: usize, pad: usize) -> (Storage, Storage, Storage, ConvDims) {
    let oh = 2 * pad;
    let d = ConvDims {
        n,
        c,
        h: 0,
        w: 0,
        oc: 1,
        kh: 1,
        kw: 1,
        stride: 1,
        pad,
        oh,
        ow: oh,
    };
    let zeros = |len| Storage::Cpu(CpuStorage::zeros(DType::F32, len));
    (zeros(0), zeros(c), zeros(n * oh * oh), d)
}

#[test]
fn convolution_weight_gradient_refuses_per_image_parts_larger_than_memory() {
    // 8 × 8 maps take the per-image lowering: N·OC·CKK = 2^17 · 2^24 partial weight gradients
    // (8 TiB) from an empty x, 64 MiB of W and 32 MiB of gY.
    let (x, w, g, d) = empty_input_conv(1 << 17, 1 << 24, 4);
    expect_oom("conv2d", || x.conv2d_grads(&w, &g, d, [false, true, false]));
}

#[test]
fn convolution_weight_gradient_refuses_batch_columns_larger_than_memory() {
    // 6 × 6 maps in reference mode: the whole batch's columns [CKK, N·P], 2^24 × 2^12 · 36.
    let (x, w, g, d) = empty_input_conv(1 << 12, 1 << 24, 3);
    with_fast_kernels(false, || {
        expect_oom("conv2d", || x.conv2d_grads(&w, &g, d, [false, true, false]))
    });
}

#[test]
fn device_layout_ops_refuse_or_skip_their_host_offsets() {
    // On a device (the CUDA emulator here), index_select builds one host offset per result
    // element, and a batched matmul is one cuBLAS call over the whole batch.
    std::env::set_var("TLRS_CUDA_EMULATOR", "1");
    let dev = Device::Cuda(0);
    let on = |t: Tensor| t.to_device(dev).unwrap();
    let x = on(Tensor::zeros(vec![1, 1 << 20], DType::F32));
    let long = vec![0i64; 1 << 21];
    expect_oom("index_select", || ops::index_select(&x, 0, &long));
    let e = on(z(&[BIG, 1, 0]));
    let y = expect_ok("index_select of empty rows", || {
        ops::index_select(&e, 1, &[0, 0])
    });
    assert_eq!((y.dims(), y.device()), (&[BIG, 2, 0][..], dev));
    let y = expect_ok("matmul", || {
        ops::matmul(&on(z(&[BIG, 0, 3])), &on(z(&[3, 5])))
    });
    assert_eq!((y.dims(), y.device()), (&[BIG, 0, 5][..], dev));
}
