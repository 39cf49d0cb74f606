//! Autograd semantics: accumulation when a tensor is used more than once, `.grad` accumulation
//! across backward calls, `grad()` for unused inputs, `no_grad`, errors, and deep graphs.

mod common;

use common::*;
use tlrs::autograd::{backward, grad, no_grad};
use tlrs::ops;
use tlrs::{DType, Error, Tensor};

fn leaf(v: Vec<f64>, shape: &[usize]) -> Tensor {
    t64(v, shape).detach_with_grad(true)
}

fn grad_of(t: &Tensor) -> Vec<f64> {
    vals(&t.grad().expect("a gradient"))
}

#[test]
fn x_plus_x_gives_grad_two() {
    let x = leaf(vec![1.0, -2.0, 3.5], &[3]);
    let y = ops::sum(&ops::add(&x, &x).unwrap(), None, false).unwrap();
    backward(&y).unwrap();
    assert_eq!(grad_of(&x), [2.0, 2.0, 2.0]);
    // x * x gives 2x; x - x gives 0; x / x gives 0.
    let x = leaf(vec![1.5, -2.0], &[2]);
    backward(&ops::sum(&ops::mul(&x, &x).unwrap(), None, false).unwrap()).unwrap();
    assert_eq!(grad_of(&x), [3.0, -4.0]);
    let x = leaf(vec![1.5, -2.0], &[2]);
    backward(&ops::sum(&ops::sub(&x, &x).unwrap(), None, false).unwrap()).unwrap();
    assert_eq!(grad_of(&x), [0.0, 0.0]);
}

#[test]
fn tensor_used_in_two_branches_accumulates() {
    let xv = vec![0.5, -1.0, 2.0];
    let x = leaf(xv.clone(), &[3]);
    // y = sum(x*x) + sum(exp(x)): dy/dx = 2x + exp(x)
    let a = ops::sum(&ops::mul(&x, &x).unwrap(), None, false).unwrap();
    let b = ops::sum(&ops::exp(&x).unwrap(), None, false).unwrap();
    backward(&ops::add(&a, &b).unwrap()).unwrap();
    let want: Vec<f64> = xv.iter().map(|v| 2.0 * v + v.exp()).collect();
    assert_close(&grad_of(&x), &want, 1e-15, 0.0, "two branches");
    // A shared interior node: h = tanh(x); y = sum(h * 3) + sum(h)  -> dy/dx = 4 (1 - h^2)
    let x = leaf(xv.clone(), &[3]);
    let h = ops::tanh(&x).unwrap();
    let three = Tensor::scalar(3.0, DType::F64);
    let y = ops::add(
        &ops::sum(&ops::mul(&h, &three).unwrap(), None, false).unwrap(),
        &ops::sum(&h, None, false).unwrap(),
    )
    .unwrap();
    backward(&y).unwrap();
    let want: Vec<f64> = xv
        .iter()
        .map(|v| 4.0 * (1.0 - v.tanh() * v.tanh()))
        .collect();
    assert_close(&grad_of(&x), &want, 1e-14, 0.0, "shared interior node");
    // The constant operand gets no gradient.
    assert!(three.grad().is_none());
}

#[test]
fn broadcast_operand_gets_summed_gradient() {
    let x = leaf(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = leaf(vec![10.0, 20.0, 30.0], &[3]);
    backward(&ops::sum(&ops::mul(&x, &b).unwrap(), None, false).unwrap()).unwrap();
    assert_eq!(grad_of(&b), [5.0, 7.0, 9.0]);
    assert_eq!(grad_of(&x), [10.0, 20.0, 30.0, 10.0, 20.0, 30.0]);
}

#[test]
fn grad_accumulates_across_backward_calls() {
    let x = leaf(vec![1.0, 2.0], &[2]);
    let y = ops::sum(&ops::mul(&x, &x).unwrap(), None, false).unwrap();
    backward(&y).unwrap();
    assert_eq!(grad_of(&x), [2.0, 4.0]);
    backward(&y).unwrap();
    assert_eq!(grad_of(&x), [4.0, 8.0]);
    // A different loss adds on top as well.
    let z = ops::sum(&x, None, false).unwrap();
    backward(&z).unwrap();
    assert_eq!(grad_of(&x), [5.0, 9.0]);
    // Clearing resets.
    x.set_grad(None);
    backward(&z).unwrap();
    assert_eq!(grad_of(&x), [1.0, 1.0]);
}

#[test]
fn grad_function_returns_zeros_for_unused_inputs_and_leaves_dot_grad_alone() {
    let x = leaf(vec![1.0, 2.0, 3.0], &[3]);
    let unused = leaf(vec![7.0; 4], &[2, 2]);
    let y = ops::sum(&ops::mul(&x, &x).unwrap(), None, false).unwrap();
    let gs = grad(&y, &[x.clone(), unused.clone()]).unwrap();
    assert_eq!(vals(&gs[0]), [2.0, 4.0, 6.0]);
    assert_eq!(gs[1].dims(), [2, 2]);
    assert_eq!(gs[1].dtype(), DType::F64);
    assert_eq!(vals(&gs[1]), [0.0; 4]);
    // grad() does not write .grad
    assert!(x.grad().is_none());
    // A tensor that does not require grad also gets zeros.
    let c = t64(vec![1.0], &[1]);
    assert_eq!(vals(&grad(&y, &[c]).unwrap()[0]), [0.0]);
}

#[test]
fn grad_keeps_f32_dtype() {
    let x = t32(vec![1.0, 2.0], &[2]).detach_with_grad(true);
    let y = ops::sum(&ops::mul(&x, &x).unwrap(), None, false).unwrap();
    let g = grad(&y, &[x]).unwrap();
    assert_eq!(g[0].dtype(), DType::F32);
    assert_eq!(vals(&g[0]), [2.0, 4.0]);
}

#[test]
fn no_grad_stops_recording() {
    let x = leaf(vec![1.0, 2.0], &[2]);
    let y = no_grad(|| ops::mul(&x, &x).unwrap());
    assert!(!y.requires_grad());
    assert!(y.is_leaf());
    assert_eq!(vals(&y), [1.0, 4.0]);
    // Backward through something computed under no_grad is an error, not a panic.
    let s = no_grad(|| ops::sum(&y, None, false).unwrap());
    assert!(matches!(backward(&s), Err(Error::Autograd(_))));
    // Nested no_grad, then recording resumes outside.
    no_grad(|| {
        no_grad(|| assert!(!ops::exp(&x).unwrap().requires_grad()));
        assert!(!ops::exp(&x).unwrap().requires_grad());
    });
    let z = ops::exp(&x).unwrap();
    assert!(z.requires_grad());
    // Ops on tensors that do not require grad do not record either.
    let c = t64(vec![1.0, 2.0], &[2]);
    assert!(!ops::add(&c, &c).unwrap().requires_grad());
    // A value computed under no_grad acts as a constant in a later graph.
    let loss = ops::sum(&ops::mul(&y, &x).unwrap(), None, false).unwrap();
    backward(&loss).unwrap();
    assert_eq!(grad_of(&x), [1.0, 4.0]);
}

#[test]
fn backward_on_non_scalar_is_an_error() {
    let x = leaf(vec![1.0, 2.0, 3.0], &[3]);
    let y = ops::mul(&x, &x).unwrap();
    let e = backward(&y).unwrap_err();
    assert!(matches!(e, Error::Autograd(_)), "{e:?}");
    assert!(e.to_string().contains("[3]"), "{e}");
    assert!(matches!(
        grad(&y, std::slice::from_ref(&x)),
        Err(Error::Autograd(_))
    ));
    assert!(x.grad().is_none());
    // A one-element tensor of any rank is fine.
    let s = ops::sum(&y, None, true).unwrap();
    assert_eq!(s.dims(), [1]);
    backward(&s).unwrap();
    assert_eq!(grad_of(&x), [2.0, 4.0, 6.0]);
}

#[test]
fn backward_on_a_leaf_without_grad_is_an_error() {
    let c = t64(vec![1.0], &[]);
    assert!(matches!(backward(&c), Err(Error::Autograd(_))));
}

#[test]
fn deep_chain_does_not_overflow_the_stack() {
    let x = leaf(vec![1.0, -1.0], &[2]);
    let mut y = x.clone();
    for _ in 0..10_000 {
        y = ops::add(&y, &x).unwrap();
    }
    let loss = ops::sum(&y, None, false).unwrap();
    backward(&loss).unwrap();
    assert_eq!(grad_of(&x), [10_001.0, 10_001.0]);
    let g = grad(&loss, std::slice::from_ref(&x)).unwrap();
    assert_eq!(vals(&g[0]), [10_001.0, 10_001.0]);
    // Dropping the whole graph must not recurse 10,000 frames deep either.
    drop(loss);
    drop(y);
}

#[test]
fn deep_chain_of_unary_ops() {
    // y = x * 1 ... through 10,000 neg ops: an even count gives back x, gradient 1.
    let x = leaf(vec![0.25], &[1]);
    let mut y = x.clone();
    for _ in 0..10_000 {
        y = ops::neg(&y).unwrap();
    }
    backward(&ops::sum(&y, None, false).unwrap()).unwrap();
    assert_eq!(grad_of(&x), [1.0]);
}

#[test]
fn leaves_and_results_report_requires_grad() {
    let x = leaf(vec![1.0], &[1]);
    assert!(x.requires_grad() && x.is_leaf());
    let y = ops::exp(&x).unwrap();
    assert!(y.requires_grad() && !y.is_leaf());
    let d = y.detach();
    assert!(!d.requires_grad() && d.is_leaf());
}

#[test]
fn very_deep_chain_can_be_dropped() {
    let x = leaf(vec![1.0], &[1]);
    let mut y = x.clone();
    for _ in 0..100_000 {
        y = ops::add(&y, &x).unwrap();
    }
    backward(&ops::sum(&y, None, false).unwrap()).unwrap();
    assert_eq!(grad_of(&x), [100_001.0]);
    drop(y);
}

#[test]
fn gradient_conventions_at_kinks_and_ties() {
    let g = |f: &dyn Fn(&Tensor) -> tlrs::Result<Tensor>, v: Vec<f64>| {
        let n = v.len();
        let x = leaf(v, &[n]);
        backward(&ops::sum(&f(&x).unwrap(), None, false).unwrap()).unwrap();
        grad_of(&x)
    };
    // relu and abs have gradient 0 at 0.
    assert_eq!(g(&|x| ops::relu(x), vec![-1.0, 0.0, 2.0]), [0.0, 0.0, 1.0]);
    assert_eq!(g(&|x| ops::abs(x), vec![-1.0, 0.0, 2.0]), [-1.0, 0.0, 1.0]);
    // clamp passes the gradient on the bounds themselves, not outside them.
    assert_eq!(
        g(
            &|x| ops::clamp(x, Some(-1.0), Some(1.0)),
            vec![-2.0, -1.0, 0.0, 1.0, 2.0]
        ),
        [0.0, 1.0, 1.0, 1.0, 0.0]
    );
    // max sends the gradient to the first maximal element.
    assert_eq!(
        g(&|x| ops::max(x, None, false), vec![1.0, 3.0, 3.0, 2.0]),
        [0.0, 1.0, 0.0, 0.0]
    );
    // maximum/minimum split a tie evenly.
    let a = leaf(vec![1.0, 2.0, 3.0], &[3]);
    let b = leaf(vec![1.0, 5.0, 0.0], &[3]);
    backward(&ops::sum(&ops::maximum(&a, &b).unwrap(), None, false).unwrap()).unwrap();
    assert_eq!(
        (grad_of(&a), grad_of(&b)),
        (vec![0.5, 0.0, 1.0], vec![0.5, 1.0, 0.0])
    );
    let (a, b) = (a.detach_with_grad(true), b.detach_with_grad(true));
    backward(&ops::sum(&ops::minimum(&a, &b).unwrap(), None, false).unwrap()).unwrap();
    assert_eq!(
        (grad_of(&a), grad_of(&b)),
        (vec![0.5, 1.0, 0.0], vec![0.5, 0.0, 1.0])
    );
}
