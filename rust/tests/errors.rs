//! Bad arguments give `Err` values naming what was expected and what came, never a panic.

mod common;

use common::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use tlrs::autograd::gradcheck::gradcheck;
use tlrs::backend::cpu::parallel::set_num_threads;
use tlrs::ops::{self, Target};
use tlrs::{DType, Error, Result, Shape, Tensor};

/// Runs `f`, failing the test if it panics or succeeds; returns the error.
fn expect_err<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Error {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(_)) => panic!("{what}: expected an error, got Ok"),
        Ok(Err(e)) => e,
        Err(_) => panic!("{what}: panicked instead of returning an error"),
    }
}

fn expect_shape_err<T>(what: &str, needles: &[&str], f: impl FnOnce() -> Result<T>) {
    let e = expect_err(what, f);
    assert!(
        matches!(e, Error::Shape { .. }),
        "{what}: expected Error::Shape, got {e:?}"
    );
    let msg = e.to_string();
    for n in needles {
        assert!(
            msg.contains(n),
            "{what}: message {msg:?} does not contain {n:?}"
        );
    }
}

fn expect_arg_err<T>(what: &str, f: impl FnOnce() -> Result<T>) {
    let e = expect_err(what, f);
    assert!(
        matches!(e, Error::Arg { .. }),
        "{what}: expected Error::Arg, got {e:?}"
    );
}

fn expect_dtype_err<T>(what: &str, f: impl FnOnce() -> Result<T>) {
    let e = expect_err(what, f);
    assert!(
        matches!(e, Error::DType { .. }),
        "{what}: expected Error::DType, got {e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("float32") && msg.contains("float64"),
        "{what}: {msg}"
    );
}

fn z(shape: &[usize]) -> Tensor {
    Tensor::zeros(shape.to_vec(), DType::F64)
}

fn z32(shape: &[usize]) -> Tensor {
    Tensor::zeros(shape.to_vec(), DType::F32)
}

type Binary = fn(&Tensor, &Tensor) -> Result<Tensor>;

const BINARY: [(&str, Binary); 6] = [
    ("add", ops::add),
    ("sub", ops::sub),
    ("mul", ops::mul),
    ("div", ops::div),
    ("maximum", ops::maximum),
    ("minimum", ops::minimum),
];

#[test]
fn binary_ops_reject_unbroadcastable_shapes() {
    for (name, f) in BINARY {
        expect_shape_err(name, &[name, "[2, 3]", "[4, 5]"], || {
            f(&z(&[2, 3]), &z(&[4, 5]))
        });
        expect_shape_err(name, &["[2, 3]", "[3, 2]"], || f(&z(&[2, 3]), &z(&[3, 2])));
        expect_shape_err(name, &["[2, 3, 4]", "[3, 3]"], || {
            f(&z(&[2, 3, 4]), &z(&[3, 3]))
        });
        expect_shape_err(name, &["[2]", "[3]"], || f(&z(&[2]), &z(&[3])));
    }
}

#[test]
fn binary_ops_reject_mixed_dtypes() {
    for (name, f) in BINARY {
        expect_dtype_err(name, || f(&z32(&[2, 3]), &z(&[2, 3])));
        expect_dtype_err(name, || f(&z(&[2, 3]), &z32(&[3])));
        expect_dtype_err(name, || f(&z(&[]), &z32(&[])));
    }
}

#[test]
fn matmul_errors_name_both_shapes() {
    expect_shape_err("matmul 2d", &["matmul", "[2, 3]", "[4, 5]"], || {
        ops::matmul(&z(&[2, 3]), &z(&[4, 5]))
    });
    expect_shape_err("matmul batched", &["[2, 3, 4]", "[2, 5, 6]"], || {
        ops::matmul(&z(&[2, 3, 4]), &z(&[2, 5, 6]))
    });
    expect_shape_err("matmul batch axes", &["[2, 3, 4]", "[3, 4, 5]"], || {
        ops::matmul(&z(&[2, 3, 4]), &z(&[3, 4, 5]))
    });
    expect_shape_err("matmul vectors", &["[3]", "[4]"], || {
        ops::matmul(&z(&[3]), &z(&[4]))
    });
    expect_shape_err("matmul matrix-vector", &["[2, 3]", "[4]"], || {
        ops::matmul(&z(&[2, 3]), &z(&[4]))
    });
    expect_shape_err("matmul scalar", &["[]", "[2, 3]"], || {
        ops::matmul(&z(&[]), &z(&[2, 3]))
    });
    // matmul_t checks the transposed inner dimensions.
    expect_shape_err("matmul_t ta", &["[2, 3]", "[2, 5]"], || {
        ops::matmul_t(&z(&[2, 3]), &z(&[2, 5]), false, false)
    });
    expect_shape_err("matmul_t tb", &["[2, 3]", "[3, 5]"], || {
        ops::matmul_t(&z(&[2, 3]), &z(&[3, 5]), false, true)
    });
    expect_shape_err("matmul_t ta tb", &["[2, 3]", "[5, 3]"], || {
        ops::matmul_t(&z(&[2, 3]), &z(&[5, 3]), true, true)
    });
    expect_shape_err("matmul_t rank 1", &["[3]"], || {
        ops::matmul_t(&z(&[3]), &z(&[3, 2]), false, false)
    });
    expect_dtype_err("matmul dtype", || ops::matmul(&z32(&[2, 3]), &z(&[3, 4])));
}

#[test]
fn linear_errors() {
    expect_shape_err("linear in features", &["[2, 3]", "[4, 5]"], || {
        ops::linear(&z(&[2, 3]), &z(&[4, 5]), None)
    });
    expect_shape_err("linear weight rank", &["[5]"], || {
        ops::linear(&z(&[2, 5]), &z(&[5]), None)
    });
    expect_shape_err("linear bias", &["[4]", "[3]"], || {
        ops::linear(&z(&[2, 5]), &z(&[4, 5]), Some(&z(&[3])))
    });
    expect_shape_err("linear scalar input", &["[]"], || {
        ops::linear(&z(&[]), &z(&[4, 5]), None)
    });
    expect_dtype_err("linear weight dtype", || {
        ops::linear(&z(&[2, 5]), &z32(&[4, 5]), None)
    });
    expect_dtype_err("linear bias dtype", || {
        ops::linear(&z(&[2, 5]), &z(&[4, 5]), Some(&z32(&[4])))
    });
}

#[test]
fn concat_errors() {
    expect_shape_err("concat other axis", &["[2, 3]", "[2, 4]"], || {
        ops::concat(&[z(&[2, 3]), z(&[2, 4])], 0)
    });
    expect_shape_err("concat rank", &["[2, 3]", "[2, 3, 1]"], || {
        ops::concat(&[z(&[2, 3]), z(&[2, 3, 1])], 1)
    });
    expect_arg_err("concat empty", || ops::concat(&[], 0));
    expect_arg_err("concat axis", || ops::concat(&[z(&[2, 3]), z(&[2, 3])], 2));
    expect_dtype_err("concat dtype", || {
        ops::concat(&[z(&[2, 3]), z32(&[2, 3])], 0)
    });
}

#[test]
fn loss_shape_and_dtype_errors() {
    expect_shape_err("mse", &["[2, 3]", "[3, 2]"], || {
        ops::mse_loss(&z(&[2, 3]), &z(&[3, 2]))
    });
    expect_shape_err("mse broadcastable", &["[2, 3]", "[3]"], || {
        ops::mse_loss(&z(&[2, 3]), &z(&[3]))
    });
    expect_dtype_err("mse dtype", || ops::mse_loss(&z(&[2, 3]), &z32(&[2, 3])));
    expect_shape_err("ce index count", &["[4, 3]", "3"], || {
        ops::cross_entropy(&z(&[4, 3]), Target::Indices(&[0, 1, 2]))
    });
    expect_shape_err("ce one row", &["[3]"], || {
        ops::cross_entropy(&z(&[3]), Target::Indices(&[0, 1]))
    });
    expect_shape_err("ce probs shape", &["[4, 3]", "[4, 2]"], || {
        ops::cross_entropy(&z(&[4, 3]), Target::Probs(&z(&[4, 2])))
    });
    expect_shape_err("ce rank 3", &["[2, 3, 4]"], || {
        ops::cross_entropy(&z(&[2, 3, 4]), Target::Indices(&[0, 1]))
    });
    expect_shape_err("ce scalar", &["[]"], || {
        ops::cross_entropy(&z(&[]), Target::Indices(&[0]))
    });
    expect_dtype_err("ce probs dtype", || {
        ops::cross_entropy(&z(&[4, 3]), Target::Probs(&z32(&[4, 3])))
    });
}

#[test]
fn out_of_range_indices_name_the_bound() {
    let check = |what: &str, e: Error, index: i64, bound: usize| {
        match &e {
            Error::Index {
                index: i, bound: b, ..
            } => assert_eq!((*i, *b), (index, bound), "{what}"),
            other => panic!("{what}: expected Error::Index, got {other:?}"),
        }
        let msg = e.to_string();
        assert!(msg.contains(&format!("size {bound}")), "{what}: {msg}");
        assert!(msg.contains(&index.to_string()), "{what}: {msg}");
    };
    let x = z(&[4, 3]);
    check(
        "index_select high",
        expect_err("is", || ops::index_select(&x, 0, &[0, 4])),
        4,
        4,
    );
    check(
        "index_select axis 1",
        expect_err("is", || ops::index_select(&x, 1, &[3])),
        3,
        3,
    );
    check(
        "index_select negative",
        expect_err("is", || ops::index_select(&x, 0, &[-1])),
        -1,
        4,
    );
    check(
        "ce high",
        expect_err("ce", || {
            ops::cross_entropy(&x, Target::Indices(&[0, 1, 3, 2]))
        }),
        3,
        3,
    );
    check(
        "ce negative",
        expect_err("ce", || {
            ops::cross_entropy(&x, Target::Indices(&[0, -2, 1, 2]))
        }),
        -2,
        3,
    );
    check(
        "ce huge",
        expect_err("ce", || {
            ops::cross_entropy(&z(&[3]), Target::Indices(&[i64::MAX]))
        }),
        i64::MAX,
        3,
    );
}

#[test]
fn bad_axes_are_errors() {
    let x = z(&[2, 3, 4]);
    for axis in [3isize, -4, 100, isize::MIN] {
        expect_arg_err("sum", || ops::sum(&x, Some(axis), false));
        expect_arg_err("mean", || ops::mean(&x, Some(axis), true));
        expect_arg_err("max", || ops::max(&x, Some(axis), false));
        expect_arg_err("softmax", || ops::softmax(&x, axis));
        expect_arg_err("log_softmax", || ops::log_softmax(&x, axis));
        expect_arg_err("transpose", || ops::transpose(&x, 0, axis));
        expect_arg_err("slice", || ops::slice(&x, axis, 0, 1));
        expect_arg_err("index_select", || ops::index_select(&x, axis, &[0]));
        expect_arg_err("concat", || ops::concat(std::slice::from_ref(&x), axis));
        expect_arg_err("flatten", || ops::flatten(&x, 0, axis));
    }
    let e = expect_err("sum", || ops::sum(&x, Some(3), false));
    assert!(
        e.to_string().contains("axis 3") && e.to_string().contains("rank 3"),
        "{e}"
    );
    // An axis on a scalar: 0 and -1 are the scalar itself (as in PyTorch), others are errors
    // saying that a 0-d tensor has no axes.
    assert_eq!(
        ops::sum(&z(&[]), Some(-1), false).unwrap().dims(),
        &[] as &[usize]
    );
    assert_eq!(ops::softmax(&z(&[]), 0).unwrap().dims(), &[] as &[usize]);
    expect_arg_err("sum scalar", || ops::sum(&z(&[]), Some(1), false));
    expect_arg_err("softmax scalar", || ops::softmax(&z(&[]), -2));
    let e = expect_err("transpose scalar", || ops::transpose(&z(&[]), 0, 0));
    assert!(e.to_string().contains("a 0-d tensor has no axes"), "{e}");
    // Permutations.
    expect_arg_err("permute short", || ops::permute(&x, &[0, 1]));
    expect_arg_err("permute repeat", || ops::permute(&x, &[0, 1, 1]));
    expect_arg_err("permute range", || ops::permute(&x, &[0, 1, 3]));
    expect_arg_err("flatten order", || ops::flatten(&x, 2, 0));
}

#[test]
fn reshape_to_wrong_size_is_an_error() {
    let x = z(&[2, 3]);
    expect_shape_err("reshape", &["[2, 3]", "6"], || ops::reshape(&x, &[4, 2]));
    expect_shape_err("reshape bigger", &["[2, 3]"], || ops::reshape(&x, &[7]));
    expect_shape_err("reshape infer", &["[2, 3]"], || ops::reshape(&x, &[4, -1]));
    expect_shape_err("reshape infer zero", &["[2, 3]"], || {
        ops::reshape(&x, &[0, -1])
    });
    expect_arg_err("reshape two -1", || ops::reshape(&x, &[-1, -1]));
    expect_arg_err("reshape negative", || ops::reshape(&x, &[-2, -3]));
}

#[test]
fn reshape_with_overflowing_dims_is_an_error() {
    let x = z(&[2, 3]);
    expect_shape_err("reshape overflow", &["[2, 3]"], || {
        ops::reshape(&x, &[isize::MAX, 4])
    });
    expect_shape_err("reshape overflow infer", &["[2, 3]"], || {
        ops::reshape(&x, &[isize::MAX, 4, -1])
    });
}

#[test]
fn other_argument_errors() {
    expect_arg_err("clamp bounds", || {
        ops::clamp(&z(&[2]), Some(1.0), Some(0.0))
    });
    expect_shape_err("max empty", &["[0, 3]"], || {
        ops::max(&z(&[0, 3]), None, false)
    });
    expect_shape_err("max empty axis", &["[2, 0]"], || {
        ops::max(&z(&[2, 0]), Some(1), false)
    });
    expect_shape_err("sum_to_shape", &["[2, 3]", "[4]"], || {
        ops::sum_to_shape(&z(&[2, 3]), &Shape(vec![4]))
    });
    expect_shape_err("sum_to_shape bigger", &[], || {
        ops::sum_to_shape(&z(&[3]), &Shape(vec![2, 3]))
    });
    expect_shape_err("broadcast_to", &["[2, 3]", "[4, 3]"], || {
        ops::broadcast_to(&z(&[2, 3]), &Shape(vec![4, 3]))
    });
    expect_shape_err("broadcast_to smaller", &[], || {
        ops::broadcast_to(&z(&[2, 3]), &Shape(vec![3]))
    });
    expect_shape_err("from_vec", &["[2, 2]"], || {
        Tensor::from_vec_f64(vec![1.0; 3], vec![2, 2])
    });
    expect_shape_err("item", &["[2]"], || z(&[2]).item());
    expect_arg_err("set_num_threads(0)", || set_num_threads(0));
    expect_arg_err("gradcheck f32", || {
        gradcheck(|xs| ops::sum(&xs[0], None, false), &[z32(&[2])], 1e-6)
    });
}

#[test]
fn errors_inside_autograd_closures_propagate() {
    // A shape error raised while building a graph from leaves is returned, not a panic.
    let x = randt(1, &[2, 3]).detach_with_grad(true);
    let y = randt(2, &[3, 2]).detach_with_grad(true);
    expect_shape_err("add leaves", &["[2, 3]", "[3, 2]"], || ops::add(&x, &y));
    let e = expect_err("gradcheck", || {
        gradcheck(
            |xs| ops::add(&xs[0], &xs[1]),
            &[randt(3, &[2, 3]), randt(4, &[3, 2])],
            1e-6,
        )
    });
    assert!(matches!(e, Error::Shape { .. }));
}

/// Runs `f`, failing the test if it panics or returns an error.
fn expect_ok<T>(what: &str, f: impl FnOnce() -> Result<T>) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => panic!("{what}: unexpected error {e}"),
        Err(_) => panic!("{what}: panicked"),
    }
}

#[test]
fn empty_and_degenerate_shapes_do_not_panic() {
    let e03 = z(&[0, 3]);
    assert_eq!(
        expect_ok("add empty", || ops::add(&e03, &z(&[3]))).dims(),
        [0, 3]
    );
    assert_eq!(
        expect_ok("add empty inner", || ops::add(&z(&[2, 0]), &z(&[1, 0]))).dims(),
        [2, 0]
    );
    assert_eq!(expect_ok("exp empty", || ops::exp(&e03)).numel(), 0);
    assert_eq!(
        expect_ok("sum axis 0 of [0,3]", || ops::sum(&e03, Some(0), false)).dims(),
        [3]
    );
    assert_eq!(
        expect_ok("sum axis 1 of [0,3]", || ops::sum(&e03, Some(1), false)).dims(),
        [0]
    );
    assert_eq!(
        expect_ok("softmax empty", || ops::softmax(&e03, 1)).dims(),
        [0, 3]
    );
    assert_eq!(
        expect_ok("softmax empty axis", || ops::softmax(&z(&[3, 0]), 1)).dims(),
        [3, 0]
    );
    let k0 = expect_ok("matmul k=0", || ops::matmul(&z(&[2, 0]), &z(&[0, 3])));
    assert_eq!((k0.dims(), vals(&k0)), (&[2, 3][..], vec![0.0; 6]));
    assert_eq!(
        expect_ok("matmul m=0", || ops::matmul(&z(&[0, 4]), &z(&[4, 3]))).dims(),
        [0, 3]
    );
    assert_eq!(
        expect_ok("concat empty part", || ops::concat(
            &[e03.clone(), z(&[2, 3])],
            0
        ))
        .dims(),
        [2, 3]
    );
    assert_eq!(
        expect_ok("slice empty range", || ops::slice(&z(&[4]), 0, 3, 1)).dims(),
        [0]
    );
    assert_eq!(
        expect_ok("index_select none", || ops::index_select(
            &z(&[4, 2]),
            0,
            &[]
        ))
        .dims(),
        [0, 2]
    );
    assert_eq!(
        expect_ok("permute scalar", || ops::permute(&z(&[]), &[])).dims(),
        &[] as &[usize]
    );
    assert_eq!(
        expect_ok("flatten scalar", || ops::flatten(&z(&[]), 0, -1)).dims(),
        [1]
    );
    assert_eq!(
        expect_ok("reshape empty", || ops::reshape(&e03, &[3, -1, 5])).dims(),
        [3, 0, 5]
    );
    // Index checks still apply when the indexed axis is empty.
    let e = expect_err("index_select into empty axis", || {
        ops::index_select(&z(&[0, 2]), 0, &[0])
    });
    assert!(matches!(e, Error::Index { bound: 0, .. }));
    let e = expect_err("ce with no classes", || {
        ops::cross_entropy(&z(&[1, 0]), Target::Indices(&[0]))
    });
    assert!(matches!(e, Error::Index { bound: 0, .. }));
    // Gradients through empty tensors.
    let x = z(&[2, 0]).detach_with_grad(true);
    let w = z(&[0, 3]).detach_with_grad(true);
    let loss = expect_ok("empty graph", || {
        ops::sum(&ops::matmul(&x, &w)?, None, false)
    });
    let g = expect_ok("grad empty", || {
        tlrs::autograd::grad(&loss, &[x.clone(), w.clone()])
    });
    assert_eq!((g[0].dims(), g[1].dims()), (&[2, 0][..], &[0, 3][..]));
}
