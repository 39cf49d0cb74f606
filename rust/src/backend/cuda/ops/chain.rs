//! Fused elementwise chains on the device (`fused_chain`, which the compiled backend builds):
//! one generated kernel per chain for the forward, and one per chain and set of wanted
//! gradients for the backward, written from the op table's CUDA expressions (op_table/) and
//! compiled on first use like the fixed families (`kernels::generated_family`). Each step
//! assigns its result to a `$T` variable, so it rounds exactly as its own kernel's store does,
//! and the gradients take backend/cpu/fused.rs's rules (the binary table's `da`/`db`, one
//! rounding per tensor op there): the bits of eager CUDA's ops one by one, which are the CPU's.
//! Intermediates live in registers; the backward recomputes them from the inputs.

use std::fmt::Write;

use crate::backend::cuda::{kernels, Arg, DeviceBuffer};
use crate::op_table::{BinaryOp, ChainGrad, ChainStep, UnaryOp, BINARY_INFO, UNARY_INFO};
use crate::{DType, Error, Result};

const OP: &str = "fused_chain";

/// The table's CUDA forward and gradient expressions of `u`.
fn unary_exprs(u: UnaryOp) -> Result<(&'static str, &'static str)> {
    UNARY_INFO
        .iter()
        .find(|i| i.name == u.name())
        .map(|i| (i.cuda, i.cuda_df))
        .ok_or_else(|| Error::arg(OP, format!("{} has no CUDA expression", u.name())))
}

fn binary_expr(op: BinaryOp) -> Result<&'static str> {
    BINARY_INFO
        .iter()
        .find(|i| i.name == op.name())
        .map(|i| i.cuda)
        .ok_or_else(|| Error::arg(OP, format!("{} has no CUDA expression", op.name())))
}

/// `u`'s scalar parameters as constants of the kernel's type, by their table names: the exact
/// value the unary kernel receives (a float rounds the f64 parameter as `Arg::Scalar` does).
fn params(u: UnaryOp, dtype: DType) -> String {
    let mut s = String::new();
    for (name, v) in u.params() {
        let _ = match dtype {
            DType::F32 => write!(
                s,
                "const $T {name} = __int_as_float((int)0x{:08x}u); ",
                (v as f32).to_bits()
            ),
            _ => write!(
                s,
                "const $T {name} = __longlong_as_double((long long)0x{:016x}ull); ",
                v.to_bits()
            ),
        };
    }
    s
}

/// Element `i` of chain input `k`, which holds all `n` values or repeats `len{k}` of them.
fn read(k: usize) -> String {
    format!("in{k}[len{k} == n ? i : i % len{k}]")
}

/// The statement applying `step` to the running value `v`.
fn step_code(step: &ChainStep, dtype: DType) -> Result<String> {
    Ok(match *step {
        ChainStep::Unary(u) => format!("{{ {}v = {}; }}", params(u, dtype), unary_exprs(u)?.0),
        ChainStep::Binary {
            op,
            operand,
            value_left,
        } => {
            let (a, b) = if value_left {
                ("v".to_string(), read(operand))
            } else {
                (read(operand), "v".to_string())
            };
            format!("{{ $T a = {a}; $T b = {b}; v = {}; }}", binary_expr(op)?)
        }
    })
}

/// The kernel parameters naming the chain's inputs: each one's values and length.
fn input_params(n_inputs: usize) -> String {
    (0..n_inputs)
        .map(|k| format!("const $T* __restrict__ in{k}, u64 len{k}, "))
        .collect()
}

fn forward_source(
    steps: &[ChainStep],
    n_inputs: usize,
    head: usize,
    dtype: DType,
) -> Result<String> {
    let mut body = String::new();
    for step in steps {
        let _ = writeln!(body, "        {}", step_code(step, dtype)?);
    }
    Ok(format!(
        "extern \"C\" __global__ void $NAME_$S({}$T* __restrict__ out, u64 n) {{\n\
         \x20   GRID_LOOP(i, n) {{\n\
         \x20       $T v = in{head}[i];\n{body}\
         \x20       out[i] = v;\n\
         \x20   }}\n}}\n",
        input_params(n_inputs)
    ))
}

/// The per-element gradient rules (da, db) of a binary step in `g`, the left operand `a`, the
/// right `b` and the step's output `y`, as backend/cpu/fused.rs `binary_step_grads` has them.
fn binary_rules(op: BinaryOp) -> Result<(&'static str, &'static str)> {
    Ok(match op {
        BinaryOp::Add => ("g", "g"),
        BinaryOp::Sub => ("g", "-g"),
        BinaryOp::Mul => ("g * b", "g * a"),
        BinaryOp::Div => ("g / b", "-(g * (y / b))"),
        other => {
            return Err(Error::arg(
                OP,
                format!(
                    "expected add, sub, mul or div as a binary step, got {}",
                    other.name()
                ),
            ))
        }
    })
}

/// The backward kernel: the values entering and leaving every step recomputed (`s0`..`sK`),
/// then the upstream gradient `up` carried back through the steps; input `k`'s gradient goes to
/// `o{slot[k]}` where it has a slot.
fn backward_source(
    steps: &[ChainStep],
    n_inputs: usize,
    head: usize,
    slot: &[Option<usize>],
    dtype: DType,
) -> Result<String> {
    let mut body = format!("        $T s0 = in{head}[i];\n");
    for (s, step) in steps.iter().enumerate() {
        let _ = writeln!(
            body,
            "        $T s{}; {{ $T v = s{s}; {} s{} = v; }}",
            s + 1,
            step_code(step, dtype)?,
            s + 1
        );
    }
    body.push_str("        $T up = gs[i];\n");
    for (s, step) in steps.iter().enumerate().rev() {
        let code = match *step {
            ChainStep::Unary(u) => format!(
                "{{ {}$T x = s{s}; $T y = s{}; $T g = up; up = {}; }}",
                params(u, dtype),
                s + 1,
                unary_exprs(u)?.1
            ),
            ChainStep::Binary {
                op,
                operand,
                value_left,
            } => {
                let (da, db) = binary_rules(op)?;
                let (a, b) = if value_left {
                    (format!("s{s}"), read(operand))
                } else {
                    (read(operand), format!("s{s}"))
                };
                let (gv, other) = if value_left {
                    ("ga", "gb")
                } else {
                    ("gb", "ga")
                };
                let store = slot[operand]
                    .map(|j| format!("o{j}[i] = {other}; "))
                    .unwrap_or_default();
                format!(
                    "{{ $T g = up; $T a = {a}; $T b = {b}; $T y = s{}; $T ga = {da}; $T gb = {db}; \
                     {store}up = {gv}; }}",
                    s + 1
                )
            }
        };
        let _ = writeln!(body, "        {code}");
    }
    if let Some(j) = slot[head] {
        let _ = writeln!(body, "        o{j}[i] = up;");
    }
    let outs: String = (0..slot.iter().flatten().count())
        .map(|j| format!("$T* __restrict__ o{j}, "))
        .collect();
    Ok(format!(
        "extern \"C\" __global__ void $NAME_$S({}const $T* __restrict__ gs, {outs}u64 n) {{\n\
         \x20   GRID_LOOP(i, n) {{\n{body}    }}\n}}\n",
        input_params(n_inputs)
    ))
}

/// Each input's values and length, as the kernels' leading arguments.
fn input_args<'a>(inputs: &[&'a DeviceBuffer]) -> Vec<Arg<'a>> {
    inputs
        .iter()
        .flat_map(|&b| [Arg::Buf(b), Arg::U64(b.len() as u64)])
        .collect()
}

/// The forward kernel's family for a chain of `n_inputs` inputs (registered, not yet compiled).
pub fn forward_family(
    steps: &[ChainStep],
    n_inputs: usize,
    head: usize,
    dtype: DType,
) -> Result<String> {
    let src = forward_source(steps, n_inputs, head, dtype)?;
    Ok(kernels::generated_family("chain", dtype, &src))
}

/// Which inputs share the head's gradient (wanted by both, `ChainStep::same_as_head`: written
/// once), and each other wanted input's output slot.
fn slots(steps: &[ChainStep], head: usize, want: &[bool]) -> (Vec<bool>, Vec<Option<usize>>) {
    let same = ChainStep::same_as_head(steps, want.len());
    let shared: Vec<bool> = (0..want.len())
        .map(|i| i != head && want[head] && same[i])
        .collect();
    let mut next = 0;
    let slot = (0..want.len())
        .map(|i| {
            (want[i] && !shared[i]).then(|| {
                next += 1;
                next - 1
            })
        })
        .collect();
    (shared, slot)
}

/// The backward kernel's family for the gradients marked in `want` (registered, not compiled).
pub fn backward_family(
    steps: &[ChainStep],
    head: usize,
    want: &[bool],
    dtype: DType,
) -> Result<String> {
    let (_, slot) = slots(steps, head, want);
    family_for_slots(steps, head, &slot, dtype)
}

fn family_for_slots(
    steps: &[ChainStep],
    head: usize,
    slot: &[Option<usize>],
    dtype: DType,
) -> Result<String> {
    let src = backward_source(steps, slot.len(), head, slot, dtype)?;
    Ok(kernels::generated_family("chain_grad", dtype, &src))
}

/// The chain's output, `n` elements (the op layer checked the steps, dtypes and shapes: the
/// head holds `n` values, every other input repeats over them).
pub fn chain_forward(
    steps: &[ChainStep],
    inputs: &[&DeviceBuffer],
    head: usize,
    n: usize,
) -> Result<DeviceBuffer> {
    let first = inputs[head];
    let dtype = first.dtype();
    let family = forward_family(steps, inputs.len(), head, dtype)?;
    let y = first.gpu().alloc(dtype, n)?;
    let mut args = input_args(inputs);
    args.extend([Arg::Buf(&y), Arg::U64(n as u64)]);
    first.gpu().launch(&family, &family, dtype, n, &args)?;
    Ok(y)
}

/// Full-size gradients of the inputs marked in `want` (one per input), from the upstream `g`
/// (`n` elements); an input whose gradient is the head's shares it, as on the CPU.
pub fn chain_backward(
    steps: &[ChainStep],
    inputs: &[&DeviceBuffer],
    head: usize,
    g: &DeviceBuffer,
    want: &[bool],
) -> Result<Vec<ChainGrad<DeviceBuffer>>> {
    let (dtype, n) = (g.dtype(), g.len());
    if want.len() != inputs.len() {
        return Err(Error::arg(
            OP,
            format!(
                "expected {} gradient flags, got {}",
                inputs.len(),
                want.len()
            ),
        ));
    }
    let (shared, slot) = slots(steps, head, want);
    let family = family_for_slots(steps, head, &slot, dtype)?;
    let gpu = g.gpu();
    let outs = slot
        .iter()
        .flatten()
        .map(|_| gpu.alloc(dtype, n))
        .collect::<Result<Vec<_>>>()?;
    let mut args = input_args(inputs);
    args.push(Arg::Buf(g));
    args.extend(outs.iter().map(Arg::Buf));
    args.push(Arg::U64(n as u64));
    gpu.launch(&family, &family, dtype, n, &args)?;
    let mut outs = outs.into_iter();
    Ok((0..want.len())
        .map(|i| match (want[i], shared[i]) {
            (false, _) => ChainGrad::Skip,
            (true, true) => ChainGrad::SameAsHead,
            (true, false) => outs.next().map_or(ChainGrad::Skip, ChainGrad::Own),
        })
        .collect())
}
