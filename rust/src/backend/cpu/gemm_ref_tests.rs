// Tests for the reference GEMM: every result must equal the naive in-order fold bit for bit,
// for every kernel this CPU runs, every blocking, every stride layout and every thread count.

use super::*;

/// Deterministic xorshift generator, so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Values of mixed sign and magnitude (so roundings differ between fold orders), with some
    /// exact zeros and negative zeros.
    fn value(&mut self) -> f64 {
        let r = self.next();
        match r % 16 {
            0 => 0.0,
            1 => -0.0,
            _ => {
                let mant = (r >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                mant * f64::powi(2.0, ((r >> 4) % 24) as i32 - 12)
            }
        }
    }
}

trait TestElem: RefGemmElem + PartialEq + std::fmt::Debug {
    fn from_f64(x: f64) -> Self;
    fn bits(self) -> u64;
    fn is_nan(self) -> bool;
}

impl TestElem for f32 {
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
}

impl TestElem for f64 {
    fn from_f64(x: f64) -> Self {
        x
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
}

fn random<T: TestElem>(len: usize, seed: u64) -> Vec<T> {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    (0..len).map(|_| T::from_f64(rng.value())).collect()
}

/// A strided operand: `rows x cols` stored row-major, column-major, or with padded strides.
struct Operand<T> {
    data: Vec<T>,
    rs: usize,
    cs: usize,
}

#[derive(Clone, Copy, Debug)]
enum Layout {
    RowMajor,
    ColMajor,
    /// Row-major with a padded row stride and column stride 2: exercises the general gather.
    Padded,
}

fn operand<T: TestElem>(rows: usize, cols: usize, layout: Layout, seed: u64) -> Operand<T> {
    let (rs, cs, len) = match layout {
        Layout::RowMajor => (cols, 1, rows * cols),
        Layout::ColMajor => (1, rows, rows * cols),
        Layout::Padded => (2 * cols + 3, 2, rows * (2 * cols + 3)),
    };
    Operand {
        data: random(len.max(1), seed),
        rs,
        cs,
    }
}

/// The definition: the naive in-order fold from +0.
fn naive<T: TestElem>(m: usize, n: usize, k: usize, a: &Operand<T>, b: &Operand<T>) -> Vec<T> {
    let mut c = vec![T::REF_ZERO; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = T::REF_ZERO;
            for p in 0..k {
                acc = acc + a.data[i * a.rs + p * a.cs] * b.data[p * b.rs + j * b.cs];
            }
            c[i * n + j] = acc;
        }
    }
    c
}

/// `gemm_with_kernel` with the public entry's raw-slice arguments.
#[allow(clippy::too_many_arguments)]
fn gemm_k<T: TestElem>(
    kern: Kernel<T>,
    m: usize,
    n: usize,
    k: usize,
    a: &[T],
    a_rs: usize,
    a_cs: usize,
    b: &[T],
    b_rs: usize,
    b_cs: usize,
    c: &mut [T],
    par: bool,
) {
    let (a, b) = (View::new(a, a_rs, a_cs), View::new(b, b_rs, b_cs));
    gemm_with_kernel(kern, m, n, k, a, b, as_uninit(c), threads_for(m, n, k, par));
}

/// `c` as the GEMM's output type (it only ever writes initialised values into it).
fn as_uninit<T>(c: &mut [T]) -> &mut [std::mem::MaybeUninit<T>] {
    // SAFETY: same layout; writing initialised values through the view keeps `c` valid.
    unsafe { &mut *(c as *mut [T] as *mut [std::mem::MaybeUninit<T>]) }
}

fn assert_bits_eq<T: TestElem>(got: &[T], want: &[T], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (idx, (g, w)) in got.iter().zip(want).enumerate() {
        let same = g.bits() == w.bits() || (g.is_nan() && w.is_nan());
        assert!(
            same,
            "{what}: element {idx}: got {g:?} ({:#x}), want {w:?} ({:#x})",
            g.bits(),
            w.bits()
        );
    }
}

/// Runs one shape through `kern` and compares it with the naive fold. `c` starts as garbage so
/// stale values would show.
#[allow(clippy::too_many_arguments)]
fn check<T: TestElem>(
    kern: Kernel<T>,
    m: usize,
    n: usize,
    k: usize,
    la: Layout,
    lb: Layout,
    par: bool,
    tag: &str,
) {
    let a = operand::<T>(m, k, la, (m * 31 + k) as u64);
    let b = operand::<T>(k, n, lb, (n * 17 + k + 7) as u64);
    let want = naive(m, n, k, &a, &b);
    let mut c = vec![T::from_f64(12345.0); m * n];
    gemm_k(
        kern, m, n, k, &a.data, a.rs, a.cs, &b.data, b.rs, b.cs, &mut c, par,
    );
    assert_bits_eq(
        &c,
        &want,
        &format!("{tag} m={m} n={n} k={k} a={la:?} b={lb:?}"),
    );
}

/// Every kernel this CPU runs, each with its own blocking and with tiny blocks that force many
/// depth blocks (accumulate path), row blocks and column blocks.
fn kernels<T: TestElem>() -> Vec<(String, Kernel<T>)> {
    let mut out = Vec::new();
    for isa in ISAS.into_iter().filter(|&isa| isa_available(isa)) {
        for kern in T::ref_gemm_kernels(isa) {
            let tag = format!("{isa:?} {}x{}", kern.mr, kern.nr);
            out.push((tag.clone(), *kern));
            let tiny = Kernel {
                kc: 5,
                mc: 2 * kern.mr,
                nc: 2 * kern.nr,
                ..*kern
            };
            out.push((format!("{tag} tiny-blocks"), tiny));
        }
    }
    out
}

const LAYOUTS: [Layout; 3] = [Layout::RowMajor, Layout::ColMajor, Layout::Padded];

fn shapes_small() -> Vec<(usize, usize, usize)> {
    let dims = [1, 2, 3, 7, 16, 17, 33];
    let mut out = Vec::new();
    for &m in &dims {
        for &n in &dims {
            for &k in &[1, 3, 17] {
                out.push((m, n, k));
            }
        }
    }
    out.extend([
        (13, 35, 40),
        (25, 49, 300),
        (50, 70, 520),
        (1, 100, 257),
        (100, 1, 64),
    ]);
    out
}

fn all_small<T: TestElem>() {
    for (tag, kern) in kernels::<T>() {
        for (m, n, k) in shapes_small() {
            check(
                kern,
                m,
                n,
                k,
                Layout::RowMajor,
                Layout::RowMajor,
                false,
                &tag,
            );
        }
        // All four transpose combinations (plus the padded gather) on a few odd shapes.
        for &(m, n, k) in &[(1, 1, 1), (5, 3, 9), (17, 33, 31), (31, 50, 270)] {
            for la in LAYOUTS {
                for lb in LAYOUTS {
                    check(kern, m, n, k, la, lb, false, &tag);
                }
            }
        }
    }
}

#[test]
fn bit_exact_f32_all_kernels_shapes_layouts() {
    all_small::<f32>();
}

#[test]
fn bit_exact_f64_all_kernels_shapes_layouts() {
    all_small::<f64>();
}

/// `gemm_ref` itself (kernel and threads of its own choosing) on an output of 1.0s against the
/// naive fold, A and B in the given layouts.
fn public_entry<T: TestElem>(m: usize, n: usize, k: usize, (la, lb): (Layout, Layout), seed: u64) {
    let a = operand::<T>(m, k, la, seed);
    let b = operand::<T>(k, n, lb, seed + 1);
    let mut c = vec![T::from_f64(1.0); m * n];
    let (ad, bd) = (&a.data, &b.data);
    gemm_ref(
        m,
        n,
        k,
        ad,
        a.rs,
        a.cs,
        bd,
        b.rs,
        b.cs,
        as_uninit(&mut c),
        true,
    );
    assert_bits_eq(&c, &naive(m, n, k, &a, &b), "public entry");
}

#[test]
fn public_entry_matches_naive() {
    for &(m, n, k) in &[(64, 64, 64), (97, 130, 300), (3, 700, 40), (300, 5, 33)] {
        public_entry::<f32>(m, n, k, (Layout::ColMajor, Layout::RowMajor), 1);
        public_entry::<f64>(m, n, k, (Layout::RowMajor, Layout::ColMajor), 3);
    }
}

fn thread_counts<T: TestElem>() {
    // Large enough to go parallel; includes a short-and-wide shape that splits columns.
    let shapes = [
        (130, 150, 300),
        (257, 33, 80),
        (3, 1000, 100),
        (1, 4000, 70),
        (70, 40, 1000),
    ];
    for (tag, kern) in kernels::<T>() {
        for &(m, n, k) in &shapes {
            let a = operand::<T>(m, k, Layout::RowMajor, 5);
            let b = operand::<T>(k, n, Layout::ColMajor, 6);
            let want = naive(m, n, k, &a, &b);
            for threads in [1, 2, 4] {
                // The process-wide count (other tests running meanwhile only change how their
                // products are split, never a result).
                crate::backend::cpu::parallel::set_num_threads(threads).unwrap();
                let mut c = vec![T::from_f64(-7.0); m * n];
                gemm_k(
                    kern, m, n, k, &a.data, a.rs, a.cs, &b.data, b.rs, b.cs, &mut c, true,
                );
                assert_bits_eq(
                    &c,
                    &want,
                    &format!("{tag} threads={threads} m={m} n={n} k={k}"),
                );
            }
        }
    }
}

#[test]
fn bit_exact_across_thread_counts_f32() {
    thread_counts::<f32>();
}

#[test]
fn bit_exact_across_thread_counts_f64() {
    thread_counts::<f64>();
}

#[test]
fn k_zero_gives_zeros_and_empty_is_noop() {
    let mut c = vec![5.0f32; 6];
    gemm_ref::<f32>(2, 3, 0, &[], 0, 0, &[], 0, 0, as_uninit(&mut c), true);
    assert!(c.iter().all(|x| x.to_bits() == 0));
    let mut c = vec![5.0f64; 4];
    gemm_ref::<f64>(
        0,
        3,
        4,
        &[],
        4,
        1,
        &[1.0; 12],
        3,
        1,
        as_uninit(&mut c),
        false,
    );
    gemm_ref::<f64>(
        3,
        0,
        4,
        &[1.0; 12],
        4,
        1,
        &[],
        0,
        1,
        as_uninit(&mut c),
        false,
    );
    assert_eq!(c, vec![5.0; 4]);
}

#[test]
fn fold_starts_from_positive_zero() {
    // (-0) * 1 = -0, and +0 + (-0) = +0: a fold seeded with the first product would give -0.
    for (tag, kern) in kernels::<f32>() {
        let mut c = [9.0f32; 1];
        gemm_k(
            kern,
            1,
            1,
            1,
            &[-0.0f32],
            1,
            1,
            &[1.0f32],
            1,
            1,
            &mut c,
            false,
        );
        assert_eq!(c[0].to_bits(), 0.0f32.to_bits(), "{tag}");
    }
    for (tag, kern) in kernels::<f64>() {
        let mut c = [9.0f64; 1];
        gemm_k(
            kern,
            1,
            1,
            1,
            &[-0.0f64],
            1,
            1,
            &[1.0f64],
            1,
            1,
            &mut c,
            false,
        );
        assert_eq!(c[0].to_bits(), 0.0f64.to_bits(), "{tag}");
    }
}

#[test]
fn no_fma_in_the_fold() {
    // With e = 2^-12, (1+e)*(1+e) = 1 + 2e + e^2 rounds to 1 + 2e in f32 (a tie, to even). Folding
    // -(1+2e)*1 then (1+e)*(1+e) gives exactly 0 with a separate multiply and add, but e^2 = 2^-24
    // if the second step were fused.
    let e = f32::powi(2.0, -12);
    for (tag, kern) in kernels::<f32>() {
        let (m, n, k) = (13, 40, 2);
        let a: Vec<f32> = [-(1.0 + 2.0 * e), 1.0 + e].repeat(m);
        let b: Vec<f32> = [vec![1.0; n], vec![1.0 + e; n]].concat();
        let mut c = vec![3.0f32; m * n];
        gemm_k(kern, m, n, k, &a, k, 1, &b, n, 1, &mut c, false);
        assert!(c.iter().all(|x| x.to_bits() == 0), "{tag}: {:?}", &c[..4]);
    }
}

#[test]
fn nan_and_inf_propagate() {
    for (tag, kern) in kernels::<f64>() {
        let (m, n, k) = (19, 37, 23);
        let mut a = operand::<f64>(m, k, Layout::RowMajor, 8);
        let mut b = operand::<f64>(k, n, Layout::RowMajor, 9);
        a.data[3 * k + 4] = f64::NAN;
        a.data[7 * k] = f64::INFINITY;
        b.data[5 * n + 30] = f64::NEG_INFINITY;
        b.data[2 * n + 1] = 0.0; // inf * 0 = NaN in row 7, column 1
        let want = naive(m, n, k, &a, &b);
        assert!(want.iter().any(|x| x.is_nan()) && want.iter().any(|x| x.is_infinite()));
        let mut c = vec![0.0; m * n];
        gemm_k(
            kern, m, n, k, &a.data, a.rs, a.cs, &b.data, b.rs, b.cs, &mut c, false,
        );
        assert_bits_eq(&c, &want, &tag);
    }
}

#[test]
#[should_panic(expected = "exceeds its buffer")]
fn short_operand_panics() {
    let mut c = vec![0.0f32; 4];
    gemm_ref::<f32>(
        2,
        2,
        2,
        &[1.0; 3],
        2,
        1,
        &[1.0; 4],
        2,
        1,
        as_uninit(&mut c),
        false,
    );
}

#[test]
#[should_panic(expected = "c is shorter than m*n")]
fn short_output_panics() {
    let mut c = vec![0.0f32; 3];
    gemm_ref::<f32>(
        2,
        2,
        2,
        &[1.0; 4],
        2,
        1,
        &[1.0; 4],
        2,
        1,
        as_uninit(&mut c),
        false,
    );
}
