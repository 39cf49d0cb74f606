"""tlrs.data: the reference loader (dataset-shuffle LCG order, reshuffling the previous order each
epoch, drop-last), the deterministic split, built-in data, and the CSV / .npy / scikit-learn
loaders with their errors."""

import importlib.util
import sys

import numpy as np
import pytest

from tlrs import data

needs_sklearn = pytest.mark.skipif(importlib.util.find_spec("sklearn") is None,
                                   reason="scikit-learn is not installed")


def lcg_permutation(seed, n):
    """The reference's Dataset.shuffle, by hand: pair each element (in order) with the next state
    of s <- (1103515245 s + 12345) mod 2^31, sort by key; the last state is the next seed."""
    keys, s = [], seed
    for j in range(n):
        s = (1103515245 * s + 12345) % 2**31
        keys.append((s, j))
    return [j for _, j in sorted(keys)], s


def test_hand_lcg_matches_the_appendix_golden_values():
    assert lcg_permutation(0, 5) == ([0, 4, 2, 1, 3], 229283573)


@pytest.mark.parametrize("n,batch,seed", [(5, 1, 0), (7, 3, 0), (10, 4, 12345), (33, 8, 2**40 + 3)])
def test_loader_reshuffles_the_previous_order_each_epoch(n, batch, seed):
    loader = data.BatchLoader(n, batch, seed)
    order, s = list(range(n)), seed % 2**64
    for _ in range(3):
        perm, s = lcg_permutation(s, n)
        order = [order[p] for p in perm]
        want = [order[i * batch:(i + 1) * batch] for i in range(n // batch)]
        assert [b.tolist() for b in loader.next_epoch()] == want
        assert loader.seed == s


def test_batches_stream_epoch_after_epoch_and_drop_the_last():
    loader = data.BatchLoader(10, 4, 0)
    assert loader.batches_per_epoch == 2
    got = list(loader.batches(5))
    assert len(got) == 5 and all(len(b) == 4 for b in got)
    assert loader.epochs_started == 3
    first, _ = lcg_permutation(0, 10)
    assert got[0].tolist() == first[:4] and got[1].tolist() == first[4:8]
    assert sorted(got[0].tolist() + got[1].tolist()) != list(range(10))  # 2 samples dropped


def test_fixed_batches_are_the_original_order():
    loader = data.BatchLoader(10, 4, 99)
    loader.next_epoch()
    assert [b.tolist() for b in loader.fixed_batches()] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_no_shuffle_keeps_the_order():
    loader = data.BatchLoader(6, 2, 5, shuffle=False)
    assert [b.tolist() for b in loader.batches(4)] == [[0, 1], [2, 3], [4, 5], [0, 1]]


@pytest.mark.parametrize("n,batch,text", [(5, 0, "must be > 0"), (5, 6, "larger than the dataset")])
def test_loader_rejects_bad_batches(n, batch, text):
    with pytest.raises(ValueError, match=text):
        data.BatchLoader(n, batch)


def test_split_is_deterministic_disjoint_and_complete():
    ds = data.synthetic_classification(50, 3, 2)
    tr, te = data.train_test_split(ds, 0.2, 0)
    tr2, te2 = data.train_test_split(ds, 0.2, 0)
    assert np.array_equal(tr.x, tr2.x) and np.array_equal(te.labels, te2.labels)
    assert len(tr) == 40 and len(te) == 10
    perm, _ = lcg_permutation(0, 50)
    assert np.array_equal(te.x, ds.x[perm[40:]]) and np.array_equal(tr.x, ds.x[perm[:40]])
    _, te3 = data.train_test_split(ds, 0.2, 1)
    assert not np.array_equal(te.x, te3.x)
    with pytest.raises(ValueError, match="test_fraction"):
        data.train_test_split(ds, 1.0)


def test_split_keeps_one_test_sample():
    tr, te = data.train_test_split(data.quickstart_grid(), 0.01)
    assert len(tr) == 24 and len(te) == 1


def test_quickstart_grid():
    ds = data.quickstart_grid()
    assert ds.x.shape == (25, 2) and ds.y.shape == (25, 1)
    rows = {tuple(x): y for x, y in zip(ds.x.tolist(), ds.y[:, 0].tolist(), strict=True)}
    assert rows[(-1.0, -1.0)] == pytest.approx(0.2)
    assert rows[(1.0, 1.0)] == pytest.approx(1.8)
    assert rows[(-1.0, 1.0)] == pytest.approx(-0.6)
    assert rows[(0.5, 0.0)] == pytest.approx(0.6)
    assert ds.x[1].tolist() == [-1.0, -0.5]  # x1 outer, x2 inner


@pytest.mark.parametrize("make,x_shape,y_shape", [
    (data.synthetic_regression, (200, 7), (200, 1)),
    (data.synthetic_classification, (600, 16), (600, 4)),
    (data.synthetic_images, (240, 3, 16, 16), (240, 4)),
    (data.synthetic_autoencoder, (256, 16), (256, 16)),
    (data.synthetic_text, (314, 8, 28), (314, 8, 28)),
])
def test_builtin_data_is_fixed(make, x_shape, y_shape):
    a, b = make(), make()
    assert a.x.shape == x_shape and a.y.shape == y_shape
    assert np.array_equal(a.x, b.x) and np.array_equal(a.y, b.y)
    assert a.x.dtype == np.float64 and np.isfinite(a.x).all()


def test_builtin_classes_are_balanced_one_hot():
    ds = data.synthetic_images()
    assert ds.num_classes == 4 and np.bincount(ds.labels).tolist() == [60] * 4
    assert np.array_equal(ds.y.argmax(1), ds.labels)
    assert 0.0 <= ds.x.min() and ds.x.max() <= 1.0


def test_text_targets_are_shifted_inputs():
    ds = data.synthetic_text(5)
    assert np.array_equal(ds.y[:-1], ds.x[1:])  # window i + 1 starts one character later
    assert np.array_equal(ds.y[0, :-1], ds.x[0, 1:])
    assert (ds.x.sum(-1) == 1).all() and ds.x.shape[1] == 5


def test_one_hot_checks_labels():
    assert data.one_hot([2, 0], 3).tolist() == [[0, 0, 1], [1, 0, 0]]
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        data.one_hot([3], 3)


# --- CSV ----------------------------------------------------------------------------------------

def test_load_csv(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("x1,x2,y\n1,2,3\n\n4.5,-5,6e-1\n")
    ds = data.load_csv(p)
    assert ds.x.tolist() == [[1.0, 2.0], [4.5, -5.0]] and ds.y.tolist() == [[3.0], [0.6]]
    assert ds.name == str(p) and ds.labels is None


@pytest.mark.parametrize("text,match", [
    ("a,b,y\n1,2,3\n1,x,3\n", r"line 3: expected 3 numbers"),
    ("a,b,y\n1,2,3\n1,2\n", r"line 3: expected 3 columns"),
    ("a,b,y\n", "no data rows"),
    ("", "empty CSV"),
])
def test_load_csv_errors(tmp_path, text, match):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(ValueError, match=match):
        data.load_csv(p)


def test_load_csv_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.csv"):
        data.load_csv(tmp_path / "nope.csv")


# --- .npy ---------------------------------------------------------------------------------------

def test_load_npy_nhwc_uint8(tmp_path):
    x = np.arange(2 * 4 * 4 * 3, dtype=np.uint8).reshape(2, 4, 4, 3)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", np.array([1, 0]))
    ds = data.load_npy(tmp_path / "x.npy", tmp_path / "y.npy")
    assert ds.x.shape == (2, 3, 4, 4)
    assert np.allclose(ds.x, x.transpose(0, 3, 1, 2) / 255.0)
    assert ds.labels.tolist() == [1, 0] and ds.y.tolist() == [[0, 1], [1, 0]]


def test_load_npy_nchw_float_and_n_total(tmp_path):
    x = np.random.default_rng(0).uniform(size=(5, 1, 3, 3))
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", np.arange(5))
    ds = data.load_npy(tmp_path / "x.npy", tmp_path / "y.npy", n_total=3)
    assert np.array_equal(ds.x, x[:3]) and ds.num_classes == 3


@pytest.mark.parametrize("x,y,match", [
    (np.zeros((2, 3, 4)), np.zeros(2, np.int64), "expected images"),
    (np.zeros((2, 3, 4, 4)), np.zeros(3, np.int64), "2 images but"),
    (np.zeros((2, 3, 4, 4)), np.zeros(2), "integer labels"),
    (np.zeros((2, 5, 4, 4)), np.zeros(2, np.int64), "1 or 3 channels"),
    (np.zeros((2, 3, 4, 4)), -np.ones(2, np.int64), ">= 0"),
])
def test_load_npy_errors(tmp_path, x, y, match):
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    with pytest.raises(ValueError, match=match):
        data.load_npy(tmp_path / "x.npy", tmp_path / "y.npy")


def test_load_npy_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="x.npy"):
        data.load_npy(tmp_path / "x.npy", tmp_path / "y.npy")


# --- scikit-learn -------------------------------------------------------------------------------

@needs_sklearn
@pytest.mark.parametrize("name,n,d,k", [("digits", 1797, 64, 10), ("iris", 150, 4, 3),
                                        ("wine", 178, 13, 3), ("breast_cancer", 569, 30, 2),
                                        ("diabetes", 442, 10, 0)])
def test_load_sklearn(name, n, d, k):
    ds = data.load_sklearn(name)
    assert ds.x.shape == (n, d) and ds.num_classes == k
    assert np.allclose(ds.x.mean(0), 0.0, atol=1e-9)
    assert ds.y.shape == ((n, 1) if k == 0 else (n, k))


@needs_sklearn
def test_digits_images():
    ds = data.digits_images()
    assert ds.x.shape == (1797, 1, 8, 8) and ds.x.max() == 1.0 and ds.num_classes == 10


def test_load_sklearn_unknown_name():
    with pytest.raises(ValueError, match="unknown dataset 'mnist'"):
        data.load_sklearn("mnist")


def test_load_sklearn_without_sklearn(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    with pytest.raises(ImportError, match=r"install tlrs\[datasets\] \(scikit-learn\)"):
        data.load_sklearn("iris")


# --- file checks: headers against sizes, before allocating ----------------------------------------

def test_npy_header_reads_shape_and_dtype(tmp_path):
    np.save(tmp_path / "a.npy", np.zeros((3, 4), np.float32))
    shape, dtype, offset = data.npy_header(tmp_path / "a.npy")
    assert shape == (3, 4) and dtype == np.float32 and offset in (64, 128)


@pytest.mark.parametrize("mutate,match", [
    (lambda raw: b"", "empty file"),
    (lambda raw: raw[:-1], "truncated"),
    (lambda raw: raw + b"\0", "corrupt: its header declares"),
    (lambda raw: b"\x93NUMPY\x09\x00" + raw[8:], "not a .npy file or a corrupt header"),
    (lambda raw: raw[:10], "not a .npy file or a corrupt header"),
])
def test_npy_header_refuses_bad_files(tmp_path, mutate, match):
    np.save(tmp_path / "a.npy", np.zeros((3, 4)))
    p = tmp_path / "b.npy"
    p.write_bytes(mutate((tmp_path / "a.npy").read_bytes()))
    with pytest.raises(data.DataFileError, match=match):
        data.npy_header(p)


def test_data_file_errors_are_arg_errors_and_missing_files_file_not_found(tmp_path):
    from tlrs.errors import ArgError

    with pytest.raises(data.DataFileNotFoundError) as info:
        data.load_npy(tmp_path / "x.npy", tmp_path / "y.npy")
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, ArgError)
    assert issubclass(data.DataFileError, ValueError)


def test_load_npy_refuses_copies_over_the_limit(tmp_path, monkeypatch):
    np.save(tmp_path / "x.npy", np.zeros((20, 3, 4, 4), np.uint8))
    np.save(tmp_path / "y.npy", np.zeros(20, np.int64))
    monkeypatch.setattr(data, "MAX_LOAD_BYTES", 20 * 48 * 8 - 1)
    with pytest.raises(data.DataFileError, match="read fewer with --n-total"):
        data.load_npy(tmp_path / "x.npy", tmp_path / "y.npy")
    assert len(data.load_npy(tmp_path / "x.npy", tmp_path / "y.npy", n_total=19)) == 19


@pytest.mark.parametrize("x,match", [
    (np.full((2, 3, 4, 4), np.inf), "finite pixel values"),
    (np.zeros((0, 3, 4, 4)), "no images"),
    (np.zeros((2, 3, 0, 4)), "at least 1x1 pixels"),
    (np.zeros((2, 3, 4, 4), np.complex128), "numeric images"),
])
def test_load_npy_refuses_bad_pixels(tmp_path, x, match):
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", np.zeros(len(x), np.int64))
    with pytest.raises(data.DataFileError, match=match):
        data.load_npy(tmp_path / "x.npy", tmp_path / "y.npy")


@pytest.mark.parametrize("content,match", [
    ("a,y\n1,nan\n", "finite numbers"),
    ("a,y\n1,-inf\n", "finite numbers"),
    ("\n1,2\n", "expected a header line"),
])
def test_load_csv_refuses_non_finite_and_headerless(tmp_path, content, match):
    (tmp_path / "a.csv").write_text(content)
    with pytest.raises(data.DataFileError, match=match):
        data.load_csv(tmp_path / "a.csv")


def test_load_csv_refuses_folders_and_binary(tmp_path):
    with pytest.raises(data.DataFileError, match="is a folder"):
        data.load_csv(tmp_path)
    (tmp_path / "b.csv").write_bytes(b"\x80\x81")
    with pytest.raises(data.DataFileError, match="not UTF-8 text"):
        data.load_csv(tmp_path / "b.csv")
