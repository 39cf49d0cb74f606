//! The per-image batch norm as one recorded op on CPU tensors: forward and gradients in fused
//! passes (backend/cpu/norm.rs) that round every value as the op chain in `norm.rs` does, so
//! results are bit-identical to it while reading each plane a few times instead of building
//! ten intermediate tensors. Device tensors, and mixed dtypes or devices (whose errors the chain
//! reports), take the chain.

use crate::autograd::record::{first, Attr, Record};
use crate::geometry::PlaneDims;
use crate::{Error, Result, Shape, Tensor};

fn dims(x: &Tensor, per_position: bool) -> PlaneDims {
    let r = x.rank();
    let (c, hw) = (x.dims()[r - 3], x.dims()[r - 2] * x.dims()[r - 1]);
    PlaneDims {
        planes: x.dims()[..r - 2].iter().product(),
        channels: c,
        hw,
        per_position,
    }
}

/// Whether the fused form applies: every tensor on the CPU in `x`'s dtype.
pub(crate) fn fusable(x: &Tensor, weight: Option<&Tensor>, bias: Option<&Tensor>) -> bool {
    let same = |t: &Tensor| t.on_host() && t.dtype() == x.dtype();
    same(x) && weight.is_none_or(same) && bias.is_none_or(same)
}

/// The fused op (the caller checked shapes and `fusable`): γ and β are [C], or with
/// `per_position` [H·W] (layer norm's rows as planes [rows, 1, D]).
pub(crate) fn batch_norm_per_image_fused(
    x: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    per_position: bool,
) -> Result<Tensor> {
    crate::storage::check_alloc("batch_norm", x.shape())?;
    let d = dims(x, per_position);
    let (y, st) = x.storage().batch_norm_per_image(
        weight.map(Tensor::storage),
        bias.map(Tensor::storage),
        d,
        eps,
    )?;
    let stats = Tensor::from_storage(st, Shape(vec![d.planes, 2]))?;
    let op = BatchNormPerImage {
        x: x.clone(),
        w: weight.cloned(),
        b: bias.cloned(),
        eps,
        per_position,
        stats,
    };
    Ok(Tensor::from_op(y, x.shape().clone(), op))
}

/// Gradients for the op's inputs in order (x, then weight and bias where given); `None` for
/// inputs that need none.
pub(crate) fn batch_norm_per_image_grads(
    x: &Tensor,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    stats: &Tensor,
    g: &Tensor,
    per_position: bool,
) -> Result<Vec<Option<Tensor>>> {
    if g.shape() != x.shape() || g.dtype() != x.dtype() || !g.on_host() {
        return Err(Error::shape(
            "batch_norm",
            format!(
                "expected a CPU gradient {} {}, got {} {}",
                x.dtype(),
                x.shape(),
                g.dtype(),
                g.shape()
            ),
        ));
    }
    let want = [
        x.requires_grad(),
        w.is_some_and(|t| t.requires_grad()),
        b.is_some_and(|t| t.requires_grad()),
    ];
    let d = dims(x, per_position);
    let params = if per_position { d.hw } else { d.channels };
    let [gx, gw, gb] = x.storage().batch_norm_per_image_grads(
        w.map(Tensor::storage),
        stats.storage(),
        g.storage(),
        d,
        want,
    )?;
    let wrap = |v: Option<crate::storage::Storage>, shape: Shape| {
        v.map(|s| Tensor::from_storage(s, shape)).transpose()
    };
    let mut out = vec![wrap(gx, x.shape().clone())?];
    if w.is_some() {
        out.push(wrap(gw, Shape(vec![params]))?);
    }
    if b.is_some() {
        out.push(wrap(gb, Shape(vec![params]))?);
    }
    Ok(out)
}

/// Per-image batch norm of `x`; `stats` holds each plane's mean and sqrt(var + eps). With
/// `per_position`, γ and β hold one value per position of a plane (layer norm).
#[derive(Clone)]
pub struct BatchNormPerImage {
    pub x: Tensor,
    pub w: Option<Tensor>,
    pub b: Option<Tensor>,
    pub eps: f64,
    pub per_position: bool,
    pub stats: Tensor,
}

impl Record for BatchNormPerImage {
    crate::autograd::record::named!("batch_norm_per_image");
    fn inputs(&self) -> Vec<&Tensor> {
        std::iter::once(&self.x)
            .chain(self.w.iter())
            .chain(self.b.iter())
            .collect()
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![
            ("eps", Attr::Float(Some(self.eps))),
            ("weight", Attr::Flag(self.w.is_some())),
            ("bias", Attr::Flag(self.b.is_some())),
            ("per_position", Attr::Flag(self.per_position)),
        ]
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let (w, b) = (self.w.as_ref(), self.b.as_ref());
        batch_norm_per_image_grads(&self.x, w, b, &self.stats, g, self.per_position)
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        let weight = self.w.as_ref().and(xs.get(1));
        let bias = self
            .b
            .as_ref()
            .and(xs.get(if self.w.is_some() { 2 } else { 1 }));
        let x = first("batch_norm_per_image", xs)?;
        if self.per_position {
            crate::ops::norm::layer_norm_planes(x, weight, bias, self.eps)
        } else {
            crate::ops::norm::batch_norm_per_image(x, weight, bias, self.eps)
        }
    }
}

#[cfg(test)]
mod tests {
    //! The fused op against the op chain it replaces (run through autograd), bit for bit.
    use super::super::norm::batch_norm_per_image_chain;
    use super::*;
    use crate::ops::test_support::{bits, leaf};
    use crate::ops::{mul, sum};
    use crate::DType;

    /// (output, gradients of sum(y * r) for x and the given affine parameters).
    fn run(
        f: impl Fn(&Tensor, Option<&Tensor>, Option<&Tensor>) -> Result<Tensor>,
        x: &Tensor,
        w: Option<&Tensor>,
        b: Option<&Tensor>,
        r: &Tensor,
    ) -> (Tensor, Vec<Tensor>) {
        let y = f(x, w, b).unwrap();
        let loss = sum(&mul(&y, r).unwrap(), None, false).unwrap();
        let wrt: Vec<Tensor> = std::iter::once(x).chain(w).chain(b).cloned().collect();
        (y.detach(), crate::autograd::grad(&loss, &wrt).unwrap())
    }

    #[test]
    fn fused_equals_the_op_chain_bit_for_bit() {
        // Planes and channels in whole groups of sixteen interleaved folds and in remainders;
        // planes shorter than, as long as and longer than a 16-position block (the f32 AVX-512
        // folds transpose 16 x 16 blocks, then step the rest one position at a time).
        let shapes: [&[usize]; 8] = [
            &[3, 4, 5, 6],
            &[2, 3, 1, 1],
            &[4, 7, 3],
            &[2, 2, 0, 3],
            &[3, 17, 2, 5],
            &[3, 12, 4, 4],
            &[2, 16, 5, 7],
            &[2, 17, 6, 6],
        ];
        for (k, dims) in shapes.iter().enumerate() {
            for dtype in [DType::F32, DType::F64] {
                for (with_w, with_b) in [(true, true), (false, false), (true, false), (false, true)]
                {
                    let c = dims[dims.len() - 3];
                    let seed = 10 * k as u64;
                    let x = leaf(dims, seed + 1, 6.0, dtype);
                    let w = with_w.then(|| leaf(&[c], seed + 2, 2.0, dtype));
                    let b = with_b.then(|| leaf(&[c], seed + 3, 2.0, dtype));
                    let r = leaf(dims, seed + 4, 2.0, dtype).detach();
                    let eps = 1e-5;
                    assert!(fusable(&x, w.as_ref(), b.as_ref()));
                    let fused = run(
                        |x, w, b| batch_norm_per_image_fused(x, w, b, eps, false),
                        &x,
                        w.as_ref(),
                        b.as_ref(),
                        &r,
                    );
                    let chain = run(
                        |x, w, b| batch_norm_per_image_chain(x, w, b, eps),
                        &x,
                        w.as_ref(),
                        b.as_ref(),
                        &r,
                    );
                    let case = format!("{dims:?} {dtype} w={with_w} b={with_b}");
                    assert_eq!(bits(&fused.0), bits(&chain.0), "output, {case}");
                    for (i, (a, e)) in fused.1.iter().zip(&chain.1).enumerate() {
                        assert_eq!(a.shape(), e.shape(), "gradient {i} shape, {case}");
                        assert_eq!(bits(a), bits(e), "gradient {i}, {case}");
                    }
                }
            }
        }
    }
}
