# cython: language_level=3
"""Stage 4's routing of a primitive to the device its buffers live on, compiled.

Design: every primitive of stage 4's backend is reached through a ``Routed`` object
(``backend.py``), which looks at the arguments that hold buffers, a C type test each. When
all of them are stage 2's host buffers (or None) the call goes straight to stage 3's
primitive (``on_cpu``); when all are buffers of one device, straight to that device's
(``on_device``, by buffer type): the common cases cost what the call costs. Anything else
(a list of buffers for ``cat``, a zero-dim host scalar meeting a device buffer, a mix)
takes ``general``, the Python routing that moves the scalars to the device and names both
devices when they are mixed.
"""
from stage2_cython._buffer cimport Buffer


cdef class Routed:
    """A backend primitive: ``on_cpu`` when every buffer argument (at ``positions``) is a
    host buffer or None, ``on_device[type]`` when every one is a buffer of that type or
    None, else ``general`` (each called with the same arguments)."""
    cdef readonly object on_cpu, general
    cdef readonly dict on_device
    cdef readonly tuple positions
    cdef dict __dict__  # __name__, __doc__: the primitive's, for help() and the reference

    def __init__(self, name, positions, on_cpu, on_device, general):
        self.positions = tuple(positions)
        self.on_cpu = on_cpu
        self.on_device = dict(on_device)
        self.general = general
        self.__name__ = name
        self.__doc__ = on_cpu.__doc__

    def __call__(self, *args, **kwargs):
        cdef Py_ssize_t i, n = len(args)
        cdef object kind = None, t
        for i in self.positions:
            if i >= n or args[i] is None:
                continue
            t = type(args[i])
            if kind is None:
                kind = t
            elif t is not kind:
                return self.general(*args, **kwargs)
        if kind is None or kind is Buffer:
            return self.on_cpu(*args, **kwargs)
        found = self.on_device.get(kind)
        if found is None:  # a list (cat), or something no device holds: general names it
            return self.general(*args, **kwargs)
        return found(*args, **kwargs)

    def __repr__(self):
        return f"<primitive {self.__name__}>"
