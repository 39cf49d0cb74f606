//! Finite-difference gradient checks (f64, central differences) for every op. Non-scalar
//! outputs are reduced with sum(op(x) * w) for fixed pseudo-random weights w. Inputs are kept
//! away from points where an op is not differentiable (relu/abs at 0, clamp bounds, ties).

mod common;

use common::*;
use tlrs::autograd::gradcheck::gradcheck;
use tlrs::ops::{self, Target};
use tlrs::{Result, Shape, Tensor};

const EPS: f64 = 1e-6;
const TOL: f64 = 1e-6;

/// Gradchecks sum(f(xs) * w) with respect to every input.
fn check(name: &str, inputs: &[Tensor], f: impl Fn(&[Tensor]) -> Result<Tensor>) {
    let err = gradcheck(|xs| weighted_sum(&f(xs)?, 7), inputs, EPS)
        .unwrap_or_else(|e| panic!("{name}: gradcheck failed to run: {e}"));
    assert!(err <= TOL, "{name}: worst gradient error {err:e} > {TOL:e}");
}

// ---------------------------------------------------------------- unary

type Unary = fn(&Tensor) -> Result<Tensor>;

/// softplus at PyTorch's defaults (beta 1, threshold 20).
fn softplus(x: &Tensor) -> Result<Tensor> {
    ops::softplus(x, 1.0, 20.0)
}

fn check_unary(name: &str, f: Unary, x: Tensor) {
    check(name, &[x], |xs| f(&xs[0]));
}

#[test]
fn grad_smooth_unary_ops() {
    let shape = [3, 4];
    let cases: [(&str, Unary); 6] = [
        ("neg", ops::neg),
        ("exp", ops::exp),
        ("tanh", ops::tanh),
        ("sigmoid", ops::sigmoid),
        ("gelu", ops::gelu),
        ("softplus", softplus),
    ];
    for (i, (name, f)) in cases.into_iter().enumerate() {
        check_unary(name, f, randt_in(10 + i as u64, &shape, -2.0, 2.0));
    }
}

#[test]
fn grad_log_and_sqrt_on_positive_inputs() {
    check_unary("log", ops::log, randt_in(20, &[2, 5], 0.3, 3.0));
    check_unary("sqrt", ops::sqrt, randt_in(21, &[2, 5], 0.3, 3.0));
}

#[test]
fn grad_relu_and_abs_away_from_zero() {
    let x = t64(rand_vec_away_from_zero(22, 12, 0.05, 2.0), &[3, 4]);
    check_unary("relu", ops::relu, x.clone());
    check_unary("abs", ops::abs, x);
}

#[test]
fn grad_softplus_above_threshold() {
    // Above 20 softplus returns x itself; the gradient is then exactly 1.
    check_unary("softplus>20", softplus, randt_in(23, &[6], 21.0, 25.0));
    let mixed = t64(vec![-30.0, -5.0, 0.5, 10.0, 19.0, 21.0, 40.0], &[7]);
    check_unary("softplus mixed", softplus, mixed);
}

#[test]
fn grad_pow() {
    let pos = randt_in(24, &[3, 3], 0.4, 2.0);
    for e in [2.0, 2.5, 0.5, -1.5, 1.0, 0.0] {
        check(
            &format!("pow(pos, {e})"),
            std::slice::from_ref(&pos),
            |xs| ops::pow(&xs[0], e),
        );
    }
    // Integer exponents are defined for negative bases.
    let signed = t64(rand_vec_away_from_zero(25, 9, 0.2, 1.5), &[9]);
    for e in [2.0, 3.0, -2.0] {
        check(
            &format!("pow(signed, {e})"),
            std::slice::from_ref(&signed),
            |xs| ops::pow(&xs[0], e),
        );
    }
}

#[test]
fn grad_clamp() {
    // Uniform in [-1, 1): no element lands within EPS of the bounds for this seed.
    let x = randt(26, &[4, 5]);
    let xv = vals(&x);
    for b in [-0.5, 0.3, 0.2] {
        assert!(xv.iter().all(|v| (v - b).abs() > 1e-3));
    }
    check("clamp(-0.5, 0.3)", std::slice::from_ref(&x), |xs| {
        ops::clamp(&xs[0], Some(-0.5), Some(0.3))
    });
    check("clamp(min)", std::slice::from_ref(&x), |xs| {
        ops::clamp(&xs[0], Some(0.2), None)
    });
    check("clamp(max)", std::slice::from_ref(&x), |xs| {
        ops::clamp(&xs[0], None, Some(-0.5))
    });
    check("clamp(none)", &[x], |xs| ops::clamp(&xs[0], None, None));
}

// ---------------------------------------------------------------- binary

type Binary = fn(&Tensor, &Tensor) -> Result<Tensor>;

const BINARY: [(&str, Binary); 6] = [
    ("add", ops::add),
    ("sub", ops::sub),
    ("mul", ops::mul),
    ("div", ops::div),
    ("maximum", ops::maximum),
    ("minimum", ops::minimum),
];

/// Shape pairs covering equal shapes and every broadcasting pattern.
const SHAPE_PAIRS: [(&[usize], &[usize]); 8] = [
    (&[3, 4], &[3, 4]),
    (&[3, 4], &[4]),
    (&[4], &[3, 4]),
    (&[3, 1], &[1, 4]),
    (&[2, 1, 4], &[3, 1]),
    (&[2, 3, 4], &[2, 1, 4]),
    (&[], &[2, 3]),
    (&[2, 3], &[]),
];

#[test]
fn grad_binary_ops_with_broadcasting() {
    for (oi, (name, f)) in BINARY.into_iter().enumerate() {
        for (si, (sa, sb)) in SHAPE_PAIRS.into_iter().enumerate() {
            let seed = 100 + 10 * oi as u64 + si as u64;
            let a = randt_in(seed, sa, -2.0, 2.0);
            // Denominators stay away from 0; maximum/minimum operands never tie.
            let b = t64(
                rand_vec_away_from_zero(seed + 1000, numel(sb), 0.5, 2.0),
                sb,
            );
            check(&format!("{name} {sa:?} {sb:?}"), &[a, b], |xs| {
                f(&xs[0], &xs[1])
            });
        }
    }
}

#[test]
fn grad_binary_with_one_constant_operand() {
    // Only the first input is a gradcheck input; the other does not require grad.
    let c = randt_in(30, &[4], 0.5, 1.5);
    for (name, f) in BINARY {
        let c = c.clone();
        check(&format!("{name} const"), &[randt(31, &[3, 4])], move |xs| {
            f(&c, &xs[0])
        });
    }
}

// ---------------------------------------------------------------- reductions

#[test]
fn grad_sum_and_mean_all_axes_and_keepdim() {
    let x = randt(40, &[2, 3, 4]);
    for axis in [None, Some(0), Some(1), Some(2), Some(-1), Some(-3)] {
        for keepdim in [false, true] {
            check(
                &format!("sum {axis:?} {keepdim}"),
                std::slice::from_ref(&x),
                |xs| ops::sum(&xs[0], axis, keepdim),
            );
            check(
                &format!("mean {axis:?} {keepdim}"),
                std::slice::from_ref(&x),
                |xs| ops::mean(&xs[0], axis, keepdim),
            );
        }
    }
}

#[test]
fn grad_max_all_axes_and_keepdim() {
    // Distinct values (a shuffled ramp) so no two are within EPS: no ties.
    let n = 24;
    let mut r = Rng::new(41);
    let mut v: Vec<f64> = (0..n).map(|i| i as f64 * 0.1 - 1.0).collect();
    for i in (1..n).rev() {
        v.swap(i, r.below(i as u64 + 1) as usize);
    }
    let x = t64(v, &[2, 3, 4]);
    for axis in [None, Some(0), Some(1), Some(2), Some(-1)] {
        for keepdim in [false, true] {
            check(
                &format!("max {axis:?} {keepdim}"),
                std::slice::from_ref(&x),
                |xs| ops::max(&xs[0], axis, keepdim),
            );
        }
    }
}

#[test]
fn grad_sum_to_shape_and_broadcast_to() {
    let x = randt(42, &[2, 3, 4]);
    for to in [vec![3, 1], vec![4], vec![1, 3, 4], vec![], vec![2, 1, 1]] {
        let s = Shape(to.clone());
        check(
            &format!("sum_to_shape {to:?}"),
            std::slice::from_ref(&x),
            |xs| ops::sum_to_shape(&xs[0], &s),
        );
    }
    let target = Shape(vec![2, 3, 4]);
    for from in [vec![3, 1], vec![4], vec![2, 1, 4], vec![]] {
        check(
            &format!("broadcast_to {from:?}"),
            &[randt(43, &from)],
            |xs| ops::broadcast_to(&xs[0], &target),
        );
    }
}

// ---------------------------------------------------------------- layout

#[test]
fn grad_reshape_and_flatten() {
    let x = randt(50, &[2, 3, 4]);
    check("reshape", std::slice::from_ref(&x), |xs| {
        ops::reshape(&xs[0], &[4, -1])
    });
    check("reshape flat", std::slice::from_ref(&x), |xs| {
        ops::reshape(&xs[0], &[24])
    });
    check("flatten 1..2", std::slice::from_ref(&x), |xs| {
        ops::flatten(&xs[0], 1, 2)
    });
    check("flatten all", &[x], |xs| ops::flatten(&xs[0], 0, -1));
}

#[test]
fn grad_permute_and_transpose() {
    let x = randt(51, &[2, 3, 4]);
    for perm in [[2, 0, 1], [1, 0, 2], [0, 2, 1], [2, 1, 0], [0, 1, 2]] {
        check(
            &format!("permute {perm:?}"),
            std::slice::from_ref(&x),
            |xs| ops::permute(&xs[0], &perm),
        );
    }
    check("transpose 0 2", std::slice::from_ref(&x), |xs| {
        ops::transpose(&xs[0], 0, 2)
    });
    check("transpose -1 -2", &[x], |xs| ops::transpose(&xs[0], -1, -2));
}

#[test]
fn grad_concat_every_input() {
    let (a, b, c) = (
        randt(52, &[2, 1, 4]),
        randt(53, &[2, 3, 4]),
        randt(54, &[2, 2, 4]),
    );
    check("concat axis 1", &[a, b, c], |xs| ops::concat(xs, 1));
    let (a, b) = (randt(55, &[1, 3]), randt(56, &[2, 3]));
    check("concat axis 0", &[a.clone(), b.clone()], |xs| {
        ops::concat(xs, 0)
    });
    let (c, d) = (randt(57, &[2, 2]), randt(58, &[2, 5]));
    check("concat axis -1", &[c, d], |xs| ops::concat(xs, -1));
    check("concat one", &[a], |xs| ops::concat(xs, 0));
}

#[test]
fn grad_slice() {
    let x = randt(59, &[3, 5, 2]);
    check("slice axis 1", std::slice::from_ref(&x), |xs| {
        ops::slice(&xs[0], 1, 1, 4)
    });
    check("slice negative", std::slice::from_ref(&x), |xs| {
        ops::slice(&xs[0], -2, -3, -1)
    });
    check("slice clamped end", std::slice::from_ref(&x), |xs| {
        ops::slice(&xs[0], 0, 1, 100)
    });
    check("slice last axis", &[x], |xs| ops::slice(&xs[0], 2, 0, 1));
}

#[test]
fn grad_index_select_with_repeats() {
    let x = randt(60, &[4, 3]);
    check("index_select 0", std::slice::from_ref(&x), |xs| {
        ops::index_select(&xs[0], 0, &[2, 0, 2, 3])
    });
    check("index_select 1", &[x], |xs| {
        ops::index_select(&xs[0], -1, &[1, 1, 0])
    });
}

// ---------------------------------------------------------------- softmax and losses

#[test]
fn grad_softmax_and_log_softmax_each_axis() {
    let x = randt_in(70, &[2, 3, 4], -2.0, 2.0);
    for axis in [0, 1, 2, -1] {
        check(&format!("softmax {axis}"), std::slice::from_ref(&x), |xs| {
            ops::softmax(&xs[0], axis)
        });
        check(
            &format!("log_softmax {axis}"),
            std::slice::from_ref(&x),
            |xs| ops::log_softmax(&xs[0], axis),
        );
    }
}

/// Rows of positive values summing to 1.
fn prob_rows(seed: u64, rows: usize, cols: usize) -> Vec<f64> {
    let mut v = rand_vec(seed, rows * cols, 0.1, 1.0);
    for r in v.chunks_mut(cols) {
        let s: f64 = r.iter().sum();
        r.iter_mut().for_each(|x| *x /= s);
    }
    v
}

#[test]
fn grad_cross_entropy_indices() {
    let x = randt_in(71, &[4, 5], -2.0, 2.0);
    check("ce indices [4,5]", &[x], |xs| {
        ops::cross_entropy(&xs[0], Target::Indices(&[0, 4, 2, 4]))
    });
    let x1 = randt_in(72, &[5], -2.0, 2.0);
    check("ce indices [5]", &[x1], |xs| {
        ops::cross_entropy(&xs[0], Target::Indices(&[3]))
    });
}

#[test]
fn grad_cross_entropy_probs() {
    let x = randt_in(73, &[4, 5], -2.0, 2.0);
    let p = t64(prob_rows(74, 4, 5), &[4, 5]);
    // Gradient with respect to both logits and target probabilities.
    check("ce probs [4,5]", &[x.clone(), p.clone()], |xs| {
        ops::cross_entropy(&xs[0], Target::Probs(&xs[1]))
    });
    let one_hot = t64(
        (0..20)
            .map(|i| if i % 5 == (i / 5) % 5 { 1.0 } else { 0.0 })
            .collect(),
        &[4, 5],
    );
    check("ce one-hot", &[x], |xs| {
        ops::cross_entropy(&xs[0], Target::Probs(&one_hot))
    });
    let x1 = randt_in(75, &[5], -2.0, 2.0);
    let p1 = t64(prob_rows(76, 1, 5), &[5]);
    check("ce probs [5]", &[x1, p1], |xs| {
        ops::cross_entropy(&xs[0], Target::Probs(&xs[1]))
    });
}

#[test]
fn grad_mse_loss() {
    check("mse", &[randt(77, &[3, 4]), randt(78, &[3, 4])], |xs| {
        ops::mse_loss(&xs[0], &xs[1])
    });
    check("mse scalar", &[randt(79, &[]), randt(80, &[])], |xs| {
        ops::mse_loss(&xs[0], &xs[1])
    });
}

// ---------------------------------------------------------------- matmul and linear

#[test]
fn grad_matmul_2d_and_batched() {
    let cases: [(&[usize], &[usize]); 6] = [
        (&[3, 4], &[4, 5]),
        (&[2, 3, 4], &[2, 4, 5]),
        (&[3, 4], &[2, 4, 5]), // 2-D @ batched: A shared by every batch
        (&[2, 3, 4], &[4, 5]), // batched @ 2-D: B shared
        (&[2, 2, 3, 4], &[2, 2, 4, 5]),
        (&[1, 1], &[1, 1]),
    ];
    for (i, (sa, sb)) in cases.into_iter().enumerate() {
        let (a, b) = (randt(90 + i as u64, sa), randt(190 + i as u64, sb));
        check(&format!("matmul {sa:?} @ {sb:?}"), &[a, b], |xs| {
            ops::matmul(&xs[0], &xs[1])
        });
    }
}

#[test]
fn grad_matmul_vector_dot_and_matrix_vector() {
    check(
        "matmul [4] @ [4]",
        &[randt(96, &[4]), randt(97, &[4])],
        |xs| ops::matmul(&xs[0], &xs[1]),
    );
    check(
        "matmul [3,4] @ [4]",
        &[randt(98, &[3, 4]), randt(99, &[4])],
        |xs| ops::matmul(&xs[0], &xs[1]),
    );
}

#[test]
fn grad_matmul_vector_matrix() {
    check(
        "matmul [4] @ [4,5]",
        &[randt(100, &[4]), randt(101, &[4, 5])],
        |xs| ops::matmul(&xs[0], &xs[1]),
    );
}

#[test]
fn grad_matmul_t_all_flag_combos() {
    let (m, k, n) = (3, 4, 5);
    for ta in [false, true] {
        for tb in [false, true] {
            let sa = if ta { [k, m] } else { [m, k] };
            let sb = if tb { [n, k] } else { [k, n] };
            // 2-D
            check(
                &format!("matmul_t 2d {ta} {tb}"),
                &[randt(110, &sa), randt(111, &sb)],
                |xs| ops::matmul_t(&xs[0], &xs[1], ta, tb),
            );
            // batched on both sides
            let ba = [2, sa[0], sa[1]];
            let bb = [2, sb[0], sb[1]];
            check(
                &format!("matmul_t batched {ta} {tb}"),
                &[randt(112, &ba), randt(113, &bb)],
                |xs| ops::matmul_t(&xs[0], &xs[1], ta, tb),
            );
            // 2-D @ batched, and batched @ 2-D
            check(
                &format!("matmul_t 2d@batched {ta} {tb}"),
                &[randt(114, &sa), randt(115, &bb)],
                |xs| ops::matmul_t(&xs[0], &xs[1], ta, tb),
            );
            check(
                &format!("matmul_t batched@2d {ta} {tb}"),
                &[randt(116, &ba), randt(117, &sb)],
                |xs| ops::matmul_t(&xs[0], &xs[1], ta, tb),
            );
        }
    }
}

#[test]
fn grad_linear_with_and_without_bias() {
    let w = randt(120, &[5, 4]);
    let b = randt(121, &[5]);
    for (i, xs) in [vec![3, 4], vec![2, 3, 4], vec![4]].into_iter().enumerate() {
        let x = randt(122 + i as u64, &xs);
        check(
            &format!("linear bias {xs:?}"),
            &[x.clone(), w.clone(), b.clone()],
            |t| ops::linear(&t[0], &t[1], Some(&t[2])),
        );
        check(&format!("linear no bias {xs:?}"), &[x, w.clone()], |t| {
            ops::linear(&t[0], &t[1], None)
        });
    }
}

// ---------------------------------------------------------------- a composite

#[test]
fn grad_small_mlp_loss() {
    let x = randt(130, &[6, 4]);
    let inputs = [
        randt(131, &[8, 4]),
        randt(132, &[8]),
        randt(133, &[3, 8]),
        randt(134, &[3]),
    ];
    let f = |p: &[Tensor]| -> Result<Tensor> {
        let h = ops::tanh(&ops::linear(&x, &p[0], Some(&p[1]))?)?;
        let y = ops::linear(&h, &p[2], Some(&p[3]))?;
        ops::cross_entropy(&y, Target::Indices(&[0, 1, 2, 2, 1, 0]))
    };
    let err = gradcheck(f, &inputs, EPS).unwrap();
    assert!(err <= TOL, "mlp: {err:e}");
}
