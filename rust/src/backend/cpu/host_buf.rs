//! A host tensor's elements: a `Vec` tlrs allocated, or memory another library owns (a NumPy
//! array, a DLPack producer's buffer) borrowed without a copy. Tensors are immutable, so both
//! read as one `&[T]`; the borrowed kind keeps its owner alive until the last tensor using it
//! is dropped.

use std::any::Any;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// Keeps foreign memory alive; dropping it releases the memory (e.g. calls a DLPack deleter).
pub type Owner = Arc<dyn Any + Send + Sync>;

pub struct HostBuf<T> {
    repr: Repr<T>,
}

enum Repr<T> {
    Owned(Vec<T>),
    Borrowed {
        ptr: *const T,
        len: usize,
        _owner: Owner,
    },
}

// The borrowed pointer is only ever read, and its owner (Send + Sync) keeps it valid.
unsafe impl<T: Send + Sync> Send for HostBuf<T> {}
unsafe impl<T: Send + Sync> Sync for HostBuf<T> {}

impl<T> HostBuf<T> {
    /// Views `len` elements at `ptr` without copying.
    ///
    /// # Safety
    /// `ptr` must be non-null, aligned for `T` and valid for reads of `len` elements for as long
    /// as `owner` lives; nothing may write there while tlrs reads (see docs/interop.md).
    pub unsafe fn borrowed(ptr: *const T, len: usize, owner: Owner) -> Self {
        HostBuf {
            repr: Repr::Borrowed {
                ptr,
                len,
                _owner: owner,
            },
        }
    }
    /// Whether the elements are another library's memory.
    pub fn is_borrowed(&self) -> bool {
        matches!(self.repr, Repr::Borrowed { .. })
    }
    /// The elements for writing, when tlrs owns them (borrowed memory is never written).
    pub fn owned_mut(&mut self) -> Option<&mut [T]> {
        match &mut self.repr {
            Repr::Owned(v) => Some(v),
            Repr::Borrowed { .. } => None,
        }
    }
}

impl<T: Clone> HostBuf<T> {
    /// The elements as an owned `Vec` (moved when owned, copied when borrowed).
    pub fn into_vec(self) -> Vec<T> {
        match self.repr {
            Repr::Owned(v) => v,
            Repr::Borrowed { .. } => self.to_vec(),
        }
    }
}

impl<T> Deref for HostBuf<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &self.repr {
            Repr::Owned(v) => v,
            // SAFETY: the constructor's contract (valid, aligned, kept alive by the owner).
            Repr::Borrowed { ptr, len, .. } => unsafe { std::slice::from_raw_parts(*ptr, *len) },
        }
    }
}

impl<T> From<Vec<T>> for HostBuf<T> {
    fn from(v: Vec<T>) -> Self {
        HostBuf {
            repr: Repr::Owned(v),
        }
    }
}

impl<T> FromIterator<T> for HostBuf<T> {
    fn from_iter<I: IntoIterator<Item = T>>(it: I) -> Self {
        it.into_iter().collect::<Vec<T>>().into()
    }
}

impl<T: Clone> Clone for HostBuf<T> {
    /// Owned elements are copied; borrowed ones share the owner (the memory is never written).
    fn clone(&self) -> Self {
        match &self.repr {
            Repr::Owned(v) => v.clone().into(),
            Repr::Borrowed { ptr, len, _owner } => HostBuf {
                repr: Repr::Borrowed {
                    ptr: *ptr,
                    len: *len,
                    _owner: _owner.clone(),
                },
            },
        }
    }
}

impl<T: PartialEq> PartialEq for HostBuf<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: fmt::Debug> fmt::Debug for HostBuf<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borrowed_reads_the_owner_memory_and_keeps_it_alive() {
        let data: Arc<Vec<f64>> = Arc::new(vec![1.0, 2.0, 3.0]);
        let ptr = data.as_ptr();
        let owner: Owner = data.clone();
        let b = unsafe { HostBuf::borrowed(ptr, 3, owner) };
        assert!(b.is_borrowed());
        assert_eq!(&*b, &[1.0, 2.0, 3.0]);
        assert_eq!(Arc::strong_count(&data), 2);
        let c = b.clone();
        assert_eq!(c.as_ptr(), ptr, "a clone shares the borrowed memory");
        assert_eq!(Arc::strong_count(&data), 3);
        drop((b, c));
        assert_eq!(Arc::strong_count(&data), 1);
    }

    #[test]
    fn into_vec_copies_only_borrowed_memory() {
        let v = vec![4.0f32, 5.0];
        let p = v.as_ptr();
        let moved = HostBuf::from(v).into_vec();
        assert_eq!(moved.as_ptr(), p, "owned elements are moved, not copied");
        let data = Arc::new(vec![7.0f32]);
        let b = unsafe { HostBuf::borrowed(data.as_ptr(), 1, data.clone()) };
        let copied = b.into_vec();
        assert_eq!(copied, vec![7.0]);
        assert_ne!(copied.as_ptr(), data.as_ptr());
    }
}
