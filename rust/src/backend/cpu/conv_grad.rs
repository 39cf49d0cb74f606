//! Gradients of conv2d's input and weight through the im2col lowering (conv.rs). Small feature
//! maps fold groups of images into the products' spatial axis (per-image products would be
//! thin); feature maps of `BATCH_BELOW` positions or more run one pair of products per image,
//! images across threads, and add the images' weight gradients in image order. Which form runs is
//! a function of the kernel kind and the shapes, never of the thread count. The input gradient
//! is skipped when nothing needs it (a network's first layer). The direct kernels
//! (`conv_direct/`) take either gradient where they cover the shapes; the lowering then
//! computes only what they left.

use super::conv::{
    clear_wrapped, col2im, conv2d_with, group_size, im2col, product_auto, Weights, BATCH_BELOW,
    PAR_MIN_FLOPS,
};
use super::matmul::{product_into, GemmElem};
use super::parallel::{for_chunks, for_chunks2, for_each_chunk, worth_threads};
use super::uninit::{assume_init, filled, written};
use crate::geometry::{Activation, ConvDims};
use crate::Result;
use std::mem::MaybeUninit;

/// Elements of the weight gradient one thread sums at a time (a span stays in L1 while every
/// image's part streams past it).
const SUM_SPAN: usize = 2048;

/// (input gradient when `need_x`, weight gradient when `need_w`), or an out-of-memory error for
/// a lowering workspace that cannot be allocated.
pub fn conv2d_grads<T: GemmElem>(
    g: &[T],
    x: &[T],
    wt: &[T],
    d: ConvDims,
    fast: bool,
    [need_x, need_w]: [bool; 2],
) -> Result<Grads<T>> {
    let per_image = d.oh * d.ow >= BATCH_BELOW;
    // On per-image-sized maps, the weight gradient from the direct kernel (either kind) where it
    // covers the geometry. The input gradient from the direct reference kernel where it covers
    // the geometry, or with fast kernels on per-image-sized maps as a convolution.
    let gw = (need_w && per_image)
        .then(|| T::direct_weight_grad(g, x, &d, fast))
        .flatten();
    // Fast kernels on small maps: the flipped-kernel convolution by the small-map kernel,
    // which reads W in place (8 images of 512 channels at 2×2: 0.76 -> 0.53 ms on 2 threads).
    let small = || {
        transposed_dims(&d)
            .and_then(|dt| T::fast_small_maps(g, wt, None, &dt, Activation::None, true))
    };
    let gx = if !need_x {
        None
    } else if let Some(gx) = fast.then(small).flatten() {
        Some(gx)
    } else if fast {
        // Its product has C rows: too few below 32 (3 input channels at 32x32, 8 images, f32:
        // forward + backward 28 GFLOP/s this way, 34 through gcols; 32 channels: even; 64: ahead).
        // On maps below the per-image size, only where the direct forward takes it, with folds
        // of up to 576 terms (4×4 maps of 64 channels, 32 images, forward + backward 1.27 ->
        // 0.79 ms; of 256 channels, 8 images, 2.07 -> 2.12; through the GEMM, 2×2 maps of 512
        // channels, 3.21 -> 3.28).
        transposed_dims(&d)
            .filter(|dt| {
                let narrow = dt.c * dt.kh * dt.kw <= 576 && T::direct_forward_applies(dt);
                d.c >= 32 && (per_image || narrow)
            })
            .map(|dt| {
                conv2d_with(
                    g,
                    Weights::Flipped { wt, forward: &d },
                    None,
                    dt,
                    Activation::None,
                    true,
                )
            })
    } else {
        T::direct_input_grad(g, wt, &d)
    };
    let need = Need {
        x: need_x && gx.is_none(),
        w: need_w && gw.is_none(),
    };
    let (gx_lowered, gw_lowered) = if !need.x && !need.w {
        (None, None)
    } else if per_image {
        grads_per_image(g, x, wt, d, fast, need)?
    } else {
        // Reference kernels keep the whole batch in one product (one fold over (n, oy, ox) per
        // weight gradient); fast kernels bound the columns' memory by grouping images.
        let g_images = if fast { group_size(&d) } else { d.n.max(1) };
        grads_batched(g, x, wt, d, fast, need, g_images)?
    };
    Ok((gx.or(gx_lowered), gw.or(gw_lowered)))
}

/// Refuses a workspace of `n` elements of `T` that cannot be allocated here.
fn check_workspace<T>(what: &str, n: usize) -> Result<()> {
    let bytes = n.saturating_mul(std::mem::size_of::<T>());
    crate::alloc::check_bytes("conv2d", what, bytes)
}

/// (input gradient, weight gradient), each where asked for.
pub type Grads<T> = (Option<Vec<T>>, Option<Vec<T>>);

/// Which gradients the lowering still has to compute.
#[derive(Clone, Copy)]
struct Need {
    x: bool,
    w: bool,
}

/// The convolution whose output is the input gradient, when the forward one has stride 1 and a
/// square kernel no wider than twice its padding plus one: gX = gY, padded by (k - 1 - pad), cross-
/// correlated with the flipped kernel W'[c, o, ky, kx] = W[o, c, k-1-ky, k-1-kx]. Fast kernels
/// take it instead of gcols + col2im: its product has OC·K² terms per output where gcols' has
/// OC, and nothing is scattered back (the additions come in another order, within the fast
/// kernels' tolerance).
fn transposed_dims(d: &ConvDims) -> Option<ConvDims> {
    let pad = d.kh.checked_sub(1)?.checked_sub(d.pad)?;
    (d.stride == 1 && d.kh == d.kw).then_some(ConvDims {
        n: d.n,
        c: d.oc,
        h: d.oh,
        w: d.ow,
        oc: d.c,
        kh: d.kh,
        kw: d.kw,
        stride: 1,
        pad,
        oh: d.h,
        ow: d.w,
    })
}

/// Per image: gW_n = gY colsᵀ and gcols = Wᵀ gY (then col2im); the
/// weight gradient adds the images' gW_n in image order.
fn grads_per_image<T: GemmElem>(
    g: &[T],
    x: &[T],
    wt: &[T],
    d: ConvDims,
    fast: bool,
    need: Need,
) -> Result<Grads<T>> {
    let (plane, kk, img) = (d.oh * d.ow, d.c * d.kh * d.kw, d.c * d.h * d.w);
    let parts = if need.w { d.n * d.oc * kk } else { 0 };
    // One weight gradient per image: N·OC·CKK, larger than every operand when CKK > P.
    check_workspace::<T>("the per-image weight gradients", parts)?;
    let mut gx = vec![T::ZERO; if need.x { d.n * img } else { 0 }];
    let mut per_image = Vec::with_capacity(parts);
    let per_image_out = &mut per_image.spare_capacity_mut()[..parts];
    // One image alone threads inside its products; several run one image per thread.
    let prod =
        |m, n, k, a: (&[T], usize, usize), b: (&[T], usize, usize), c: &mut [MaybeUninit<T>]| {
            if d.n == 1 {
                product_auto(fast, m, n, k, a, b, c)
            } else {
                product_into(fast, m, n, k, a.0, a.1, a.2, b.0, b.1, b.2, c, false)
            }
        };
    let one = |n: usize, gxn: Option<&mut [T]>, gwn: Option<&mut [MaybeUninit<T>]>| {
        let gy = &g[n * d.oc * plane..][..d.oc * plane];
        if let Some(gwn) = gwn {
            // gW_n = gY [OC, P] @ colsᵀ [P, CKK]
            let cols = im2col(x, d, n, 1);
            prod(d.oc, kk, plane, (gy, plane, 1), (&cols, 1, plane), gwn);
        }
        if let Some(gxn) = gxn {
            // gcols = Wᵀ [CKK, OC] @ gY [OC, P]
            let mut gcols = written(kk * plane, |c| {
                prod(kk, plane, d.oc, (wt, 1, kk), (gy, plane, 1), c)
            });
            clear_wrapped(&mut gcols, plane, 1, d);
            col2im(&gcols, plane, 0, d, gxn);
        }
    };
    let gw_chunk = (d.oc * kk).max(1);
    let work = if worth_threads(d.n * d.oc * plane * kk, PAR_MIN_FLOPS) && d.n > 1 {
        usize::MAX
    } else {
        0
    };
    // One item per image (never grouped: an image's products are heavy whatever its size).
    // (An empty image has no input gradient to add into, and every weight gradient to write.)
    match (need.x && img > 0, need.w) {
        (true, true) => for_chunks2(
            &mut gx,
            img,
            per_image_out,
            gw_chunk,
            work,
            |n, gxn, gwn| one(n, Some(gxn), Some(gwn)),
        ),
        (true, false) => for_each_chunk(&mut gx, img, work, |n, gxn| one(n, Some(gxn), None)),
        (false, true) => for_each_chunk(per_image_out, gw_chunk, work, |n, gwn| {
            one(n, None, Some(gwn))
        }),
        (false, false) => {}
    }
    // SAFETY: each image's product wrote its [OC, CKK] chunk, and the chunks cover the n images
    // (none when the weight gradient is not needed).
    unsafe { per_image.set_len(parts) };
    Ok((
        need.x.then_some(gx),
        need.w
            .then(|| sum_in_image_order(&per_image, gw_chunk, d.n)),
    ))
}

/// Elementwise sum of `n` consecutive parts of `len` elements, each element a left fold from 0
/// over the parts in order (the bits do not depend on how the elements are split over threads).
fn sum_in_image_order<T: GemmElem>(parts: &[T], len: usize, n: usize) -> Vec<T> {
    written(len, |gw| {
        for_chunks(gw, SUM_SPAN, len * n, |s, out| {
            let j0 = s * SUM_SPAN;
            out.iter_mut().for_each(|v| _ = v.write(T::ZERO));
            // SAFETY: every element was written just above.
            let out = unsafe { assume_init(out) };
            for part in parts.chunks_exact(len).take(n) {
                let src = &part[j0..j0 + out.len()];
                out.iter_mut().zip(src).for_each(|(a, &b)| *a = *a + b);
            }
        })
    })
}

/// Groups of `group` images folded into the products' spatial axis: with gY as [OC, G·P] and
/// the images' columns side by side as [CKK, G·P], gW = gY · colsᵀ is one product per group
/// (groups' results added in order) and gcols = Wᵀ · gY another, scattered back per image by
/// col2im.
fn grads_batched<T: GemmElem>(
    g: &[T],
    x: &[T],
    wt: &[T],
    d: ConvDims,
    fast: bool,
    need: Need,
    group: usize,
) -> Result<Grads<T>> {
    let (plane, kk, img) = (d.oh * d.ow, d.c * d.kh * d.kw, d.c * d.h * d.w);
    // The reference kernels' one group is the whole batch: its columns [CKK, N·P] can be far
    // larger than x (an empty x with padding) or gY.
    let np_max = group.min(d.n) * plane;
    check_workspace::<T>("the columns of the batch", kk.saturating_mul(np_max))?;
    let mut gx = vec![T::ZERO; if need.x { d.n * img } else { 0 }];
    let mut gw: Option<Vec<T>> = None;
    for n0 in (0..d.n).step_by(group) {
        let gn = group.min(d.n - n0);
        let np = gn * plane;
        // [OC, G·P]: gY with the image axis moved next to the spatial one.
        let gy = filled(d.oc * np, np.max(1), d.oc * np, |o, row| {
            for (i, r) in row.chunks_mut(plane.max(1)).enumerate() {
                let src = &g[((n0 + i) * d.oc + o) * plane..][..plane];
                r.iter_mut().zip(src).for_each(|(r, &v)| _ = r.write(v));
            }
        });
        if need.w {
            // gW (+)= gY [OC, G·P] @ colsᵀ [G·P, CKK]
            let cols = im2col(x, d, n0, gn);
            let part = written(d.oc * kk, |c| {
                product_auto(fast, d.oc, kk, np, (&gy, np, 1), (&cols, 1, np), c)
            });
            match gw.as_mut() {
                None => gw = Some(part),
                Some(gw) => gw.iter_mut().zip(&part).for_each(|(a, &b)| *a = *a + b),
            }
        }
        if need.x {
            // gcols = Wᵀ [CKK, OC] @ gY [OC, G·P], then each image's columns back into it.
            // Fast kernels on thin products read W once, unpacked (8 images of 512 channels at
            // 2×2: gX 1.6 -> 0.6 ms on 2 threads).
            let direct = fast
                .then(|| T::fast_input_cols(wt, &gy, kk, d.oc, np))
                .flatten();
            let mut gcols = direct.unwrap_or_else(|| {
                written(kk * np, |c| {
                    product_auto(fast, kk, np, d.oc, (wt, 1, kk), (&gy, np, 1), c)
                })
            });
            clear_wrapped(&mut gcols, np, gn, d);
            let dst = &mut gx[n0 * img..][..gn * img];
            for_chunks(dst, img.max(1), dst.len() * d.kh * d.kw, |i, gxi| {
                col2im(&gcols, np, i * plane, d, gxi)
            });
        }
    }
    let gw = need
        .w
        .then(|| gw.unwrap_or_else(|| vec![T::ZERO; d.oc * kk]));
    Ok((need.x.then_some(gx), gw))
}
