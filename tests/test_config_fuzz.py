"""Property test: any argument list gives ExecConfig.parse_and_strip a (config, rest) answer or an
ArgError, never another exception; and on success `rest` holds no runtime flag it should consume.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from tlrs.config import ExecConfig
from tlrs.errors import ArgError

FLAGS = ["--dtype", "--float32-mode", "--backend", "--fast-gpu-matmul-precision", "--device"]
TOKENS = FLAGS + [
    "--cuda", "--cpu", "--fast-kernels", "--", "--seed", "-h", "--cuda=1",
    "float", "float32", "f32", "fp32", "float32:fp32", "c32:", "complex", "real", "ℝ", "double",
    "ieee754exec", "eager", "compiled", "fp64", "tf32", "cpu", "cuda", "cuda:1", "cuda:", "",
]
token = st.one_of(
    st.sampled_from(TOKENS),
    st.builds(lambda f, v: f"{f}={v}", st.sampled_from(FLAGS), st.sampled_from(TOKENS)),
    st.text(max_size=12),
)


def is_subsequence(small: list[str], big: list[str]) -> bool:
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


@settings(max_examples=2000, deadline=None)
@given(st.lists(token, max_size=12))
def test_parse_and_strip_answers_or_raises_arg_error(args):
    before = list(args)
    try:
        cfg, rest = ExecConfig.parse_and_strip(args)
    except ArgError as err:
        assert str(err)
        return
    assert args == before
    assert isinstance(cfg, ExecConfig) and isinstance(rest, list)
    assert is_subsequence(rest, args)
    for tok in rest:
        assert tok not in FLAGS + ["--cuda", "--cpu", "--fast-kernels"]
        assert not any(tok.startswith(flag + "=") for flag in FLAGS)
    if cfg.use_gpu:
        assert any("cuda" in tok for tok in args)
