//! A block of 32 channels between channel-major rows ([32, P], as tensors hold them) and
//! position-major vectors ([P, 32], as the kernels' lanes hold them), through 16 × 16 tiles
//! transposed in registers: 16 vector loads and stores per tile instead of 256 scalar ones.

use super::LANES;
use crate::backend::cpu::tile16::tile;
use crate::geometry::Activation;
use std::arch::x86_64::*;
use std::mem::MaybeUninit;

/// `Activation::Relu` on 16 lanes: v where v > 0 or NaN (the unordered "not <=" compare),
/// else +0.0, so -0.0 becomes +0.0 as the `relu` op makes it.
#[target_feature(enable = "avx512f")]
unsafe fn relu(v: __m512) -> __m512 {
    _mm512_maskz_mov_ps(_mm512_cmp_ps_mask::<_CMP_NLE_UQ>(v, _mm512_setzero_ps()), v)
}

/// y[j, at + p] = act(sums[p][j] (+ bias[j])) for the 32 channels j of a block and the P
/// positions p that `sums` holds (P × 32 values, position-major); `y` is [32, plane] with
/// at + P <= plane.
///
/// # Safety
/// The CPU must have AVX-512F.
#[target_feature(enable = "avx512f")]
pub unsafe fn block_out(
    sums: &[f32],
    bias: Option<&[f32]>,
    act: Activation,
    y: &mut [MaybeUninit<f32>],
    at: usize,
) {
    let plane = y.len() / (2 * LANES);
    let p = sums.len() / (2 * LANES);
    assert!(sums.len() == p * 2 * LANES && y.len() == plane * 2 * LANES && at + p <= plane);
    assert!(bias.is_none_or(|b| b.len() == 2 * LANES));
    let dst = (y.as_mut_ptr() as *mut f32).add(at);
    for half in 0..2 {
        let b = match bias {
            Some(b) => _mm512_loadu_ps(b.as_ptr().add(half * LANES)),
            None => _mm512_setzero_ps(),
        };
        let whole = p / LANES * LANES;
        for p0 in (0..whole).step_by(LANES) {
            let mut r = [_mm512_setzero_ps(); LANES];
            for (i, r) in r.iter_mut().enumerate() {
                let v = _mm512_loadu_ps(sums.as_ptr().add((p0 + i) * 2 * LANES + half * LANES));
                // Adding 0.0 to a sum leaves it as it is except -0.0, which the lowering's
                // bias-free output also keeps; so only a real bias is added.
                let v = if bias.is_some() {
                    _mm512_add_ps(v, b)
                } else {
                    v
                };
                *r = match act {
                    Activation::None => v,
                    Activation::Relu => relu(v),
                };
            }
            let c = tile(r);
            for (j, c) in c.iter().enumerate() {
                _mm512_storeu_ps(dst.add((half * LANES + j) * plane + p0), *c);
            }
        }
        for q in whole..p {
            for j in 0..LANES {
                let ch = half * LANES + j;
                let v = sums[q * 2 * LANES + ch];
                *dst.add(ch * plane + q) = act.finish(v, bias.map(|b| b[ch]));
            }
        }
    }
}

/// dst[p][j] = rows[j·P + p] for the 32 channel rows j of a block and positions p < P (the
/// inverse layout change of `block_out`, without a bias): `rows` is [32, P], `dst` [P, 32].
///
/// # Safety
/// The CPU must have AVX-512F.
#[target_feature(enable = "avx512f")]
pub unsafe fn block_in(rows: &[f32], dst: &mut [MaybeUninit<f32>]) {
    let p = rows.len() / (2 * LANES);
    assert!(rows.len() == p * 2 * LANES && dst.len() == p * 2 * LANES);
    let out = dst.as_mut_ptr() as *mut f32;
    let whole = p / LANES * LANES;
    for half in 0..2 {
        for p0 in (0..whole).step_by(LANES) {
            let mut r = [_mm512_setzero_ps(); LANES];
            for (j, r) in r.iter_mut().enumerate() {
                *r = _mm512_loadu_ps(rows.as_ptr().add((half * LANES + j) * p + p0));
            }
            for (i, c) in tile(r).iter().enumerate() {
                _mm512_storeu_ps(out.add((p0 + i) * 2 * LANES + half * LANES), *c);
            }
        }
    }
    for q in whole..p {
        for j in 0..2 * LANES {
            *out.add(q * 2 * LANES + j) = rows[j * p + q];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ReLU epilogue, in the vector tiles and the scalar tail, has the `relu` op's bits on
    /// -0.0 (made +0.0), NaN (kept), infinities, subnormals and ordinary values.
    #[test]
    fn block_out_relu_has_the_relu_ops_bits() {
        if !super::super::cpu_has_them() {
            return;
        }
        let special = [
            -0.0,
            0.0,
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ];
        let tiny = [
            1e-40,
            -1e-40,
            2.5,
            -2.5,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
        ];
        let (p, plane, at) = (19usize, 23usize, 2usize);
        let sums: Vec<f32> = (0..p * 32)
            .map(|i| [special, tiny][i % 2][(i / 2 + i / 32) % 6])
            .collect();
        for bias in [None, Some(vec![-0.0f32; 32])] {
            let mut y = vec![MaybeUninit::new(7.0f32); plane * 32];
            // SAFETY: AVX-512F checked above; the slices have the sizes asserted inside.
            unsafe { block_out(&sums, bias.as_deref(), Activation::Relu, &mut y, at) };
            for j in 0..32 {
                let pre: Vec<f32> = (0..p)
                    .map(|q| match &bias {
                        Some(b) => sums[q * 32 + j] + b[j],
                        None => sums[q * 32 + j],
                    })
                    .collect();
                let want =
                    crate::backend::cpu::table_kernels::unary(crate::op_table::UnaryOp::Relu, &pre);
                for q in 0..p {
                    // SAFETY: written by `block_out`.
                    let got = unsafe { y[j * plane + at + q].assume_init() };
                    assert_eq!(
                        got.to_bits(),
                        want[q].to_bits(),
                        "j {j} q {q} pre {}",
                        pre[q]
                    );
                }
            }
        }
    }

    #[test]
    fn block_out_transposes_every_tile_and_tail_position() {
        if !super::super::cpu_has_them() {
            return;
        }
        for (p, plane, at) in [
            (1usize, 1usize, 0usize),
            (15, 20, 5),
            (16, 16, 0),
            (17, 40, 23),
            (40, 40, 0),
            (64, 70, 3),
        ] {
            let sums: Vec<f32> = (0..p * 32).map(|i| i as f32 * 0.5 - 7.0).collect();
            let bias: Vec<f32> = (0..32).map(|j| j as f32 * 0.25).collect();
            for with_bias in [false, true] {
                let mut y = vec![MaybeUninit::new(f32::NAN); plane * 32];
                let b = with_bias.then_some(&bias[..]);
                // SAFETY: AVX-512F checked above; the slices have the sizes asserted inside.
                unsafe { block_out(&sums, b, Activation::None, &mut y, at) };
                for j in 0..32 {
                    for q in 0..plane {
                        // SAFETY: initialised (NaN, or written by `block_out`).
                        let got = unsafe { y[j * plane + q].assume_init() };
                        if q < at || q >= at + p {
                            assert!(got.is_nan(), "p {p} j {j} q {q}: outside the span");
                            continue;
                        }
                        let v = sums[(q - at) * 32 + j];
                        let want = v + if with_bias { bias[j] } else { 0.0 };
                        assert_eq!(got, want, "p {p} j {j} q {q}");
                    }
                }
            }
        }
    }

    #[test]
    fn block_in_is_block_out_inverted() {
        if !super::super::cpu_has_them() {
            return;
        }
        for p in [1usize, 15, 16, 17, 40, 64] {
            let rows: Vec<f32> = (0..p * 32).map(|i| i as f32 * 0.5 - 7.0).collect();
            let mut dst = vec![MaybeUninit::new(f32::NAN); p * 32];
            // SAFETY: AVX-512F checked above; the slices have the sizes asserted inside.
            unsafe { block_in(&rows, &mut dst) };
            for j in 0..32 {
                for q in 0..p {
                    // SAFETY: every element was written by `block_in` (NaN otherwise).
                    let got = unsafe { dst[q * 32 + j].assume_init() };
                    assert_eq!(got, rows[j * p + q], "p {p} j {j} q {q}");
                }
            }
        }
    }
}
