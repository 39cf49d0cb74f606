"""`tlrs run gpt`: a character-level GPT in the nanoGPT layout (tlrs.nn, models/nn_transformers.py)
on text every Python installation has (standard-library docstrings) or `--text PATH`; token ids
and targets are int64 tensors, graph inputs of the compiled backend: the shared trainer
(`trainer.train`) makes integer arrays int64 tensors and float arrays the command's dtype, and so
does the data-parallel trainer (`--distributed`: int64 inputs take any leading batch size, so a
shard of a batch is an input too).
"""

from __future__ import annotations

import importlib
import inspect
import os

import numpy as np

from ... import nn
from ...config import Options
from ...data import BatchLoader, Dataset
from ...errors import ArgError
from ...models.nn_transformers import GPT, GPTConfig, generate, gpt_module_def
from ...module_def import ModuleDef
from ...random import seeded
from ...tensor import tensor
from ..args import take_bool_flag_once
from ..typer_app import register
from .outputs import show_path
from .sources import notes
from .trainer import (
    check_model_size,
    command,
    finish,
    require_no_more,
    schedule,
    take_nat,
    take_path,
    take_train_flags,
    train,
)

__all__ = ["DESCRIPTION", "DOC_MODULES", "EVAL_BATCHES", "TEXT_CHARS", "builtin_text", "default_model", "gpt"]

DESCRIPTION = "char-level GPT (nanoGPT layout), next-character cross-entropy"
DOC_MODULES = ("json", "textwrap", "argparse", "collections", "functools")
"""The standard-library modules whose docstrings (the module's, then each public name's in
`__all__` order) make the built-in text."""
TEXT_CHARS = 8000
"""The built-in text's length: the docstrings, whitespace runs made single spaces, cut here."""
MAX_TEXT_BYTES = 16 * 2**20
"""The largest `--text` file read."""
EVAL_BATCHES = 16
"""The most full batches `mean_loss(train(...))` averages over (evenly spaced over the text)."""


# --- the text -------------------------------------------------------------------------------------

def builtin_text() -> str:
    """The docstrings of `DOC_MODULES` (each module's, then its public names'), whitespace runs
    made single spaces, cut to `TEXT_CHARS` characters: deterministic for a Python version,
    offline, on every installation (empty under `python -OO`, which strips docstrings)."""
    parts: list[str] = []
    for name in DOC_MODULES:
        mod = importlib.import_module(name)
        parts.append(inspect.getdoc(mod) or "")
        for attr in getattr(mod, "__all__", ()):
            parts.append(inspect.getdoc(getattr(mod, attr, None)) or "")
    return " ".join(" ".join(parts).split())[:TEXT_CHARS]


def read_text(exe: str, path: str) -> str:
    """`--text PATH`: the file as UTF-8 text (a byte-order mark dropped).

    Raises: ArgError (prefixed, naming the path): missing, not a regular file, larger than
    `MAX_TEXT_BYTES`, unreadable or not UTF-8."""
    where = f"{exe}: --text {show_path(path)}"
    try:
        if os.path.isdir(path):
            raise ArgError(f"{where}: a folder, expected a text file")
        size = os.path.getsize(path)
        if size > MAX_TEXT_BYTES:
            raise ArgError(f"{where}: {size:,} bytes, more than the {MAX_TEXT_BYTES:,} this command reads")
        with open(path, encoding="utf-8-sig") as f:
            return f.read()
    except OSError as err:
        raise ArgError(f"{where}: cannot read it: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise ArgError(f"{where}: not UTF-8 text ({err.reason} at byte {err.start:,})") from None


def printable(text: str) -> str:
    """`text` on one line: characters that are not printable (newlines, tabs) as escapes."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


# --- the command ----------------------------------------------------------------------------------

def body(exe: str, dtype: str, opts: Options, rest: list[str]) -> None:
    """Data: `--text PATH` (UTF-8, at most 16 MiB), default the docstrings of the standard
    library's json, textwrap, argparse, collections and functools (8,000 characters, whitespace
    runs made single spaces); every window of `--block N` (32) characters is a sample, the target
    the window shifted by one, token ids int64 over the text's sorted characters.
    Model: `--d-model N` (48), `--heads N` (4), `--layers N` (2); an LM head tied to the token
    embedding. `--sample N` (0) prints N characters generated after training from the text's
    first character, drawn by `multinomial` from the seeded stream (`--seed`), or the arg-max
    with `--greedy`; not printable ones (newlines) are escaped. The mean losses before and after
    are over at most 16 full batches, evenly spaced over the text. Training flags (default 1000
    steps, batch 16, Adam lr 3e-3), --distributed too.
    """
    path, rest = take_path(rest, exe, "text")
    block, rest = take_nat(rest, exe, "block", 32, maximum=2**20)
    d_model, rest = take_nat(rest, exe, "d-model", 48, maximum=2**20)
    heads, rest = take_nat(rest, exe, "heads", 4, maximum=2**20)
    layers, rest = take_nat(rest, exe, "layers", 2, maximum=2**10)
    n_sample, rest = take_nat(rest, exe, "sample", 0, positive=False, maximum=10**6)
    try:
        greedy, rest = take_bool_flag_once(rest, "greedy")
    except ArgError as err:
        raise ArgError(f"{exe}: {err}") from None
    flags, rest = take_train_flags(rest, exe, dtype=dtype, lr=3e-3, batch=16, steps=1000)
    require_no_more(rest, exe)
    assert block is not None and d_model is not None and heads is not None and layers is not None
    assert n_sample is not None
    if d_model % heads:
        raise ArgError(f"{exe}: --d-model {d_model} is not a multiple of --heads {heads}")
    if path is None:
        text, name = builtin_text(), "builtin:stdlib-docstrings"
        if len(text) <= block:
            raise ArgError(f"{exe}: the built-in text needs docstrings (python -OO strips them); "
                           "give --text PATH")
    else:
        text, name = read_text(exe, path), path
        if len(text) <= block:
            raise ArgError(f"{exe}: --text {show_path(path)}: {len(text):,} characters; --block {block} "
                           f"needs at least {block + 1}")
    vocab = sorted(set(text))
    index = {ch: i for i, ch in enumerate(vocab)}
    codes = np.fromiter((index[ch] for ch in text), np.int64, len(text))
    # Window i is codes[i : i + block], its target codes[i + 1 : i + block + 1]: views, no copies.
    windows = np.lib.stride_tricks.sliding_window_view(codes, block)
    ds = Dataset(windows[:-1], windows[1:], None, f"text:{name}")
    schedule(exe, len(ds), flags)  # refuse a bad --batch/--epochs before building
    config = GPTConfig(len(vocab), block, d_model, heads, layers, dtype)
    size_flags = f"--block {block} --d-model {d_model} --heads {heads} --layers {layers}"
    tokens = flags.batch * block
    check_model_size(exe, f"{size_flags} over {len(vocab):,} symbols", config.param_shapes(), flags.optim,
                     tokens * (layers * (20 * d_model + 4 * heads * block) + 3 * len(vocab)), dtype=dtype)
    model = GPT(config)
    count = sum(int(np.prod(s)) for s in config.param_shapes())
    print(f"text: {name} ({len(text):,} characters, {len(vocab)} symbols); {count:,} parameters "
          "(lm_head tied to wte)")

    def spread(loader: BatchLoader) -> list[np.ndarray]:
        batches = loader.fixed_batches()
        picks = np.linspace(0, len(batches) - 1, min(len(batches), EVAL_BATCHES)).round().astype(int)
        return [batches[i] for i in picks]

    result = train(exe, gpt_module_def(model, flags.batch), opts, ds, flags, opts.seed,
                   model_key=f"{exe} {size_flags}", key_data=Dataset(codes[:-1], codes[1:]),
                   evaluate=spread)
    finish(result, flags, "GPT training", [*notes(ds, opts), f"chars={len(text)}", f"vocab={len(vocab)}"])
    if n_sample:
        nn.assign_parameters(model, result.module.params())  # the trained values, ties kept
        out = generate(model, tensor([[int(codes[0])]]), n_sample, greedy=greedy)
        ids = np.asarray(out.numpy())[0, 1:]
        how = "greedy" if greedy else f"sampled, seed {opts.seed}"
        print(f"sample ({n_sample} characters, {how}): {printable(''.join(vocab[i] for i in ids))}")


def default_model() -> ModuleDef:
    """The model this command trains with its defaults on the built-in text (`tlrs models`,
    `tlrs graph`, `tlrs export`), per-sample inputs: int64 ids and targets [32]."""
    vocab = max(len(set(builtin_text())), 1)  # python -OO strips the docstrings
    with seeded(0):  # `--seed 0`'s initial values, whatever the caller's stream
        return gpt_module_def(GPT(GPTConfig(vocab, 32, 48, 4, 2, "float64")), None)


@register("gpt")
def gpt(args: list[str]) -> int:
    """Char-level GPT (nanoGPT layout, tlrs.nn) on stdlib docstrings or --text; --sample N."""
    return command("gpt", DESCRIPTION, args, body)
