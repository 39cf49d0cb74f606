//! Multi-head scaled dot-product attention with the reference's parameter layout
//! (Wq, Wk, Wv [d_model, heads·head_dim], Wo [heads·head_dim, d_model]), composed from
//! recorded ops; masked positions get a zero softmax numerator.

use crate::ops::elementwise::div;
use crate::ops::index::masked_fill;
use crate::ops::layout::{permute_raw, reshape_to};
use crate::ops::matmul::{matmul, matmul_t};
use crate::ops::softmax::softmax;
use crate::{Error, Result, Shape, Tensor};

/// Attention over `x` [B, n, d_model] (or [n, d_model]). `mask`, when given, is a row-major
/// boolean [n, n] (true = masked out: that key contributes nothing to that query).
pub fn multi_head_attention(
    x: &Tensor,
    wq: &Tensor,
    wk: &Tensor,
    wv: &Tensor,
    wo: &Tensor,
    num_heads: usize,
    mask: Option<&[bool]>,
) -> Result<Tensor> {
    let single = x.rank() == 2;
    if x.rank() != 2 && x.rank() != 3 {
        return Err(Error::shape(
            "multi_head_attention",
            format!(
                "expected input [B, n, d_model] or [n, d_model], got {}",
                x.shape()
            ),
        ));
    }
    let (n, dm) = (x.dims()[x.rank() - 2], x.dims()[x.rank() - 1]);
    let b = if single { 1 } else { x.dims()[0] };
    if num_heads == 0
        || wq.rank() != 2
        || wq.dims()[0] != dm
        || !wq.dims()[1].is_multiple_of(num_heads)
    {
        return Err(Error::shape(
            "multi_head_attention",
            format!(
                "expected Wq [{dm}, heads·head_dim] with heads = {num_heads}, got {}",
                wq.shape()
            ),
        ));
    }
    let inner = wq.dims()[1];
    for (name, w, want) in [
        ("Wk", wk, [dm, inner]),
        ("Wv", wv, [dm, inner]),
        ("Wo", wo, [inner, dm]),
    ] {
        if w.dims() != want {
            return Err(Error::shape(
                "multi_head_attention",
                format!("expected {name} {:?}, got {}", want, w.shape()),
            ));
        }
    }
    if let Some(m) = mask {
        if n.checked_mul(n) != Some(m.len()) {
            return Err(Error::shape(
                "multi_head_attention",
                format!("expected a mask of {n}×{n} values, got {}", m.len()),
            ));
        }
    }
    let hd = inner / num_heads;
    let x3 = reshape_to(x, Shape(vec![b, n, dm]));
    // [B, n, h·hd] -> [B, h, n, hd]
    let heads = |w: &Tensor| -> Result<Tensor> {
        let p = matmul(&x3, w)?;
        permute_raw(
            &reshape_to(&p, Shape(vec![b, n, num_heads, hd])),
            vec![0, 2, 1, 3],
        )
    };
    let (q, k, v) = (heads(wq)?, heads(wk)?, heads(wv)?);
    let scores = div(
        &matmul_t(&q, &k, false, true)?,
        &Tensor::scalar((hd as f64).sqrt(), x.dtype()),
    )?;
    let scores = match mask {
        Some(m) => masked_fill(&scores, m, &[n, n], f64::NEG_INFINITY)?,
        None => scores,
    };
    let attn = softmax(&scores, -1)?;
    let ctx = permute_raw(&matmul(&attn, &v)?, vec![0, 2, 1, 3])?;
    let out = matmul(&reshape_to(&ctx, Shape(vec![b, n, inner])), wo)?;
    Ok(if single {
        reshape_to(&out, Shape(vec![n, dm]))
    } else {
        out
    })
}
