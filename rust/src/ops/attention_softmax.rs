//! Attention's weights as one recorded op: `softmax(masked_fill(x * scale, hidden, -inf))` over
//! the last axis of scores [.., queries, keys], `hidden` being the causal mask (key k hidden from
//! query q when k > q) or nothing. On the CPU it is one fused pass forward and one backward
//! (backend/cpu/attention_softmax.rs) with the chain's bits; elsewhere it is the chain.

use crate::autograd::record::{first, Attr, Record};
use crate::geometry::ScoreRows;
use crate::ops::elementwise::{check_same_dtype, mul};
use crate::ops::index::masked_fill;
use crate::ops::softmax::softmax;
use crate::{Error, Result, Shape, Tensor};

fn rows(op: &'static str, x: &Tensor, causal: bool) -> Result<ScoreRows> {
    match x.dims() {
        [.., queries, keys] => Ok(ScoreRows {
            keys: *keys,
            queries: *queries,
            causal,
        }),
        _ => Err(Error::shape(
            op,
            format!("expected scores [..., queries, keys], got {}", x.shape()),
        )),
    }
}

/// Attention weights of scores `x`: `scale` multiplies each score (rounded to x's dtype first,
/// as a 0-d tensor of it would be), then with `causal` each query's later keys are hidden.
pub fn attention_softmax(x: &Tensor, scale: f64, causal: bool) -> Result<Tensor> {
    let d = rows("attention_softmax", x, causal)?;
    if !x.on_host() || !x.dtype().is_float() {
        return chain(x, d, scale);
    }
    crate::storage::check_alloc("attention_softmax", x.shape())?;
    let s = x.storage().attention_softmax(d, scale)?;
    let op = AttentionSoftmax {
        x: x.clone(),
        scale,
        causal,
    };
    Ok(Tensor::from_op(s, x.shape().clone(), op))
}

/// The op chain the fused op computes (devices run it; the tests' oracle).
pub(crate) fn chain(x: &Tensor, d: ScoreRows, scale: f64) -> Result<Tensor> {
    let scaled = mul(x, &Tensor::scalar(scale, x.dtype()))?;
    let masked = if d.causal {
        let hidden: Vec<bool> = (0..d.queries)
            .flat_map(|q| (0..d.keys).map(move |k| k >= d.seen(q)))
            .collect();
        masked_fill(&scaled, &hidden, &[d.queries, d.keys], f64::NEG_INFINITY)?
    } else {
        scaled
    };
    softmax(&masked, -1)
}

/// Attention weights of scores `x` (see `attention_softmax`).
#[derive(Clone)]
pub struct AttentionSoftmax {
    pub x: Tensor,
    pub scale: f64,
    pub causal: bool,
}

impl Record for AttentionSoftmax {
    crate::autograd::record::named!("attention_softmax");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![
            ("scale", Attr::Float(Some(self.scale))),
            ("causal", Attr::Flag(self.causal)),
        ]
    }
    fn input_grads(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        check_same_dtype("attention_softmax", &[out, g])?;
        let d = rows("attention_softmax", out, self.causal)?;
        let s = out
            .storage()
            .attention_softmax_grad(g.storage(), d, self.scale)?;
        Ok(vec![Some(Tensor::from_storage(s, out.shape().clone())?)])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        attention_softmax(first("attention_softmax", xs)?, self.scale, self.causal)
    }
}

#[cfg(test)]
mod tests {
    //! The fused op against the op chain it replaces (through autograd), bit for bit.
    use super::*;
    use crate::ops::sum;
    use crate::ops::test_support::{bits, leaf};
    use crate::DType;

    fn run(y: Tensor, x: &Tensor, r: &Tensor) -> (Vec<u64>, Vec<u64>) {
        let loss = sum(&mul(&y, r).unwrap(), None, false).unwrap();
        let g = crate::autograd::grad(&loss, std::slice::from_ref(x)).unwrap();
        (bits(&y.detach()), bits(&g[0]))
    }

    #[test]
    fn fused_equals_the_op_chain_bit_for_bit() {
        // Rows in whole groups of sixteen and in remainders, more queries than keys and fewer,
        // a negative scale, and rows with a non-finite max (an infinity, a NaN).
        let cases: [(&[usize], f64); 5] = [
            (&[2, 3, 20, 20], 0.125),
            (&[5, 7], -0.7),
            (&[3, 9, 4], 1.0 / 3f64.sqrt()),
            (&[2, 4, 17], 2.0),
            (&[1, 33, 33], 0.2),
        ];
        for (k, (dims, scale)) in cases.iter().enumerate() {
            for dtype in [DType::F32, DType::F64] {
                for causal in [true, false] {
                    let mut x = leaf(dims, 10 * k as u64 + 1, 12.0, dtype);
                    if k == 4 {
                        let mut v = x.to_f64_vec().unwrap();
                        v[40] = f64::INFINITY;
                        v[70] = f64::NAN;
                        v[100] = f64::NEG_INFINITY;
                        x = Tensor::from_vec_f64(v, dims.to_vec())
                            .and_then(|t| t.to_dtype(dtype))
                            .unwrap()
                            .detach_with_grad(true);
                    }
                    let r = leaf(dims, 10 * k as u64 + 2, 4.0, dtype).detach();
                    let d = rows("test", &x, causal).unwrap();
                    let fused = run(attention_softmax(&x, *scale, causal).unwrap(), &x, &r);
                    let chained = run(chain(&x, d, *scale).unwrap(), &x, &r);
                    let case = format!("{dims:?} {dtype} causal={causal}");
                    assert_eq!(fused.0, chained.0, "weights, {case}");
                    assert_eq!(fused.1, chained.1, "gradient, {case}");
                }
            }
        }
    }
}
