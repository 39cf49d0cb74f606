//! Reductions over a set of axes, for the records that take one (`var`, `logsumexp`): the axes
//! checked, the shape they leave, and a fold applied axis by axis from the last, so that each
//! fold runs across the lanes of the axes not yet reduced (one fold over all of them would wait
//! on every add).

use crate::{Error, Result, Shape, Tensor};

/// `axes` (negative counts from the end) as non-negative axes of `shape`, increasing; at least
/// one, each once.
pub fn resolve(op: &'static str, shape: &Shape, axes: &[isize]) -> Result<Vec<usize>> {
    let mut out = axes
        .iter()
        .map(|&a| shape.axis(op, a))
        .collect::<Result<Vec<_>>>()?;
    out.sort_unstable();
    if out.is_empty() || out.windows(2).any(|w| w[0] == w[1]) {
        return Err(Error::arg(
            op,
            format!("expected one or more distinct axes of {shape}, got {axes:?}"),
        ));
    }
    Ok(out)
}

/// `shape` with `axes` dropped, or kept with size 1 when `keep`.
pub fn reduced(shape: &Shape, axes: &[usize], keep: bool) -> Shape {
    let dims = shape.dims().iter().enumerate();
    Shape(match keep {
        true => dims
            .map(|(i, &d)| if axes.contains(&i) { 1 } else { d })
            .collect(),
        false => dims
            .filter(|(i, _)| !axes.contains(i))
            .map(|(_, &d)| d)
            .collect(),
    })
}

/// The number of elements `axes` of `shape` hold together.
pub fn count(shape: &Shape, axes: &[usize]) -> usize {
    axes.iter().map(|&a| shape.dims()[a]).product()
}

/// `fold(x, axis)` over each of `axes` in turn, from the last; `fold` keeps the axis (size 1),
/// so the others keep their numbers.
pub fn fold_each(
    x: &Tensor,
    axes: &[usize],
    fold: impl Fn(&Tensor, isize) -> Result<Tensor>,
) -> Result<Tensor> {
    let mut t = x.clone();
    for &a in axes.iter().rev() {
        t = fold(&t, a as isize)?;
    }
    Ok(t)
}
