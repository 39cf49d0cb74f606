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
