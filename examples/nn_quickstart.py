"""tlrs.nn in one page: a model written as a PyTorch user writes it, trained eagerly with a
hand-written loop, then from the same initial weights through the compiled backend (the whole
loop traced once and replayed natively): the same losses, bit for bit.

The task: three interleaved spirals of 2-D points, labels as int64 class ids.
"""

import numpy as np

import tlrs
from tlrs import nn, ops, optim

STEPS, LR = 300, 0.01


class SpiralNet(nn.Module):
    def __init__(self, hidden=64, classes=3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


def spirals(n=100, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    r = np.tile(np.linspace(0.05, 1.0, n), classes)
    labels = np.repeat(np.arange(classes), n)
    angle = labels * 2 * np.pi / classes + 4 * r + rng.normal(0, 0.3, n * classes)
    points = np.stack([r * np.sin(angle), r * np.cos(angle)], 1).astype(np.float32)
    return tlrs.tensor(points), tlrs.tensor(labels)  # float32 points, int64 labels


def loss_fn(model, x, y):
    return ops.cross_entropy(model(x), y)


def accuracy(model, x, y):
    with tlrs.no_grad():
        return float((ops.argmax(model(x), -1) == y).numpy().mean())


tlrs.manual_seed(0)
x, y = spirals()
x_test, y_test = spirals(seed=1)  # fresh points for the held-out accuracy
model = SpiralNet().to("float32")
# The runtime's definition: the model's parameters and loss, snapshotting today's initial values.
defn = nn.to_module_def(model, loss_fn, [list(x.shape), list(y.shape)], input_dtypes=[None, "int64"])

# 1. Eager, torch-style: forward, gradients, a functional Adam step, parameters back in the model.
opt = optim.adam(LR, 0.9, 0.999, 1e-8)
params = list(model.parameters())
state = opt.init(params)
eager = []
for _ in range(STEPS):
    loss = loss_fn(model, x, y)
    params, state = opt.step(state, params, tlrs.grad(loss, params))
    nn.assign_parameters(model, params)
    eager.append(loss.item())
print(f"eager:    loss {eager[0]:.4f} -> {eager[-1]:.4f}, held-out accuracy {accuracy(model, x_test, y_test):.1%}")

# 2. Compiled, from the same initial weights: one native call runs all the steps.
module = tlrs.instantiate_with_options(defn, "float32", tlrs.Options(backend="compiled"))
state, compiled = module.train_steps(opt, module.init_optim(opt), [[x, y]] * STEPS)
nn.assign_parameters(model, module.params())
print(f"compiled: loss {compiled[0]:.4f} -> {compiled[-1]:.4f}, held-out accuracy {accuracy(model, x_test, y_test):.1%}")

assert compiled == eager, "the compiled backend replays the eager steps bit for bit"
assert eager[-1] < eager[0] / 4 and accuracy(model, x_test, y_test) > 0.9
print("nn_quickstart: ok")
