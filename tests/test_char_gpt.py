"""examples/char_gpt.py (a nanoGPT-layout model in tlrs.nn, token ids as int64 tensors) against the
same model in PyTorch, started from the same weights: the loss at step 0 and over 200 AdamW steps
on the same batches; and its eager and compiled training, bit for bit."""

import importlib.util
import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

import tlrs
from tlrs import nn, optim

spec = importlib.util.spec_from_file_location("char_gpt", Path(__file__).parents[1] / "examples" / "char_gpt.py")
char_gpt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(char_gpt)


def torch_loss(sd, x, y, vocab):
    """The example's forward in PyTorch, reading its weights from `sd` (a dict of torch tensors)."""
    b, t = x.shape
    c, h = char_gpt.D_MODEL, char_gpt.HEADS
    z = sd["wte.weight"][torch.from_numpy(x)] + sd["wpe.weight"][torch.arange(t)]
    for i in range(char_gpt.LAYERS):
        p = lambda n: sd[f"h.{i}.{n}"]  # noqa: E731
        a = F.linear(F.layer_norm(z, [c], p("ln_1.weight"), p("ln_1.bias")), p("c_attn.weight"), p("c_attn.bias"))
        q, k, v = (u.view(b, t, h, c // h).transpose(1, 2) for u in a.split(c, 2))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c)
        z = z + F.linear(att, p("c_proj.weight"), p("c_proj.bias"))
        m = F.gelu(F.linear(F.layer_norm(z, [c], p("ln_2.weight"), p("ln_2.bias")), p("c_fc.weight"), p("c_fc.bias")))
        z = z + F.linear(m, p("mlp_proj.weight"), p("mlp_proj.bias"))
    logits = F.linear(F.layer_norm(z, [c], sd["ln_f.weight"], sd["ln_f.bias"]), sd["wte.weight"])
    return F.cross_entropy(logits.reshape(b * t, vocab), torch.from_numpy(y.reshape(-1)))


def test_char_gpt_tracks_pytorch_from_the_same_weights():
    tlrs.manual_seed(0)
    vocab = 30
    model = char_gpt.GPT(vocab)
    names = [n for n, _ in model.named_parameters()]
    assert "lm_head.weight" not in names  # tied: listed once, as torch does
    sd = {n: torch.tensor(p.numpy(), requires_grad=True) for n, p in model.named_parameters()}
    params = list(model.parameters())
    opt = optim.adamw(1e-3, 0.01, 0.9, 0.99, 1e-8)
    state = opt.init(params)
    topt = torch.optim.AdamW(list(sd.values()), lr=1e-3, weight_decay=0.01, betas=(0.9, 0.99), eps=1e-8)
    chars = sorted(set(char_gpt.TEXT))[:vocab]
    data = np.array([chars.index(ch) if ch in chars else 0 for ch in char_gpt.TEXT], dtype=np.int64)
    rng = np.random.default_rng(0)
    for step in range(201):
        starts = rng.integers(0, len(data) - char_gpt.BLOCK - 1, 4)
        x = np.stack([data[s:s + char_gpt.BLOCK] for s in starts])
        y = np.stack([data[s + 1:s + char_gpt.BLOCK + 1] for s in starts])
        loss = char_gpt.lm_loss(model, tlrs.tensor(x), tlrs.tensor(y))
        tl = torch_loss(sd, x, y, vocab)
        assert math.isclose(loss.item(), tl.item(), rel_tol=1e-5 if step == 0 else 1e-4), (step, loss.item(), tl.item())
        params, state = opt.step(state, params, tlrs.grad(loss, params))
        nn.assign_parameters(model, params)
        topt.zero_grad()
        tl.backward()
        topt.step()


def test_char_gpt_trains_the_same_bits_eager_and_compiled():
    chars = sorted(set(char_gpt.TEXT))
    data = np.array([chars.index(ch) for ch in char_gpt.TEXT], dtype=np.int64)
    todo = char_gpt.batches(data, 4, seed=2)
    runs = []
    for backend in ("eager", "compiled"):
        tlrs.manual_seed(0)
        model = char_gpt.GPT(len(chars))
        defn = nn.to_module_def(model, char_gpt.lm_loss, [[char_gpt.BATCH, char_gpt.BLOCK]] * 2,
                                input_dtypes=["int64", "int64"])
        m = tlrs.instantiate_with_options(defn, "float32", tlrs.Options(backend=backend))
        opt = optim.adamw(3e-3, 0.01, 0.9, 0.99, 1e-8)
        _, losses = m.train_steps(opt, m.init_optim(opt), todo)
        runs.append((losses, [p.numpy().tobytes() for p in m.params()]))
    assert runs[0][0] == runs[1][0] and len(set(runs[0][0])) == 4
    assert runs[0][1] == runs[1][1]
