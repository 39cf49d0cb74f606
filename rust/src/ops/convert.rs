//! The records of dtype and device conversions (`Tensor::to_dtype`, `Tensor::to_device` make
//! them): each gradient converts back.

use crate::autograd::record::{first, Attr, Record};
use crate::{DType, Result, Shape, Tensor};

/// A dtype conversion to `to`.
#[derive(Clone)]
pub struct Cast {
    pub x: Tensor,
    pub to: DType,
}

impl Record for Cast {
    crate::autograd::record::named!("cast");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn attributes(&self) -> Vec<(&'static str, Attr)> {
        vec![("dtype", Attr::DType(self.to))]
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        // Integer and bool values have no gradient (a cast from them is a constant to autograd).
        if !self.x.dtype().is_float() || !self.to.is_float() {
            return Ok(vec![None]);
        }
        Ok(vec![Some(g.to_dtype(self.x.dtype())?)])
    }
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        first("cast", xs)?.to_dtype(self.to)
    }
}

/// A copy to device `to`.
#[derive(Clone)]
pub struct ToDevice {
    pub x: Tensor,
    pub to: crate::Device,
}

impl Record for ToDevice {
    crate::autograd::record::named!("to_device");
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn input_grads(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(g.to_device(self.x.device())?)])
    }
    /// The copy the trace made (a compiled graph replays on the device it was traced on: a
    /// loss that names its device, or moves a host-computed mask there, replays as it ran).
    fn replay(&self, xs: &[Tensor], _out: &Shape) -> Result<Tensor> {
        first("to_device", xs)?.to_device(self.to)
    }
}
