//! Normalisation layers, composed from recorded ops so their gradients follow automatically:
//! the reference's per-image batch norm, batch-statistics batch norm, and layer norm.

use crate::ops::elementwise::{add, div, mul, sqrt, sub};
use crate::ops::layout::{permute_raw, reshape_to};
use crate::ops::reduce::mean;
use crate::{Error, Result, Shape, Tensor};

fn scalar(v: f64, like: &Tensor) -> Tensor {
    Tensor::scalar(v, like.dtype())
}

/// (x - mean) / sqrt(var + eps) over the last axis, biased variance (two passes).
fn normalise_last(x: &Tensor, eps: f64) -> Result<Tensor> {
    let mu = mean(x, Some(-1), true)?;
    let centred = sub(x, &mu)?;
    let var = mean(&mul(&centred, &centred)?, Some(-1), true)?;
    div(&centred, &sqrt(&add(&var, &scalar(eps, x))?)?)
}

fn check_affine(op: &'static str, t: Option<&Tensor>, c: usize) -> Result<()> {
    match t {
        Some(t) if t.dims() != [c] => Err(Error::shape(
            op,
            format!("expected a parameter of shape [{c}], got {}", t.shape()),
        )),
        _ => Ok(()),
    }
}

/// A [C] parameter as [C, 1, 1], to broadcast against [N, C, H, W] or [C, H, W].
fn per_channel(t: &Tensor) -> Tensor {
    reshape_to(t, Shape(vec![t.dims()[0], 1, 1]))
}

fn affine(y: Tensor, weight: Option<&Tensor>, bias: Option<&Tensor>) -> Result<Tensor> {
    let mut y = y;
    if let Some(w) = weight {
        y = mul(&y, &per_channel(w))?;
    }
    if let Some(b) = bias {
        y = add(&y, &per_channel(b))?;
    }
    Ok(y)
}

/// The reference ResNet-18 batch norm: per image and channel, mean and biased variance over
/// H×W of that image, `y = (x - mean) / sqrt(var + eps) * gamma + beta`; no running statistics.
pub fn batch_norm_per_image(
    x: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    if x.rank() != 3 && x.rank() != 4 {
        return Err(Error::shape(
            "batch_norm",
            format!(
                "expected input [N, C, H, W] or [C, H, W], got {}",
                x.shape()
            ),
        ));
    }
    let c = x.dims()[x.rank() - 3];
    check_affine("batch_norm", weight, c)?;
    check_affine("batch_norm", bias, c)?;
    if x.numel() == 0 {
        // Nothing to normalise; no per-plane statistics for planes without values
        // ([2^40, 1, 0, 5]), as layer_norm.
        return affine(x.clone(), weight, bias);
    }
    if super::norm_per_image::fusable(x, weight, bias) {
        return super::norm_per_image::batch_norm_per_image_fused(x, weight, bias, eps, false);
    }
    batch_norm_per_image_chain(x, weight, bias, eps)
}

/// The per-image batch norm as a chain of recorded ops: the form device tensors run, and the
/// definition the fused CPU op (norm_per_image.rs) reproduces bit for bit. Expects the shapes
/// `batch_norm_per_image` checks.
pub fn batch_norm_per_image_chain(
    x: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    let r = x.rank();
    let (h, w) = (x.dims()[r - 2], x.dims()[r - 1]);
    let mut flat = x.dims()[..r - 2].to_vec();
    flat.push(h * w);
    let y = reshape_to(
        &normalise_last(&reshape_to(x, Shape(flat)), eps)?,
        x.shape().clone(),
    );
    affine(y, weight, bias)
}

/// Batch statistics per channel over (N, H, W) of [N, C, H, W] (or (N) of [N, C]); returns
/// the output, the batch mean and the biased batch variance (for running statistics).
pub fn batch_norm_batch_stats(
    x: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    if x.rank() != 2 && x.rank() != 4 {
        return Err(Error::shape(
            "batch_norm",
            format!("expected input [N, C] or [N, C, H, W], got {}", x.shape()),
        ));
    }
    let c = x.dims()[1];
    check_affine("batch_norm", weight, c)?;
    check_affine("batch_norm", bias, c)?;
    // [C, N*H*W]: channels first so each channel's statistics are one last-axis reduction.
    let perm: Vec<usize> = if x.rank() == 4 {
        vec![1, 0, 2, 3]
    } else {
        vec![1, 0]
    };
    let moved = permute_raw(x, perm.clone())?;
    let cols = reshape_to(&moved, Shape(vec![c, x.numel() / c.max(1)]));
    let mu = mean(&cols, Some(-1), true)?;
    let centred = sub(&cols, &mu)?;
    let var = mean(&mul(&centred, &centred)?, Some(-1), true)?;
    let normed = div(&centred, &sqrt(&add(&var, &scalar(eps, x))?)?)?;
    let back = permute_raw(&reshape_to(&normed, moved.shape().clone()), perm)?;
    let rank = x.rank();
    let y = if rank == 4 {
        affine(back, weight, bias)?
    } else {
        affine2(back, weight, bias)?
    };
    Ok((
        y,
        reshape_to(&mu, Shape(vec![c])),
        reshape_to(&var, Shape(vec![c])),
    ))
}

fn affine2(y: Tensor, weight: Option<&Tensor>, bias: Option<&Tensor>) -> Result<Tensor> {
    let mut y = y;
    if let Some(w) = weight {
        y = mul(&y, w)?;
    }
    if let Some(b) = bias {
        y = add(&y, b)?;
    }
    Ok(y)
}

/// Batch norm with fixed statistics (evaluation mode): (x - mean) / sqrt(var + eps) * γ + β.
pub fn batch_norm_eval(
    x: &Tensor,
    running_mean: &Tensor,
    running_var: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    if x.rank() != 2 && x.rank() != 4 {
        return Err(Error::shape(
            "batch_norm",
            format!("expected input [N, C] or [N, C, H, W], got {}", x.shape()),
        ));
    }
    let c = x.dims()[1];
    for t in [Some(running_mean), Some(running_var), weight, bias] {
        check_affine("batch_norm", t, c)?;
    }
    let shape_c = |t: &Tensor| {
        if x.rank() == 4 {
            per_channel(t)
        } else {
            t.clone()
        }
    };
    let y = div(
        &sub(x, &shape_c(running_mean))?,
        &sqrt(&add(&shape_c(running_var), &scalar(eps, x))?)?,
    )?;
    if x.rank() == 4 {
        affine(y, weight, bias)
    } else {
        affine2(y, weight, bias)
    }
}

/// Layer norm over the trailing `normalized_shape` axes with optional elementwise γ and β.
pub fn layer_norm(
    x: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    let k = normalized_shape.len();
    if k == 0 || k > x.rank() || &x.dims()[x.rank() - k..] != normalized_shape {
        return Err(Error::shape(
            "layer_norm",
            format!(
                "input {} does not end in normalized_shape {:?}",
                x.shape(),
                normalized_shape
            ),
        ));
    }
    for t in [weight, bias].into_iter().flatten() {
        if t.dims() != normalized_shape {
            return Err(Error::shape(
                "layer_norm",
                format!(
                    "expected γ/β of shape {:?}, got {}",
                    normalized_shape,
                    t.shape()
                ),
            ));
        }
    }
    crate::storage::check_alloc("layer_norm", x.shape())?;
    if x.numel() == 0 {
        // Nothing to normalise; no per-row statistics for rows without values ([2^40, 0]).
        return affine2(x.clone(), weight, bias);
    }
    // Each row of D values is normalised exactly as a per-image batch norm's plane (the same
    // chain, `normalise_last`), so rows become planes of [rows, 1, D] with γ and β per
    // position: on the CPU one fused op, reading each row a few times instead of building ten
    // intermediate tensors, with the chain's bits; elsewhere the chain itself.
    let rows = x.dims()[..x.rank() - k].iter().product();
    let d: usize = normalized_shape.iter().product();
    let planes = reshape_to(x, Shape(vec![rows, 1, d]));
    let flat = |t: &Tensor| reshape_to(t, Shape(vec![d]));
    let (w, b) = (weight.map(flat), bias.map(flat));
    let y = layer_norm_planes(&planes, w.as_ref(), b.as_ref(), eps)?;
    Ok(reshape_to(&y, x.shape().clone()))
}

/// Layer norm of planes [rows, 1, D] with γ and β of shape [D]: the fused op on the CPU,
/// else normalisation as a per-image batch norm followed by `y * γ + β`.
pub(crate) fn layer_norm_planes(
    planes: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    if super::norm_per_image::fusable(planes, weight, bias) {
        return super::norm_per_image::batch_norm_per_image_fused(planes, weight, bias, eps, true);
    }
    affine2(batch_norm_per_image(planes, None, None, eps)?, weight, bias)
}

/// Layer norm as the chain of recorded ops it is defined by (the tests' oracle for the fused
/// form `layer_norm` takes).
#[cfg(test)]
fn layer_norm_chain(
    x: &Tensor,
    k: usize,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    let mut flat = x.dims()[..x.rank() - k].to_vec();
    flat.push(x.dims()[x.rank() - k..].iter().product());
    let y = reshape_to(
        &normalise_last(&reshape_to(x, Shape(flat)), eps)?,
        x.shape().clone(),
    );
    affine2(y, weight, bias)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::sum;
    use crate::ops::test_support::{bits, leaf};
    use crate::DType;

    #[test]
    fn layer_norm_equals_its_op_chain_bit_for_bit() {
        // Rows shorter and longer than a 16-value block, 1 and 2 normalised axes, 16+ rows;
        // γ/β gradients over one, and over three stretches of 64 positions, the last partial.
        let cases: [(&[usize], usize); 5] = [
            (&[8, 16, 64], 1),
            (&[3, 5], 1),
            (&[2, 17, 4, 5], 2),
            (&[40, 7], 1),
            (&[2, 19, 130], 1),
        ];
        for (dims, k) in cases {
            for dtype in [DType::F32, DType::F64] {
                for (with_w, with_b) in [(false, false), (true, true), (true, false), (false, true)]
                {
                    let norm = &dims[dims.len() - k..];
                    let x = leaf(dims, 1, 6.0, dtype);
                    let w = with_w.then(|| leaf(norm, 2, 6.0, dtype));
                    let b = with_b.then(|| leaf(norm, 3, 6.0, dtype));
                    let r = leaf(dims, 4, 6.0, dtype).detach();
                    let wrt: Vec<Tensor> =
                        std::iter::once(&x).chain(&w).chain(&b).cloned().collect();
                    let run = |y: Tensor| {
                        let loss = sum(&mul(&y, &r).unwrap(), None, false).unwrap();
                        (y.detach(), crate::autograd::grad(&loss, &wrt).unwrap())
                    };
                    let fused = run(layer_norm(&x, norm, w.as_ref(), b.as_ref(), 1e-5).unwrap());
                    let chain = run(layer_norm_chain(&x, k, w.as_ref(), b.as_ref(), 1e-5).unwrap());
                    let case = format!("{dims:?} {dtype} w={with_w} b={with_b}");
                    assert_eq!(bits(&fused.0), bits(&chain.0), "output, {case}");
                    for (i, (a, e)) in fused.1.iter().zip(&chain.1).enumerate() {
                        assert_eq!(bits(a), bits(e), "gradient {i}, {case}");
                    }
                }
            }
        }
    }
}
