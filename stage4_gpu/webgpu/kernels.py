"""The WebGPU device's kernel language as the Python side sees it: the WGSL type of each
dtype, and ``kernel_source``, a file of ``kernels/`` filled in for one launch. A source
is compiled once into a pipeline (``runtime.Runtime.pipeline``), found again by its text,
and launched over the buffers it binds (``launch``). WGSL has no includes: a kernel file's
``#include "x.wgsl"`` line (the functions several kernels share: ``strided.wgsl``,
``along.wgsl``) is replaced by that file's text when it is read (``read``).

Element types: WGSL has 32-bit integers and floats in its core, 64-bit integers where the
adapter offers ``shader-int64`` (nearly every desktop GPU, and Mesa's software driver),
and no 64-bit floats at all. A bool is one 32-bit word on the device (WGSL has no
byte-sized storage) and one byte on the host.
"""
import os
import re

from .runtime import runtime

DIR = os.path.join(os.path.dirname(__file__), "kernels")
# dtype name -> (WGSL type, bytes per element on the device)
WGSL = {"bool": ("u32", 4), "int32": ("i32", 4), "int64": ("i64", 8), "float32": ("f32", 4)}
WORKGROUP = 256  # threads per workgroup of the one-thread-per-element kernels
_INCLUDE = re.compile(r'^#include "([^"]+)"\s*$', re.M)


def read(name):
    """The text of ``kernels/<name>``, each ``#include "x.wgsl"`` line replaced by the text
    of ``kernels/x.wgsl``."""
    with open(os.path.join(DIR, name), encoding="utf-8") as f:
        return _INCLUDE.sub(lambda m: read(m.group(1)), f.read())


MATH = read("math.wgsl")
# the first line of a kernel that includes MATH: its OPAQUE zero, from a count the
# compiler cannot know to be non-negative
MATH_SETUP = "OPAQUE = select(0u, 1u, p[0] < 0);"
_FILLED = {}


def kernel_source(name, **fill):
    """``kernels/<name>.wgsl`` with each ``{KEY}`` replaced by ``fill[KEY]`` (and SETUP by
    MATH_SETUP where HELPERS brings MATH). Cached: a launch then finds its compiled
    pipeline by a string whose hash Python already holds."""
    key = (name, tuple(sorted(fill.items())))
    src = _FILLED.get(key)
    if src is None:
        if "HELPERS" in fill:
            fill["SETUP"] = MATH_SETUP if fill["HELPERS"] else ""
        src = read(name + ".wgsl")
        for k, v in fill.items():
            src = src.replace("{" + k + "}", v)
        _FILLED[key] = src
    return src


def groups(n):
    """Workgroups for one thread per element of ``n``."""
    return -(-n // WORKGROUP)


def launch(source, bufs, params, n):
    """Queue ``source`` over ``n`` workgroups, the buffers' storages bound in order."""
    runtime().launch(source, [b.storage.gbuf for b in bufs], params, n)
