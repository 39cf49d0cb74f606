"""The tlrs.nn GPT (tlrs.models.nn_transformers) against the same model written with torch.nn, as
a PyTorch user writes nanoGPT: tlrs loads torch's state_dict strictly (the tied head included)
and gives its logits, loss and gradients in float64."""

import numpy as np
import pytest

import tlrs
from tlrs import ops
from tlrs.models.nn_transformers import GPT, GPTConfig, lm_loss

torch = pytest.importorskip("torch")
nn, F = torch.nn, torch.nn.functional


# --- the PyTorch side: nanoGPT's layout, written with torch.nn ----------------------------------
class TorchBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.mlp_proj = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, 2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class TorchGPT(nn.Module):
    def __init__(self, vocab, block, d, heads, layers):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(block, d)
        self.h = nn.ModuleList([TorchBlock(d, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))
# --- end of the PyTorch side ----------------------------------------------------------------------


def test_tlrs_gpt_loads_torchs_state_dict_and_gives_its_logits_loss_and_gradients():
    vocab, block, d, heads, layers = 11, 8, 16, 4, 2
    torch.manual_seed(0)
    tm = TorchGPT(vocab, block, d, heads, layers).double()
    with torch.no_grad():  # non-trivial norm parameters, so their gradients are checked too
        for name, p in tm.named_parameters():
            if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
                p.add_(0.1 * torch.randn_like(p))
    tl = GPT(GPTConfig(vocab=vocab, block=block, d_model=d, heads=heads, layers=layers, dtype="float64"))
    result = tl.load_state_dict(tm.state_dict(), strict=True)
    assert not result.missing_keys and not result.unexpected_keys
    assert tl.lm_head.weight is tl.wte.weight  # still tied after loading
    assert [n for n, _ in tl.named_parameters()] == [n for n, _ in tm.named_parameters()]

    rng = np.random.default_rng(1)
    x, y = rng.integers(0, vocab, (3, block)), rng.integers(0, vocab, (3, block))
    t_logits = tm(torch.from_numpy(x))
    t_loss = F.cross_entropy(t_logits.reshape(-1, vocab), torch.from_numpy(y).reshape(-1))
    t_loss.backward()
    l_loss = lm_loss(tl, tlrs.tensor(x), tlrs.tensor(y))
    l_loss.backward()

    np.testing.assert_allclose(tl(tlrs.tensor(x)).numpy(), t_logits.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(l_loss.item(), t_loss.item(), rtol=1e-12)
    for (name, p), (_, q) in zip(tl.named_parameters(), tm.named_parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)
    assert float(ops.sum(ops.abs(tl.wte.weight.grad)).item()) > 0  # the tied weight's gradient is checked


def test_a_tlrs_state_dict_loads_into_the_torch_gpt_strictly():
    tlrs.manual_seed(3)
    tl = GPT(GPTConfig(vocab=7, block=4, d_model=8, heads=2, layers=1, dtype="float64"))
    tm = TorchGPT(7, 4, 8, 2, 1).double()
    state = {k: torch.from_numpy(np.array(v.numpy())) for k, v in tl.state_dict().items()}
    tm.load_state_dict(state, strict=True)
    x = np.arange(8).reshape(2, 4) % 7
    np.testing.assert_allclose(tl(tlrs.tensor(x)).numpy(), tm(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-10, atol=1e-12)
