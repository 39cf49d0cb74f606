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
