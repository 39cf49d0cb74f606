//! The formulas over CPU buffers, written into the parameter's and slots' own buffers when the
//! update holds them alone (the compiled loop's parameters after its first step, an eager
//! `Module`'s own parameters), else into
//! copies. Elements are independent, so chunks run across the pool and the bits depend on
//! neither the thread count nor the path taken (nor the vector width the loops are compiled
//! for: the same IEEE operations per element, no fused multiply-adds).

use super::formula::{step, Arith, Consts, Rule};
use super::OptimKind;
use crate::backend::cpu::{parallel, simd};
use crate::storage::{try_alloc, CpuElem};
use crate::{Result, Tensor};
use std::sync::Mutex;

/// Elements per chunk handed to a worker.
const CHUNK: usize = 1 << 14;
/// An update is a light pass over memory, often still in the calling core's cache from the
/// backward pass: parameters under 2^18 elements (1 MiB in f32) are updated on the calling
/// thread. Measured with the spinning team: MLP 784-128-10 compiled, batch 1 0.052 -> 0.034 ms
/// per step, batch 32 0.128 -> 0.150 ms (there the products already spread the data).
const PAR_SHARE: usize = (1 << 18) / parallel::PAR_MIN_ELEMS;

/// `t`'s elements for writing: in place when `t` is its storage's sole owner, else a copy that
/// replaces it (a failed allocation is an out-of-memory error).
fn writable<T: CpuElem>(t: &mut Tensor) -> Result<&mut [T]> {
    if t.cpu_mut().and_then(T::view_mut).is_none() {
        let src = super::view::<T>(t)?;
        let mut copy = try_alloc::<T>(src.len())?;
        copy.extend_from_slice(src);
        *t = Tensor::from_cpu(T::wrap(copy), t.shape().clone())?;
    }
    // A fresh copy has one owner, so this only fails if the dtype was wrong (checked above).
    let dtype = t.dtype();
    t.cpu_mut()
        .and_then(T::view_mut)
        .ok_or_else(|| crate::storage::dtype_mismatch("optim", T::DTYPE, dtype))
}

/// Updates `p` and `slots` (as many as `kind` uses) by one step of `kind` with gradient `g`.
pub fn update<T: CpuElem + Arith>(
    kind: OptimKind,
    k: &Consts,
    p: &mut Tensor,
    g: &Tensor,
    slots: &mut [Tensor],
) -> Result<()> {
    let gv = super::view::<T>(g)?;
    let pv = writable::<T>(p)?;
    let (s0, s1) = match slots {
        [] => (None, None),
        [a] => (Some(writable::<T>(a)?), None),
        [a, b, ..] => (Some(writable::<T>(a)?), Some(writable::<T>(b)?)),
    };
    // One instance per rule, the rule a constant: each loop has the formula's match folded away.
    match kind.rule() {
        Rule::Sgd => run::<T, 0>(k, pv, gv, s0, s1),
        Rule::MomentumSgd => run::<T, 1>(k, pv, gv, s0, s1),
        Rule::Adagrad => run::<T, 2>(k, pv, gv, s0, s1),
        Rule::Rmsprop => run::<T, 3>(k, pv, gv, s0, s1),
        Rule::Adam => run::<T, 4>(k, pv, gv, s0, s1),
        Rule::AdamW => run::<T, 5>(k, pv, gv, s0, s1),
        Rule::Adadelta => run::<T, 6>(k, pv, gv, s0, s1),
    }
    Ok(())
}

/// The rule numbered `r` in `update`'s match.
const fn rule_of(r: u8) -> Rule {
    match r {
        0 => Rule::Sgd,
        1 => Rule::MomentumSgd,
        2 => Rule::Adagrad,
        3 => Rule::Rmsprop,
        4 => Rule::Adam,
        5 => Rule::AdamW,
        _ => Rule::Adadelta,
    }
}

type Piece<'a, T> = (
    &'a mut [T],
    &'a [T],
    Option<&'a mut [T]>,
    Option<&'a mut [T]>,
);

fn run<T: CpuElem + Arith, const R: u8>(
    k: &Consts,
    p: &mut [T],
    g: &[T],
    s0: Option<&mut [T]>,
    s1: Option<&mut [T]>,
) {
    if p.len() <= CHUNK {
        return apply_widest::<T, R>(k, (p, g, s0, s1));
    }
    let p_len = p.len();
    let mut pieces: Vec<Piece<'_, T>> = Vec::new();
    let (mut p, mut g, mut s0, mut s1) = (p, g, s0, s1);
    while !p.is_empty() {
        let n = CHUNK.min(p.len());
        let (ph, pt) = std::mem::take(&mut p).split_at_mut(n);
        let (gh, gt) = g.split_at(n);
        let (ah, at) = split(s0.take(), n);
        let (bh, bt) = split(s1.take(), n);
        pieces.push((ph, gh, ah, bh));
        (p, g, s0, s1) = (pt, gt, at, bt);
    }
    // Each piece is taken by the one item that claims its index.
    let pieces: Vec<Mutex<Option<Piece<'_, T>>>> =
        pieces.into_iter().map(|p| Mutex::new(Some(p))).collect();
    parallel::team_for(pieces.len(), p_len / PAR_SHARE, |i| {
        if let Some(pc) = pieces[i].lock().ok().and_then(|mut p| p.take()) {
            apply_widest::<T, R>(k, pc)
        }
    });
}

fn split<T>(s: Option<&mut [T]>, n: usize) -> (Option<&mut [T]>, Option<&mut [T]>) {
    match s {
        Some(s) => {
            let (h, t) = s.split_at_mut(n);
            (Some(h), Some(t))
        }
        None => (None, None),
    }
}

/// One element: updates `p` and returns the new slot values.
#[inline(always)]
fn one<T: CpuElem + Arith>(rule: Rule, k: &Consts, p: &mut T, g: &T, a: T, b: T) -> (T, T) {
    // Element arithmetic cannot fail: every `?` in the formula is an `Ok`.
    match step(rule, k, p, g, &[a, b]) {
        Ok((q, [na, nb])) => {
            *p = q;
            (na, nb)
        }
        Err(_) => (a, b),
    }
}

/// `apply` compiled for AVX-512 where the CPU has it (the same IEEE operations per element, so
/// the same bits). A dedicated wrapper, not `simd::widest`: through a closure the loop stayed
/// out of line at SSE width.
fn apply_widest<T: CpuElem + Arith, const R: u8>(k: &Consts, piece: Piece<'_, T>) {
    #[cfg(target_arch = "x86_64")]
    if simd::has_avx512() {
        // SAFETY: the features it is compiled for were just detected on this CPU.
        return unsafe { apply_avx512::<T, R>(k, piece) };
    }
    apply(const { rule_of(R) }, k, piece)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx")]
unsafe fn apply_avx512<T: CpuElem + Arith, const R: u8>(k: &Consts, piece: Piece<'_, T>) {
    apply(const { rule_of(R) }, k, piece)
}

// Index loops, not iterator chains: a chain's `fold` stayed out of line, outside the AVX-512
// wrapper.
#[inline(always)]
fn apply<T: CpuElem + Arith>(rule: Rule, k: &Consts, (p, g, s0, s1): Piece<'_, T>) {
    let n = p.len();
    let g = &g[..n];
    match (s0, s1) {
        (None, _) => {
            for i in 0..n {
                one(rule, k, &mut p[i], &g[i], T::ZERO, T::ZERO);
            }
        }
        (Some(a), None) => {
            let a = &mut a[..n];
            for i in 0..n {
                a[i] = one(rule, k, &mut p[i], &g[i], a[i], T::ZERO).0;
            }
        }
        (Some(a), Some(b)) => {
            let (a, b) = (&mut a[..n], &mut b[..n]);
            for i in 0..n {
                (a[i], b[i]) = one(rule, k, &mut p[i], &g[i], a[i], b[i]);
            }
        }
    }
}
