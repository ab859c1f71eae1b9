"""multinomial: the project's generator is not PyTorch's, so samples are compared by
frequency (chi-square with a fixed seed and a generous bound, the same test passed by
PyTorch's own samples), plus the exact rules: no repeats without replacement, zero
weights never drawn, the same seed giving the same samples on every stage, and
PyTorch's errors."""
import numpy as np
import pytest

import stage0_python as reference

from .helpers_core import T
from .oracle import need_torch

pytestmark = pytest.mark.needs_torch

WEIGHTS = [0.5, 3.0, 0.0, 1.5, 2.0, 1.0]  # unnormalised, one zero
# chi-square with 4 degrees of freedom (5 non-zero categories): P(X > 40) ~ 4e-8
CHI2_BOUND = 40.0


def _chi2(samples, probs):
    counts = np.bincount(np.asarray(samples).ravel(), minlength=len(probs))
    expected = np.asarray(probs) * counts.sum()
    nz = expected > 0
    assert counts[~nz].sum() == 0, "a zero-weight category was drawn"
    return float((((counts - expected) ** 2)[nz] / expected[nz]).sum())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_multinomial_with_replacement_frequencies(sg, dtype):
    torch = need_torch()
    p = np.array(WEIGHTS) / sum(WEIGHTS)
    sg.manual_seed(1234)
    ours = sg.multinomial(T(sg, np.array(WEIGHTS, dtype=dtype)), 20000, replacement=True)
    torch.manual_seed(1234)
    theirs = torch.multinomial(torch.tensor(WEIGHTS, dtype=getattr(torch, dtype)), 20000, replacement=True)
    assert ours.dtype == sg.int64 and tuple(ours.shape) == tuple(theirs.shape) == (20000,)
    assert _chi2(theirs.numpy(), p) < CHI2_BOUND  # the bound is one PyTorch meets
    assert _chi2(ours.numpy(), p) < CHI2_BOUND
    # and the method form on a 2-d input: one row per distribution
    rows = T(sg, np.array([WEIGHTS, WEIGHTS[::-1]], dtype=dtype))
    two = rows.multinomial(5000, True)
    assert tuple(two.shape) == (2, 5000)
    assert _chi2(two.numpy()[0], p) < CHI2_BOUND and _chi2(two.numpy()[1], p[::-1]) < CHI2_BOUND


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_multinomial_without_replacement(sg, dtype):
    torch = need_torch()
    w = np.array(WEIGHTS, dtype=dtype)
    batch = np.tile(w, (3000, 1))
    sg.manual_seed(99)
    ours = sg.multinomial(T(sg, batch), 3).numpy()
    theirs = torch.multinomial(torch.tensor(batch), 3).numpy()
    assert ours.shape == theirs.shape == (3000, 3)
    for s in (ours, theirs):
        assert all(len(set(row)) == 3 for row in s), "a category drawn twice in a row"
        assert not (s == 2).any(), "a zero-weight category was drawn"
    p = w / w.sum()
    # the first draw follows the weights; the second and third, the weights that remain
    assert _chi2(theirs[:, 0], p) < CHI2_BOUND and _chi2(ours[:, 0], p) < CHI2_BOUND
    f_ours = np.bincount(ours[:, 1], minlength=6) / 3000
    f_theirs = np.bincount(theirs[:, 1], minlength=6) / 3000
    assert np.abs(f_ours - f_theirs).max() < 0.05
    # every category once when all are drawn, the zero weight last (as PyTorch)
    full, tfull = sg.multinomial(T(sg, w), 6).tolist(), torch.multinomial(torch.tensor(w), 6).tolist()
    assert sorted(full) == sorted(tfull) == list(range(6)) and full[-1] == tfull[-1] == 2


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_multinomial_same_seed_same_samples_on_every_stage(sg, dtype):
    w = np.array([[0.2, 0.0, 1.0, 3.0], [1.0, 1.0, 1.0, 1.0]], dtype=dtype)
    for replacement in (True, False):
        reference.manual_seed(2024)
        expected = reference.multinomial(reference.tensor(w.tolist(), dtype=getattr(reference, dtype)), 3,
                                         replacement=replacement).tolist()
        sg.manual_seed(2024)
        assert sg.multinomial(T(sg, w), 3, replacement=replacement).tolist() == expected
    gen = sg.Generator()
    gen.manual_seed(5)
    a = sg.multinomial(T(sg, w[0]), 50, True, generator=gen).tolist()
    gen.manual_seed(5)
    sg.manual_seed(0)
    sg.rand(3)  # the default generator moves; the explicit one does not care
    assert sg.multinomial(T(sg, w[0]), 50, True, generator=gen).tolist() == a


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_multinomial_errors(sg, dtype):
    torch = need_torch()
    cases = [
        ([1.0, -0.5, 2.0], 1, True, ValueError, "multinomial: .*negative"),
        ([1.0, float("inf"), 2.0], 1, True, ValueError, "multinomial: .*inf"),
        ([1.0, float("nan"), 2.0], 1, True, ValueError, "multinomial: .*nan"),
        ([0.0, 0.0, 0.0], 1, True, ValueError, "multinomial: .*sums to 0"),
        ([1.0, 2.0, 3.0], 4, False, sg.ShapeError, r"multinomial: cannot sample 4 > 3 categories.*\[3\]"),
        ([1.0, 2.0], 0, True, sg.ShapeError, "multinomial: cannot sample num_samples=0"),
    ]
    for w, n, repl, err, msg in cases:
        with pytest.raises(RuntimeError):  # PyTorch refuses each of them
            torch.multinomial(torch.tensor(w), n, repl)
        with pytest.raises(err, match=msg):
            sg.multinomial(T(sg, np.array(w, dtype=dtype)), n, repl)
        with pytest.raises(RuntimeError):  # ours are RuntimeErrors too
            sg.multinomial(T(sg, np.array(w, dtype=dtype)), n, repl)
    with pytest.raises(sg.ShapeError, match=r"multinomial: input must be 1-d or 2-d.*\[1, 1, 2\]"):
        sg.multinomial(sg.ones(1, 1, 2), 1)
    with pytest.raises(TypeError, match="multinomial: only floating-point.*int64"):
        sg.multinomial(sg.tensor([1, 2]), 1)
    # a refused call draws nothing: the stream is where it was
    sg.manual_seed(3)
    with pytest.raises(ValueError):
        sg.multinomial(T(sg, np.array([[1.0, 2.0], [-1.0, 1.0]], dtype=dtype)), 1)
    after_error = sg.rand(2).tolist()
    sg.manual_seed(3)
    assert sg.rand(2).tolist() == after_error
