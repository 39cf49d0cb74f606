"""One table of dtype spellings (rust/src/dtype.rs `SPELLINGS`): every entry is accepted, with the
same meaning, by the core (`_core.full`), tensor constructors, module casts and the CLI's
`--dtype`, and a spelling outside it is refused by each."""

import pytest

import tlrs
from tlrs import _core
from tlrs.dtype import DType

TABLE = dict(_core.dtype_spellings())


def test_the_table_names_both_dtypes_in_every_expected_spelling():
    assert TABLE == {"float32": "float32", "f32": "float32", "float64": "float64", "f64": "float64",
                     "float": "float64", "double": "float64"}


@pytest.mark.parametrize("spelling", sorted(TABLE))
def test_every_layer_reads_a_spelling_the_same_way(spelling):
    want = TABLE[spelling]
    assert _core.full([2], 1.0, spelling).dtype == want
    assert tlrs.zeros(2, dtype=spelling).dtype == want
    assert tlrs.tensor([1.0], dtype=spelling).dtype == want
    defn = tlrs.ModuleDef([[2]], [[2]], lambda ps, xs: tlrs.ops.sum(ps[0] * xs[0]))
    assert tlrs.instantiate_with_options(defn, spelling, None).dtype == want
    # The CLI's --dtype: binary64 spellings are `float`, binary32 ones `float32` (default mode).
    assert DType.parse(spelling).name == ("float" if want == "float64" else "float32")


@pytest.mark.parametrize("spelling", ["float16", "F32", "int32", ""])
def test_a_spelling_outside_the_table_is_refused_everywhere(spelling):
    with pytest.raises(tlrs.DTypeError):
        _core.full([2], 1.0, spelling)
    with pytest.raises(tlrs.DTypeError):
        tlrs.zeros(2, dtype=spelling)
    defn = tlrs.ModuleDef([[2]], [[2]], lambda ps, xs: tlrs.ops.sum(ps[0] * xs[0]))
    with pytest.raises(tlrs.DTypeError):
        tlrs.instantiate_with_options(defn, spelling, None)
    with pytest.raises(tlrs.ArgError):
        DType.parse(spelling)
