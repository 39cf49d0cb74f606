//! Per-image batch norm (statistics over H×W of each image and channel) in fused passes over
//! each plane. Every value is rounded exactly as the chain of elementwise ops and reductions it
//! replaces (ops/norm.rs, which keeps that chain for devices and as the tests' oracle), and the
//! gradients follow the order in which autograd accumulated them through that chain, so both
//! forms give the same bits:
//!
//! forward, per plane: `mu = (0 + x_0 + ...) / n`, `c_i = x_i - mu`,
//! `var = (0 + c_0*c_0 + ...) / n`, `d = sqrt(var + eps)`, `y_i = c_i / d * w + b`.
//!
//! backward, per plane (`gz_i = g_i * w`): `gd = 0 + -(gz_0 * (z_0 / d)) + ...`,
//! `s = gd / (2 * d) / n`, `gc_i = (gz_i / d + s * c_i) + s * c_i`,
//! `gx_i = gc_i + (0 + -gc_0 + ...) / n`; per channel, over images then positions:
//! `gw = 0 + g*z + ...`, `gb = 0 + g + ...`.
//!
//! Layer norm's rows are planes of one channel with one γ and β per position
//! (`PlaneDims::per_position`): `w` and `b` are read at the position, and `gw`, `gb` fold over
//! the planes in order at each position.

use super::parallel::{for_chunks, for_chunks2};
use super::row_folds::{fold_rows as fold_planes, LANES as LANES16};
use super::simd::wide_fn;
use super::storage::{CpuElem, CpuStorage};
use super::uninit::{assume_init, written};
use crate::dtype::Float;
pub use crate::geometry::PlaneDims;
use crate::{DType, Result};
use std::mem::MaybeUninit;

/// Planes whose statistics fold side by side (`row_folds/`).
const LANES: usize = LANES16;

// The loops over a plane are zips, never indexed closures: through a closure that indexes its
// slices LLVM kept bounds checks, and the loop ran scalar (about 30% of layer norm's forward).
// Every slice a plane's loop zips has the plane's length (checked in debug builds): a shorter
// one would leave outputs unwritten.

/// `f(&mut out[i], a[i], b[i])` for every element.
#[inline(always)]
fn zip_each<O, T: Copy>(out: &mut [O], a: &[T], b: &[T], f: impl Fn(&mut O, T, T)) {
    debug_assert!(a.len() == out.len() && b.len() == out.len());
    for ((o, &a), &b) in out.iter_mut().zip(a).zip(b) {
        f(o, a, b);
    }
}

/// `f(&mut out[i], a[i], b[i], c[i])` for every element.
#[inline(always)]
fn zip3_each<O, T: Copy>(out: &mut [O], a: &[T], b: &[T], c: &[T], f: impl Fn(&mut O, T, T, T)) {
    debug_assert!(a.len() == out.len() && b.len() == out.len() && c.len() == out.len());
    for (((o, &a), &b), &c) in out.iter_mut().zip(a).zip(b).zip(c) {
        f(o, a, b, c);
    }
}

/// (y, per-plane statistics `[mu, d]` for the backward pass).
pub fn per_image_forward<T: Float>(
    x: &[T],
    w: Option<&[T]>,
    b: Option<&[T]>,
    d: PlaneDims,
    eps: f64,
) -> (Vec<T>, Vec<T>) {
    if d.hw == 0 {
        // Empty planes: no statistics to compute (as before, zeros), nothing to normalise.
        return (Vec::new(), vec![T::ZERO; d.planes * 2]);
    }
    let affine = Affine { w, b, eps };
    let mut st = Vec::with_capacity(d.planes * 2);
    let y = written(x.len(), |y| {
        let st = &mut st.spare_capacity_mut()[..d.planes * 2];
        for_chunks2(y, LANES * d.hw, st, 2 * LANES, x.len(), |q, yq, sq| {
            forward_group_wide(x, &affine, d, q, yq, sq)
        });
    });
    // SAFETY: every plane's group wrote its two statistics (the groups cover all planes).
    unsafe { st.set_len(d.planes * 2) };
    (y, st)
}

/// The forward's per-channel parameters.
struct Affine<'a, T> {
    w: Option<&'a [T]>,
    b: Option<&'a [T]>,
    eps: f64,
}

/// Planes q·LANES .. of y and their statistics, every element of `yq` and `sq` written.
#[inline(always)]
fn forward_group<T: Float>(
    x: &[T],
    a: &Affine<T>,
    d: PlaneDims,
    q: usize,
    yq: &mut [MaybeUninit<T>],
    sq: &mut [MaybeUninit<T>],
) {
    let (eps, n, hw) = (T::from_f64(a.eps), T::from_f64(d.hw as f64), d.hw);
    let p0 = q * LANES;
    let xq = &x[p0 * hw..][..yq.len()];
    let zero = [T::ZERO; LANES];
    let mu = fold_planes(zero, xq, hw, false).map(|s| s / n);
    // The squared deviations go through y, which the last pass overwrites.
    for (l, (yp, xp)) in yq
        .chunks_mut(hw.max(1))
        .zip(xq.chunks(hw.max(1)))
        .enumerate()
    {
        for (v, &xi) in yp.iter_mut().zip(xp) {
            v.write((xi - mu[l]) * (xi - mu[l]));
        }
    }
    // SAFETY: every element of yq was just written (its planes cover it).
    let yq = unsafe { assume_init(yq) };
    let var = fold_planes(zero, yq, hw, false);
    let planes = sq.len() / 2;
    for l in 0..planes {
        let (mu, dev) = (mu[l], (var[l] / n + eps).sqrt());
        sq[2 * l].write(mu);
        sq[2 * l + 1].write(dev);
        let xp = &xq[l * hw..][..hw];
        let yp = &mut yq[l * hw..][..hw];
        let z = |x: T| (x - mu) / dev;
        if d.per_position {
            match (a.w.map(|w| &w[..hw]), a.b.map(|b| &b[..hw])) {
                (Some(w), Some(b)) => zip3_each(yp, xp, w, b, |v, x, w, b| *v = z(x) * w + b),
                (Some(w), None) => zip_each(yp, xp, w, |v, x, w| *v = z(x) * w),
                (None, Some(b)) => zip_each(yp, xp, b, |v, x, b| *v = z(x) + b),
                (None, None) => yp.iter_mut().zip(xp).for_each(|(v, &x)| *v = z(x)),
            }
        } else {
            let ch = (p0 + l) % d.channels;
            match (a.w.map(|w| w[ch]), a.b.map(|b| b[ch])) {
                (Some(w), Some(b)) => yp.iter_mut().zip(xp).for_each(|(v, &x)| *v = z(x) * w + b),
                (Some(w), None) => yp.iter_mut().zip(xp).for_each(|(v, &x)| *v = z(x) * w),
                (None, Some(b)) => yp.iter_mut().zip(xp).for_each(|(v, &x)| *v = z(x) + b),
                (None, None) => yp.iter_mut().zip(xp).for_each(|(v, &x)| *v = z(x)),
            }
        }
    }
}

/// (gx, gw, gb) for upstream `g`; gw and gb are per channel (computed when asked).
pub fn per_image_backward<T: Float>(
    g: &[T],
    x: &[T],
    st: &[T],
    w: Option<&[T]>,
    d: PlaneDims,
    want: [bool; 3],
) -> [Option<Vec<T>>; 3] {
    let gx = want[0].then(|| input_grad(g, x, st, w, d));
    let (mut gw, mut gb) = (None, None);
    if want[1] || want[2] {
        let (pw, pb) = if d.per_position {
            position_affine_grads(g, x, st, d)
        } else {
            affine_grads(g, x, st, d)
        };
        gw = want[1].then_some(pw);
        gb = want[2].then_some(pb);
    }
    [gx, gw, gb]
}

/// A plane's affine weight: none, its channel's value, or one value per position.
#[derive(Clone, Copy)]
enum Weight<'a, T> {
    None,
    Channel(T),
    Position(&'a [T]),
}

impl<'a, T: Float> Weight<'a, T> {
    fn of(w: Option<&'a [T]>, d: PlaneDims, plane: usize) -> Self {
        match w {
            None => Weight::None,
            // Sliced to a plane's length, so that loops over a plane need no bounds checks
            // (which kept them scalar).
            Some(w) if d.per_position => Weight::Position(&w[..d.hw]),
            Some(w) => Weight::Channel(w[plane % d.channels]),
        }
    }

    /// `f(&mut out[i], x[i], gz_i)` over a plane, `gz` the upstream gradient `g` through the
    /// weight: `g * w`, or `g`.
    #[inline(always)]
    fn each_gz<O>(self, out: &mut [O], x: &[T], g: &[T], f: impl Fn(&mut O, T, T)) {
        match self {
            Weight::None => zip_each(out, x, g, f),
            Weight::Channel(w) => zip_each(out, x, g, |o, x, g| f(o, x, g * w)),
            Weight::Position(w) => zip3_each(out, x, g, w, |o, x, g, w| f(o, x, g * w)),
        }
    }
}

/// gx, `LANES` planes at a time: each pass's terms are computed per plane (vectorised), then
/// the planes' folds step together.
fn input_grad<T: Float>(g: &[T], x: &[T], st: &[T], w: Option<&[T]>, d: PlaneDims) -> Vec<T> {
    // Every element is first written by the gd pass (the group's planes cover it).
    written(x.len(), |gx| {
        for_chunks(gx, LANES * d.hw, x.len(), |q, gq| {
            input_grad_group_wide(g, x, st, w, d, q, gq)
        })
    })
}

/// gx of planes q·LANES .. (compiled wide by `wide_fn!` below).
#[inline(always)]
fn input_grad_group<T: Float>(
    g: &[T],
    x: &[T],
    st: &[T],
    w: Option<&[T]>,
    d: PlaneDims,
    q: usize,
    gq: &mut [MaybeUninit<T>],
) {
    let (n, two, hw) = (T::from_f64(d.hw as f64), T::from_f64(2.0), d.hw);
    if hw == 0 {
        return; // no planes' values (gq is empty)
    }
    let p0 = q * LANES;
    let (xq, gyq) = (&x[p0 * hw..][..gq.len()], &g[p0 * hw..][..gq.len()]);
    let plane = |l: usize| {
        let p = p0 + l;
        let (xp, gy) = (&xq[l * hw..][..hw], &gyq[l * hw..][..hw]);
        (xp, gy, st[2 * p], st[2 * p + 1], Weight::of(w, d, p))
    };
    // The gd terms -(gz * (z / d)) go through gx, which the next pass overwrites.
    for (l, gp) in gq.chunks_exact_mut(hw).enumerate() {
        let gp = &mut gp[..hw]; // the length the plane's slices have: no bounds checks
        let (xp, gy, mu, dev, wt) = plane(l);
        wt.each_gz(gp, xp, gy, |v, x, gz| {
            v.write(-(gz * ((x - mu) / dev / dev)));
        });
    }
    // SAFETY: every element of gq was just written.
    let gq = unsafe { assume_init(gq) };
    let gd = fold_planes([T::ZERO; LANES], gq, hw, false);
    for (l, gp) in gq.chunks_exact_mut(hw).enumerate() {
        let gp = &mut gp[..hw]; // the length the plane's slices have: no bounds checks
        let (xp, gy, mu, dev, wt) = plane(l);
        let s = gd[l] / (two * dev) / n;
        wt.each_gz(gp, xp, gy, |v, x, gz| {
            let t = s * (x - mu);
            *v = (gz / dev + t) + t;
        });
    }
    let neg = fold_planes([T::ZERO; LANES], gq, hw, true);
    for (l, gp) in gq.chunks_exact_mut(hw).enumerate() {
        let sm = neg[l] / n;
        gp.iter_mut().for_each(|v| *v = *v + sm);
    }
}

/// (gw, gb) per channel: each a left fold over images, then positions, `LANES` channels side by
/// side, each image's terms computed per plane first.
fn affine_grads<T: Float>(g: &[T], x: &[T], st: &[T], d: PlaneDims) -> (Vec<T>, Vec<T>) {
    let (mut pw, mut pb) = (vec![T::ZERO; d.channels], vec![T::ZERO; d.channels]);
    if d.hw == 0 {
        // Empty planes: every fold is its start value.
        return (pw, pb);
    }
    for_chunks2(&mut pw, LANES, &mut pb, LANES, g.len(), |q, ow, ob| {
        channel_group_grads_wide(g, x, st, d, q, ow, ob)
    });
    (pw, pb)
}

/// gw and gb of channels q·LANES .. (compiled wide by `wide_fn!` below).
#[inline(always)]
fn channel_group_grads<T: Float>(
    g: &[T],
    x: &[T],
    st: &[T],
    d: PlaneDims,
    q: usize,
    ow: &mut [T],
    ob: &mut [T],
) {
    let (hw, c) = (d.hw, d.channels.max(1));
    let (c0, lanes) = (q * LANES, ow.len());
    let (mut aw, mut ab) = ([T::ZERO; LANES], [T::ZERO; LANES]);
    let mut terms = vec![T::ZERO; lanes * hw];
    for p0 in (c0..d.planes).step_by(c) {
        let (xq, gq) = (&x[p0 * hw..][..lanes * hw], &g[p0 * hw..][..lanes * hw]);
        for (l, tp) in terms.chunks_mut(hw).enumerate() {
            let (xp, gy) = (&xq[l * hw..][..hw], &gq[l * hw..][..hw]);
            let (mu, dev) = (st[2 * (p0 + l)], st[2 * (p0 + l) + 1]);
            zip_each(tp, xp, gy, |t, x, g| *t = g * ((x - mu) / dev));
        }
        aw = fold_planes(aw, &terms, hw, false);
        ab = fold_planes(ab, gq, hw, false);
    }
    ow.copy_from_slice(&aw[..lanes]);
    ob.copy_from_slice(&ab[..lanes]);
}

/// Positions per thread's share of the per-position γ/β gradients.
const STRETCH: usize = 64;

/// (gw, gb) per position: each a left fold over planes in order (the sum over rows that the
/// broadcast product's and sum's gradients fold), a stretch of positions per thread.
fn position_affine_grads<T: Float>(g: &[T], x: &[T], st: &[T], d: PlaneDims) -> (Vec<T>, Vec<T>) {
    let (mut pw, mut pb) = (vec![T::ZERO; d.hw], vec![T::ZERO; d.hw]);
    for_chunks2(&mut pw, STRETCH, &mut pb, STRETCH, g.len(), |q, ow, ob| {
        position_stretch_grads_wide(g, x, st, d, q * STRETCH, ow, ob)
    });
    (pw, pb)
}

/// gw and gb at positions i0 .. i0 + ow.len() (compiled wide by `wide_fn!` below).
#[inline(always)]
fn position_stretch_grads<T: Float>(
    g: &[T],
    x: &[T],
    st: &[T],
    d: PlaneDims,
    i0: usize,
    ow: &mut [T],
    ob: &mut [T],
) {
    let (hw, len) = (d.hw, ow.len());
    // Local accumulators of a constant length stay in registers across the planes.
    let (mut aw, mut ab) = ([T::ZERO; STRETCH], [T::ZERO; STRETCH]);
    for p in 0..d.planes {
        let (mu, dev) = (st[2 * p], st[2 * p + 1]);
        let (xp, gp) = (&x[p * hw + i0..][..len], &g[p * hw + i0..][..len]);
        if len == STRETCH {
            for i in 0..STRETCH {
                aw[i] = aw[i] + gp[i] * ((xp[i] - mu) / dev);
                ab[i] = ab[i] + gp[i];
            }
        } else {
            for i in 0..len {
                aw[i] = aw[i] + gp[i] * ((xp[i] - mu) / dev);
                ab[i] = ab[i] + gp[i];
            }
        }
    }
    ow.copy_from_slice(&aw[..len]);
    ob.copy_from_slice(&ab[..len]);
}

wide_fn!(fn forward_group_wide<T: Float>(
    x: &[T], a: &Affine<T>, d: PlaneDims, q: usize, yq: &mut [MaybeUninit<T>], sq: &mut [MaybeUninit<T>],
) = forward_group);
wide_fn!(fn input_grad_group_wide<T: Float>(
    g: &[T], x: &[T], st: &[T], w: Option<&[T]>, d: PlaneDims, q: usize, gq: &mut [MaybeUninit<T>],
) = input_grad_group);
wide_fn!(fn channel_group_grads_wide<T: Float>(
    g: &[T], x: &[T], st: &[T], d: PlaneDims, q: usize, ow: &mut [T], ob: &mut [T],
) = channel_group_grads);
wide_fn!(fn position_stretch_grads_wide<T: Float>(
    g: &[T], x: &[T], st: &[T], d: PlaneDims, i0: usize, ow: &mut [T], ob: &mut [T],
) = position_stretch_grads);

const OP: &str = "batch_norm";

impl CpuStorage {
    /// The per-image batch norm of `self` with optional per-channel affine parameters (all of
    /// `self`'s dtype): (y, per-plane statistics `[mu, d]` for the backward pass).
    pub fn batch_norm_per_image(
        &self,
        w: Option<&CpuStorage>,
        b: Option<&CpuStorage>,
        d: PlaneDims,
        eps: f64,
    ) -> Result<(CpuStorage, CpuStorage)> {
        fn go<T: CpuElem>(
            x: &CpuStorage,
            w: Option<&CpuStorage>,
            b: Option<&CpuStorage>,
            d: PlaneDims,
            eps: f64,
        ) -> Result<(CpuStorage, CpuStorage)> {
            let (w, b) = (
                w.map(|w| w.typed::<T>(OP)).transpose()?,
                b.map(|b| b.typed::<T>(OP)).transpose()?,
            );
            let (y, st) = per_image_forward(x.typed::<T>(OP)?, w, b, d, eps);
            Ok((T::wrap(y), T::wrap(st)))
        }
        match self.dtype() {
            DType::F32 => go::<f32>(self, w, b, d, eps),
            DType::F64 => go::<f64>(self, w, b, d, eps),
            other => Err(crate::error::not_float(OP, other)),
        }
    }

    /// Gradients (x, weight, bias) of the per-image batch norm of `self` for upstream `g`, from
    /// the forward's statistics; each computed only where `want` asks.
    pub fn batch_norm_per_image_grads(
        &self,
        w: Option<&CpuStorage>,
        stats: &CpuStorage,
        g: &CpuStorage,
        d: PlaneDims,
        want: [bool; 3],
    ) -> Result<[Option<CpuStorage>; 3]> {
        fn go<T: CpuElem>(
            x: &CpuStorage,
            w: Option<&CpuStorage>,
            st: &CpuStorage,
            g: &CpuStorage,
            d: PlaneDims,
            want: [bool; 3],
        ) -> Result<[Option<CpuStorage>; 3]> {
            let w = w.map(|w| w.typed::<T>(OP)).transpose()?;
            let (x, st, g) = (x.typed::<T>(OP)?, st.typed::<T>(OP)?, g.typed::<T>(OP)?);
            Ok(per_image_backward(g, x, st, w, d, want).map(|v| v.map(T::wrap)))
        }
        match self.dtype() {
            DType::F32 => go::<f32>(self, w, stats, g, d, want),
            DType::F64 => go::<f64>(self, w, stats, g, d, want),
            other => Err(crate::error::not_float(OP, other)),
        }
    }
}
