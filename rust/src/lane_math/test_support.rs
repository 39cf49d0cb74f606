//! What the tests of the select forms share: inputs around branch boundaries, libm's special
//! values, and a fixed pseudo-random stream.

/// Every f32 within `w` bit steps of each bound, both signs.
pub fn windows(bounds: &[u32], w: u32) -> Vec<f32> {
    let mut xs = Vec::new();
    for &b in bounds {
        for sign in [0, 0x8000_0000u32] {
            let lo = b.saturating_sub(w);
            let hi = (b + w).min(0x7fff_ffff);
            xs.extend((lo..=hi).map(|v| f32::from_bits(v | sign)));
        }
    }
    xs
}

/// Zeros, subnormals, ones, the largest finite values, infinities and NaNs with payloads.
pub const SPECIAL: [u32; 22] = [
    0,
    0x8000_0000,
    1,
    0x8000_0001,
    0x007f_ffff,
    0x807f_ffff,
    0x0080_0000,
    0x8080_0000,
    0x3f80_0000,
    0xbf80_0000,
    0x7f7f_ffff,
    0xff7f_ffff,
    0x7f80_0000,
    0xff80_0000,
    0x7fc0_0000,
    0xffc0_0000,
    0x7fc1_2345,
    0xffc5_4321,
    0x7f80_0001,
    0xff80_0001,
    0x7fa0_0000,
    0xffa5_4321,
];

/// xorshift64: a fixed, dependency-free stream.
pub fn rng() -> impl FnMut() -> u64 {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// Every 997th f32 bit pattern, then the special values.
pub fn sweep() -> Vec<f32> {
    (0..=u32::MAX)
        .step_by(997)
        .chain(SPECIAL)
        .map(f32::from_bits)
        .collect()
}

/// The special values, 2000 values within 32 steps of each bound (either sign), 20,000 random
/// bit patterns and the values `extra` draws from the same stream, shuffled.
pub fn shuffled_mix(
    bounds: &[u32],
    extra: impl FnOnce(&mut dyn FnMut() -> u64) -> Vec<f32>,
) -> Vec<f32> {
    let mut next = rng();
    let mut xs: Vec<f32> = SPECIAL.iter().map(|&b| f32::from_bits(b)).collect();
    for &b in bounds {
        xs.extend((0..2000).map(|_| {
            let r = next();
            let v = b.wrapping_add(r as u32 % 64).wrapping_sub(32);
            f32::from_bits(v ^ ((r >> 32) as u32 & 0x8000_0000))
        }));
    }
    xs.extend((0..20_000).map(|_| f32::from_bits(next() as u32)));
    xs.extend(extra(&mut next));
    for i in (1..xs.len()).rev() {
        xs.swap(i, next() as usize % (i + 1));
    }
    xs
}

/// Every f64 within `w` bit steps of each bound, both signs.
pub fn windows64(bounds: &[u64], w: u64) -> Vec<f64> {
    let mut xs = Vec::new();
    for &b in bounds {
        for sign in [0, 1u64 << 63] {
            let lo = b.saturating_sub(w);
            let hi = (b + w).min(0x7fff_ffff_ffff_ffff);
            xs.extend((lo..=hi).map(|v| f64::from_bits(v | sign)));
        }
    }
    xs
}

/// Zeros, subnormals, the smallest normals, ones, the largest finite values, infinities and
/// NaNs with payloads (quiet and signalling, both signs).
pub const SPECIAL64: [u64; 22] = special64([
    0x7ff8_1234_5678_9abc,
    0xfffc_dead_beef_0001,
    0x7ff4_0000_0000_0000,
    0xfff5_4321_0000_0000,
]);

/// `SPECIAL64` with other NaN payloads: two quiet, then two signalling (after the two
/// smallest signalling NaNs, which every list has).
pub const fn special64(nans: [u64; 4]) -> [u64; 22] {
    [
        0,
        1 << 63,
        1,
        (1 << 63) | 1,
        0x000f_ffff_ffff_ffff,
        0x800f_ffff_ffff_ffff,
        0x0010_0000_0000_0000,
        0x8010_0000_0000_0000,
        0x3ff0_0000_0000_0000,
        0xbff0_0000_0000_0000,
        0x7fef_ffff_ffff_ffff,
        0xffef_ffff_ffff_ffff,
        0x7ff0_0000_0000_0000,
        0xfff0_0000_0000_0000,
        0x7ff8_0000_0000_0000,
        0xfff8_0000_0000_0000,
        nans[0],
        nans[1],
        0x7ff0_0000_0000_0001,
        0xfff0_0000_0000_0001,
        nans[2],
        nans[3],
    ]
}

/// `SPECIAL64` with the NaN payloads of log's and log1p's tests.
pub const SPECIAL64_LOG: [u64; 22] = special64([
    0x7ff8_0000_0001_2345,
    0xfffc_dead_beef_4321,
    0x7ff4_0000_0000_0000,
    0xfff5_4321_0000_0000,
]);

/// `n` values made by `draw`, checked by `check` up to 2^20 at a time; returns what `check`
/// counted.
pub fn chunked(
    n: usize,
    mut draw: impl FnMut() -> f64,
    mut check: impl FnMut(&[f64]) -> usize,
) -> usize {
    let mut done = 0;
    while done < n {
        let xs: Vec<f64> = (0..(n - done).min(1 << 20)).map(|_| draw()).collect();
        done += check(&xs);
    }
    done
}

/// `n` values drawn by `draw` from the fixed stream (its first `seed` draws skipped), checked
/// by `check` a chunk at a time.
pub fn stream(
    n: usize,
    seed: u64,
    draw: impl Fn(u64) -> f64,
    check: impl Fn(&[f64]) -> usize,
) -> usize {
    let mut next = rng();
    for _ in 0..seed {
        next();
    }
    chunked(n, || draw(next()), check)
}

/// A random sign and mantissa with a biased exponent in `lo..=hi`.
pub fn with_exponent(r: u64, lo: u64, hi: u64) -> f64 {
    let e = lo + ((r >> 52) & 0x7ff) * (hi - lo + 1) / 0x800;
    f64::from_bits(r & 0x800f_ffff_ffff_ffff | e << 52)
}

/// Uniform in [0, 1): the top 53 bits of `r` times 2^-53.
pub fn unit(r: u64) -> f64 {
    (r >> 11) as f64 * f64::from_bits(0x3ca0_0000_0000_0000)
}

/// Uniform in [-a, a).
pub fn uniform(r: u64, a: f64) -> f64 {
    (unit(r) * 2. - 1.) * a
}

/// A unary f64 routine's select form, slice function and plain loop (`run`) against libm, bit
/// for bit; returns how many.
pub fn check_unary(
    xs: &[f64],
    libm: fn(f64) -> f64,
    select: fn(f64) -> f64,
    slice: fn(&[f64], &mut [f64]),
    run: fn(&[f64], &mut [f64]),
) -> usize {
    let mut fast = vec![0.0; xs.len()];
    slice(xs, &mut fast);
    let mut plain = vec![0.0; xs.len()];
    run(xs, &mut plain);
    for (i, &x) in xs.iter().enumerate() {
        let want = libm(x).to_bits();
        let got = [select(x), fast[i], plain[i]].map(f64::to_bits);
        assert!(
            got == [want; 3],
            "at {x:e} ({:#018x}): libm {want:#018x}, select / slice / plain loop {got:#018x?}",
            x.to_bits()
        );
    }
    xs.len()
}

/// The slice function against the select form on `xs`, bit for bit.
pub fn slice_matches_select(xs: &[f64], select: fn(f64) -> f64, slice: fn(&[f64], &mut [f64])) {
    let mut out = vec![0.0; xs.len()];
    slice(xs, &mut out);
    for (&x, &y) in xs.iter().zip(&out) {
        assert_eq!(y.to_bits(), select(x).to_bits(), "at {:#018x}", x.to_bits());
    }
}

/// `special`, 2000 values `near(b, r)` (near each bound `b`, by a random `r`), 20,000 random bit
/// patterns and the values `extra` draws from the same fixed stream, shuffled.
pub fn shuffled_mix64(
    special: &[u64],
    bounds: &[u64],
    near: fn(u64, u64) -> f64,
    extra: impl FnOnce(&mut dyn FnMut() -> u64) -> Vec<f64>,
) -> Vec<f64> {
    let mut next = rng();
    let mut xs: Vec<f64> = special.iter().map(|&b| f64::from_bits(b)).collect();
    for &b in bounds {
        xs.extend((0..2000).map(|_| near(b, next())));
    }
    xs.extend((0..20_000).map(|_| f64::from_bits(next())));
    xs.extend(extra(&mut next));
    for i in (1..xs.len()).rev() {
        xs.swap(i, next() as usize % (i + 1));
    }
    xs
}

/// Within 32 steps of `b`, the sign from `r`'s top bit.
pub fn near64(b: u64, r: u64) -> f64 {
    f64::from_bits(b.wrapping_add(r % 64).wrapping_sub(32) ^ (r & 1 << 63))
}

/// Within 32 steps of `b`, made positive, then the sign from bit 40 of `r`.
pub fn near64_bit40(b: u64, r: u64) -> f64 {
    let v = b.wrapping_add(r % 64).wrapping_sub(32) & !(1 << 63);
    f64::from_bits(v | (r >> 40 & 1) << 63)
}

/// The slice function against the select form on every length below 80 (the vector body and
/// its remainder) at nine offsets 97 apart in `xs`, bit for bit.
pub fn subslices_match_select(xs: &[f64], select: fn(f64) -> f64, slice: fn(&[f64], &mut [f64])) {
    for start in 0..9 {
        for len in 0..80 {
            let part = &xs[start * 97..start * 97 + len];
            let mut out = vec![0.0; len];
            slice(part, &mut out);
            for (o, &x) in out.iter().zip(part) {
                assert_eq!(o.to_bits(), select(x).to_bits(), "length {len} at {x:e}");
            }
        }
    }
}
