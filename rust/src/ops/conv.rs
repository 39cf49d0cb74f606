//! Convolution and pooling on [N, C, H, W] (or a single [C, H, W] image, as the reference).

use crate::autograd::record::{need, Attr, Record};
use crate::geometry::{Activation, ConvDims};
use crate::ops::elementwise::{check_same_device, check_same_dtype};
use crate::ops::layout::reshape_to;
use crate::ops::reduce::mean;
use crate::{Error, Result, Shape, Tensor};

/// Views a [C, H, W] image as a batch of one; returns whether it did.
pub(crate) fn as_batch(op: &'static str, x: &Tensor) -> Result<(Tensor, bool)> {
    match x.rank() {
        4 => Ok((x.clone(), false)),
        3 => {
            let mut d = vec![1];
            d.extend_from_slice(x.dims());
            Ok((reshape_to(x, Shape(d)), true))
        }
        _ => Err(Error::shape(
            op,
            format!(
                "expected input [N, C, H, W] or [C, H, W], got {}",
                x.shape()
            ),
        )),
    }
}

pub(crate) fn unbatch(y: Tensor, squeeze: bool) -> Tensor {
    if squeeze {
        let d = y.dims()[1..].to_vec();
        reshape_to(&y, Shape(d))
    } else {
        y
    }
}

fn out_size(op: &'static str, n: usize, k: usize, s: usize, p: usize) -> Result<usize> {
    if s == 0 {
        return Err(Error::arg(op, "expected a stride >= 1, got 0"));
    }
    let padded = p
        .checked_mul(2)
        .and_then(|pp| pp.checked_add(n))
        .ok_or_else(|| Error::arg(op, format!("padding {p} is too large")))?;
    if padded < k {
        return Err(Error::shape(
            op,
            format!("kernel {k} is larger than the padded input {padded} (size {n}, padding {p})"),
        ));
    }
    Ok((padded - k) / s + 1)
}

/// Cross-correlation with zero padding (PyTorch `conv2d`): weight [OC, C, KH, KW], bias [OC].
pub fn conv2d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: usize,
    padding: usize,
) -> Result<Tensor> {
    conv2d_act(input, weight, bias, stride, padding, Activation::None)
}

/// `conv2d` followed by `act`, applied to each output as the kernel writes it: the same values
/// and gradients as the two ops one after the other, with one pass over the output fewer.
pub fn conv2d_act(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: usize,
    padding: usize,
    act: Activation,
) -> Result<Tensor> {
    let (x, squeeze) = as_batch("conv2d", input)?;
    let [n, c, h, w] = [x.dims()[0], x.dims()[1], x.dims()[2], x.dims()[3]];
    if weight.rank() != 4 || weight.dims()[1] != c {
        return Err(Error::shape(
            "conv2d",
            format!(
                "expected weight [out_channels, {c}, kh, kw] for input {}, got {}",
                input.shape(),
                weight.shape()
            ),
        ));
    }
    let [oc, kh, kw] = [weight.dims()[0], weight.dims()[2], weight.dims()[3]];
    if let Some(b) = bias {
        if b.dims() != [oc] {
            return Err(Error::shape(
                "conv2d",
                format!("expected bias [{oc}], got {}", b.shape()),
            ));
        }
    }
    let d = ConvDims {
        n,
        c,
        h,
        w,
        oc,
        kh,
        kw,
        stride,
        pad: padding,
        oh: out_size("conv2d", h, kh, stride, padding)?,
        ow: out_size("conv2d", w, kw, stride, padding)?,
    };
    // The output, and one image's patch matrix (the im2col panel the kernels build).
    crate::storage::check_alloc("conv2d", &Shape(vec![n, oc, d.oh, d.ow]))?;
    crate::storage::check_alloc("conv2d", &Shape(vec![c, kh, kw, d.oh, d.ow]))?;
    check_same_device("conv2d", &x, weight)?;
    check_same_dtype("conv2d", &[&x, weight])?;
    if let Some(b) = bias {
        check_same_device("conv2d", &x, b)?;
        check_same_dtype("conv2d", &[&x, b])?;
    }
    let s = x
        .storage()
        .conv2d(weight.storage(), bias.map(|b| b.storage()), d, act)?;
    let op = Conv2d {
        x,
        w: weight.clone(),
        b: bias.cloned(),
        d,
        act,
    };
    let y = Tensor::from_op(s, Shape(vec![n, oc, d.oh, d.ow]), op);
    Ok(unbatch(y, squeeze))
}

/// Gradients of conv2d for input, weight and bias, each only when its flag is set: a network's
/// first layer needs no input gradient, frozen weights no weight gradient, and a convolution
/// without a bias no bias gradient.
pub(crate) fn conv2d_grads(
    x: &Tensor,
    w: &Tensor,
    g: &Tensor,
    d: ConvDims,
    [need_x, need_w, need_b]: [bool; 3],
) -> Result<[Option<Tensor>; 3]> {
    check_same_dtype("conv2d", &[x, w, g])?;
    let [gx, gw, gb] =
        x.storage()
            .conv2d_grads(w.storage(), g.storage(), d, [need_x, need_w, need_b])?;
    Ok([
        need_x
            .then(|| Tensor::from_storage(gx, x.shape().clone()))
            .transpose()?,
        need_w
            .then(|| Tensor::from_storage(gw, w.shape().clone()))
            .transpose()?,
        need_b
            .then(|| Tensor::from_storage(gb, Shape(vec![d.oc])))
            .transpose()?,
    ])
}

/// Mean over H and W: [N, C, H, W] -> [N, C], or [C, H, W] -> [C].
pub fn global_avg_pool2d(input: &Tensor) -> Result<Tensor> {
    let (x, squeeze) = as_batch("global_avg_pool2d", input)?;
    let [n, c, h, w] = [x.dims()[0], x.dims()[1], x.dims()[2], x.dims()[3]];
    let flat = reshape_to(&x, Shape(vec![n, c, h * w]));
    let y = mean(&flat, Some(-1), false)?;
    Ok(if squeeze {
        reshape_to(&y, Shape(vec![c]))
    } else {
        y
    })
}

/// A 2-D convolution of `x` [N, C, H, W] by `w` with an optional bias, then `act`.
#[derive(Clone)]
pub struct Conv2d {
    pub x: Tensor,
    pub w: Tensor,
    pub b: Option<Tensor>,
    pub d: ConvDims,
    /// Applied to each output after the bias (a fused ReLU; `None` in every trace).
    pub act: Activation,
}

impl Record for Conv2d {
    fn name(&self) -> &'static str {
        match self.act {
            Activation::Relu => "conv2d_relu",
            Activation::None => "conv2d",
        }
    }
    fn names() -> Vec<&'static str> {
        vec!["conv2d", "conv2d_relu"]
    }
    fn inputs(&self) -> Vec<&Tensor> {
        std::iter::once(&self.x)
            .chain(std::iter::once(&self.w))
            .chain(self.b.iter())
            .collect()
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        let d = &self.d;
        vec![
            ("stride", Attr::Count(Some(d.stride))),
            ("padding", Attr::Count(Some(d.pad))),
            ("kernel_h", Attr::Count(Some(d.kh))),
            ("kernel_w", Attr::Count(Some(d.kw))),
        ]
    }
    fn input_grads(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        // A fused ReLU's gradient from its output: y > 0 exactly where the pre-activation
        // was > 0 (a NaN stays NaN, not > 0), so this masks as the `relu` op's rule does.
        let masked;
        let g = match self.act {
            Activation::None => g,
            Activation::Relu => {
                let relu = crate::op_table::UnaryOp::Relu;
                masked = crate::ops::elementwise::unary_grad(relu, out, out, g)?;
                &masked
            }
        };
        let need_b = self.b.as_ref().is_some_and(need);
        let flags = [need(&self.x), need(&self.w), need_b];
        let [gx, gw, gb] = conv2d_grads(&self.x, &self.w, g, self.d, flags)?;
        let mut v = vec![gx, gw];
        if self.b.is_some() {
            v.push(gb);
        }
        Ok(v)
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        let [x, w, rest @ ..] = xs else {
            return Err(Error::arg("graph", "conv2d needs an input and a weight"));
        };
        let bias = if self.b.is_some() { rest.first() } else { None };
        conv2d_act(x, w, bias, self.d.stride, self.d.pad, self.act)
    }
}
