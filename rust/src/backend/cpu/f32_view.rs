//! Generic elements seen as the f32 (or f64) they are, for kernels that exist for one dtype only
//! (lane kernels, powf's lanes, the AVX-512 pooling): checked by type, never a conversion.

use crate::dtype::Float;
use std::any::TypeId;

fn is_f32<T: Float>() -> bool {
    TypeId::of::<T>() == TypeId::of::<f32>()
}

/// `v` as f32 values, where T is f32.
pub fn as_f32<T: Float>(v: &[T]) -> Option<&[f32]> {
    // SAFETY: T is f32, so the slice is one of f32 values.
    is_f32::<T>().then(|| unsafe { std::slice::from_raw_parts(v.as_ptr() as *const f32, v.len()) })
}

/// `v` as f32 values; called only where T is f32 (`as_f32` of the same call's input said so).
pub fn as_f32_mut<T: Float>(v: &mut [T]) -> &mut [f32] {
    assert!(is_f32::<T>(), "as_f32_mut: not f32");
    // SAFETY: T is f32 (asserted).
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut f32, v.len()) }
}

/// An f32 vector as a `Vec<T>`; called only where T is f32 (`as_f32` said so).
pub fn from_f32<T: Float>(v: Vec<f32>) -> Vec<T> {
    assert!(is_f32::<T>(), "from_f32: not f32");
    let mut v = std::mem::ManuallyDrop::new(v);
    // SAFETY: T is f32 (asserted): same layout, and the allocation moves over whole.
    unsafe { Vec::from_raw_parts(v.as_mut_ptr() as *mut T, v.len(), v.capacity()) }
}

/// `v` as f64 values, where T is f64.
pub fn as_f64<T: Float>(v: &[T]) -> Option<&[f64]> {
    // SAFETY: T is f64, so the slice is one of f64 values.
    (TypeId::of::<T>() == TypeId::of::<f64>())
        .then(|| unsafe { std::slice::from_raw_parts(v.as_ptr() as *const f64, v.len()) })
}

/// An f64 vector as a `Vec<T>`; called only where T is f64 (`as_f64` said so).
pub fn from_f64<T: Float>(v: Vec<f64>) -> Vec<T> {
    assert!(
        TypeId::of::<T>() == TypeId::of::<f64>(),
        "from_f64: not f64"
    );
    let mut v = std::mem::ManuallyDrop::new(v);
    // SAFETY: T is f64 (asserted): same layout, and the allocation moves over whole.
    unsafe { Vec::from_raw_parts(v.as_mut_ptr() as *mut T, v.len(), v.capacity()) }
}
