"""Train an MLP classifier on scikit-learn's digits through the module API, then report the
held-out accuracy (the same data, split and loader as `tlrs run mlp_classifier --dataset digits`).

Needs scikit-learn (`pip install tlrs[datasets]`); without it the example says so and exits 0.
"""

import importlib.util
import sys

import numpy as np

import tlrs
from tlrs import data, models, optim

if importlib.util.find_spec("sklearn") is None:
    print("train_digits: skipped (scikit-learn is not installed: pip install tlrs[datasets])")
    sys.exit(0)

tlrs.manual_seed(0)
digits = data.load_sklearn("digits")  # 1797 x 64 standardised features, one-hot targets
train, test = data.train_test_split(digits, test_fraction=0.2, seed=0)

defn, predict = models.mlp_classifier(64, 64, 10, *tlrs.random.with_model(
    lambda stream: [stream.fresh_seed() for _ in range(4)]))
module = tlrs.instantiate_with_options(defn, "float64", tlrs.Options())
opt = optim.adam_default(3e-3)
state = module.init_optim(opt)

loader = data.BatchLoader(len(train), batch=32, seed=0)  # the reference shuffle, drop-last
for epoch in range(10):
    losses = []
    for idx in loader.next_epoch():
        xs = [tlrs.tensor(train.x[idx]), tlrs.tensor(train.y[idx])]
        losses.append(module.forward(xs).item())
        state = module.step_with(opt, state, xs)
    print(f"epoch {epoch}: mean loss {np.mean(losses):.4f}")

logits = predict(module.params(), tlrs.tensor(test.x)).numpy()
accuracy = float((logits.argmax(axis=1) == test.labels).mean())
print(f"accuracy(test) = {100 * accuracy:.2f}% on {len(test)} held-out digits")
assert accuracy >= 0.95, "the MLP should classify at least 95% of the held-out digits"
print("train_digits: ok")
