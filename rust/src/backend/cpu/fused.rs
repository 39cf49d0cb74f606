//! Fused elementwise chains (`op_table::ChainStep`): the forward in one pass over blocks small
//! enough for L1, and the gradients of every input in one more. Each step runs the table's own
//! per-element formula, so every intermediate rounds exactly as the op run alone would, and no
//! intermediate tensor is written to memory.

use super::parallel::for_chunks_many;
use super::simd::widest;
use super::storage::{CpuElem, CpuStorage};
use super::table_kernels::{binary_block, unary_block, unary_grad_block};
use crate::dtype::Float;
use crate::op_table::{BinaryOp, ChainGrad, ChainStep};
use crate::{DType, Error, Result};
use std::mem::MaybeUninit;

/// Elements per block: a block's intermediates (one per step) stay in L1 in the backward.
const BLOCK: usize = 512;

const OP: &str = "fused_chain";

/// The chain's inputs: each either one value per element or, broadcast over the trailing
/// axes, `len` values repeating (element `i` reads `i % len`, a scalar reads its one value).
struct Inputs<'a, T> {
    values: Vec<&'a [T]>,
}

impl<'a, T: Float> Inputs<'a, T> {
    /// Input `k`, which has one value per element (the head), over `start..start + len`.
    fn full(&self, k: usize, start: usize, len: usize) -> &'a [T] {
        &self.values[k][start..start + len]
    }

    /// Input `k` over elements `start..start + len`: borrowed where it is full, else gathered
    /// into `tmp`.
    #[inline(always)]
    fn block<'b>(&self, k: usize, start: usize, len: usize, tmp: &'b mut [T]) -> &'b [T]
    where
        'a: 'b,
    {
        let v = self.values[k];
        if start + len <= v.len() {
            // A full input, or a repeating one whose values do not wrap within this block.
            return &v[start..start + len];
        }
        let m = v.len();
        if m == 1 {
            tmp[..len].fill(v[0]);
        } else {
            // Whole runs of the repeating values, the first starting where `start` falls.
            let (mut done, mut j) = (0, start % m);
            while done < len {
                let take = (m - j).min(len - done);
                tmp[done..done + take].copy_from_slice(&v[j..j + take]);
                done += take;
                j = 0;
            }
        }
        &tmp[..len]
    }
}

/// Scratch for one claim of blocks (allocated once per claim, not per block): values after
/// each step but the last, two running values or gradients (ping-pong), and a gather buffer for
/// an operand that repeats.
struct Scratch<T> {
    vals: Vec<Vec<T>>,
    pair: [Vec<T>; 2],
    gather: Vec<T>,
}

impl<T: Float> Scratch<T> {
    /// Buffers of `len` elements (a block, or less for a smaller tensor).
    fn new(steps: usize, len: usize) -> Scratch<T> {
        let block = || vec![T::ZERO; len];
        Scratch {
            vals: (0..steps.saturating_sub(1)).map(|_| block()).collect(),
            pair: [block(), block()],
            gather: block(),
        }
    }
}

/// One step from the values `x` of the block at `start` into `out` (each table kernel's loop is
/// compiled for the widest vectors).
#[inline(always)]
fn apply<T: Float>(
    step: &ChainStep,
    inputs: &Inputs<'_, T>,
    start: usize,
    x: &[T],
    out: &mut [T],
    tmp: &mut [T],
) {
    match *step {
        ChainStep::Unary(u) => unary_block(u, x, out),
        ChainStep::Binary {
            op,
            operand,
            value_left,
        } => {
            let w = inputs.block(operand, start, x.len(), tmp);
            binary_block(op, x, w, out, value_left);
        }
    }
}

/// One binary step's gradients over a block, from the upstream `g`, the step's input values
/// `x`, operand values `w` and outputs `y`: the running value's into `gv`, the operand's into
/// `other` where asked. The binary table's `da`/`db` rules (op_table/binary.rs) evaluated per
/// element, each tensor op there one rounding here; one loop per op, so each vectorises.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn binary_step_grads<T: Float>(
    op: BinaryOp,
    value_left: bool,
    g: &[T],
    x: &[T],
    w: &[T],
    y: &[T],
    gv: &mut [T],
    other: Option<&mut [MaybeUninit<T>]>,
) {
    #[inline(always)]
    fn run<T: Float>(
        left: bool,
        (g, x, w, y): (&[T], &[T], &[T], &[T]),
        gv: &mut [T],
        other: Option<&mut [MaybeUninit<T>]>,
        rule: impl Fn(T, T, T, T) -> (T, T),
    ) {
        let n = gv.len();
        let (g, x, w, y) = (&g[..n], &x[..n], &w[..n], &y[..n]);
        // One plain loop per case, so each inlines `rule` and vectorises.
        match (other, left) {
            (Some(o), true) => widest(|| {
                let o = &mut o[..n];
                for i in 0..n {
                    let (ga, gb) = rule(g[i], x[i], w[i], y[i]);
                    gv[i] = ga;
                    o[i].write(gb);
                }
            }),
            (Some(o), false) => widest(|| {
                let o = &mut o[..n];
                for i in 0..n {
                    let (ga, gb) = rule(g[i], w[i], x[i], y[i]);
                    gv[i] = gb;
                    o[i].write(ga);
                }
            }),
            (None, true) => widest(|| (0..n).for_each(|i| gv[i] = rule(g[i], x[i], w[i], y[i]).0)),
            (None, false) => widest(|| (0..n).for_each(|i| gv[i] = rule(g[i], w[i], x[i], y[i]).1)),
        }
    }
    let args = (g, x, w, y);
    match op {
        BinaryOp::Add => run(value_left, args, gv, other, |g, _, _, _| (g, g)),
        BinaryOp::Sub => run(value_left, args, gv, other, |g, _, _, _| (g, -g)),
        BinaryOp::Mul => run(value_left, args, gv, other, |g, a, b, _| (g * b, g * a)),
        BinaryOp::Div => run(value_left, args, gv, other, |g, _, b, out| {
            (g / b, -(g * (out / b)))
        }),
        // `ChainStep::fusable_binary` admits only the four above; the op layer checks it.
        _ => unreachable!("not a chain step: {}", op.name()),
    }
}

fn forward<T: Float>(steps: &[ChainStep], inputs: &Inputs<'_, T>, head: usize, n: usize) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(n);
    // Threads where eager would thread each of the ops (the same size threshold).
    let scratch = || Scratch::<T>::new(0, BLOCK.min(n));
    let mut pieces = [&mut out.spare_capacity_mut()[..n]];
    for_chunks_many(&mut pieces, BLOCK, n, scratch, |ci, o, sc| {
        let (start, len) = (ci * BLOCK, o[0].len());
        let Scratch {
            pair: [a, b],
            gather,
            ..
        } = sc;
        let first = inputs.full(head, start, len);
        apply(&steps[0], inputs, start, first, &mut b[..len], gather);
        for step in &steps[1..] {
            std::mem::swap(a, b);
            apply(step, inputs, start, &a[..len], &mut b[..len], gather);
        }
        write(o[0], &b[..len]);
    });
    // SAFETY: for_chunks_many handed every element of the n to one block, which wrote it.
    unsafe { out.set_len(n) };
    out
}

/// The gradient of every input marked in `want` (full-size: broadcast inputs get one value per
/// element, summed to their shape by the caller, as eager sums its rules' results), from the
/// chain's output `y` and upstream `g`; an input whose gradient is the head's
/// (`ChainStep::same_as_head`) shares it when both are wanted.
fn backward<T: Float>(
    steps: &[ChainStep],
    inputs: &Inputs<'_, T>,
    head: usize,
    y: &[T],
    g: &[T],
    want: &[bool],
) -> Vec<ChainGrad<Vec<T>>> {
    let (n, k) = (g.len(), steps.len());
    let same = ChainStep::same_as_head(steps, want.len());
    let shared = |i: usize| i != head && want[head] && same[i];
    let wanted: Vec<usize> = (0..want.len()).filter(|&i| want[i] && !shared(i)).collect();
    // Where input i's gradient goes among the outputs.
    let slot: Vec<Option<usize>> = (0..want.len())
        .map(|i| wanted.iter().position(|&w| w == i))
        .collect();
    let mut outs: Vec<Vec<T>> = wanted.iter().map(|_| Vec::with_capacity(n)).collect();
    {
        let mut pieces: Vec<&mut [MaybeUninit<T>]> = outs
            .iter_mut()
            .map(|o| &mut o.spare_capacity_mut()[..n])
            .collect();
        let scratch = || Scratch::<T>::new(k, BLOCK.min(n));
        for_chunks_many(&mut pieces, BLOCK, n, scratch, |ci, o, sc| {
            let (start, len) = (ci * BLOCK, BLOCK.min(n - ci * BLOCK));
            let Scratch { vals, pair, gather } = sc;
            let first = inputs.full(head, start, len);
            // The values entering each step (the last step's output is `y`).
            for s in 0..k - 1 {
                let (done, rest) = vals.split_at_mut(s);
                let x = if s == 0 { first } else { &done[s - 1][..len] };
                apply(&steps[s], inputs, start, x, &mut rest[0][..len], gather);
            }
            let input_of = |s: usize| if s == 0 { first } else { &vals[s - 1][..len] };
            let output_of = |s: usize| {
                if s == k - 1 {
                    &y[start..start + len]
                } else {
                    &vals[s][..len]
                }
            };
            let [ga, gb] = pair;
            let mut upstream: &[T] = &g[start..start + len];
            for s in (0..k).rev() {
                let (x, out) = (input_of(s), output_of(s));
                match steps[s] {
                    // d(v + w) passes g to both unchanged: no pass over the block.
                    ChainStep::Binary {
                        op: BinaryOp::Add,
                        operand,
                        ..
                    } => {
                        if let Some(j) = slot[operand] {
                            write(&mut o[j][..len], upstream);
                        }
                        continue;
                    }
                    ChainStep::Unary(u) => unary_grad_block(u, x, out, upstream, &mut ga[..len]),
                    ChainStep::Binary {
                        op,
                        operand,
                        value_left,
                    } => {
                        let w = inputs.block(operand, start, len, gather);
                        let other = slot[operand].map(|j| &mut o[j][..len]);
                        let next = &mut ga[..len];
                        binary_step_grads(op, value_left, upstream, x, w, out, next, other);
                    }
                }
                std::mem::swap(ga, gb);
                upstream = &gb[..len];
            }
            if let Some(j) = slot[head] {
                write(&mut o[j][..len], upstream);
            }
        });
    }
    let mut outs = outs.into_iter();
    (0..want.len())
        .map(|i| {
            if !want[i] {
                ChainGrad::Skip
            } else if shared(i) {
                ChainGrad::SameAsHead
            } else {
                let mut v = outs.next().expect("one output per wanted input");
                // SAFETY: each block wrote its elements of every output: the head's at the
                // end, an operand's at its step (an operand is at one step only; the op layer
                // checks it).
                unsafe { v.set_len(n) };
                ChainGrad::Own(v)
            }
        })
        .collect()
}

fn write<T: Copy>(to: &mut [MaybeUninit<T>], from: &[T]) {
    to.iter_mut().zip(from).for_each(|(t, &f)| _ = t.write(f));
}

fn typed<'a, T: CpuElem>(inputs: &[&'a CpuStorage]) -> Result<Inputs<'a, T>> {
    Ok(Inputs {
        values: inputs
            .iter()
            .map(|s| s.typed::<T>(OP))
            .collect::<Result<_>>()?,
    })
}

fn dtype_of(inputs: &[&CpuStorage]) -> Result<DType> {
    inputs
        .first()
        .map(|s| s.dtype())
        .ok_or_else(|| Error::arg(OP, "a chain needs an input"))
}

/// The chain's output, `n` elements (the caller checked the steps and the inputs' shapes).
pub fn chain_forward(
    steps: &[ChainStep],
    inputs: &[&CpuStorage],
    head: usize,
    n: usize,
) -> Result<CpuStorage> {
    fn go<T: CpuElem>(
        steps: &[ChainStep],
        inputs: &[&CpuStorage],
        head: usize,
        n: usize,
    ) -> Result<CpuStorage> {
        Ok(T::wrap(forward(steps, &typed::<T>(inputs)?, head, n)))
    }
    match dtype_of(inputs)? {
        DType::F32 => go::<f32>(steps, inputs, head, n),
        DType::F64 => go::<f64>(steps, inputs, head, n),
        other => Err(crate::error::not_float("fused_chain", other)),
    }
}

/// Full-size gradients of the inputs marked in `want`, from the chain's output `y` and
/// upstream `g` (both `n` elements).
pub fn chain_backward(
    steps: &[ChainStep],
    inputs: &[&CpuStorage],
    head: usize,
    y: &CpuStorage,
    g: &CpuStorage,
    want: &[bool],
) -> Result<Vec<ChainGrad<CpuStorage>>> {
    fn go<T: CpuElem>(
        steps: &[ChainStep],
        inputs: &[&CpuStorage],
        head: usize,
        (y, g): (&CpuStorage, &CpuStorage),
        want: &[bool],
    ) -> Result<Vec<ChainGrad<CpuStorage>>> {
        let (y, g) = (y.typed::<T>(OP)?, g.typed::<T>(OP)?);
        if y.len() != g.len() {
            return Err(Error::shape(
                OP,
                format!(
                    "expected a gradient of {} elements, got {}",
                    y.len(),
                    g.len()
                ),
            ));
        }
        let grads = backward(steps, &typed::<T>(inputs)?, head, y, g, want);
        Ok(grads.into_iter().map(|v| v.map(T::wrap)).collect())
    }
    match dtype_of(inputs)? {
        DType::F32 => go::<f32>(steps, inputs, head, (y, g), want),
        DType::F64 => go::<f64>(steps, inputs, head, (y, g), want),
        other => Err(crate::error::not_float("fused_chain", other)),
    }
}
