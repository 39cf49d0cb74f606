//! Strided layouts: where each element of a view sits in the storage it reads.
//!
//! On the CPU, permute/transpose, slice and broadcast_to return views of their input's values
//! instead of copies (tensor.rs). An op that needs row-major values gets them from
//! `Tensor::storage`, which copies a view once, the first time it is asked; matmul reads views
//! in place through their strides (ops/matmul.rs).

use crate::Shape;

/// Element (i₀, i₁, …) of a view sits at `offset + Σ i_d · strides[d]` of its base storage.
/// Strides may be 0 (a broadcast axis) and need not decrease (a permuted view).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Strided {
    pub offset: usize,
    pub strides: Vec<usize>,
}

impl Strided {
    /// The layout of a row-major tensor of `shape`.
    pub fn row_major(shape: &Shape) -> Strided {
        Strided {
            offset: 0,
            strides: shape.strides(),
        }
    }

    /// Output axis i reads this layout's axis `perm[i]`.
    pub fn permuted(&self, perm: &[usize]) -> Strided {
        Strided {
            offset: self.offset,
            strides: perm.iter().map(|&a| self.strides[a]).collect(),
        }
    }

    /// Elements from `start` along `axis` (the view's length there is the caller's).
    pub fn sliced(&self, axis: usize, start: usize) -> Strided {
        Strided {
            offset: self.offset + start * self.strides[axis],
            strides: self.strides.clone(),
        }
    }

    /// This layout (of shape `from`) read as shape `to` by NumPy broadcasting: new leading axes
    /// and axes of length 1 that grow repeat their elements (stride 0).
    pub fn broadcast(&self, from: &Shape, to: &Shape) -> Strided {
        let lead = to.rank() - from.rank();
        let strides = (0..to.rank())
            .map(|i| match i.checked_sub(lead) {
                Some(j) if from.dims()[j] != 1 => self.strides[j],
                _ => 0,
            })
            .collect();
        Strided {
            offset: self.offset,
            strides,
        }
    }

    /// The same elements of a view of `dims` in fewer axes: axes of length 1 dropped and each
    /// axis merged into the one before it where their strides line up (so a row-major view is
    /// one axis of stride 1). Returns (dims, strides), at least one axis.
    pub fn simplified(&self, dims: &[usize]) -> (Vec<usize>, Vec<usize>) {
        let (mut od, mut os): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
        for (&d, &s) in dims.iter().zip(&self.strides) {
            if d == 1 {
                continue;
            }
            match (od.last_mut(), os.last_mut()) {
                (Some(pd), Some(ps)) if *ps == s * d => {
                    *pd *= d;
                    *ps = s;
                }
                _ => {
                    od.push(d);
                    os.push(s);
                }
            }
        }
        if od.is_empty() {
            (vec![1], vec![1])
        } else {
            (od, os)
        }
    }

    /// This view (of `from`) read as `to` without moving any element, or None where the
    /// elements would have to move (PyTorch's rule for `view`): each run of new axes must
    /// cover a run of old axes that lie evenly spaced in memory. Empty views give None.
    pub fn reshaped(&self, from: &[usize], to: &[usize]) -> Option<Strided> {
        let numel: usize = from.iter().product();
        if numel == 0 || from.is_empty() || numel != to.iter().product::<usize>() {
            return None;
        }
        let mut strides = vec![0; to.len()];
        let mut view_d = to.len();
        let mut base = self.strides[from.len() - 1];
        let (mut tensor_numel, mut view_numel) = (1usize, 1usize);
        for d in (0..from.len()).rev() {
            tensor_numel *= from[d];
            // A chunk of old axes ends where the next one out does not continue it evenly.
            let chunk_ends =
                d == 0 || (from[d - 1] != 1 && self.strides[d - 1] != tensor_numel * base);
            if chunk_ends {
                while view_d > 0 && (view_numel < tensor_numel || to[view_d - 1] == 1) {
                    strides[view_d - 1] = view_numel * base;
                    view_numel *= to[view_d - 1];
                    view_d -= 1;
                }
                if view_numel != tensor_numel {
                    return None;
                }
                if d > 0 {
                    base = self.strides[d - 1];
                    tensor_numel = 1;
                    view_numel = 1;
                }
            }
        }
        (view_d == 0).then_some(Strided {
            offset: self.offset,
            strides,
        })
    }

    /// Whether the view of `dims` reads `len` elements of its base from the start in row-major
    /// order, so the base itself holds its values.
    pub fn is_whole(&self, dims: &[usize], len: usize) -> bool {
        let n: usize = dims.iter().product();
        n == len && (n == 0 || (self.offset == 0 && self.simplified(dims).1 == [1]))
    }

    /// One past the largest base offset the view of `dims` reads (0 when it reads none).
    pub fn extent(&self, dims: &[usize]) -> usize {
        if dims.contains(&0) {
            return 0;
        }
        let last: usize = dims
            .iter()
            .zip(&self.strides)
            .map(|(&d, &s)| (d - 1) * s)
            .sum();
        self.offset + last + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simplified_merges_row_major_runs_and_drops_unit_axes() {
        let s = Strided::row_major(&Shape(vec![2, 1, 3, 4]));
        assert_eq!(s.simplified(&[2, 1, 3, 4]), (vec![24], vec![1]));
        // [2, 3, 4] transposed to [4, 3, 2]: no two axes line up.
        let t = Strided::row_major(&Shape(vec![2, 3, 4])).permuted(&[2, 1, 0]);
        assert_eq!(t.strides, vec![1, 4, 12]);
        assert_eq!(t.simplified(&[4, 3, 2]), (vec![4, 3, 2], vec![1, 4, 12]));
        // [2, 3, 4] -> [3, 4, 2]: the last two input axes stay together.
        let u = Strided::row_major(&Shape(vec![2, 3, 4])).permuted(&[1, 2, 0]);
        assert_eq!(u.simplified(&[3, 4, 2]), (vec![12, 2], vec![1, 12]));
    }

    #[test]
    fn slices_and_broadcasts_move_the_offset_and_zero_the_strides() {
        let s = Strided::row_major(&Shape(vec![5, 6])).sliced(1, 2);
        assert_eq!((s.offset, s.strides.clone()), (2, vec![6, 1]));
        assert_eq!(s.extent(&[5, 3]), 2 + 4 * 6 + 2 + 1);
        assert!(!s.is_whole(&[5, 3], 30));
        let b = Strided::row_major(&Shape(vec![3, 1]))
            .broadcast(&Shape(vec![3, 1]), &Shape(vec![2, 3, 4]));
        assert_eq!(b.strides, vec![0, 1, 0]);
        assert!(Strided::row_major(&Shape(vec![4, 5])).is_whole(&[4, 5], 20));
    }

    /// Every element of the reshaped view is the element at the same row-major position of the
    /// original view: the layouts read the same base offsets in the same order.
    fn offsets(l: &Strided, dims: &[usize]) -> Vec<usize> {
        let n: usize = dims.iter().product();
        (0..n)
            .map(|mut i| {
                let mut at = l.offset;
                for (d, s) in dims.iter().zip(&l.strides).rev() {
                    at += (i % d) * s;
                    i /= d;
                }
                at
            })
            .collect()
    }

    #[test]
    fn reshaped_views_read_the_same_elements_or_refuse() {
        // A slice of the last axis ([2, 3, 12] from [2, 3, 36]) split as [2, 3, 4, 3]: a view.
        let base = Strided::row_major(&Shape(vec![2, 3, 36]));
        let sl = base.sliced(2, 12);
        for to in [
            vec![2, 3, 4, 3],
            vec![6, 12],
            vec![2, 3, 12, 1],
            vec![1, 2, 3, 2, 6],
        ] {
            let r = sl.reshaped(&[2, 3, 12], &to);
            assert!(r.is_some(), "{to:?}");
            assert_eq!(
                offsets(&r.unwrap(), &to),
                offsets(&sl, &[2, 3, 12]),
                "{to:?}"
            );
        }
        // Merging the sliced axis with the one before it would move elements.
        assert!(sl.reshaped(&[2, 3, 12], &[2, 36]).is_none());
        // A transpose merges only where the strides line up.
        let t = Strided::row_major(&Shape(vec![4, 6])).permuted(&[1, 0]);
        assert!(t.reshaped(&[6, 4], &[24]).is_none());
        let split = t
            .reshaped(&[6, 4], &[2, 3, 4])
            .expect("splitting an axis is a view");
        assert_eq!(offsets(&split, &[2, 3, 4]), offsets(&t, &[6, 4]));
        assert!(t.reshaped(&[6, 4], &[0, 4]).is_none());
        assert!(t.reshaped(&[6, 4], &[5, 5]).is_none());
    }
}
