"""Fit y = 3x0 - 2x1 + 0.5 with a linear layer, plain gradient descent and tlrs autograd."""

import numpy as np

import tlrs
from tlrs import ops

rng = np.random.default_rng(0)
x = tlrs.tensor(rng.normal(size=(256, 2)))
y = tlrs.tensor((np.asarray(x) @ np.array([[3.0], [-2.0]])) + 0.5)

w = tlrs.zeros(1, 2, requires_grad=True)
b = tlrs.zeros(1, requires_grad=True)
lr = 0.1
for step in range(200):
    loss = ops.mse_loss(ops.linear(x, w, b), y)
    gw, gb = tlrs.grad(loss, [w, b])
    with tlrs.no_grad():
        w = (w - lr * gw).detach()
        b = (b - lr * gb).detach()
    w.requires_grad = True
    b.requires_grad = True
    if step % 50 == 0:
        print(f"step {step}: loss={loss.item():.6f}")

print(f"final loss={loss.item():.3e} w={w.numpy().round(4).tolist()} b={b.numpy().round(4).tolist()}")
assert loss.item() < 1e-6, "the model should fit a noiseless linear target"
print("quickstart: ok")
