"""A user-defined module: a ModuleDef with a loss written with tlrs ops and an init plan
(Xavier weights, zero biases from the reference's runtime initialiser), trained with Adam.

The model is a 1 -> 16 -> 1 tanh network fitting y = sin(2x) on [-1, 1].
"""

import numpy as np

import tlrs
from tlrs import ops, optim
from tlrs.init import FloatInit, Plan
from tlrs.module import format_float

HIDDEN = 16
param_shapes = [[HIDDEN, 1], [HIDDEN], [1, HIDDEN], [1]]


def loss(params, inputs):
    """Mean squared error of the network's output; `inputs` = [x [B, 1], target [B, 1]]."""
    w1, b1, w2, b2 = params
    x, target = inputs
    return ops.mse_loss(ops.linear(ops.tanh(ops.linear(x, w1, b1)), w2, b2), target)


plan = Plan(param_shapes, [
    FloatInit.xavier_uniform(1, HIDDEN, seed=1), FloatInit.zeros(),
    FloatInit.xavier_uniform(HIDDEN, 1, seed=2), FloatInit.zeros(),
])
defn = tlrs.ModuleDef(param_shapes=param_shapes, input_shapes=[[1], [1]], loss=loss,
                      init_plan=plan, param_names=["fc1.weight", "fc1.bias", "fc2.weight",
                                                   "fc2.bias"])
module = tlrs.instantiate_with_options(defn, "float64", tlrs.Options())

x = np.linspace(-1.0, 1.0, 64)[:, None]
batch = [tlrs.tensor(x), tlrs.tensor(np.sin(2.0 * x))]  # one batch: a leading batch axis
opt = optim.adam_default(0.02)
state = module.init_optim(opt)
before = module.forward(batch).item()
for step in range(300):
    state = module.step_with(opt, state, batch)
    if step % 100 == 0:
        print(f"step {step}: loss={format_float(module.forward(batch).item())}")
after = module.forward(batch).item()
print(f"loss before={before:.6f} after={after:.6f}")
assert after < before / 10, "training should reduce the loss tenfold"
print("custom_module: ok")
