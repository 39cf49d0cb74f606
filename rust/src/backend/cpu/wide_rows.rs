//! The inner loops of the closure-taking maps (`elementwise.rs`, `layout.rs`), compiled for the
//! widest vectors this CPU has. The chunk closures that call them are often kept out of line by
//! LLVM, and then run at the baseline width (SSE) whatever `simd::widest` around them asks; a
//! loop in a `#[target_feature]` function of its own runs at that function's width, and the
//! small closure it calls (an op's formula) inlines into it. The same IEEE operations in the same
//! order at any width, so the same bits.

use std::mem::MaybeUninit;

/// Makes `$name(args, f)`: `$body` compiled for AVX-512, AVX2, or the baseline, chosen at run
/// time, for any `F` with the bound in brackets.
macro_rules! wide_loop {
    ($(#[$doc:meta])* $vis:vis fn $name:ident<T, F: [$($fb:tt)+]>($($arg:ident: $ty:ty),*) = $body:ident) => {
        $(#[$doc])*
        $vis fn $name<T: Copy, F: $($fb)+>($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,avx")]
                unsafe fn avx512<T: Copy, F: $($fb)+>($($arg: $ty),*) {
                    $body($($arg),*)
                }
                #[target_feature(enable = "avx2,avx")]
                unsafe fn avx2<T: Copy, F: $($fb)+>($($arg: $ty),*) {
                    $body($($arg),*)
                }
                if super::simd::has_avx512() {
                    // SAFETY: the features it is compiled for were just detected on this CPU.
                    return unsafe { avx512($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: as above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $body($($arg),*)
        }
    };
}

#[inline(always)]
fn map_body<T: Copy, F: Fn(T) -> T>(x: &[T], o: &mut [MaybeUninit<T>], f: &F) {
    let x = &x[..o.len()];
    for j in 0..o.len() {
        o[j].write(f(x[j]));
    }
}

#[inline(always)]
fn zip_body<T: Copy, F: Fn(T, T) -> T>(x: &[T], y: &[T], o: &mut [MaybeUninit<T>], f: &F) {
    let (x, y) = (&x[..o.len()], &y[..o.len()]);
    for j in 0..o.len() {
        o[j].write(f(x[j], y[j]));
    }
}

#[inline(always)]
fn zip3_body<T: Copy, F: Fn(T, T, T) -> T>(
    x: &[T],
    y: &[T],
    z: &[T],
    o: &mut [MaybeUninit<T>],
    f: &F,
) {
    let (x, y, z) = (&x[..o.len()], &y[..o.len()], &z[..o.len()]);
    for j in 0..o.len() {
        o[j].write(f(x[j], y[j], z[j]));
    }
}

#[inline(always)]
fn with_body<T: Copy, F: Fn(T, T) -> T>(x: &[T], s: T, o: &mut [MaybeUninit<T>], f: &F) {
    let x = &x[..o.len()];
    for j in 0..o.len() {
        o[j].write(f(x[j], s));
    }
}

wide_loop!(
    /// `o[j] = f(x[j])`.
    pub fn map_row<T, F: [Fn(T) -> T]>(x: &[T], o: &mut [MaybeUninit<T>], f: &F) = map_body
);
wide_loop!(
    /// `o[j] = f(x[j], y[j])`.
    pub fn zip_row<T, F: [Fn(T, T) -> T]>(x: &[T], y: &[T], o: &mut [MaybeUninit<T>], f: &F) = zip_body
);
wide_loop!(
    /// `o[j] = f(x[j], y[j], z[j])`.
    pub fn zip3_row<T, F: [Fn(T, T, T) -> T]>(
        x: &[T], y: &[T], z: &[T], o: &mut [MaybeUninit<T>], f: &F
    ) = zip3_body
);
wide_loop!(
    /// `o[j] = f(x[j], s)`: one operand a single value (a broadcast row of one).
    pub fn with_row<T, F: [Fn(T, T) -> T]>(x: &[T], s: T, o: &mut [MaybeUninit<T>], f: &F) = with_body
);

#[inline(always)]
fn test_body<T: Copy, F: Fn(T, T) -> bool>(x: &[T], y: &[T], o: &mut [MaybeUninit<bool>], f: &F) {
    let (x, y) = (&x[..o.len()], &y[..o.len()]);
    for j in 0..o.len() {
        o[j].write(f(x[j], y[j]));
    }
}

#[inline(always)]
fn test_with_body<T: Copy, F: Fn(T, T) -> bool>(x: &[T], s: T, o: &mut [MaybeUninit<bool>], f: &F) {
    let x = &x[..o.len()];
    for j in 0..o.len() {
        o[j].write(f(x[j], s));
    }
}

wide_loop!(
    /// `o[j] = f(x[j], y[j])`, a predicate (a comparison's mask).
    pub fn test_row<T, F: [Fn(T, T) -> bool]>(x: &[T], y: &[T], o: &mut [MaybeUninit<bool>], f: &F) = test_body
);
wide_loop!(
    /// `o[j] = f(x[j], s)`, a predicate against one value.
    pub fn test_with_row<T, F: [Fn(T, T) -> bool]>(x: &[T], s: T, o: &mut [MaybeUninit<bool>], f: &F) = test_with_body
);

#[inline(always)]
fn flag_body<T: Copy, F: Fn(T, bool) -> T>(x: &[T], m: &[bool], o: &mut [MaybeUninit<T>], f: &F) {
    let (x, m) = (&x[..o.len()], &m[..o.len()]);
    for j in 0..o.len() {
        o[j].write(f(x[j], m[j]));
    }
}

wide_loop!(
    /// `o[j] = f(x[j], m[j])`: a value and its flag (a mask's fill, a select), without a
    /// branch per element.
    pub fn flag_row<T, F: [Fn(T, bool) -> T]>(x: &[T], m: &[bool], o: &mut [MaybeUninit<T>], f: &F) = flag_body
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_compute_each_element_with_the_formula() {
        let x: Vec<f32> = (0..1000).map(|i| i as f32 * 0.37 - 100.0).collect();
        let y: Vec<f32> = (0..1000).map(|i| (i % 17) as f32 * 1.3 + 0.5).collect();
        let z: Vec<f32> = (0..1000).map(|i| (i % 5) as f32 - 2.0).collect();
        let mut o = vec![MaybeUninit::uninit(); 1000];
        let check = |o: &mut [MaybeUninit<f32>], want: &dyn Fn(usize) -> f32| {
            for (j, g) in o.iter().enumerate() {
                // SAFETY: the row functions write every element.
                let g = unsafe { g.assume_init() };
                assert_eq!(g.to_bits(), want(j).to_bits(), "element {j}");
            }
        };
        map_row(&x, &mut o, &|v: f32| v * v - 1.0);
        check(&mut o, &|j| x[j] * x[j] - 1.0);
        zip_row(&x, &y, &mut o, &|a: f32, b: f32| a / b);
        check(&mut o, &|j| x[j] / y[j]);
        zip3_row(&x, &y, &z, &mut o, &|a: f32, b: f32, c: f32| a * b + c);
        check(&mut o, &|j| x[j] * y[j] + z[j]);
        with_row(&x, 3.0, &mut o, &|a: f32, s: f32| s - a);
        check(&mut o, &|j| 3.0 - x[j]);
        let m: Vec<bool> = (0..1000).map(|j| (j * 7) % 3 == 0).collect();
        flag_row(&x, &m, &mut o, &|a: f32, f: bool| if f { -0.0 } else { a });
        check(&mut o, &|j| if m[j] { -0.0 } else { x[j] });
        let mut b = vec![MaybeUninit::uninit(); 1000];
        test_row(&x, &y, &mut b, &|a: f32, c: f32| a < c);
        test_with_row(&x, 1.0, &mut b[..500], &|a: f32, c: f32| a >= c);
        for (j, g) in b.iter().enumerate() {
            // SAFETY: written above, the first half twice.
            let g = unsafe { g.assume_init() };
            assert_eq!(
                g,
                if j < 500 { x[j] >= 1.0 } else { x[j] < y[j] },
                "mask element {j}"
            );
        }
    }
}
