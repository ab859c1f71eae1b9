"""uint8, int8 and int16 against PyTorch, bit for bit: creation, casts both ways, arithmetic
with PyTorch's promotion and two's-complement wrapping, comparisons, bitwise ops and shifts,
reductions, indexing, NumPy and every checkpoint format. A stage that does not compute in
them names them in its LACKS, and making one raises CapabilityError (checked here too)."""
import numpy as np
import pytest

from .oracle import need_torch

pytestmark = pytest.mark.needs_torch

SMALL = ("uint8", "int8", "int16")
OTHERS = ("bool", "int32", "int64", "float32", "float64")
# values past every small type's range and of both signs: wrapping is what is checked
VALUES = [0, 1, -1, 7, -128, 127, 128, 200, 255, 256, -129, 300, 32767, -32768, 40000, -70000]


def _dtype(lib, name):
    return getattr(lib, "bool_" if lib.__name__ != "torch" and name == "bool" else name)


def _computes(sg, name):
    if name in sg.LACKS:
        with pytest.raises(sg.CapabilityError, match=name):
            sg.tensor([1, 2], dtype=_dtype(sg, name))
        pytest.skip(f"{sg.__name__} declares it lacks {name}: checked that it refuses")


def _same(ours, theirs):
    """Equal dtype, shape and every element (bit for bit)."""
    assert ours.dtype.name == str(theirs.dtype).rpartition(".")[2]
    np.testing.assert_array_equal(np.asarray(ours.tolist()), theirs.numpy())


def _as_torch(f, ours, theirs):
    """``f`` of the stage's operands gives what ``f`` of PyTorch's gives, or refuses as it does."""
    try:
        expected = f(*theirs)
    except (RuntimeError, TypeError):
        with pytest.raises((RuntimeError, TypeError, ValueError)):
            f(*ours)
        return
    _same(f(*ours), expected)


def _pair(sg, name, values=VALUES):
    """``values`` as ``name`` on the stage and in PyTorch, made as int64 and cast (so that
    values past the range wrap, as a cast does)."""
    torch = need_torch()
    return (sg.tensor(values, dtype=sg.int64).to(_dtype(sg, name)),
            torch.tensor(values, dtype=torch.int64).to(getattr(torch, name)))


@pytest.mark.parametrize("name", SMALL)
def test_creation_refuses_and_wraps_as_torch(sg, name):
    """A value written by the user must fit (uint8 also takes -255..-1, as PyTorch); a cast
    wraps."""
    _computes(sg, name)
    torch = need_torch()
    dtype, theirs = _dtype(sg, name), getattr(torch, name)
    for v in VALUES + [-1.0, 2.7, -1.5, 300.0]:
        try:
            expected = torch.tensor([v], dtype=theirs).tolist()
        except RuntimeError:
            for make in (lambda: sg.tensor([v], dtype=dtype), lambda: sg.full((2,), v, dtype=dtype),
                         lambda: sg.zeros(2, dtype=dtype).fill_(v)):
                with pytest.raises((ValueError, RuntimeError), match="overflow"):
                    make()
            continue
        assert sg.tensor([v], dtype=dtype).tolist() == expected, v
        assert sg.full((2,), v, dtype=dtype).tolist() == expected * 2, v
    _same(*_pair(sg, name))
    for made in (sg.zeros(3, dtype=dtype), sg.arange(5, dtype=dtype), sg.ones(2, dtype=dtype)):
        assert made.dtype is dtype and made.element_size() == theirs.itemsize


@pytest.mark.parametrize("source, target", [(s, t) for s in SMALL + OTHERS for t in SMALL + OTHERS
                                             if SMALL.count(s) + SMALL.count(t)])
def test_casts_both_ways(sg, source, target):
    for name in {source, target} & set(SMALL):
        _computes(sg, name)
    torch = need_torch()
    values = [v for v in VALUES if source != "bool" or v in (0, 1)]
    if source.startswith("float"):  # with fractions, truncated toward zero
        values = values + [2.7, -2.7, 0.5, -0.5, 254.9]
    theirs = torch.tensor(values, dtype=torch.float64 if source.startswith("float") else torch.int64)
    theirs = theirs.to(getattr(torch, source))
    ours = sg.tensor(theirs.tolist(), dtype=_dtype(sg, source))
    _same(ours.to(_dtype(sg, target)), theirs.to(getattr(torch, target)))


BINARY = ["add", "sub", "mul", "floor_divide", "remainder", "div", "maximum", "minimum",
          "bitwise_and", "bitwise_or", "bitwise_xor", "eq", "ne", "lt", "le", "gt", "ge"]
A = [0, 1, 5, 100, 127, 200, 255, 17, 9, 3]
B = [1, 3, 7, 100, 2, 200, 255, 5, 13, 1]   # no zero divisors: division by zero is tested below
SIGNED_B = [1, -3, 7, -100, 2, -128, 127, -5, 13, -1]


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("left, right", [("uint8", "uint8"), ("int8", "int8"), ("int16", "int16"),
                                         ("uint8", "int8"), ("int8", "uint8"), ("uint8", "int16"),
                                         ("int8", "int16"), ("uint8", "int32"), ("int8", "int64"),
                                         ("int16", "float32"), ("uint8", "bool")])
def test_binary_ops_promote_and_wrap_as_torch(sg, op, left, right):
    for name in {left, right} & set(SMALL):
        _computes(sg, name)
    rvals = {"bool": [1] * len(B), "uint8": B}.get(right, SIGNED_B)  # no zero divisors
    a, ta = _pair(sg, left, A)
    b, tb = _pair(sg, right, rvals)
    _as_torch(lambda x, y: getattr(x, op)(y), (a, b), (ta, tb))


@pytest.mark.parametrize("name", SMALL)
@pytest.mark.parametrize("scalar", [3, -2, 300, 2.5, True])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "floor_divide", "remainder", "div", "eq", "lt",
                                "bitwise_and", "bitwise_or"])
def test_python_scalars_keep_the_tensor_dtype_as_torch(sg, name, scalar, op):
    _computes(sg, name)
    a, ta = _pair(sg, name, A)
    _as_torch(lambda x: getattr(x, op)(scalar), (a,), (ta,))


@pytest.mark.parametrize("name", SMALL)
def test_unary_and_shifts(sg, name):
    _computes(sg, name)
    a, ta = _pair(sg, name)
    for f in (lambda x: -x, abs, lambda x: ~x, lambda x: x.sign(), lambda x: x * x * x,
              lambda x: x << 3, lambda x: x >> 2, lambda x: x ** 2, lambda x: x.clamp(-5, 100)):
        _same(f(a), f(ta))
    s, ts = _pair(sg, name, [0, 1, 3, 7, 8, 15, 16, 31, 40])
    _same(a[:9] << s, ta[:9] << ts)
    _same(a[:9] >> s, ta[:9] >> ts)


@pytest.mark.parametrize("name", SMALL)
def test_integer_division_by_zero_refused_as_torch(sg, name):
    _computes(sg, name)
    torch = need_torch()
    a, ta = _pair(sg, name, [1, 2])
    z, tz = _pair(sg, name, [1, 0])
    with pytest.raises(RuntimeError):
        torch.floor_divide(ta, tz)
    with pytest.raises((ZeroDivisionError, RuntimeError)):
        sg.floor_divide(a, z)
    _same(a / z, ta / tz)  # true division gives floats: inf


@pytest.mark.parametrize("name", SMALL)
def test_reductions_and_scans(sg, name):
    _computes(sg, name)
    a, ta = _pair(sg, name, [[v, -v // 3, 2 * v] for v in VALUES])
    for f in (lambda x: x.sum(), lambda x: x.sum(0), lambda x: x.sum(1, keepdim=True),
              lambda x: x.prod(1), lambda x: x.max(), lambda x: x.min(0).values,
              lambda x: x.argmax(0), lambda x: x.amax(1), lambda x: x.cumsum(0),
              lambda x: x.float().mean(1), lambda x: x.sort(0).values, lambda x: x.unique()):
        _same(f(a), f(ta))


@pytest.mark.parametrize("name", SMALL)
def test_indexing_joins_and_where(sg, name):
    _computes(sg, name)
    torch = need_torch()
    a, ta = _pair(sg, name, [[v, v + 1] for v in VALUES])
    idx, tidx = sg.tensor([3, 0, 3]), torch.tensor([3, 0, 3])
    _same(a[idx], ta[tidx])
    _same(a[a > 0], ta[ta > 0])
    _same(a[1:7:2, 1], ta[1:7:2, 1])
    _same(a.t().contiguous(), ta.t().contiguous())
    _same(sg.where(a > 3, a, sg.zeros_like(a)), torch.where(ta > 3, ta, torch.zeros_like(ta)))
    u, tu = _pair(sg, "uint8", [[1, 2]] * len(VALUES))
    _same(sg.cat([a, u]), torch.cat([ta, tu]))
    _same(a.gather(1, sg.tensor([[1, 0]] * len(VALUES))), ta.gather(1, torch.tensor([[1, 0]] * len(VALUES))))
    b, tb = a.clone(), ta.clone()
    b[idx] = 5
    tb[tidx] = 5
    _same(b, tb)
    b.add_(200)
    tb.add_(200)
    _same(b, tb)


@pytest.mark.parametrize("name", SMALL)
def test_numpy_both_ways(sg, name):
    _computes(sg, name)
    arr = np.array(VALUES).astype(name)
    t = sg.from_numpy(arr)
    assert t.dtype is _dtype(sg, name) and t.tolist() == arr.tolist()
    back = t.numpy()
    assert back.dtype == np.dtype(name) and back.tolist() == arr.tolist()
    assert sg.tensor(arr).dtype is _dtype(sg, name)


@pytest.mark.parametrize("name", SMALL)
def test_every_checkpoint_format_round_trips(sg, name, tmp_path):
    _computes(sg, name)
    torch = need_torch()
    a, ta = _pair(sg, name)
    sg.save({"a": a}, tmp_path / "a.pt")
    assert sg.load(tmp_path / "a.pt")["a"].tolist() == ta.tolist()
    sg.save_safetensors({"a": a}, tmp_path / "a.safetensors")
    back = sg.load_safetensors(tmp_path / "a.safetensors")["a"]
    assert back.dtype is a.dtype and back.tolist() == ta.tolist()
    torch.save({"a": ta}, tmp_path / "t.pt")
    loaded = sg.load(tmp_path / "t.pt")["a"]
    assert loaded.dtype is a.dtype and loaded.tolist() == ta.tolist()


@pytest.mark.parametrize("name", SMALL)
def test_dlpack_both_ways(sg, name):
    _computes(sg, name)
    torch = need_torch()
    if "dlpack" in sg.LACKS:
        pytest.skip(f"{sg.__name__} declares it lacks dlpack")
    a, ta = _pair(sg, name)
    shared = torch.from_dlpack(a)
    _same(a, shared)
    shared[0] = 9  # one memory: the write shows on our side
    assert a[0].item() == 9
    ours = sg.from_dlpack(ta)
    assert ours.dtype is a.dtype
    ta[1] = 5
    assert ours[1].item() == 5


VIEW_DTYPES = ("uint8", "int8", "int16", "int32", "int64", "float32", "float64")


@pytest.mark.parametrize("source, target", [(s, t) for s in VIEW_DTYPES for t in VIEW_DTYPES
                                            if s != t and SMALL.count(s) + SMALL.count(t)])
def test_view_as_another_dtype_reads_the_same_bytes(sg, source, target):
    for name in {source, target} & set(SMALL):
        _computes(sg, name)
    torch = need_torch()
    ta = torch.arange(-40, 40, dtype=torch.int64).to(getattr(torch, source)).reshape(2, -1)
    a = sg.tensor(ta.tolist(), dtype=_dtype(sg, source))
    _same(a.view(_dtype(sg, target)), ta.view(getattr(torch, target)))
    _same(a[1:].view(_dtype(sg, target)), ta[1:].view(getattr(torch, target)))
    v = a.view(_dtype(sg, target))
    if "dtype_views" in sg.LACKS:  # a copy here: a write would not reach ``a``
        with pytest.raises(sg.CapabilityError, match="lacks (dtype_)?views"):
            v.zero_()
        return
    v.zero_()  # one memory, as in PyTorch
    assert a.abs().sum().item() == 0


def test_view_as_another_dtype_refuses_what_torch_refuses(sg):
    _computes(sg, "int16")
    torch = need_torch()
    for f in (lambda lib: lib.zeros(2, 4)[:, 1:3].view(lib.float64),  # storage offset of 1 float32
              lambda lib: lib.zeros(3, dtype=lib.uint8).view(lib.int16),  # 3 bytes: no whole int16
              lambda lib: lib.zeros(()).view(lib.int16)):  # a 0-d tensor keeps its element size
        with pytest.raises(RuntimeError):
            f(torch)
        with pytest.raises((sg.ShapeError, RuntimeError, ValueError)):
            f(sg)


@pytest.mark.parametrize("name", SMALL + ("int32", "float32", "float64"))
def test_frombuffer_as_torch(sg, name):
    import array
    if name in SMALL:
        _computes(sg, name)
    torch = need_torch()
    raw = bytearray(range(40))
    for count, offset in ((-1, 0), (2, 1), (1, 7), (-1, 8)):
        theirs = torch.frombuffer(bytearray(raw), dtype=getattr(torch, name), count=count, offset=offset)
        ours = sg.frombuffer(raw, dtype=_dtype(sg, name), count=count, offset=offset)
        _same(ours, theirs)
    for count, offset in ((-1, 40), (-1, -1), (0, 0), (100, 0)):
        with pytest.raises(ValueError):
            torch.frombuffer(bytearray(raw), dtype=getattr(torch, name), count=count, offset=offset)
        with pytest.raises(ValueError, match="frombuffer"):
            sg.frombuffer(raw, dtype=_dtype(sg, name), count=count, offset=offset)
    with pytest.raises(TypeError, match="buffer protocol"):
        sg.frombuffer([1, 2], dtype=_dtype(sg, name))
    shared = sg.frombuffer(raw, dtype=_dtype(sg, name))
    shared.zero_()
    stage_lacks = sg.LACKS - getattr(sg, "DEVICE_LACKS", frozenset())  # the tensor is on the CPU
    assert any(raw) is ("buffer_protocol" in stage_lacks)  # shared where the stage shares memory
    copied = sg.frombuffer(bytes(8), dtype=_dtype(sg, name))  # read-only: always a copy
    copied += 1
    assert copied.tolist() == [1] * (8 // copied.element_size())
    arr = array.array("d", [1.5, -2.0])
    assert sg.frombuffer(arr, dtype=sg.float64).tolist() == [1.5, -2.0]
