//! The reference optimizers, the one implementation behind `tlrs.optim`, the compiled backend's
//! native loop and CUDA parameters alike: each formula is written once (`formula.rs`) and runs
//! element by element on CPU buffers or as device ops, each operation rounded once in the
//! parameter's dtype.

mod cpu;
mod formula;

use crate::storage::CpuElem;
use crate::{DType, Error, Result, Tensor};
use formula::{step, Consts};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OptimKind {
    Sgd {
        lr: f64,
    },
    MomentumSgd {
        lr: f64,
        momentum: f64,
    },
    Adagrad {
        lr: f64,
        eps: f64,
    },
    Rmsprop {
        lr: f64,
        decay: f64,
        eps: f64,
    },
    Adam {
        lr: f64,
        beta1: f64,
        beta2: f64,
        eps: f64,
    },
    AdamW {
        lr: f64,
        weight_decay: f64,
        beta1: f64,
        beta2: f64,
        eps: f64,
    },
    Adadelta {
        lr: f64,
        rho: f64,
        eps: f64,
    },
}

impl OptimKind {
    /// From the Python optimizer's kind and hyper-parameters.
    pub fn parse(kind: &str, hyper: &dyn Fn(&str) -> Option<f64>) -> Result<OptimKind> {
        let h = |name: &str| {
            hyper(name).ok_or_else(|| {
                Error::arg("optim", format!("{kind}: missing hyper-parameter '{name}'"))
            })
        };
        Ok(match kind {
            "sgd" => OptimKind::Sgd { lr: h("lr")? },
            // TorchLean's Muon with its identity orthogonaliser updates as momentum SGD exactly
            // (its theorem `update_identity_param_eq_momentumSGD`); projected SGD with the
            // identity projector is SGD (`projectedSGDUpdate_identity_eq_sgd`). Other backends
            // run in Python (tlrs.optim), outside the native loop.
            "momentum_sgd" | "muon" => OptimKind::MomentumSgd {
                lr: h("lr")?,
                momentum: h("momentum")?,
            },
            "projected_sgd" => OptimKind::Sgd { lr: h("lr")? },
            "adagrad" => OptimKind::Adagrad {
                lr: h("lr")?,
                eps: h("eps")?,
            },
            "rmsprop" => OptimKind::Rmsprop {
                lr: h("lr")?,
                decay: h("decay")?,
                eps: h("eps")?,
            },
            "adam" => OptimKind::Adam {
                lr: h("lr")?,
                beta1: h("beta1")?,
                beta2: h("beta2")?,
                eps: h("eps")?,
            },
            "adamw" => OptimKind::AdamW {
                lr: h("lr")?,
                weight_decay: h("weight_decay")?,
                beta1: h("beta1")?,
                beta2: h("beta2")?,
                eps: h("eps")?,
            },
            "adadelta" => OptimKind::Adadelta {
                lr: h("lr")?,
                rho: h("rho")?,
                eps: h("eps")?,
            },
            other => return Err(Error::arg("optim", format!("unknown optimizer '{other}'"))),
        })
    }

    /// How many state tensors each parameter carries.
    pub fn slot_count(&self) -> usize {
        match self {
            OptimKind::Sgd { .. } => 0,
            OptimKind::MomentumSgd { .. }
            | OptimKind::Adagrad { .. }
            | OptimKind::Rmsprop { .. } => 1,
            OptimKind::Adam { .. } | OptimKind::AdamW { .. } | OptimKind::Adadelta { .. } => 2,
        }
    }
}

/// One update of one parameter at step `t` (1-based); returns the new value and slots. CPU
/// tensors run the formulas element by element in one pass, writing into `p`'s and the slots'
/// buffers when this call holds them alone (else into copies: a tensor someone else can see is
/// never changed); device tensors run the same formulas as device ops (one kernel per
/// operation), so both round every operation the same.
pub fn update(
    kind: OptimKind,
    t: u64,
    mut p: Tensor,
    g: &Tensor,
    mut slots: Vec<Tensor>,
) -> Result<(Tensor, Vec<Tensor>)> {
    update_in_place(kind, t, &mut p, g, &mut slots)?;
    Ok((p, slots))
}

/// As `update`, spending the gradient: where `p` is shared, its buffer may receive the new
/// values instead of a copy of `p` (a loop whose caller still holds the parameters).
pub fn update_spending(
    kind: OptimKind,
    t: u64,
    mut p: Tensor,
    g: Tensor,
    mut slots: Vec<Tensor>,
) -> Result<(Tensor, Vec<Tensor>)> {
    update_with(kind, t, &mut p, cpu::Grad::Spent(g), &mut slots)?;
    Ok((p, slots))
}

/// As `update`, replacing `p` and `slots` with the results: on the CPU their buffers are
/// written in place when nothing else holds them, so an owner that hands out only copies of
/// its handles (the eager `Module`) updates without allocating. On error nothing changes.
pub fn update_in_place(
    kind: OptimKind,
    t: u64,
    p: &mut Tensor,
    g: &Tensor,
    slots: &mut [Tensor],
) -> Result<()> {
    update_with(kind, t, p, cpu::Grad::Borrowed(g), slots)
}

fn update_with(
    kind: OptimKind,
    t: u64,
    p: &mut Tensor,
    grad: cpu::Grad<'_>,
    slots: &mut [Tensor],
) -> Result<()> {
    let g = match &grad {
        cpu::Grad::Borrowed(g) => *g,
        cpu::Grad::Spent(g) => g,
    };
    if slots.len() != kind.slot_count() {
        return Err(Error::arg(
            "optim",
            format!(
                "expected {} state tensors per parameter, got {}",
                kind.slot_count(),
                slots.len()
            ),
        ));
    }
    for (what, x) in std::iter::once(("gradient", g)).chain(slots.iter().map(|s| ("state", s))) {
        if x.shape() != p.shape() || x.dtype() != p.dtype() || x.device() != p.device() {
            return Err(Error::shape(
                "optim",
                format!(
                    "the {what} must match its parameter ({} {} on {}), got {} {} on {}",
                    p.dtype(),
                    p.shape(),
                    p.device(),
                    x.dtype(),
                    x.shape(),
                    x.device()
                ),
            ));
        }
    }
    let k = match p.dtype() {
        DType::F32 => Consts::of::<f32>(kind, t),
        DType::F64 => Consts::of::<f64>(kind, t),
        other => return Err(crate::error::not_float("optim", other)),
    };
    if !p.on_host() {
        let (q, out) = crate::autograd::no_grad(|| on_tensors(kind, &k, p, g, slots))?;
        *p = q;
        slots.iter_mut().zip(out).for_each(|(s, o)| *s = o);
        return Ok(());
    }
    match p.dtype() {
        DType::F32 => cpu::update::<f32>(kind, &k, p, grad, slots),
        DType::F64 => cpu::update::<f64>(kind, &k, p, grad, slots),
        other => Err(crate::error::not_float("optim", other)),
    }
}

fn view<T: CpuElem>(t: &Tensor) -> Result<&[T]> {
    T::view(t.cpu()?).ok_or_else(|| crate::storage::dtype_mismatch("optim", T::DTYPE, t.dtype()))
}

/// The formulas over whole tensors (device tensors: one kernel per operation).
fn on_tensors(
    kind: OptimKind,
    k: &Consts,
    p: &Tensor,
    g: &Tensor,
    slots: &[Tensor],
) -> Result<(Tensor, Vec<Tensor>)> {
    let s = [
        slots.first().unwrap_or(p).clone(),
        slots.get(1).unwrap_or(p).clone(),
    ];
    let (q, out) = step(kind.rule(), k, p, g, &s)?;
    Ok((q, out.into_iter().take(kind.slot_count()).collect()))
}

#[cfg(test)]
mod tests {
    use super::formula::power;

    fn naive<T: crate::storage::CpuElem>(beta: f64, t: u64) -> T {
        let b = T::from_f64(beta);
        (0..t).fold(T::ONE, |p, _| p * b)
    }

    #[test]
    fn cached_powers_equal_repeated_multiplication_in_any_order() {
        for &t in &[0u64, 1, 2, 3, 10, 9, 1000, 999, 5, 100_000, 100_001] {
            assert_eq!(
                power::<f32>(0.999, t).to_bits(),
                naive::<f32>(0.999, t).to_bits()
            );
            assert_eq!(
                power::<f64>(0.999, t).to_bits(),
                naive::<f64>(0.999, t).to_bits()
            );
            assert_eq!(
                power::<f64>(0.9, t).to_bits(),
                naive::<f64>(0.9, t).to_bits()
            );
        }
    }
}
