//! The reference optimizers as native elementwise updates, with the same formulas and the same
//! evaluation order as `tlrs.optim` (each operation rounded once in the parameter's dtype), so
//! the compiled backend's training steps equal eager ones bit for bit.

use crate::storage::{CpuElem, CpuStorage};
use crate::{DType, Error, Result, Tensor};
use std::cell::RefCell;
use std::collections::HashMap;

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
            "momentum_sgd" => OptimKind::MomentumSgd {
                lr: h("lr")?,
                momentum: h("momentum")?,
            },
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

thread_local! {
    /// The last `beta^t` computed per (beta, dtype): training asks for t, t+1, ... so each step
    /// costs one multiplication, however long training has run.
    static POWERS: RefCell<HashMap<(u64, DType), (u64, f64)>> = RefCell::new(HashMap::new());
}

/// `beta^t` in T by repeated multiplication from 1 (the reference's order), continued from the
/// last power computed for this beta and dtype when `t` has not gone back.
fn power<T: CpuElem>(beta: f64, t: u64) -> T {
    let key = (beta.to_bits(), T::DTYPE);
    let (mut k, mut pow) = POWERS
        .with(|p| p.borrow().get(&key).copied())
        .filter(|&(k, _)| k <= t)
        .map(|(k, v)| (k, T::from_f64(v)))
        .unwrap_or((0, T::ONE));
    let b = T::from_f64(beta);
    while k < t {
        pow = pow * b;
        k += 1;
    }
    // f32 -> f64 -> f32 is exact, so one f64 cache serves both dtypes.
    POWERS.with(|p| p.borrow_mut().insert(key, (t, pow.to_f64())));
    pow
}

/// `1 / (1 - beta^t)` in T.
fn bias_correction<T: CpuElem>(beta: f64, t: u64) -> T {
    T::ONE / (T::ONE - power::<T>(beta, t))
}

fn update_typed<T: CpuElem>(
    kind: OptimKind,
    t: u64,
    p: &[T],
    g: &[T],
    slots: &[&[T]],
) -> (Vec<T>, Vec<Vec<T>>) {
    let c = T::from_f64;
    let n = p.len();
    let mut np = Vec::with_capacity(n);
    match kind {
        OptimKind::Sgd { lr } => {
            let lr = c(lr);
            np.extend((0..n).map(|i| p[i] - g[i] * lr));
            (np, vec![])
        }
        OptimKind::MomentumSgd { lr, momentum } => {
            let (lr, mu) = (c(lr), c(momentum));
            let buf: Vec<T> = (0..n).map(|i| slots[0][i] * mu + g[i]).collect();
            np.extend((0..n).map(|i| p[i] - buf[i] * lr));
            (np, vec![buf])
        }
        OptimKind::Adagrad { lr, eps } => {
            let (lr, eps) = (c(lr), c(eps));
            let acc: Vec<T> = (0..n).map(|i| slots[0][i] + g[i] * g[i]).collect();
            np.extend((0..n).map(|i| p[i] - (lr / (acc[i].sqrt() + eps)) * g[i]));
            (np, vec![acc])
        }
        OptimKind::Rmsprop { lr, decay, eps } => {
            let (lr, d, eps) = (c(lr), c(decay), c(eps));
            let rest = T::ONE - d;
            let v: Vec<T> = (0..n)
                .map(|i| slots[0][i] * d + (g[i] * g[i]) * rest)
                .collect();
            np.extend((0..n).map(|i| p[i] - (lr / (v[i].sqrt() + eps)) * g[i]));
            (np, vec![v])
        }
        OptimKind::Adam {
            lr,
            beta1,
            beta2,
            eps,
        }
        | OptimKind::AdamW {
            lr,
            beta1,
            beta2,
            eps,
            ..
        } => {
            let (lr_t, b1, b2, eps_t) = (c(lr), c(beta1), c(beta2), c(eps));
            let (r1, r2) = (T::ONE - b1, T::ONE - b2);
            let (bc1, bc2) = (
                bias_correction::<T>(beta1, t),
                bias_correction::<T>(beta2, t),
            );
            let m: Vec<T> = (0..n).map(|i| slots[0][i] * b1 + g[i] * r1).collect();
            let v: Vec<T> = (0..n)
                .map(|i| slots[1][i] * b2 + (g[i] * g[i]) * r2)
                .collect();
            let decay = match kind {
                OptimKind::AdamW { weight_decay, .. } => Some(lr_t * c(weight_decay)),
                _ => None,
            };
            np.extend((0..n).map(|i| {
                let delta = (lr_t / ((v[i] * bc2).sqrt() + eps_t)) * (m[i] * bc1);
                let base = match decay {
                    Some(d) => p[i] - p[i] * d,
                    None => p[i],
                };
                base - delta
            }));
            (np, vec![m, v])
        }
        OptimKind::Adadelta { lr, rho, eps } => {
            let (rho, eps, neg_lr) = (c(rho), c(eps), -c(lr));
            let rest = T::ONE - rho;
            let v: Vec<T> = (0..n)
                .map(|i| slots[0][i] * rho + (g[i] * g[i]) * rest)
                .collect();
            let delta: Vec<T> = (0..n)
                .map(|i| (((slots[1][i] + eps).sqrt() / (v[i] + eps).sqrt()) * neg_lr) * g[i])
                .collect();
            let u: Vec<T> = (0..n)
                .map(|i| slots[1][i] * rho + (delta[i] * delta[i]) * rest)
                .collect();
            np.extend((0..n).map(|i| p[i] + delta[i]));
            (np, vec![v, u])
        }
    }
}

fn typed<'a, T: CpuElem>(t: &'a Tensor, like: &Tensor) -> Result<&'a [T]> {
    if t.shape() != like.shape() {
        return Err(Error::shape(
            "optim",
            format!("expected shape {}, got {}", like.shape(), t.shape()),
        ));
    }
    T::view(t.cpu()?).ok_or_else(|| crate::storage::dtype_mismatch("optim", T::DTYPE, t.dtype()))
}

fn run<T: CpuElem>(
    kind: OptimKind,
    t: u64,
    p: &Tensor,
    g: &Tensor,
    slots: &[Tensor],
) -> Result<(CpuStorage, Vec<CpuStorage>)> {
    let pv = typed::<T>(p, p)?;
    let gv = typed::<T>(g, p)?;
    let sv = slots
        .iter()
        .map(|s| typed::<T>(s, p))
        .collect::<Result<Vec<_>>>()?;
    let (np, ns) = update_typed(kind, t, pv, gv, &sv);
    Ok((T::wrap(np), ns.into_iter().map(T::wrap).collect()))
}

/// One update of one parameter at step `t` (1-based); returns the new value and slots.
pub fn update(
    kind: OptimKind,
    t: u64,
    p: &Tensor,
    g: &Tensor,
    slots: &[Tensor],
) -> Result<(Tensor, Vec<Tensor>)> {
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
    let (np, ns) = match p.dtype() {
        DType::F32 => run::<f32>(kind, t, p, g, slots)?,
        DType::F64 => run::<f64>(kind, t, p, g, slots)?,
    };
    let shape = p.shape().clone();
    let slots = ns
        .into_iter()
        .map(|s| Tensor::from_cpu(s, shape.clone()))
        .collect::<Result<Vec<_>>>()?;
    Ok((Tensor::from_cpu(np, shape)?, slots))
}

#[cfg(test)]
mod tests {
    use super::power;

    fn naive<T: crate::storage::CpuElem>(beta: f64, t: u64) -> T {
        let b = T::from_f64(beta);
        (0..t).fold(T::ONE, |p, _| p * b)
    }

    #[test]
    fn cached_powers_equal_repeated_multiplication_in_any_order() {
        for &t in &[0u64, 1, 2, 3, 10, 9, 1000, 999, 5, 100_000, 100_001] {
            assert_eq!(power::<f32>(0.999, t).to_bits(), naive::<f32>(0.999, t).to_bits());
            assert_eq!(power::<f64>(0.999, t).to_bits(), naive::<f64>(0.999, t).to_bits());
            assert_eq!(power::<f64>(0.9, t).to_bits(), naive::<f64>(0.9, t).to_bits());
        }
    }
}
