//! Each optimizer's update written once, over an `Arith`: one element of a CPU buffer (`f32`,
//! `f64`), or a whole tensor (each operation one op, so one kernel on a device). Every
//! operation is rounded once in the parameter's dtype, in the order written here, which is the
//! reference's order: the two forms give the same bits.

use super::OptimKind;
use crate::storage::CpuElem;
use crate::{ops, DType, Result, Tensor};
use std::cell::RefCell;
use std::collections::HashMap;
use std::convert::Infallible;

/// The arithmetic the formulas are written in. Element arithmetic cannot fail (its error type
/// is `Infallible`, so an element's update carries no error to check or drop: with one, the
/// per-element loop called an out-of-line drop of the error for every element); tensor
/// arithmetic can.
pub trait Arith: Sized + Clone {
    type Error;
    fn add(&self, o: &Self) -> std::result::Result<Self, Self::Error>;
    fn sub(&self, o: &Self) -> std::result::Result<Self, Self::Error>;
    fn mul(&self, o: &Self) -> std::result::Result<Self, Self::Error>;
    fn div(&self, o: &Self) -> std::result::Result<Self, Self::Error>;
    fn sqrt(&self) -> std::result::Result<Self, Self::Error>;
    /// A constant already rounded to the dtype (an f64 holds any f32 exactly).
    fn lit(&self, v: f64) -> Self;
}

macro_rules! element_arith {
    ($t:ty) => {
        impl Arith for $t {
            type Error = Infallible;
            #[inline(always)]
            fn add(&self, o: &Self) -> std::result::Result<Self, Infallible> {
                Ok(self + o)
            }
            #[inline(always)]
            fn sub(&self, o: &Self) -> std::result::Result<Self, Infallible> {
                Ok(self - o)
            }
            #[inline(always)]
            fn mul(&self, o: &Self) -> std::result::Result<Self, Infallible> {
                Ok(self * o)
            }
            #[inline(always)]
            fn div(&self, o: &Self) -> std::result::Result<Self, Infallible> {
                Ok(self / o)
            }
            #[inline(always)]
            fn sqrt(&self) -> std::result::Result<Self, Infallible> {
                Ok(<$t>::sqrt(*self))
            }
            #[inline(always)]
            fn lit(&self, v: f64) -> Self {
                v as $t
            }
        }
    };
}
element_arith!(f32);
element_arith!(f64);

impl Arith for Tensor {
    type Error = crate::Error;
    fn add(&self, o: &Self) -> Result<Self> {
        ops::add(self, o)
    }
    fn sub(&self, o: &Self) -> Result<Self> {
        ops::sub(self, o)
    }
    fn mul(&self, o: &Self) -> Result<Self> {
        ops::mul(self, o)
    }
    fn div(&self, o: &Self) -> Result<Self> {
        ops::div(self, o)
    }
    fn sqrt(&self) -> Result<Self> {
        ops::sqrt(self)
    }
    fn lit(&self, v: f64) -> Self {
        // A CPU scalar meeting a device tensor goes to the kernel by value.
        Tensor::scalar(v, self.dtype())
    }
}

/// The constants of one step, each rounded to the dtype (`hyper`, `1 - hyper`, bias
/// corrections, `lr * weight_decay`, `-lr`); which fields a kind uses is its formula's business.
#[derive(Clone, Copy, Default)]
pub struct Consts {
    lr: f64,
    /// momentum, decay, beta1 or rho, and one minus it.
    a: f64,
    a_rest: f64,
    /// beta2, and one minus it.
    b: f64,
    b_rest: f64,
    eps: f64,
    /// `1 / (1 - beta^t)` for beta1 and beta2.
    bc1: f64,
    bc2: f64,
    lr_wd: f64,
    neg_lr: f64,
}

impl Consts {
    pub fn of<T: CpuElem>(kind: OptimKind, t: u64) -> Consts {
        let c = |v: f64| T::from_f64(v);
        let f = |v: T| v.to_f64();
        let rest = |v: f64| f(T::ONE - c(v));
        let mut k = Consts::default();
        match kind {
            OptimKind::Sgd { lr } => k.lr = f(c(lr)),
            OptimKind::MomentumSgd { lr, momentum } => {
                (k.lr, k.a) = (f(c(lr)), f(c(momentum)));
            }
            OptimKind::Adagrad { lr, eps } => (k.lr, k.eps) = (f(c(lr)), f(c(eps))),
            OptimKind::Rmsprop { lr, decay, eps } => {
                (k.lr, k.a, k.a_rest, k.eps) = (f(c(lr)), f(c(decay)), rest(decay), f(c(eps)));
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
                (k.lr, k.eps) = (f(c(lr)), f(c(eps)));
                (k.a, k.a_rest, k.b, k.b_rest) =
                    (f(c(beta1)), rest(beta1), f(c(beta2)), rest(beta2));
                (k.bc1, k.bc2) = (
                    f(bias_correction::<T>(beta1, t)),
                    f(bias_correction::<T>(beta2, t)),
                );
                if let OptimKind::AdamW { weight_decay, .. } = kind {
                    k.lr_wd = f(c(lr) * c(weight_decay));
                }
            }
            OptimKind::Adadelta { lr, rho, eps } => {
                (k.a, k.a_rest, k.eps, k.neg_lr) = (f(c(rho)), rest(rho), f(c(eps)), f(-c(lr)));
            }
        }
        k
    }
}

/// The `lr / (sqrt(d) + eps)` factor, formed before it multiplies the gradient or moment.
#[inline(always)]
fn adaptive<A: Arith>(k: &Consts, d: &A) -> std::result::Result<A, A::Error> {
    d.lit(k.lr).div(&d.sqrt()?.add(&d.lit(k.eps))?)
}

/// Which formula an update runs: the optimizer's kind without its hyper-parameters (those are
/// in `Consts`). A literal `Rule` lets a loop over elements fold the choice away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    Sgd,
    MomentumSgd,
    Adagrad,
    Rmsprop,
    Adam,
    AdamW,
    Adadelta,
}

impl OptimKind {
    pub fn rule(&self) -> Rule {
        match self {
            OptimKind::Sgd { .. } => Rule::Sgd,
            OptimKind::MomentumSgd { .. } => Rule::MomentumSgd,
            OptimKind::Adagrad { .. } => Rule::Adagrad,
            OptimKind::Rmsprop { .. } => Rule::Rmsprop,
            OptimKind::Adam { .. } => Rule::Adam,
            OptimKind::AdamW { .. } => Rule::AdamW,
            OptimKind::Adadelta { .. } => Rule::Adadelta,
        }
    }
}

/// One update: (new parameter, new slots); unused slots of a kind come back as given.
#[inline(always)]
pub fn step<A: Arith>(
    rule: Rule,
    k: &Consts,
    p: &A,
    g: &A,
    s: &[A; 2],
) -> std::result::Result<(A, [A; 2]), A::Error> {
    let l = |v: f64| p.lit(v);
    Ok(match rule {
        Rule::Sgd => (p.sub(&g.mul(&l(k.lr))?)?, s.clone()),
        Rule::MomentumSgd => {
            let buf = s[0].mul(&l(k.a))?.add(g)?;
            (p.sub(&buf.mul(&l(k.lr))?)?, [buf, s[1].clone()])
        }
        Rule::Adagrad => {
            let acc = s[0].add(&g.mul(g)?)?;
            (p.sub(&adaptive(k, &acc)?.mul(g)?)?, [acc, s[1].clone()])
        }
        Rule::Rmsprop => {
            let v = s[0].mul(&l(k.a))?.add(&g.mul(g)?.mul(&l(k.a_rest))?)?;
            (p.sub(&adaptive(k, &v)?.mul(g)?)?, [v, s[1].clone()])
        }
        Rule::Adam | Rule::AdamW => {
            let m = s[0].mul(&l(k.a))?.add(&g.mul(&l(k.a_rest))?)?;
            let v = s[1].mul(&l(k.b))?.add(&g.mul(g)?.mul(&l(k.b_rest))?)?;
            let delta = adaptive(k, &v.mul(&l(k.bc2))?)?.mul(&m.mul(&l(k.bc1))?)?;
            let base = match rule {
                Rule::AdamW => p.sub(&p.mul(&l(k.lr_wd))?)?,
                _ => p.clone(),
            };
            (base.sub(&delta)?, [m, v])
        }
        Rule::Adadelta => {
            let v = s[0].mul(&l(k.a))?.add(&g.mul(g)?.mul(&l(k.a_rest))?)?;
            let ratio = s[1]
                .add(&l(k.eps))?
                .sqrt()?
                .div(&v.add(&l(k.eps))?.sqrt()?)?;
            let delta = ratio.mul(&l(k.neg_lr))?.mul(g)?;
            let u = s[1]
                .mul(&l(k.a))?
                .add(&delta.mul(&delta)?.mul(&l(k.a_rest))?)?;
            (p.add(&delta)?, [v, u])
        }
    })
}

thread_local! {
    /// The last `beta^t` computed per (beta, dtype): training asks for t, t+1, ... so each step
    /// costs one multiplication, however long training has run.
    static POWERS: RefCell<HashMap<(u64, DType), (u64, f64)>> = RefCell::new(HashMap::new());
}

/// `beta^t` in T by repeated multiplication from 1 (the reference's order), continued from the
/// last power computed for this beta and dtype when `t` has not gone back.
pub fn power<T: CpuElem>(beta: f64, t: u64) -> T {
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
