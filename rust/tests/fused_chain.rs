//! The fused elementwise chain op (ops/fused.rs): its value and every input's gradient against
//! the same steps run as separate ops (bit for bit), in f32 and f64, over sizes that cross the
//! kernel's blocks and thread split; and the argument checks that refuse a malformed chain.

mod common;

use common::*;
use std::sync::Arc;
use tlrs::autograd::grad;
use tlrs::op_table::{BinaryOp, ChainStep, UnaryOp};
use tlrs::ops::fused::{fused_chain, steps_one_by_one};
use tlrs::ops::{self};
use tlrs::{DType, Error, Tensor};

fn bin(op: BinaryOp, operand: usize, value_left: bool) -> ChainStep {
    ChainStep::Binary {
        op,
        operand,
        value_left,
    }
}

fn bits(t: &Tensor) -> Vec<u64> {
    vals(t).iter().map(|v| v.to_bits()).collect()
}

/// Value and gradients of sum(chain * weights) for both forms; asserts they agree bit for bit.
fn agree(steps: Vec<ChainStep>, inputs: &[Tensor], head: usize) {
    let steps: Arc<[ChainStep]> = Arc::from(steps);
    let leaves: Vec<Tensor> = inputs.iter().map(|t| t.detach_with_grad(true)).collect();
    let fused = fused_chain(&steps, &leaves, head).unwrap();
    let apart = steps_one_by_one(&steps, &leaves, head).unwrap();
    assert_eq!(bits(&fused), bits(&apart));
    // sum(y * w) for fixed random w of y's dtype: every element gets its own upstream value.
    let seed = |y: &Tensor| {
        let w = randt(99, y.dims()).to_dtype(y.dtype()).unwrap();
        ops::sum(&ops::mul(y, &w).unwrap(), None, false).unwrap()
    };
    let (gf, ga) = (
        grad(&seed(&fused), &leaves).unwrap(),
        grad(&seed(&apart), &leaves).unwrap(),
    );
    for (k, (f, a)) in gf.iter().zip(&ga).enumerate() {
        assert_eq!(f.shape(), a.shape(), "input {k}");
        assert_eq!(bits(f), bits(a), "gradient of input {k}");
    }
}

#[test]
fn every_binary_step_either_way_round_with_repeating_operands() {
    for dtype in [DType::F32, DType::F64] {
        for dims in [vec![3usize, 5], vec![40, 77], vec![9, 1000]] {
            let d = dims[1];
            let x = randt_in(1, &dims, 0.5, 2.0).to_dtype(dtype).unwrap();
            let full = randt_in(2, &dims, 0.5, 2.0).to_dtype(dtype).unwrap();
            let bias = randt_in(3, &[d], 0.5, 2.0).to_dtype(dtype).unwrap();
            let scalar = randt_in(4, &[], 0.5, 2.0).to_dtype(dtype).unwrap();
            let row = randt_in(5, &[1, d], 0.5, 2.0).to_dtype(dtype).unwrap();
            for op in [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div] {
                let steps = vec![
                    bin(op, 1, true),
                    ChainStep::Unary(UnaryOp::Tanh {}),
                    bin(op, 2, false),
                    bin(op, 3, true),
                    ChainStep::Unary(UnaryOp::LeakyRelu {
                        negative_slope: 0.2,
                    }),
                    bin(op, 4, false),
                ];
                let inputs = [
                    x.clone(),
                    full.clone(),
                    bias.clone(),
                    scalar.clone(),
                    row.clone(),
                ];
                agree(steps, &inputs, 0);
            }
        }
    }
}

#[test]
fn the_head_may_be_any_input() {
    let a = randt(6, &[4, 6]);
    let b = randt(7, &[6]);
    agree(
        vec![
            ChainStep::Unary(UnaryOp::Sigmoid {}),
            bin(BinaryOp::Mul, 0, false),
        ],
        &[b, a],
        1,
    );
}

fn refused(steps: Vec<ChainStep>, inputs: &[Tensor], head: usize) -> String {
    match fused_chain(&Arc::from(steps), inputs, head) {
        Err(e @ (Error::Arg { .. } | Error::Shape { .. })) => e.to_string(),
        Err(e) => panic!("unexpected error kind: {e}"),
        Ok(_) => panic!("a malformed chain was accepted"),
    }
}

#[test]
fn malformed_chains_are_refused_with_what_was_expected() {
    let x = randt(8, &[2, 3]);
    let relu = ChainStep::Unary(UnaryOp::Relu {});
    let msg = refused(vec![], std::slice::from_ref(&x), 0);
    assert!(msg.contains("at least one step"), "{msg}");
    let msg = refused(vec![relu], std::slice::from_ref(&x), 1);
    assert!(msg.contains("head"), "{msg}");
    let two = [x.clone(), x.clone()];
    let msg = refused(vec![bin(BinaryOp::Maximum, 1, true)], &two, 0);
    assert!(msg.contains("expected add, sub, mul or div"), "{msg}");
    let msg = refused(vec![bin(BinaryOp::Add, 2, true)], &two, 0);
    assert!(msg.contains("read once"), "{msg}");
    let msg = refused(vec![bin(BinaryOp::Add, 0, true)], &two, 0);
    assert!(msg.contains("read once"), "{msg}");
    let msg = refused(vec![relu], &two, 0);
    assert!(msg.contains("input 1 is read by no step"), "{msg}");
    let col = randt(9, &[2, 1]);
    let msg = refused(vec![bin(BinaryOp::Add, 1, true)], &[x.clone(), col], 0);
    assert!(
        msg.contains("does not repeat over the chain's shape [2, 3]"),
        "{msg}"
    );
    // An operand with more axes would broadcast the value to a larger shape: not a chain step.
    let v = randt(10, &[3]);
    let msg = refused(
        vec![bin(BinaryOp::Mul, 1, true)],
        &[v, randt(11, &[1, 3])],
        0,
    );
    assert!(
        msg.contains("does not repeat over the chain's shape [3]"),
        "{msg}"
    );
    let x32 = x.to_dtype(DType::F32).unwrap();
    let msg = refused(vec![bin(BinaryOp::Add, 1, true)], &[x.clone(), x32], 0);
    assert!(msg.contains("expected every input in float64"), "{msg}");
    let bad = ChainStep::Unary(UnaryOp::Hardtanh {
        min_val: 1.0,
        max_val: -1.0,
    });
    let msg = refused(vec![bad], std::slice::from_ref(&x), 0);
    assert!(msg.contains("hardtanh"), "{msg}");
    // The ops still work on the same tensors (nothing was left half-built).
    assert_eq!(vals(&ops::relu(&x).unwrap()).len(), 6);
}
