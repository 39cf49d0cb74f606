"""A user-defined layer with tlrs.nn: its own parameter and initialisation, composed with built-in
layers, trained with `loss.backward()` and each parameter's `.grad`, then saved and restored
through `state_dict()` (PyTorch's names for the same structure).

The model is a 1 -> 16 -> 1 network whose hidden activation is a learned per-unit tanh gain,
fitting y = sin(2x) on [-1, 1] in float64.
"""

import numpy as np

import tlrs
from tlrs import nn, ops, optim

HIDDEN = 16


class GainTanh(nn.Module):
    """tanh(gain * x) with one learned gain per feature, initialised to `init`."""

    def __init__(self, features, init=1.0):
        super().__init__()
        self.init = init
        self.gain = nn.Parameter(tlrs.full([features], init, dtype="float64"))

    def forward(self, x):
        return ops.tanh(x * self.gain)

    def extra_repr(self):
        return f"features={self.gain.shape[0]}, init={self.init}"


class SineNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(1, HIDDEN, dtype="float64")
        self.act = GainTanh(HIDDEN, init=0.5)
        self.fc2 = nn.Linear(HIDDEN, 1, dtype="float64")

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


tlrs.manual_seed(0)  # torch.nn's default initialisation of the Linear layers, from this seed
model = SineNet()
print(model)
print("parameters:", [name for name, _ in model.named_parameters()])

x_np = np.linspace(-1.0, 1.0, 64)[:, None]
x, target = tlrs.tensor(x_np), tlrs.tensor(np.sin(2.0 * x_np))
opt = optim.adam_default(0.02)
params = list(model.parameters())
state = opt.init(params)
before = ops.mse_loss(model(x), target).item()
for step in range(300):
    model.zero_grad()
    loss = ops.mse_loss(model(x), target)
    loss.backward()  # fills each parameter's .grad
    params, state = opt.step(state, params, [p.grad for p in params])
    nn.assign_parameters(model, params)
    if step % 100 == 0:
        print(f"step {step}: loss={loss.item():.6f}")
after = ops.mse_loss(model(x), target).item()
print(f"loss before={before:.6f} after={after:.6f}")
assert after < before / 10, "training should reduce the loss tenfold"

# state_dict round trip: a fresh model (other initial values) loads the trained one strictly.
restored = SineNet()
restored.load_state_dict(model.state_dict(), strict=True)
with tlrs.no_grad():
    assert model(x).numpy().tolist() == restored(x).numpy().tolist(), "restored model differs"
print("custom_module: ok")
