//! The formulas over CPU buffers, written into the parameter's and slots' own buffers when the
//! update holds them alone (the compiled loop's parameters after its first step, an eager
//! `Module`'s own parameters), else into the spent gradient's buffer where the caller gives it
//! up (the compiled loop's first step), else into copies. Elements are independent, so chunks run across the pool and the bits depend on
//! neither the thread count nor the path taken (nor the vector width the loops are compiled
//! for: the same IEEE operations per element, no fused multiply-adds).

use super::formula::{step, Arith, Consts, Rule};
use super::OptimKind;
use crate::backend::cpu::{parallel, simd};
use crate::storage::{try_alloc, CpuElem};
use crate::{Result, Tensor};
use std::convert::Infallible;
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

/// The gradient an update reads: borrowed, or owned and spent (its buffer may then hold the new
/// parameter).
pub enum Grad<'a> {
    Borrowed(&'a Tensor),
    Spent(Tensor),
}

/// Updates `p` and `slots` (as many as `kind` uses) by one step of `kind` with gradient `g`.
/// Where `p` is shared (its owner still holds it) and a spent `g` is not, the new values go
/// into `g`'s buffer, which becomes `p`: one pass, no copy of `p` first (the compiled loop's
/// first step, whose parameters the module still holds: ResNet-18 copied 45 MB per call).
pub fn update<T: CpuElem + Arith<Error = Infallible>>(
    kind: OptimKind,
    k: &Consts,
    p: &mut Tensor,
    g: Grad<'_>,
    slots: &mut [Tensor],
) -> Result<()> {
    let p_shared = p.cpu_mut().and_then(T::view_mut).is_none();
    let (s0, s1) = match slots {
        [] => (None, None),
        [a] => (Some(writable::<T>(a)?), None),
        [a, b, ..] => (Some(writable::<T>(a)?), Some(writable::<T>(b)?)),
    };
    let owned;
    let g: &Tensor = match g {
        Grad::Borrowed(g) => g,
        Grad::Spent(mut g) => {
            if p_shared {
                if let Some(into) = g.cpu_mut().and_then(T::view_mut) {
                    rule_run(kind, k, into, Source::Param(super::view::<T>(p)?), s0, s1);
                    *p = g;
                    return Ok(());
                }
            }
            owned = g;
            &owned
        }
    };
    let pv = writable::<T>(p)?;
    rule_run(kind, k, pv, Source::Grad(super::view::<T>(g)?), s0, s1);
    Ok(())
}

/// `run` for `kind`'s rule.
fn rule_run<T: CpuElem + Arith<Error = Infallible>>(
    kind: OptimKind,
    k: &Consts,
    pv: &mut [T],
    gv: Source<'_, T>,
    s0: Option<&mut [T]>,
    s1: Option<&mut [T]>,
) {
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

/// Where a piece's update reads its inputs: `Grad(g)` updates the parameter values in place;
/// `Param(p)` finds the gradient in the written slice and the parameter in `p`, and leaves the
/// new parameter where the gradient was (the same element operations either way).
#[derive(Clone, Copy)]
enum Source<'a, T> {
    Grad(&'a [T]),
    Param(&'a [T]),
}

impl<'a, T> Source<'a, T> {
    fn split_at(self, n: usize) -> (Source<'a, T>, Source<'a, T>) {
        match self {
            Source::Grad(g) => {
                let (h, t) = g.split_at(n);
                (Source::Grad(h), Source::Grad(t))
            }
            Source::Param(p) => {
                let (h, t) = p.split_at(n);
                (Source::Param(h), Source::Param(t))
            }
        }
    }
}

type Piece<'a, T> = (
    &'a mut [T],
    Source<'a, T>,
    Option<&'a mut [T]>,
    Option<&'a mut [T]>,
);

fn run<T: CpuElem + Arith<Error = Infallible>, const R: u8>(
    k: &Consts,
    p: &mut [T],
    g: Source<'_, T>,
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
fn one<T: CpuElem + Arith<Error = Infallible>>(
    rule: Rule,
    k: &Consts,
    p: &mut T,
    g: &T,
    a: T,
    b: T,
) -> (T, T) {
    let Ok((q, [na, nb])) = step(rule, k, p, g, &[a, b]);
    *p = q;
    (na, nb)
}

/// `apply` compiled for AVX-512 where the CPU has it (the same IEEE operations per element, so
/// the same bits). A dedicated wrapper, not `simd::widest`: through a closure the loop stayed
/// out of line at SSE width.
fn apply_widest<T: CpuElem + Arith<Error = Infallible>, const R: u8>(
    k: &Consts,
    piece: Piece<'_, T>,
) {
    #[cfg(target_arch = "x86_64")]
    if simd::has_avx512() {
        // SAFETY: the features it is compiled for were just detected on this CPU.
        return unsafe { apply_avx512::<T, R>(k, piece) };
    }
    apply(const { rule_of(R) }, k, piece)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx")]
unsafe fn apply_avx512<T: CpuElem + Arith<Error = Infallible>, const R: u8>(
    k: &Consts,
    piece: Piece<'_, T>,
) {
    apply(const { rule_of(R) }, k, piece)
}

// Index loops, not iterator chains: a chain's `fold` stayed out of line, outside the AVX-512
// wrapper.
#[inline(always)]
fn apply<T: CpuElem + Arith<Error = Infallible>>(
    rule: Rule,
    k: &Consts,
    (p, src, s0, s1): Piece<'_, T>,
) {
    match src {
        Source::Grad(g) => apply_in_place(rule, k, (p, g, s0, s1)),
        Source::Param(old) => apply_into_grad(rule, k, (p, old, s0, s1)),
    }
}

type Slices<'a, T> = (
    &'a mut [T],
    &'a [T],
    Option<&'a mut [T]>,
    Option<&'a mut [T]>,
);

/// p updated in place from g.
#[inline(always)]
fn apply_in_place<T: CpuElem + Arith<Error = Infallible>>(
    rule: Rule,
    k: &Consts,
    (p, g, s0, s1): Slices<'_, T>,
) {
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

/// `g` holds the gradient: each element becomes the updated parameter, from the old one in
/// `old` (the operations of `apply_in_place`, element by element, so the same bits).
#[inline(always)]
fn apply_into_grad<T: CpuElem + Arith<Error = Infallible>>(
    rule: Rule,
    k: &Consts,
    (g, old, s0, s1): Slices<'_, T>,
) {
    let n = g.len();
    let old = &old[..n];
    // Index loops with the element's steps written out, as in `apply_in_place`: a closure here
    // stayed out of line, one call per element.
    match (s0, s1) {
        (None, _) => {
            for i in 0..n {
                let (gi, mut v) = (g[i], old[i]);
                one(rule, k, &mut v, &gi, T::ZERO, T::ZERO);
                g[i] = v;
            }
        }
        (Some(a), None) => {
            let a = &mut a[..n];
            for i in 0..n {
                let (gi, mut v) = (g[i], old[i]);
                a[i] = one(rule, k, &mut v, &gi, a[i], T::ZERO).0;
                g[i] = v;
            }
        }
        (Some(a), Some(b)) => {
            let (a, b) = (&mut a[..n], &mut b[..n]);
            for i in 0..n {
                let (gi, mut v) = (g[i], old[i]);
                (a[i], b[i]) = one(rule, k, &mut v, &gi, a[i], b[i]);
                g[i] = v;
            }
        }
    }
}
