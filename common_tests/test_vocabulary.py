"""The one vocabulary (``stage0_python/vocabulary.py``) against every place that names ops
or dtype codes: each backend's kernel tables, the Cython typedef file and templates, the
C++ bindings, the frontend's derivative tables, and both GPU devices' kernel tables. A
backend that disagrees with it fails here, not in a user's program."""
import pathlib
import re

import pytest

import stage0_python
from stage0_python import backend as reference
from stage0_python import vocabulary as V

ROOT = pathlib.Path(stage0_python.__file__).resolve().parent.parent


def test_every_stage_shares_the_vocabularys_objects(sg):
    """One ``float32`` and one ``CapabilityError`` per process, whichever stage names them."""
    assert sg.float32 is V.float32 and sg.bool is V.bool_ and sg.dtypes.BY_NAME["half"] is V.float16
    assert sg.CapabilityError is V.CapabilityError and sg.device is V.device
    assert sg.tensor([1.0]).dtype is V.float32 and (sg.tensor([1]) > 0).dtype is V.bool_


def test_each_buffer_carries_its_dtypes_code(sg):
    """The codes compiled kernels switch on are the vocabulary's."""
    if sg.__name__ in ("stage0_python", "stage1_strides"):  # Python buffers: the dtype object is all
        assert not hasattr(sg.backend.full((1,), 0, V.float32), "code")
        return
    for dtype in sg.dtypes.ALL:
        assert sg.backend.full((2,), 1, dtype).code == dtype.code, dtype


def test_the_cython_typedef_file_has_the_vocabularys_codes():
    text = (ROOT / "stage2_cython" / "_types.pxd").read_text(encoding="utf-8")
    block = text.split("cdef enum DTypeCode:")[1].split("cdef enum")[0]
    enum = dict(re.findall(r"^\s+([A-Z0-9]+) = (\d+)$", block, re.M))
    assert {name: int(code) for name, code in enum.items()} == {
        d.name.upper(): d.code for d in V.DTYPES if d.code is not None}


def test_the_cpp_kernels_have_the_vocabularys_dtype_codes():
    """stage 3's C interface (kernels.h) names each dtype code; by name, each is the vocabulary's."""
    text = (ROOT / "stage3_simd" / "csrc" / "kernels.h").read_text(encoding="utf-8")
    block = re.sub(r"/\*.*?\*/", "", text.split("enum sg3_dtype {")[1].split("};")[0], flags=re.S)
    codes = {name.lower(): int(code) for name, code in re.findall(r"SG3_(\w+) = (\d+)", block)}
    assert codes == {d.name: d.code for d in V.DTYPES if d.code is not None}


def test_the_templates_see_the_vocabularys_dtypes():
    import importlib.util
    path = ROOT / "stage2_cython" / "template_names.py"
    spec = importlib.util.spec_from_file_location("template_names", path)
    names = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(names)
    # every dtype the vocabulary says is computed in itself (not stored narrow and widened)
    native = sorted((d for d in V.DTYPES if d.code not in V.HALF_CODES + V.SMALL_INT_CODES), key=lambda d: d.code)
    assert names.ALL == [(d.name.upper(), d.name + "_t") for d in native]
    assert names.dispatch("c", names.ALL[:2]) == [("if c == BOOL:", "bool_t"), ("else:", "int32_t")]


def test_stage0s_kernel_tables_are_the_vocabulary():
    """The reference backend has a kernel for every op the vocabulary names, and no other."""
    assert set(reference.UNARY) == set(V.UNARY)
    assert set(reference.BINARY) == set(V.BINARY)
    assert set(reference.REDUCE) == set(V.REDUCE)
    assert reference.BOOL_RESULT is V.BOOL_RESULT


def test_the_devices_fused_kernels_are_declared_ones():
    """The devices' fused kernels (``gpu/fused.py``'s ``FUSED``; each backend's is checked in
    ``test_contract.py``) are among those the vocabulary declares, and stage 4 routes each of
    their functions at the buffer positions declared there."""
    pytest.importorskip("stage4_gpu")
    from stage4_gpu import backend as b4
    from stage4_gpu.gpu import fused
    assert fused.FUSED <= set(V.FUSED_KERNELS) and fused.NAMED_ONLY <= fused.FUSED
    for name in fused.FUSED:
        for fn, positions in V.FUSED_KERNELS[name].items():
            assert getattr(b4, fn).positions == positions, fn


def test_stage3s_compiled_tables_name_only_vocabulary_ops():
    s3 = pytest.importorskip("stage3_simd")
    K = s3.backend.K
    assert set(K.UNARY_OPS) <= set(V.UNARY) and set(K.BINARY_OPS) <= set(V.BINARY)
    assert set(K.REDUCE_OPS) <= set(V.REDUCE) and K.COMPARISONS == frozenset(V.COMPARISONS)
    assert not set(K.UNARY_OPS) & V.BOOL_RESULT  # its unary kernels keep their operand's dtype


def test_the_frontends_gradient_tables_are_the_vocabularys_facts():
    from stage0_python import ops
    assert set(ops.DERIVATIVES) == {name for name, op in V.UNARY.items() if op.gradient == "rule"}
    assert ops.FLAT == {name for name, op in V.UNARY.items() if op.gradient == "flat"}


# the ops a Tensor reaches through an operator, or through nn.functional, not a method of that name
_CALLS = {"floordiv": lambda sg, a, b: a // b, "left_shift": lambda sg, a, b: a << b,
          "right_shift": lambda sg, a, b: a >> b, "gelu": lambda sg, a: sg.nn.functional.gelu(a),
          "silu": lambda sg, a: sg.nn.functional.silu(a)}


@pytest.mark.parametrize("name", [*V.UNARY, *V.BINARY])
def test_integer_operands_are_treated_as_the_vocabulary_says(sg, name):
    """What the vocabulary says of every op is what the frontend does with integer operands:
    "keep" computes in their dtype (or gives bool), "promote" in the default float dtype,
    "refuse" raises a TypeError."""
    op = {**V.UNARY, **V.BINARY}[name]
    ints = sg.tensor([1, 2])
    args = (ints,) * op.arity
    call = _CALLS.get(name, lambda sg, a, *b: getattr(a, name)(*b))
    if op.integers == "refuse":
        with pytest.raises(TypeError):
            call(sg, *args)
        return
    expected = {"keep": sg.bool if op.returns_bool else ints.dtype, "promote": sg.get_default_dtype()}
    assert call(sg, *args).dtype is expected[op.integers]


def test_bool_results_are_bool_on_every_stage(sg):
    x = sg.tensor([1.0, float("nan")])
    for name, op in V.UNARY.items():
        if op.returns_bool:
            assert sg.backend.unary(name, x._data).dtype is V.bool_, name
    for name, op in V.BINARY.items():
        if op.returns_bool:
            assert sg.backend.binary(name, x._data, x._data, V.float32).dtype is V.bool_, name


@pytest.mark.parametrize("driver", ["webgpu", "cuda"])
def test_each_gpu_drivers_kernel_tables_name_only_vocabulary_ops(driver):
    """Both GPU devices' elementwise tables (WGSL expressions, CUDA functors) use the
    vocabulary's op names; which ops give bool is the vocabulary's, not the kernels'."""
    import importlib
    pytest.importorskip("stage4_gpu")
    tables = importlib.import_module(f"stage4_gpu.{driver}.elementwise").TABLES
    for (kind, arity), table in tables.items():
        known = V.UNARY if arity == 1 else V.BINARY
        assert set(table) <= set(known), (kind, arity, set(table) - set(known))
    assert {op for (_, arity), table in tables.items() if arity == 2 for op in table} >= set(V.COMPARISONS)
