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

use super::parallel::{for_chunks, for_chunks2};
use super::storage::{CpuElem, CpuStorage};
use crate::dtype::Float;
pub use crate::geometry::PlaneDims;
use crate::{DType, Result};

/// Planes whose statistics fold side by side: each is still one left fold in index order, but
/// eight of them advance together, one vector addition per position, instead of one fold
/// waiting on each scalar addition (the forward pass was bound by that wait).
const LANES: usize = 8;

/// For each lane l < `lanes` (at most `LANES`): `init_l + t(l, 0) + t(l, 1) + ... +
/// t(l, hw-1)`, left to right. The terms are laid out position-major in `scratch` ([hw][LANES],
/// lanes past `lanes` zero), so the folds are one vector of accumulators stepping through its
/// rows.
#[inline(always)]
fn fold_lanes<T: Float>(
    init: [T; LANES],
    lanes: usize,
    hw: usize,
    scratch: &mut Vec<T>,
    t: impl Fn(usize, usize) -> T,
) -> [T; LANES] {
    scratch.clear();
    scratch.resize(hw * LANES, T::ZERO);
    for l in 0..lanes {
        for (i, row) in scratch.chunks_exact_mut(LANES).enumerate() {
            row[l] = t(l, i);
        }
    }
    let mut acc = init;
    for row in scratch.chunks_exact(LANES) {
        for l in 0..LANES {
            acc[l] = acc[l] + row[l];
        }
    }
    acc
}

/// (y, per-plane statistics `[mu, d]` for the backward pass).
pub fn per_image_forward<T: Float>(
    x: &[T],
    w: Option<&[T]>,
    b: Option<&[T]>,
    d: PlaneDims,
    eps: f64,
) -> (Vec<T>, Vec<T>) {
    let (eps, n, hw) = (T::from_f64(eps), T::from_f64(d.hw as f64), d.hw);
    let mut y = vec![T::ZERO; x.len()];
    let mut st = vec![T::ZERO; d.planes * 2];
    for_chunks2(
        &mut y,
        LANES * hw,
        &mut st,
        2 * LANES,
        x.len(),
        |q, yq, sq| {
            let (p0, lanes) = (q * LANES, sq.len() / 2);
            let xq = &x[p0 * hw..][..lanes * hw];
            let mut scratch = Vec::new();
            let zero = [T::ZERO; LANES];
            let mu =
                fold_lanes(zero, lanes, hw, &mut scratch, |l, i| xq[l * hw + i]).map(|s| s / n);
            let var = fold_lanes(zero, lanes, hw, &mut scratch, |l, i| {
                let c = xq[l * hw + i] - mu[l];
                c * c
            });
            for (l, (yp, sp)) in yq.chunks_mut(hw).zip(sq.chunks_mut(2)).enumerate() {
                let (mu, dev) = (mu[l], (var[l] / n + eps).sqrt());
                (sp[0], sp[1]) = (mu, dev);
                let ch = (p0 + l) % d.channels;
                let (wc, bc) = (w.map(|w| w[ch]), b.map(|b| b[ch]));
                for (o, &v) in yp.iter_mut().zip(&xq[l * hw..][..hw]) {
                    let mut z = (v - mu) / dev;
                    if let Some(wc) = wc {
                        z = z * wc;
                    }
                    if let Some(bc) = bc {
                        z = z + bc;
                    }
                    *o = z;
                }
            }
        },
    );
    (y, st)
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
    let n = T::from_f64(d.hw as f64);
    let two = T::from_f64(2.0);
    let gx = want[0].then(|| {
        let mut gx = vec![T::ZERO; x.len()];
        for_chunks(&mut gx, d.hw, x.len(), |p, gp| {
            let (xp, gy) = (&x[p * d.hw..][..d.hw], &g[p * d.hw..][..d.hw]);
            let (mu, dev) = (st[2 * p], st[2 * p + 1]);
            let wc = w.map(|w| w[p % d.channels]);
            let gz = |i: usize| wc.map_or(gy[i], |wc| gy[i] * wc);
            let gd = (0..d.hw).fold(T::ZERO, |s, i| {
                let z = (xp[i] - mu) / dev;
                s + -(gz(i) * (z / dev))
            });
            let s = gd / (two * dev) / n;
            for (i, o) in gp.iter_mut().enumerate() {
                let t = s * (xp[i] - mu);
                *o = (gz(i) / dev + t) + t;
            }
            let sm = gp.iter().fold(T::ZERO, |a, &v| a + -v) / n;
            gp.iter_mut().for_each(|v| *v = *v + sm);
        });
        gx
    });
    let (mut gw, mut gb) = (None, None);
    if want[1] || want[2] {
        let (mut pw, mut pb) = (vec![T::ZERO; d.channels], vec![T::ZERO; d.channels]);
        for_chunks2(&mut pw, 1, &mut pb, 1, g.len(), |ch, ow, ob| {
            let (mut aw, mut ab) = (T::ZERO, T::ZERO);
            for p in (ch..d.planes).step_by(d.channels.max(1)) {
                let (xp, gy) = (&x[p * d.hw..][..d.hw], &g[p * d.hw..][..d.hw]);
                let (mu, dev) = (st[2 * p], st[2 * p + 1]);
                for (&v, &gv) in xp.iter().zip(gy) {
                    aw = aw + gv * ((v - mu) / dev);
                    ab = ab + gv;
                }
            }
            (ow[0], ob[0]) = (aw, ab);
        });
        gw = want[1].then_some(pw);
        gb = want[2].then_some(pb);
    }
    [gx, gw, gb]
}

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
        }
    }
}
