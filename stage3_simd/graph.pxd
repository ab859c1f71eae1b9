cdef class Context:
    cdef dict __dict__
    cdef readonly tuple _saved  # readable, as stage 0's attribute, for sg.viz's saved-tensor nodes
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

    cpdef list run(self, list grads, bint retain_graph)


cdef class AccumulateGrad(Node):
    cdef public object tensor


cdef bint grad_enabled() noexcept
cdef object apply_function(object cls, tuple args, dict kwargs)
