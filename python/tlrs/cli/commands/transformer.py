"""`tlrs run transformer`: the reference transformer block on next-character prediction
(one-hot in, one-hot target, MSE; docs/runtime.md)."""

from __future__ import annotations

from ... import data, models
from ...config import Options
from ...errors import ArgError
from ...module import ModuleDef
from ..typer_app import register
from .sources import notes
from .trainer import check_model_size, command, finish, model_seeds, require_no_more, take_nat, take_train_flags, train

DESCRIPTION = "transformer block, next-character one-hot regression"


def body(exe: str, dtype: str, opts: Options, rest: list[str]) -> None:
    """Data: every `--seq-len N` (8) window of a short built-in text, one-hot over its
    characters (d_model = the alphabet size), target = the window shifted by one character.
    `--heads N` (2), `--head-dim N` (8); training flags (default 100 steps, batch 4 = the
    block's batch axis, Adam lr 1e-2)."""
    longest = len(data.synthetic_text(1).x)  # the text's length - 1: one-character windows
    seq_len, rest = take_nat(rest, exe, "seq-len", 8, maximum=longest)
    heads, rest = take_nat(rest, exe, "heads", 2)
    head_dim, rest = take_nat(rest, exe, "head-dim", 8)
    flags, rest = take_train_flags(rest, exe, dtype=dtype, lr=1e-2, batch=4, steps=100)
    require_no_more(rest, exe)
    assert seq_len is not None and heads is not None and head_dim is not None
    ds = data.synthetic_text(seq_len)
    if flags.batch > len(ds):  # the batch is the block's own batch axis: check before building
        raise ArgError(f"{exe}: --batch: the batch size {flags.batch:,} is larger than the "
                       f"dataset ({len(ds)} windows of {seq_len} characters)")
    d_model, inner = ds.x.shape[2], heads * head_dim
    shapes = [(d_model, inner)] * 3 + [(inner, d_model), (d_model,), (d_model,)]
    scores = flags.batch * seq_len * (6 * inner + 3 * heads * seq_len)
    check_model_size(exe, f"--heads {heads} --head-dim {head_dim}", shapes, flags.optim, scores,
                     dtype=dtype)
    # The layer-initialiser LCG only sees a seed mod 2^32; the block uses seed_w .. seed_w + 3.
    seed_w, seed_gamma, seed_beta = (s % 2**32 for s in model_seeds(3))
    defn, _ = models.transformer_block(flags.batch, seq_len, d_model, heads, head_dim,
                                       seed_w, seed_gamma, seed_beta)
    result = train(exe, defn, opts, ds, flags, opts.seed)
    finish(result, flags, "Transformer block training", notes(ds, opts))


def default_model() -> ModuleDef:
    """The model this command trains with its defaults on the built-in data (`tlrs models`)."""
    return models.transformer_block(4, 8, data.synthetic_text().x.shape[2], 2, 8)[0]


@register("transformer")
def transformer(args: list[str]) -> int:
    """Transformer block (attention + layer norm) predicting the next character (MSE)."""
    return command("transformer", DESCRIPTION, args, body)
