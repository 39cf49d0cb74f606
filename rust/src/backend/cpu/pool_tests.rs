//! The 2 x 2 pooling kernel (`pool_2x2.rs`) against this module's scalar window walk.

use super::max_window;
use crate::backend::cpu::pool_2x2::{applies, plane};
use crate::geometry::PoolDims;
use std::mem::MaybeUninit;

/// Every output and winner equals the scalar window walk's (`max_window`), bit for bit, on
/// planes of odd and even sizes (tails of 1-15 outputs, unused last rows and columns) with
/// ties, both zeros, both NaN signs and infinities in the windows.
#[test]
fn equals_the_scalar_window_walk() {
    if !super::super::simd::has_avx512() {
        return;
    }
    let values = [
        0.0,
        -0.0,
        1.5,
        1.5,
        -2.0,
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.25,
    ];
    let mut s = 12345u64;
    for (h, w) in [
        (2, 2),
        (3, 5),
        (4, 31),
        (5, 32),
        (6, 33),
        (9, 47),
        (2, 64),
        (7, 66),
    ] {
        let (oh, ow) = (h / 2, w / 2);
        let d = PoolDims::square(1, h, w, 2, 2, 0, oh, ow);
        assert!(applies(&d));
        let x: Vec<f32> = (0..h * w)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                values[(s >> 33) as usize % values.len()]
            })
            .collect();
        let mut y = vec![MaybeUninit::new(7.0f32); oh * ow];
        let mut arg = vec![MaybeUninit::new(usize::MAX); oh * ow];
        // SAFETY: AVX-512 checked above.
        unsafe { plane(&x, &d, &mut y, &mut arg) };
        // SAFETY: initialised above (and rewritten by `plane`).
        let (y, arg): (Vec<f32>, Vec<usize>) = unsafe {
            (
                y.iter().map(|v| v.assume_init()).collect(),
                arg.iter().map(|v| v.assume_init()).collect(),
            )
        };
        for oy in 0..oh {
            for ox in 0..ow {
                let (want, want_arg) = max_window(&x, &d, oy, ox);
                let at = oy * ow + ox;
                assert_eq!(y[at].to_bits(), want.to_bits(), "{h}x{w} ({oy}, {ox})");
                assert_eq!(arg[at], want_arg, "{h}x{w} ({oy}, {ox}) winner");
            }
        }
    }
}
