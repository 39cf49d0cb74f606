// The reference's random generators, bit for bit: the global seed stream (SplitMix64 over
// (seed, counter)), the runtime-init unit sampler, the layer-initialiser LCG and the dataset-shuffle
// LCG, plus the counter-based uniform that rand/randn/dropout use so values never depend on threads.

/// The SplitMix64 increment (2^64 / golden ratio), also added once more by `next_seed`.
pub const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// Standard SplitMix64 output function of `x` (all arithmetic wraps mod 2^64).
/// `splitmix64(0) == 0xe220a8397b1dcdaf`.
pub const fn splitmix64(x: u64) -> u64 {
    let z1 = x.wrapping_add(GOLDEN_GAMMA);
    let z2 = (z1 ^ (z1 >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let z3 = (z2 ^ (z2 >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z3 ^ (z3 >> 31)
}

/// The seed drawn from stream state `(seed, counter)`:
/// `splitmix64(seed + counter + GOLDEN_GAMMA)`. The stream is a hash of its position, not a
/// stateful generator, so any draw can be recomputed from `(seed, counter)` alone.
pub const fn next_seed(seed: u64, counter: u64) -> u64 {
    splitmix64(seed.wrapping_add(counter).wrapping_add(GOLDEN_GAMMA))
}

/// Per-call RNG key `splitmix64(seed + counter)` (RuntimeInit, dropout masks, rand tensors).
pub const fn key_of(seed: u64, counter: u64) -> u64 {
    splitmix64(seed.wrapping_add(counter))
}

/// The reference's seed stream `(seed, counter)`: `manual_seed` resets it, each `fresh_seed`
/// returns `next_seed(seed, counter)` and advances the counter. A new stream is `(0, 0)`, the
/// reference's state at program start. The process-global instance lives with its users.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SeedStream {
    seed: u64,
    counter: u64,
}

impl SeedStream {
    /// The program-start state `(0, 0)`.
    pub const fn new() -> Self {
        Self::from_seed(0)
    }

    /// The state `(seed, 0)`, as after `manual_seed(seed)`.
    pub const fn from_seed(seed: u64) -> Self {
        SeedStream { seed, counter: 0 }
    }

    /// The state `(seed, counter)`: a stream saved with `seed()` and `counter()`, restored.
    pub const fn at(seed: u64, counter: u64) -> Self {
        SeedStream { seed, counter }
    }

    /// Reset to `(seed, 0)` (`rand.manualSeed` / `nn.manualSeed`).
    pub fn manual_seed(&mut self, seed: u64) {
        *self = Self::from_seed(seed);
    }

    /// Draw one seed (`nn.freshSeed` / `nextSeedGlobal`).
    pub fn fresh_seed(&mut self) -> u64 {
        let s = next_seed(self.seed, self.counter);
        self.counter = self.counter.wrapping_add(1);
        s
    }

    /// Draw `n` seeds in order (`nextSeedsGlobal n`).
    pub fn fresh_seeds(&mut self, n: usize) -> Vec<u64> {
        (0..n).map(|_| self.fresh_seed()).collect()
    }

    /// Draw one seed `s` and return the local stream `(s, 0)` a model builder uses
    /// (`nn.withModel`): seeded layers then draw from it in construction order.
    pub fn child(&mut self) -> SeedStream {
        Self::from_seed(self.fresh_seed())
    }

    /// The stream's seed.
    pub const fn seed(&self) -> u64 {
        self.seed
    }

    /// How many seeds have been drawn since the last reset.
    pub const fn counter(&self) -> u64 {
        self.counter
    }
}

/// `sampleNat(key, i)`: the low 32 bits of `splitmix64(key + i)`.
pub const fn sample_u32(key: u64, index: u64) -> u32 {
    // Truncation to the low word is the reference's `mod 2^32`.
    splitmix64(key.wrapping_add(index)) as u32
}

/// `x / 2^32` in binary64 (exact: 32 significant bits fit in 53).
pub fn unit_f64_from_u32(x: u32) -> f64 {
    f64::from(x) * TWO_POW_M32
}

/// `(float)(x / 2^32)`: one round-to-nearest-even into binary32, as the reference's CUDA sampler
/// does. Values at or above `0xFFFFFF80` round up to exactly `1.0`.
pub fn unit_f32_from_u32(x: u32) -> f32 {
    // `as f32` rounds to nearest-even; scaling by a power of two afterwards is exact, so this is
    // the same single rounding as dividing in higher precision first.
    (x as f32) * (TWO_POW_M32 as f32)
}

const TWO_POW_M32: f64 = 1.0 / 4_294_967_296.0;
const TWO_POW_M24_F32: f32 = 1.0 / 16_777_216.0;

/// RuntimeInit unit sample `u(seed, i) = low32(splitmix64(keyOf(seed, 0) + i)) / 2^32` in binary64.
pub fn runtime_init_unit(seed: u64, index: u64) -> f64 {
    unit_f64_from_u32(sample_u32(key_of(seed, 0), index))
}

/// The binary32 RuntimeInit sample of the reference's CUDA path: the same 32-bit sample rounded
/// once to binary32 (so it may be exactly `1.0`).
pub fn runtime_init_unit_f32(seed: u64, index: u64) -> f32 {
    unit_f32_from_u32(sample_u32(key_of(seed, 0), index))
}

/// Counter-based uniform in `[0, 1)` for rand/dropout: the reference's session sampler
/// `low32(splitmix64(key + index)) / 2^32` (a 2^-32 grid). Each value depends only on
/// `(key, index)`, so any split of the index range over threads or GPU blocks gives the same tensor.
pub fn uniform_at(key: u64, index: u64) -> f64 {
    unit_f64_from_u32(sample_u32(key, index))
}

/// Binary32 counterpart of `uniform_at`: the top 24 bits of the same 32-bit sample over 2^24,
/// i.e. `uniform_at` truncated to a 2^-24 grid. Truncating (not rounding) keeps it below 1.0.
pub fn uniform_at_f32(key: u64, index: u64) -> f32 {
    ((sample_u32(key, index) >> 8) as f32) * TWO_POW_M24_F32
}

/// Multiplier of the layer-initialiser LCG `s <- (1664525 s + 1013904223) mod 2^32`.
pub const LCG_MUL: u32 = 1_664_525;
/// Increment of the layer-initialiser LCG.
pub const LCG_INC: u32 = 1_013_904_223;

/// One step of the layer-initialiser LCG.
pub const fn lcg_step(state: u32) -> u32 {
    state.wrapping_mul(LCG_MUL).wrapping_add(LCG_INC)
}

/// The layer-initialiser LCG state after `steps` steps from `seed`, in O(log steps) by squaring
/// the affine map. Lets a GPU kernel or a worker thread start anywhere in the sweep.
pub fn lcg_state_after(seed: u64, steps: u64) -> u32 {
    // `seed mod 2^32` gives the same first step as the reference's Nat seed.
    let mut state = seed as u32;
    // (mul, add) is the map s -> mul*s + add for 2^k steps; composed while squaring.
    let (mut mul, mut add) = (LCG_MUL, LCG_INC);
    let mut k = steps;
    while k > 0 {
        if k & 1 == 1 {
            state = state.wrapping_mul(mul).wrapping_add(add);
        }
        add = add.wrapping_mul(mul).wrapping_add(add);
        mul = mul.wrapping_mul(mul);
        k >>= 1;
    }
    state
}

/// `rand01(seed, i)` for `i in 0..n`: the state after `i + 1` LCG steps from `seed`, over 2^32.
/// The reference re-runs the LCG from `seed` for every element (O(n^2)); one forward sweep
/// visits the same states in order, so the values are identical in O(n).
pub fn lcg_units(seed: u64, n: usize) -> Vec<f64> {
    let mut state = seed as u32;
    (0..n)
        .map(|_| {
            state = lcg_step(state);
            unit_f64_from_u32(state)
        })
        .collect()
}

/// `rand01(seed, index)` alone, via the jump-ahead.
pub fn lcg_unit_at(seed: u64, index: u64) -> f64 {
    unit_f64_from_u32(lcg_state_after(seed, index.wrapping_add(1)))
}

/// Multiplier of the dataset-shuffle LCG `s <- (1103515245 s + 12345) mod 2^31`.
pub const SHUFFLE_MUL: u64 = 1_103_515_245;
/// Increment of the dataset-shuffle LCG.
pub const SHUFFLE_INC: u64 = 12_345;
const SHUFFLE_MASK: u64 = (1 << 31) - 1;

/// One step of the dataset-shuffle LCG. Reducing the seed mod 2^31 first gives the same result
/// as the reference's Nat arithmetic and keeps the product inside 64 bits.
pub const fn shuffle_step(state: u64) -> u64 {
    (SHUFFLE_MUL * (state & SHUFFLE_MASK) + SHUFFLE_INC) & SHUFFLE_MASK
}

/// One `Dataset.shuffle` pass over `n` elements: element `j` of the current order gets key
/// `state_{j+1}`; sorting by key gives `perm`, where `perm[k]` is the current position placed at
/// new position `k`. Returns `(perm, next_seed)`, the next seed being the last state (or `seed`
/// itself when `n == 0`, as the reference's fold leaves it).
pub fn shuffle_permutation(seed: u64, n: usize) -> (Vec<usize>, u64) {
    let mut state = seed;
    let mut keyed: Vec<(u64, usize)> = (0..n)
        .map(|j| {
            state = shuffle_step(state);
            (state, j)
        })
        .collect();
    // Keys are distinct for n <= 2^31 (full-period LCG); the stable sort still fixes tie order.
    keyed.sort_by_key(|&(key, _)| key);
    (keyed.into_iter().map(|(_, j)| j).collect(), state)
}

/// A loader's shuffle state: the current dataset order (indices into the original data) and the
/// seed of the next pass. Each pass permutes the *current* order, so epoch `e` reshuffles the
/// permutation of epoch `e - 1`, exactly as the reference's loader does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetShuffle {
    seed: u64,
    order: Vec<usize>,
}

impl DatasetShuffle {
    /// The unshuffled order `0..n` with shuffle seed `seed`.
    pub fn new(n: usize, seed: u64) -> Self {
        DatasetShuffle {
            seed,
            order: (0..n).collect(),
        }
    }

    /// Run one shuffle pass; returns the new order of original indices.
    pub fn reshuffle(&mut self) -> &[usize] {
        let (perm, next) = shuffle_permutation(self.seed, self.order.len());
        self.order = perm.into_iter().map(|p| self.order[p]).collect();
        self.seed = next;
        &self.order
    }

    /// The current order of original indices.
    pub fn order(&self) -> &[usize] {
        &self.order
    }

    /// The seed the next pass starts from.
    pub const fn seed(&self) -> u64 {
        self.seed
    }
}

/// The order of original indices used in epoch `epoch` (0-based) of a loader that shuffles at the
/// start of every epoch, the first included: `epoch + 1` passes from `(0..n, seed)`.
pub fn epoch_order(seed: u64, n: usize, epoch: usize) -> Vec<usize> {
    let mut shuffle = DatasetShuffle::new(n, seed);
    for _ in 0..=epoch {
        shuffle.reshuffle();
    }
    shuffle.order
}

#[cfg(test)]
mod tests {
    // Expected values come from the reference's published golden values or from an
    // independent Python integer/binary64 computation of its formulas, never from this code.
    use super::*;

    fn bits(v: &[f64]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    #[test]
    fn splitmix64_and_key_of_golden() {
        assert_eq!(splitmix64(0), 0xe220_a839_7b1d_cdaf);
        assert_eq!(key_of(0, 0), 0xe220_a839_7b1d_cdaf);
        assert_eq!(key_of(3, 4), splitmix64(7));
    }

    #[test]
    fn global_stream_after_manual_seed_zero() {
        let mut s = SeedStream::new();
        s.manual_seed(0);
        assert_eq!(s.fresh_seed(), 7_960_286_522_194_355_700);
        assert_eq!(s.fresh_seed(), 13_757_245_211_066_428_519);
        assert_eq!(s.counter(), 2);
        assert_eq!(next_seed(0, 0), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn new_stream_is_program_start_state_and_manual_seed_resets() {
        let mut s = SeedStream::new();
        assert_eq!((s.seed(), s.counter()), (0, 0));
        assert_eq!(SeedStream::default(), s);
        s.fresh_seeds(5);
        s.manual_seed(0);
        assert_eq!(s, SeedStream::from_seed(0));
        assert_eq!(s.fresh_seed(), 7_960_286_522_194_355_700);
    }

    #[test]
    fn with_model_child_stream_layer_seeds() {
        let mut global = SeedStream::from_seed(0);
        let mut local = global.child();
        assert_eq!(local.seed(), 7_960_286_522_194_355_700);
        assert_eq!(global.counter(), 1);
        assert_eq!(
            local.fresh_seeds(4),
            vec![
                3_982_070_227_906_906_278,
                17_777_485_425_057_828_119,
                5_739_790_051_243_654_104,
                9_599_935_040_381_894_867,
            ]
        );
    }

    #[test]
    fn next_seed_wraps_mod_2_64() {
        // (2^64 - 1) + 1 wraps to 0, so this is the first draw after manualSeed 0.
        assert_eq!(next_seed(u64::MAX, 1), 7_960_286_522_194_355_700);
    }

    #[test]
    fn runtime_init_unit_golden() {
        let u: Vec<f64> = (0..3).map(|i| runtime_init_unit(0, i)).collect();
        assert_eq!(
            bits(&u),
            bits(&[0.30117025575600564, 0.6844469008501619, 0.30876562278717756])
        );
    }

    #[test]
    fn runtime_init_unit_f32_rounds_the_golden_samples_once() {
        let got: Vec<u32> = (0..3)
            .map(|i| runtime_init_unit_f32(0, i).to_bits())
            .collect();
        assert_eq!(got, vec![0x3e9a_32fd, 0x3f2f_37e9, 0x3e9e_1687]);
    }

    #[test]
    fn unit_f32_rounds_up_to_one_at_the_top() {
        // Near 2^32 binary32 spacing is 256, so 2^32 - 128 is a tie that rounds to even (2^32).
        assert_eq!(unit_f32_from_u32(u32::MAX), 1.0);
        assert_eq!(unit_f32_from_u32(0xffff_ff80), 1.0);
        assert!(unit_f32_from_u32(0xffff_ff7f) < 1.0);
        assert_eq!(unit_f32_from_u32(1 << 31), 0.5);
        assert_eq!(unit_f64_from_u32(u32::MAX), 1.0 - 1.0 / 4_294_967_296.0);
    }

    #[test]
    fn uniform_at_is_the_session_sampler() {
        // u(seed, i) = sampleNat(keyOf(seed, 0), i) / 2^32, so the goldens carry over.
        let key = key_of(0, 0);
        assert_eq!(
            uniform_at(key, 0).to_bits(),
            0.30117025575600564f64.to_bits()
        );
        assert_eq!(
            uniform_at(key, 2).to_bits(),
            0.30876562278717756f64.to_bits()
        );
        // low32(splitmix64(12345 + i)) for i = 0..4, from Python.
        let low = [2_849_051_040u32, 2_291_953_639, 2_726_279_757, 135_922_329];
        for (i, &x) in low.iter().enumerate() {
            assert_eq!(sample_u32(12_345, i as u64), x);
            assert_eq!(uniform_at(12_345, i as u64), f64::from(x) / 4_294_967_296.0);
        }
    }

    #[test]
    fn uniform_at_f32_keeps_the_top_24_bits() {
        let top = [11_129_105u32, 8_952_943, 10_649_530, 530_946];
        for (i, &t) in top.iter().enumerate() {
            let v = uniform_at_f32(12_345, i as u64);
            assert_eq!(v, t as f32 / 16_777_216.0);
            assert!((0.0..1.0).contains(&v));
        }
    }

    #[test]
    fn layer_lcg_golden() {
        assert_eq!(
            bits(&lcg_units(0, 3)),
            bits(&[0.23606797284446657, 0.278566908556968, 0.8195337599609047])
        );
        assert_eq!(
            lcg_units(1, 1)[0].to_bits(),
            0.23645552527159452f64.to_bits()
        );
        assert_eq!(lcg_unit_at(0, 2).to_bits(), 0.8195337599609047f64.to_bits());
        assert_eq!(
            lcg_unit_at(1, 0).to_bits(),
            0.23645552527159452f64.to_bits()
        );
        assert!(lcg_units(9, 0).is_empty());
    }

    #[test]
    fn layer_lcg_sweep_matches_the_reference_rerun_definition() {
        // The reference's definition: re-run the LCG i+1 times from the seed for element i.
        let rerun = |seed: u64, i: usize| {
            let mut s = seed % (1 << 32);
            for _ in 0..=i {
                s = (1_664_525 * s + 1_013_904_223) % (1 << 32);
            }
            s as f64 / 4_294_967_296.0
        };
        for seed in [0u64, 1, 42, (1 << 40) + 7] {
            let sweep = lcg_units(seed, 50);
            for (i, v) in sweep.iter().enumerate() {
                assert_eq!(v.to_bits(), rerun(seed, i).to_bits());
            }
        }
    }

    #[test]
    fn lcg_jump_ahead_matches_python() {
        assert_eq!(lcg_state_after(0, 1000), 3_926_946_568);
        assert_eq!(lcg_state_after((1 << 40) + 7, 77), 889_606_198);
        assert_eq!(lcg_state_after(123, 0), 123);
        assert_eq!(lcg_state_after(0, 1), 1_013_904_223);
    }

    #[test]
    fn shuffle_keys_order_and_next_seed_golden() {
        let mut s = 0u64;
        let keys: Vec<u64> = (0..5)
            .map(|_| {
                s = shuffle_step(s);
                s
            })
            .collect();
        assert_eq!(
            keys,
            vec![
                12_345,
                1_406_932_606,
                654_583_775,
                1_449_466_924,
                229_283_573
            ]
        );
        assert_eq!(
            shuffle_permutation(0, 5),
            (vec![0, 4, 2, 1, 3], 229_283_573)
        );
    }

    #[test]
    fn each_epoch_reshuffles_the_previous_order() {
        let mut sh = DatasetShuffle::new(5, 0);
        assert_eq!(sh.order(), &[0, 1, 2, 3, 4]);
        assert_eq!(sh.reshuffle(), &[0, 4, 2, 1, 3]);
        assert_eq!(sh.seed(), 229_283_573);
        assert_eq!(sh.reshuffle(), &[3, 1, 4, 0, 2]);
        assert_eq!(sh.seed(), 551_188_310);
        assert_eq!(epoch_order(0, 5, 0), vec![0, 4, 2, 1, 3]);
        assert_eq!(epoch_order(0, 5, 2), vec![4, 0, 3, 2, 1]);
    }

    #[test]
    fn shuffle_reduces_large_seeds_and_keeps_seed_when_empty() {
        assert_eq!(
            shuffle_permutation((1 << 40) + 5, 7),
            (vec![1, 4, 2, 6, 0, 5, 3], 1_186_464_276)
        );
        assert_eq!(shuffle_permutation(u64::MAX, 0), (vec![], u64::MAX));
    }
}
