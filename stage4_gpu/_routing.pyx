# cython: language_level=3
"""Stage 4's routing of a primitive to the device its buffers live on, compiled.

Design: every primitive of stage 4's backend is reached through a ``Routed`` object
(``backend.py``), which looks at the arguments that hold buffers. On the ``cpu`` device
all of them are stage 2's host buffers (or None), and the call goes straight to stage 3's
primitive with the same argument tuple: a type test per buffer, in C, so that an operation
on the cpu device costs what it costs on stage 3. Anything else (a device's buffer, a list
of buffers for ``cat``, a mix) takes ``general``, the Python routing that moves zero-dim
host scalars to the device and names both devices when they are mixed.
"""
from stage2_cython._buffer cimport Buffer


cdef class Routed:
    """A backend primitive: ``on_cpu`` when every buffer argument (at ``positions``) is a
    host buffer or None, else ``general`` (both called with the same arguments)."""
    cdef readonly object on_cpu, general
    cdef readonly tuple positions
    cdef dict __dict__  # __name__, __doc__: the primitive's, for help() and the reference

    def __init__(self, name, positions, on_cpu, general):
        self.positions = tuple(positions)
        self.on_cpu = on_cpu
        self.general = general
        self.__name__ = name
        self.__doc__ = on_cpu.__doc__

    def __call__(self, *args, **kwargs):
        cdef Py_ssize_t i, n = len(args)
        for i in self.positions:
            if i < n and args[i] is not None and type(args[i]) is not Buffer:
                return self.general(*args, **kwargs)
        return self.on_cpu(*args, **kwargs)

    def __repr__(self):
        return f"<primitive {self.__name__}>"
