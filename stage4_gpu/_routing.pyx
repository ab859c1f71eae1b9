# cython: language_level=3
"""Stage 4's routing of a primitive to the device its buffers live on, compiled.

Design: every primitive of stage 4's backend is reached through a ``Routed`` object
(``backend.py``), which looks at the arguments that hold buffers, a C type test each. When
all of them are stage 2's host buffers (or None) the call goes straight to stage 3's
primitive (``on_cpu``); when all are buffers of one device, straight to that device's
(``on_device``, by buffer type). Anything else (a list of buffers for ``cat``, a zero-dim
host scalar meeting a device buffer, a mix) takes ``general``, the Python routing that
moves the scalars to the device and names both devices when they are mixed.

Routing must cost next to nothing, since every operation of the cpu device pays it. A
Python-level ``__call__`` would pack the arguments into a tuple and a dict and unpack them
again (about 0.15 µs, an eighth of ``a + b``), so a ``Routed`` is called through CPython's
vectorcall protocol: the caller's argument array reaches ``_route`` and goes on, untouched,
to the chosen primitive. ``__call__`` remains for callers that pass a tuple.
"""
from cpython.object cimport PyObject
from stage2_cython._buffer cimport Buffer

cdef extern from "Python.h":
    ctypedef PyObject *(*vectorcallfunc)(PyObject *, PyObject *const *, size_t, PyObject *)
    Py_ssize_t PyVectorcall_NARGS(size_t nargsf)
    PyObject *PyObject_Vectorcall(PyObject *, PyObject *const *, size_t, PyObject *)
    unsigned long Py_TPFLAGS_HAVE_VECTORCALL
    ctypedef struct PyTypeObject:  # the two fields set below
        Py_ssize_t tp_vectorcall_offset
        unsigned long tp_flags
    PyTypeObject *Py_TYPE(PyObject *)

cdef enum:
    MAX_POSITIONS = 10  # buffer arguments sit at most at position 9 (recurrent_backward's w_hr)


cdef class Routed:
    """A backend primitive: ``on_cpu`` when every buffer argument (at ``positions``) is a
    host buffer or None, ``on_device[type]`` when every one is a buffer of that type or
    None, else ``general`` (each called with the same arguments)."""
    cdef vectorcallfunc _vectorcall  # read by CPython at the type's tp_vectorcall_offset
    cdef readonly object on_cpu, general
    cdef readonly dict on_device
    cdef readonly tuple positions
    cdef Py_ssize_t _at[MAX_POSITIONS]
    cdef Py_ssize_t _count
    cdef dict __dict__  # __name__, __doc__: the primitive's, for help() and the reference

    def __cinit__(self, *args, **kwargs):
        self._vectorcall = _route

    def __init__(self, name, positions, on_cpu, on_device, general):
        self.positions = tuple(positions)
        if len(self.positions) > MAX_POSITIONS or not all(0 <= i < MAX_POSITIONS for i in self.positions):
            raise ValueError(f"{name}: buffer positions are at most {MAX_POSITIONS} of the first {MAX_POSITIONS}")
        self._count = len(self.positions)
        for k, i in enumerate(self.positions):
            self._at[k] = i
        self.on_cpu = on_cpu
        self.on_device = dict(on_device)
        self.general = general
        self.__name__ = name
        self.__doc__ = on_cpu.__doc__

    cdef object _target(self, PyObject *const *args, Py_ssize_t n):
        """The primitive that takes this call's ``n`` positional arguments ``args``."""
        cdef Py_ssize_t k, i
        cdef PyTypeObject *kind = NULL
        cdef PyTypeObject *t
        for k in range(self._count):
            i = self._at[k]
            if i >= n or args[i] == <PyObject *>None:
                continue
            t = Py_TYPE(args[i])
            if kind == NULL:
                kind = t
            elif t != kind:
                return self.general
        if kind == NULL or kind == <PyTypeObject *>Buffer:
            return self.on_cpu
        # a list (cat), or something no device holds: general names it
        return self.on_device.get(<object>kind, self.general)

    def __call__(self, *args, **kwargs):
        cdef Py_ssize_t n = len(args)
        cdef PyObject *items[MAX_POSITIONS]
        for k in range(min(n, MAX_POSITIONS)):
            items[k] = <PyObject *>args[k]
        return self._target(items, min(n, MAX_POSITIONS))(*args, **kwargs)

    def __repr__(self):
        return f"<primitive {self.__name__}>"


cdef PyObject *_route(PyObject *callable, PyObject *const *args, size_t nargsf,
                      PyObject *kwnames) noexcept:
    """Routed's vectorcall: pass the arguments on to the primitive ``_target`` chooses (NULL
    with the exception set, as CPython expects, when that raises)."""
    cdef object target
    try:
        target = (<Routed>callable)._target(args, PyVectorcall_NARGS(nargsf))
    except BaseException:
        return NULL
    return PyObject_Vectorcall(<PyObject *>target, args, nargsf, kwnames)


cdef void _use_vectorcall(Routed probe):
    """Have CPython call Routed's instances through ``_route``, found at the offset of
    ``_vectorcall`` (measured on ``probe``)."""
    cdef PyTypeObject *t = <PyTypeObject *>Routed
    t.tp_vectorcall_offset = <char *>&probe._vectorcall - <char *><PyObject *>probe
    t.tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL


_use_vectorcall(Routed.__new__(Routed))
