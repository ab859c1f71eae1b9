# The declarations of stage 0's graph.py that stages 3 and 4 compile it with (each stage's
# graph.pxd cimports its own TensorCore, then includes this).
cimport cython

cdef extern from *:
    """
    static __thread int sg_grad_off = 0;  /* per thread, as PyTorch's grad mode; 0: on */
    """
    int grad_off "sg_grad_off"

cdef bint COMPILED


cdef class Context:
    cdef dict __dict__
    cdef readonly tuple _saved  # readable, as in Python, for sg.viz's saved-tensor nodes
    cdef tuple _versions
    cdef bint _freed
    cdef public tuple needs_input_grad
    cdef public tuple non_differentiable
    cdef public bint materialize_grads
    cdef public tuple output_meta


cdef class Node:
    cdef public object fn
    cdef public Context ctx
    cdef public tuple next_edges
    cdef public Py_ssize_t n_outputs
    cdef public tuple input_meta
    cdef public dict hooks
    cdef public dict retained
    cdef object __weakref__

    @cython.locals(ctx=Context, i=Py_ssize_t, n=Py_ssize_t, g=TensorCore, checked=list)
    cpdef list run(self, list grads, bint retain_graph)


cdef class AccumulateGrad(Node):
    cdef public object tensor

    cpdef list run(self, list grads, bint retain_graph)


cdef class Function:
    pass


cpdef bint is_grad_enabled() noexcept
cpdef bint _set_grad_enabled(bint mode) noexcept
cdef object _zeros(tuple meta)
cpdef object _edge(TensorCore t)


@cython.locals(ctx=Context, node=Node, t=TensorCore, o=TensorCore, i=Py_ssize_t, count=Py_ssize_t,
               enabled=bint, track=bint, needs=list, edges=list, meta=list, outputs=tuple)
cpdef object apply_function(object cls, tuple args, dict kwargs)


@cython.locals(node=Node, nxt=Node, i=Py_ssize_t, grads=list, outs=list, deps=dict, buffers=dict,
               stack=list, ready=list, seen=set, captured=dict)
cpdef object _run(object roots, bint retain_graph, object capture=*)


@cython.locals(buf=list)
cdef object _add(dict buffers, Node node, Py_ssize_t i, object g)
cdef object _returned_input(TensorCore x)
