"""The module API in about 20 lines: define a loss over parameters and inputs, instantiate it,
train with Adam, read the parameters back."""

import numpy as np

import tlrs
from tlrs import ops, optim

rng = np.random.default_rng(0)
xs = rng.normal(size=(64, 2))
samples = [[tlrs.tensor(xs[i:i + 16]), tlrs.tensor(xs[i:i + 16] @ [[3.0], [-2.0]] + 0.5)]
           for i in range(0, 64, 16)]                     # 4 batches of (x, y = 3x0 - 2x1 + 0.5)


def loss(params, inputs):                                  # params: [w [1, 2], b [1]]
    (w, b), (x, y) = params, inputs
    return ops.mse_loss(ops.linear(x, w, b), y)


defn = tlrs.ModuleDef(param_shapes=[[1, 2], [1]], input_shapes=[[2], [1]], loss=loss)
module = tlrs.instantiate_with_options(defn, "float64", tlrs.Options(backend="compiled"))
opt = optim.adam(0.05, 0.9, 0.999, 1e-8)
state = module.train_with(opt, module.init_optim(opt), steps=400, samples=samples, log_every=100)
w, b = (p.numpy().round(3).tolist() for p in module.params())
print(f"mean loss {module.mean_loss(samples).item():.2e}, w={w}, b={b}")
assert module.mean_loss(samples).item() < 1e-6, "the model should fit a noiseless linear target"
