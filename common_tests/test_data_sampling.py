"""Samplers, ``random_split`` and the DataLoader's sampler arguments, against PyTorch's
``torch.utils.data``: the same indices and order wherever no random draw is involved; with
a generator, the properties (a permutation, the sizes, the same order for the same seed)."""
import warnings

import numpy as np
import pytest

from .helpers_optim import stage_tensor
from .oracle import need_torch, np_


def _dataset(lib, n, make):
    return lib.utils.data.TensorDataset(make(np.arange(n * 2, dtype=np.float32).reshape(n, 2)),
                                        make(np.arange(n, dtype=np.int64)))


def _ours(sg, n=10):
    return _dataset(sg, n, lambda a: stage_tensor(sg, a))


def _theirs(torch, n=10):
    return _dataset(torch, n, torch.from_numpy)


def _labels(batches):
    """The sample indices a loader visited, batch by batch."""
    return [np_(by).tolist() for _, by in batches]


@pytest.mark.needs_torch
def test_sequential_and_batch_samplers_match_torch(sg):
    torch = need_torch()
    tu, su = torch.utils.data, sg.utils.data
    assert list(su.SequentialSampler(range(7))) == list(tu.SequentialSampler(range(7)))
    assert len(su.SequentialSampler(range(7))) == 7
    for bs in (1, 3, 7, 9):
        for drop in (False, True):
            ours = su.BatchSampler(su.SequentialSampler(range(7)), bs, drop)
            theirs = tu.BatchSampler(tu.SequentialSampler(range(7)), bs, drop)
            assert list(ours) == list(theirs) and len(ours) == len(theirs)
    # any iterable of indices is a sampler
    assert list(su.BatchSampler([5, 1, 4, 2, 0], 2, False)) == list(tu.BatchSampler([5, 1, 4, 2, 0], 2, False))
    assert isinstance(su.RandomSampler(range(3)), su.Sampler)
    with pytest.raises(NotImplementedError):
        iter(su.Sampler())


@pytest.mark.needs_torch
def test_sampler_argument_errors_match_torch(sg):
    torch = need_torch()
    for lib in (torch, sg):
        u = lib.utils.data
        for bad in (0, -2, 1.5, True):
            with pytest.raises(ValueError, match="batch_size should be a positive integer"):
                u.BatchSampler(range(4), bad, False)
        with pytest.raises(ValueError, match="drop_last should be a boolean"):
            u.BatchSampler(range(4), 2, 1)
        with pytest.raises(TypeError, match="replacement should be a boolean"):
            u.RandomSampler(range(4), replacement=1)
        for bad in (0, -1):
            with pytest.raises(ValueError, match="num_samples should be a positive integer"):
                u.RandomSampler(range(4), num_samples=bad)


def test_random_sampler_is_a_seeded_permutation(sg):
    su = sg.utils.data
    order = list(su.RandomSampler(range(20), generator=sg.Generator().manual_seed(3)))
    assert sorted(order) == list(range(20))
    assert order == list(su.RandomSampler(range(20), generator=sg.Generator().manual_seed(3)))
    sampler = su.RandomSampler(range(20), generator=sg.Generator().manual_seed(3))
    assert list(sampler) == order and list(sampler) != order  # a new permutation every epoch
    sg.manual_seed(5)
    first = list(su.RandomSampler(range(20)))
    sg.manual_seed(5)
    assert list(su.RandomSampler(range(20))) == first  # the default generator, seeded
    # more samples than items: whole permutations, then part of one
    more = list(su.RandomSampler(range(6), num_samples=15, generator=sg.Generator().manual_seed(1)))
    assert len(more) == 15 and sorted(more[:6]) == sorted(more[6:12]) == list(range(6))
    assert len(set(more[12:])) == 3
    fewer = su.RandomSampler(range(6), num_samples=4, generator=sg.Generator().manual_seed(1))
    assert len(fewer) == 4 and len(set(fewer)) == 4


def test_random_sampler_with_replacement(sg):
    su = sg.utils.data
    draws = list(su.RandomSampler(range(5), replacement=True, num_samples=200,
                                  generator=sg.Generator().manual_seed(2)))
    assert len(draws) == 200 and set(draws) == set(range(5))  # every index appears in 200 draws
    assert all(isinstance(i, int) for i in draws)
    again = su.RandomSampler(range(5), replacement=True, num_samples=200, generator=sg.Generator().manual_seed(2))
    assert list(again) == draws and len(again) == 200


@pytest.mark.needs_torch
@pytest.mark.parametrize("n,lengths", [(10, [3, 7]), (10, [0.5, 0.5]), (10, [0.3, 0.3, 0.4]),
                                       (11, [0.8, 0.2]), (7, [0.25, 0.25, 0.25, 0.25]), (5, [5])])
def test_random_split_sizes_match_torch(sg, n, lengths):
    torch = need_torch()
    theirs = torch.utils.data.random_split(range(n), lengths, generator=torch.Generator().manual_seed(0))
    ours = sg.utils.data.random_split(_ours(sg, n), lengths, generator=sg.Generator().manual_seed(0))
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    assert all(isinstance(s, sg.utils.data.Subset) for s in ours)
    # together the splits hold every index once, and each sample is the dataset's own
    flat = [i for s in ours for i in s.indices]
    assert sorted(flat) == list(range(n))
    for s in ours:
        assert [s[k][1].item() for k in range(len(s))] == s.indices


def test_random_split_is_reproducible(sg):
    ds = _ours(sg, 30)
    a = sg.utils.data.random_split(ds, [0.7, 0.3], generator=sg.Generator().manual_seed(9))
    b = sg.utils.data.random_split(ds, [21, 9], generator=sg.Generator().manual_seed(9))
    assert [s.indices for s in a] == [s.indices for s in b]
    assert a[0].indices + a[1].indices == sg.randperm(30, generator=sg.Generator().manual_seed(9)).tolist()
    sg.manual_seed(4)
    c = sg.utils.data.random_split(ds, [10, 20])
    sg.manual_seed(4)
    assert [s.indices for s in c] == [s.indices for s in sg.utils.data.random_split(ds, [10, 20])]


@pytest.mark.needs_torch
def test_random_split_errors_match_torch(sg):
    torch = need_torch()
    for lib in (torch, sg):
        split = lib.utils.data.random_split
        with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
            split(range(10), [3, 3])
        with pytest.raises(ValueError, match="Fraction at index 1 is not between 0 and 1"):
            split(range(10), [0.5, 1.5, -1.0])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            parts = split(range(2), [0.1, 0.1, 0.8])
        assert [len(p) for p in parts] == [1, 0, 1]
        assert any("index 1 is 0" in str(w.message) for w in caught)


@pytest.mark.needs_torch
@pytest.mark.parametrize("kind", ["sequential", "list", "batch_sampler", "batch_sampler_list"])
def test_loader_with_samplers_visits_what_torch_visits(sg, kind):
    torch = need_torch()
    order = [7, 2, 9, 0, 4, 4, 1]

    def make(lib, ds):
        u = lib.utils.data
        if kind == "sequential":
            return u.DataLoader(ds, batch_size=3, sampler=u.SequentialSampler(ds), drop_last=True)
        if kind == "list":
            return u.DataLoader(ds, batch_size=2, sampler=order)
        if kind == "batch_sampler":
            return u.DataLoader(ds, batch_sampler=u.BatchSampler(order, 3, False))
        return u.DataLoader(ds, batch_sampler=[[3, 1], [8], [0, 5, 6]])

    ours, theirs = make(sg, _ours(sg)), make(torch, _theirs(torch))
    assert _labels(ours) == [b.tolist() for _, b in theirs]
    assert len(ours) == len(theirs)
    assert ours.batch_size == theirs.batch_size and ours.drop_last == theirs.drop_last
    # the per-sample path (a custom collate) visits the same indices as the batched one
    slow = make(sg, _ours(sg))
    slow.collate_fn = lambda b: sg.utils.data.default_collate(b)
    assert _labels(slow) == _labels(ours)


@pytest.mark.needs_torch
def test_loader_unbatched_with_sampler_matches_torch(sg):
    torch = need_torch()
    ours = sg.utils.data.DataLoader(_ours(sg), batch_size=None, sampler=[3, 0, 3])
    theirs = torch.utils.data.DataLoader(_theirs(torch), batch_size=None, sampler=[3, 0, 3])
    assert [y.item() for _, y in ours] == [y.item() for _, y in theirs]
    assert len(ours) == len(theirs) == 3
    collated = sg.utils.data.DataLoader(_ours(sg), batch_size=None, collate_fn=lambda s: s[1].item() * 2)
    reference = torch.utils.data.DataLoader(_theirs(torch), batch_size=None, collate_fn=lambda s: s[1].item() * 2)
    assert list(collated) == list(reference)


def test_loader_shuffle_builds_a_random_sampler(sg):
    ds = _ours(sg, 13)
    loader = sg.utils.data.DataLoader(ds, batch_size=4, shuffle=True, generator=sg.Generator().manual_seed(6))
    assert isinstance(loader.sampler, sg.utils.data.RandomSampler)
    assert isinstance(loader.batch_sampler, sg.utils.data.BatchSampler)
    seen = [i for b in _labels(loader) for i in b]
    assert seen == sg.randperm(13, generator=sg.Generator().manual_seed(6)).tolist()
    plain = sg.utils.data.DataLoader(ds)
    assert isinstance(plain.sampler, sg.utils.data.SequentialSampler)


@pytest.mark.needs_torch
@pytest.mark.filterwarnings("ignore:'pin_memory' argument")  # PyTorch's, on a machine without a GPU
def test_loader_worker_and_pin_memory_arguments_match_torch(sg):
    torch = need_torch()
    for lib, ds in ((torch, _theirs(torch)), (sg, _ours(sg))):
        u = lib.utils.data
        # accepted: the batches are the same as with the defaults
        loader = u.DataLoader(ds, batch_size=4, num_workers=0, pin_memory=True)
        assert [b.tolist() for _, b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
        with pytest.raises(ValueError, match="num_workers option should be non-negative"):
            u.DataLoader(ds, num_workers=-1)
        with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
            u.DataLoader(ds, shuffle=True, sampler=u.SequentialSampler(ds))
        for kwargs in ({"batch_size": 2}, {"shuffle": True}, {"drop_last": True},
                       {"sampler": u.SequentialSampler(ds)}):
            with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
                u.DataLoader(ds, batch_sampler=[[0, 1]], **kwargs)
        with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
            u.DataLoader(ds, persistent_workers=True)
        with pytest.raises(ValueError, match="prefetch_factor option could only be specified"):
            u.DataLoader(ds, prefetch_factor=2)
    # workers asked for: the same batches, loaded in this process
    ours = sg.utils.data.DataLoader(_ours(sg), batch_size=4, num_workers=2, persistent_workers=True,
                                    prefetch_factor=2, pin_memory=True)
    assert _labels(ours) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_utils_data_exports_the_sampling_names(sg):
    u = sg.utils.data
    for name in ("random_split", "Sampler", "SequentialSampler", "RandomSampler", "BatchSampler"):
        assert getattr(u, name) is getattr(sg.data, name) and getattr(u, name).__doc__
