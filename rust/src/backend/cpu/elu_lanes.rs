//! ELU's exponentials taken only on the lanes that use them. The table's formulas are
//! `x > 0 ? x : alpha * expm1(x)` and, for the gradient, `x > 0 ? g : g * (alpha * exp(x))`;
//! computed on every lane, half of a centred input's exponentials are thrown away. Per block,
//! AVX-512 compress stores pack the lanes where !(x > 0) (negative, zero and NaN), libm's
//! expm1 or exp runs on the packed values (in select form, `lane_math`), and expand stores put
//! each result back on its lane. Every kept lane runs the formula's operations, so the bits are
//! the table's (tests against libm below).

use crate::lane_math::expm1f::expm1f_select;
use std::arch::x86_64::*;

/// Elements per packed block (a multiple of 16): the packed values stay in L1.
const BLOCK: usize = 512;

/// The lanes of one block where !(x > 0), packed: their values, and per 16 lanes which.
struct Packed {
    /// 16 spare slots: whole vectors are stored at, and loaded from, any packed offset.
    values: [f32; BLOCK + 16],
    masks: [u16; BLOCK / 16],
    count: usize,
}

impl Packed {
    fn new() -> Self {
        Packed {
            values: [0.0; BLOCK + 16],
            masks: [0; BLOCK / 16],
            count: 0,
        }
    }

    /// The packed values in whole vectors: the lanes past `count` hold zeros (or an earlier
    /// block's values), finite, computed and never read back.
    fn whole(&mut self) -> &mut [f32] {
        &mut self.values[..self.count.next_multiple_of(16)]
    }

    /// Packs the lanes of `x` (at most BLOCK values) where !(x > 0).
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,popcnt")]
    unsafe fn pack(&mut self, x: &[f32]) {
        debug_assert!(x.len() <= BLOCK);
        let mut count = 0;
        for j in 0..x.len().div_ceil(16) {
            let live = live_lanes(x.len() - 16 * j);
            // SAFETY: the masked load reads only the live lanes, inside x; the store writes 16
            // values at count <= 16 * j <= BLOCK - 16.
            unsafe {
                let v = _mm512_maskz_loadu_ps(live, x.as_ptr().add(16 * j));
                let m = _mm512_mask_cmp_ps_mask::<_CMP_NGT_UQ>(live, v, _mm512_setzero_ps());
                // Compressed in registers, then stored whole: the memory form is slow on some cores.
                let packed = _mm512_maskz_compress_ps(m, v);
                _mm512_storeu_ps(self.values.as_mut_ptr().add(count), packed);
                count += m.count_ones() as usize;
                self.masks[j] = m;
            }
        }
        self.count = count;
    }

    /// Writes each packed value back on its lane of `out` (the block's length), leaving the
    /// other lanes as they are.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,popcnt")]
    unsafe fn unpack(&self, out: &mut [f32]) {
        let mut at = 0;
        for j in 0..out.len().div_ceil(16) {
            let m = self.masks[j];
            // SAFETY: the load reads 16 values from at <= count <= BLOCK, inside BLOCK + 16;
            // the masked store writes only lanes of m, live lanes of this block inside out.
            unsafe {
                let v = _mm512_loadu_ps(self.values.as_ptr().add(at));
                let e = _mm512_maskz_expand_ps(m, v);
                _mm512_mask_storeu_ps(out.as_mut_ptr().add(16 * j), m, e);
            }
            at += m.count_ones() as usize;
        }
    }
}

/// The mask of the first `left.min(16)` lanes.
#[inline(always)]
fn live_lanes(left: usize) -> u16 {
    if left >= 16 {
        0xffff
    } else {
        (1u16 << left) - 1
    }
}

/// `out[i] = x[i] > 0 ? x[i] : alpha * expm1(x[i])` (equal lengths).
///
/// # Safety
/// The CPU has AVX-512 F, BW, VL and DQ, and POPCNT.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx,popcnt")]
pub unsafe fn elu(x: &[f32], alpha: f32, out: &mut [f32]) {
    let mut packed = Packed::new();
    for (xb, ob) in x.chunks(BLOCK).zip(out.chunks_mut(BLOCK)) {
        ob.copy_from_slice(xb);
        // SAFETY: this function's features are pack's and unpack's.
        unsafe { packed.pack(xb) };
        for v in packed.whole() {
            *v = alpha * expm1f_select(*v);
        }
        // SAFETY: as above.
        unsafe { packed.unpack(ob) };
    }
}

/// `out[i] = x[i] > 0 ? g[i] : g[i] * (alpha * exp(x[i]))` (equal lengths): the exponentials
/// of the packed lanes, back in `out`, then `finish` (the formula on every lane, given exp(x)
/// where it is used and any finite value elsewhere).
///
/// # Safety
/// As for `elu`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx,popcnt")]
pub unsafe fn elu_exps(x: &[f32], out: &mut [f32]) {
    let mut packed = Packed::new();
    for (xb, ob) in x.chunks(BLOCK).zip(out.chunks_mut(BLOCK)) {
        ob.fill(0.0);
        // SAFETY: this function's features are pack's and unpack's.
        unsafe { packed.pack(xb) };
        <f32 as super::exp_lanes::ExpRow>::exp_row(packed.whole());
        // SAFETY: as above.
        unsafe { packed.unpack(ob) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_lanes_give_the_formulas_bits() {
        if !super::super::simd::has_avx512() {
            eprintln!("no AVX-512 on this CPU: the packed ELU is not used here");
            return;
        }
        // Lengths past one block and with partial vectors; every sign, zeros, NaN payloads,
        // expm1's and exp's range edges, and runs of one sign (empty and full packs).
        let mut x: Vec<f32> = (0..3_001)
            .map(|i| match i % 11 {
                0 => -0.0,
                1 => f32::from_bits(0xffc1_2345 + i as u32),
                2 => f32::from_bits(0x7fa0_0001 + i as u32),
                3 => -104.0 - i as f32,
                _ => (i as f32 - 1_500.0) * 0.0317,
            })
            .collect();
        x.extend((0..700).map(|i| i as f32 * 0.01 + 1e-3));
        x.extend((0..700).map(|i| -(i as f32) * 0.013));
        x.extend([0.0, f32::INFINITY, f32::NEG_INFINITY, -87.3, -1e-30, 1e-30]);
        for n in [x.len(), 513, 17, 5, 0] {
            let x = &x[x.len() - n..];
            for alpha in [1.0f32, 0.3] {
                let mut y = vec![7.0; n];
                let mut e = vec![7.0; n];
                // SAFETY: AVX-512 was detected above.
                unsafe { elu(x, alpha, &mut y) };
                unsafe { elu_exps(x, &mut e) };
                for i in 0..n {
                    let v = x[i];
                    // black_box: LLVM may fold a constant 1 * v to v, keeping a signalling NaN.
                    let a = std::hint::black_box(alpha);
                    let want = if v > 0.0 { v } else { a * libm::expm1f(v) };
                    assert_eq!(y[i].to_bits(), want.to_bits(), "elu({v:e}) at {i} of {n}");
                    if v <= 0.0 || v.is_nan() {
                        let want = libm::expf(v);
                        assert_eq!(e[i].to_bits(), want.to_bits(), "exp({v:e}) at {i} of {n}");
                    }
                }
            }
        }
    }
}
