//! Element types: the runtime `DType` tag and the `Float` trait that kernels are generic over.
//! Transcendentals come from the pure-software `libm` crate so results are identical on every
//! machine and build (docs/numerics.md).

use std::fmt;
use std::iter::Sum;
use std::ops::{Add, Div, Mul, Neg, Sub};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F64,
    /// Integer tensors (token ids, class labels, indices): no autograd, no float kernels.
    I64,
    /// Masks and comparison results.
    Bool,
}

/// Every spelling of a float dtype that tlrs accepts, here and from Python (`tlrs.dtype` reads
/// this table through `_core.dtype_spellings()`): the one list. Integer and bool tensors have
/// their own (`INT_SPELLINGS`): they are never a model's dtype.
pub const SPELLINGS: &[(&str, DType)] = &[
    ("float32", DType::F32),
    ("f32", DType::F32),
    ("float64", DType::F64),
    ("f64", DType::F64),
    ("float", DType::F64),
    ("double", DType::F64),
];

/// The spellings of the integer and bool tensor dtypes (a tensor's dtype, never a model's).
pub const INT_SPELLINGS: &[(&str, DType)] = &[
    ("int64", DType::I64),
    ("long", DType::I64),
    ("i64", DType::I64),
    ("bool", DType::Bool),
];

impl DType {
    /// The float dtype a spelling names (`SPELLINGS`), if any.
    pub fn parse(s: &str) -> Option<DType> {
        SPELLINGS.iter().find(|(n, _)| *n == s).map(|&(_, d)| d)
    }
    /// Any tensor dtype a spelling names, integer and bool included.
    pub fn parse_any(s: &str) -> Option<DType> {
        Self::parse(s).or_else(|| INT_SPELLINGS.iter().find(|(n, _)| *n == s).map(|&(_, d)| d))
    }
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::I64 => "int64",
            DType::Bool => "bool",
        }
    }
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F64 | DType::I64 => 8,
            DType::Bool => 1,
        }
    }
    /// Whether float kernels (and autograd) apply.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The float types kernels are written for. Every method is one correctly rounded IEEE
/// operation or a libm function, never a fused multiply-add.
pub trait Float:
    Copy
    + Send
    + Sync
    + PartialOrd
    + PartialEq
    + fmt::Debug
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + Sum
    + 'static
{
    const DTYPE: DType;
    const ZERO: Self;
    const ONE: Self;
    const NEG_INFINITY: Self;
    fn from_f64(v: f64) -> Self;
    /// `v` rounded once to the nearest value (a CUDA kernel's `(T)long long` conversion).
    fn from_i64(v: i64) -> Self;
    fn to_f64(self) -> f64;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn log1p(self) -> Self;
    fn expm1(self) -> Self;
    fn sqrt(self) -> Self;
    fn tanh(self) -> Self;
    fn erf(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn powf(self, e: Self) -> Self;
    fn abs(self) -> Self;
    /// Rounds toward zero (exact).
    fn trunc(self) -> Self;
    /// Rounds toward negative infinity (exact).
    fn floor(self) -> Self;
    /// C's `fmod`: the exact remainder of `self / e` with the sign of `self`.
    fn fmod(self, e: Self) -> Self;
    /// The angle of the point (x = `x`, y = `self`) in (-pi, pi] (libm's atan2).
    fn atan2(self, x: Self) -> Self;
    fn is_nan(self) -> bool;
    fn is_finite(self) -> bool;
    /// Whether the sign bit is set (true for -0 and negative NaNs too).
    fn is_sign_negative(self) -> bool;
}

macro_rules! impl_float {
    ($t:ty, $d:expr, $exp:path, $ln:path, $log1p:path, $expm1:path, $sqrt:path, $tanh:path, $erf:path, $sin:path, $cos:path, $pow:path, $abs:path, $trunc:path, $floor:path, $fmod:path, $atan2:path) => {
        impl Float for $t {
            const DTYPE: DType = $d;
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const NEG_INFINITY: Self = <$t>::NEG_INFINITY;
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn exp(self) -> Self {
                $exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                $ln(self)
            }
            #[inline(always)]
            fn log1p(self) -> Self {
                $log1p(self)
            }
            #[inline(always)]
            fn expm1(self) -> Self {
                $expm1(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                $sqrt(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                $tanh(self)
            }
            #[inline(always)]
            fn erf(self) -> Self {
                $erf(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                $sin(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                $cos(self)
            }
            #[inline(always)]
            fn powf(self, e: Self) -> Self {
                $pow(self, e)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                $abs(self)
            }
            #[inline(always)]
            fn trunc(self) -> Self {
                $trunc(self)
            }
            #[inline(always)]
            fn floor(self) -> Self {
                $floor(self)
            }
            #[inline(always)]
            fn fmod(self, e: Self) -> Self {
                $fmod(self, e)
            }
            #[inline(always)]
            fn atan2(self, x: Self) -> Self {
                $atan2(self, x)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            #[inline(always)]
            fn is_sign_negative(self) -> bool {
                <$t>::is_sign_negative(self)
            }
        }
    };
}

impl_float!(
    f32,
    DType::F32,
    crate::lane_math::expf::expf_select,
    crate::lane_math::logf::logf_select,
    crate::lane_math::log1pf::log1pf_select,
    crate::lane_math::expm1f::expm1f_select,
    // IEEE square root is correctly rounded, so the instruction gives libm's bits; libm's x86
    // sqrtf is that instruction as inline assembly, which never vectorises and, being SSE
    // encoded, stalls AVX code around it.
    f32::sqrt,
    crate::lane_math::tanhf::tanhf_select,
    crate::lane_math::erff::erff_select,
    libm::sinf,
    libm::cosf,
    libm::powf,
    libm::fabsf,
    trunc_f32,
    floor_f32,
    libm::fmodf,
    libm::atan2f
);
impl_float!(
    f64,
    DType::F64,
    crate::lane_math::exp::exp_select,
    crate::lane_math::log::log_select,
    crate::lane_math::log1p::log1p_select,
    crate::lane_math::expm1::expm1_select,
    f64::sqrt,
    crate::lane_math::tanh::tanh_select,
    libm::erf,
    libm::sin,
    libm::cos,
    libm::pow,
    libm::fabs,
    trunc_f64,
    floor_f64,
    libm::fmod,
    crate::lane_math::atan2::atan2_select
);

/// Rounding to an integer by the instruction (`vrndscale` where the loop is compiled for
/// AVX-512, SSE4.1's `round` or a libc call elsewhere), exact like libm's bit arithmetic: the
/// same bits, but that a NaN passes through unchanged as libm returns it (the instruction
/// quiets a signalling NaN). libm's branches on the exponent did not vectorise well (floor of
/// [32, 64, 512] f32: 0.063 ms against 0.040 for neg).
macro_rules! rounding {
    ($($name:ident = $t:ty, $method:ident;)*) => {$(
        #[inline(always)]
        fn $name(x: $t) -> $t {
            if x.is_nan() { x } else { x.$method() }
        }
    )*};
}
rounding! {
    trunc_f32 = f32, trunc;
    floor_f32 = f32, floor;
    trunc_f64 = f64, trunc;
    floor_f64 = f64, floor;
}

/// `v` in the element type of `like`: lets dtype-dispatch macros name constants without spelling `T`.
#[inline(always)]
pub fn lit<T: Float>(_like: &[T], v: f64) -> T {
    T::from_f64(v)
}

#[cfg(test)]
mod sqrt_tests {
    //! `Float::sqrt` is the IEEE instruction rather than libm's call: the same bits.
    use super::Float;

    #[test]
    fn sqrt_gives_libms_bits() {
        // Every 4099th f32 bit pattern (both signs, subnormals, infinities, NaNs with payloads),
        // then f64 patterns from a fixed stream.
        for bits in (0..=u32::MAX)
            .step_by(4099)
            .chain([0x7fc1_2345, 0xff80_0001, 1])
        {
            let x = f32::from_bits(bits);
            assert_eq!(
                Float::sqrt(x).to_bits(),
                libm::sqrtf(x).to_bits(),
                "sqrt({bits:#x})"
            );
        }
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..1_000_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let x = f64::from_bits(s);
            assert_eq!(
                Float::sqrt(x).to_bits(),
                libm::sqrt(x).to_bits(),
                "sqrt({s:#x})"
            );
        }
    }
}
