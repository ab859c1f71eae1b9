"""``Driver``: what a device supplies to the shared layer. A driver knows its runtime (how
to allocate, copy, launch and wait) and its kernel language (how a kernel is named,
filled in or instantiated, and launched); it decides nothing a primitive decides.

Every hook gets buffers the shared layer has allocated and checked, and the int
parameters it has laid out (sizes, strides, offsets, in the order the kernel's file
documents); it launches one kernel, or queues nothing where there is nothing to do.
"""


class Driver:
    """The hooks a device's driver implements (``webgpu/driver.py``, ``cuda/driver.py``).

    Attributes: ``name`` (the device type), ``device`` (its ``device`` object), ``offsets``
    (whether a kernel can take a buffer from a view's offset: CUDA passes a pointer, WebGPU
    binds whole buffers), ``checks_indices`` (whether its gather, scatter_add, put and
    cross_entropy kernels check their index and target values on the device and report a
    bad one at the runtime's next synchronization: the shared layer then reads nothing back
    to check them first), ``dense_dtypes`` (the dtypes a dense matmul engine multiplies, by
    name), ``fused_dtypes``
    (the dtypes a fused kernel is written for, by name; float32 where unnamed) and
    ``dlpack_refusal`` (why ``__dlpack__`` is refused)."""

    name = None
    device = None
    offsets = False
    checks_indices = False
    dense_dtypes = frozenset()
    fused_dtypes = {}
    dlpack_refusal = None

    def _missing(self):
        raise NotImplementedError(f"the {self.name} driver lacks this hook")

    def capturing(self):
        """Whether the device's work is being captured into a graph (then nothing may be
        read back); only the cuda driver captures."""
        return False

    # ---------------------------------------------------------------- memory

    def check_dtype(self, dtype, op):
        """Refuse (CapabilityError naming ``op``) a dtype the device cannot hold."""
        self._missing()

    def itemsize(self, dtype):
        """Bytes per element of ``dtype`` on the device."""
        self._missing()

    def allocate(self, n, dtype):
        """A new storage for ``n`` elements of ``dtype`` (contents undefined)."""
        self._missing()

    def upload(self, raw, dtype):
        """A new storage holding ``raw``: the elements' bytes in the host's layout."""
        self._missing()

    def download(self, x):
        """The elements of the contiguous view ``x`` as a host array (``tolist``,
        ``tobytes``): the host waits for the device here."""
        self._missing()

    def upload_buffer(self, host, non_blocking=False):
        """A new storage holding the host buffer ``host``'s elements, row-major. Here through
        their bytes (``upload``); a driver that can copy from the host's memory directly
        overrides it, and may then honour ``non_blocking`` (not waiting for the copy)."""
        return self.upload(memoryview(host).tobytes(), host.dtype)

    def download_into(self, x, dst, non_blocking=False):
        """Write the view ``x``'s elements into the new contiguous host buffer ``dst`` (same
        shape and dtype). Here through their bytes, waiting for the device; a driver that can
        copy into the host's memory directly overrides it (and may honour ``non_blocking``)."""
        view = memoryview(dst)
        if view.nbytes:  # an empty view with a 0 in its shape cannot be cast, and holds nothing
            view.cast("B")[:] = x.host_bytes()

    def data_ptr(self, x):
        """The number ``data_ptr()`` reports for the view ``x``."""
        self._missing()

    # ---------------------------------------------------------------- elementwise

    def has_op(self, op, dtype, arity):
        """Whether the elementwise kernels compute ``op`` (of ``arity`` operands) on ``dtype``."""
        self._missing()

    def elementwise(self, op, out, inputs, params):
        """``out = op(*inputs)``: a unary or binary op name, ``"where"`` (cond, a, b), or None
        for a copy converting to out's dtype. ``params``: ``_strided.elementwise_layout``."""
        self._missing()

    def fill(self, out, value):
        """Set every element of the view ``out`` to the Python number ``value``."""
        self._missing()

    # ---------------------------------------------------------------- reductions

    def reduce(self, op, out, x, params):
        """``op`` (sum prod max min any all) of x into ``out``, one output element per
        kept position; ``params``: ``reduce.axes_layout``."""
        self._missing()

    def arg_reduce(self, op, out, x, params):
        """``argmax`` or ``argmin`` of x into the int64 ``out``; ``params`` as ``reduce``."""
        self._missing()

    # ---------------------------------------------------------------- indexing

    def gather(self, out, x, index, params):
        """``out[i] = x[..., index[i], ...]`` along an axis (take: flat, axis -1)."""
        self._missing()

    def scatter_add(self, out, index, src, params):
        """``out`` = zeros with ``src`` added at ``index`` (as a gather: no atomics)."""
        self._missing()

    def put(self, dst, index, src, accumulate, params):
        """``dst.flat[index[i]] = src[i]``, or combined by ``accumulate`` (False, True,
        "sum", "prod", "amax", "amin"), in order."""
        self._missing()

    def unfold(self, out, x, params):
        """im2col of x into ``out`` (N, C*K, L)."""
        self._missing()

    def fold(self, out, cols, params):
        """col2im of ``cols`` into ``out`` (N, C, *spatial), summing overlaps."""
        self._missing()

    def sort(self, vals, order, x, axis, descending):
        """Stable sort of x along ``axis`` (NaN largest) into ``vals`` and int64 ``order``."""
        self._missing()

    def scan(self, op, vals, order, x, params, rows):
        """The running ``op`` (sum prod logsumexp max min) along each of ``rows`` rows;
        ``order`` gets the positions for max and min. ``params``: ``index.rows_params``."""
        self._missing()

    # ---------------------------------------------------------------- fused kernels

    def rows(self, mode, out, x, y, rows, cols):
        """The softmax kernel over ``rows`` contiguous rows of ``cols``: ``mode`` is
        ``softmax``, ``log_softmax`` (of x) or ``softmax_backward``,
        ``log_softmax_backward`` (gradient x, output y)."""
        self._missing()

    def cross_entropy(self, loss, wrow, probs, x, target, weight, ignore_index, label_smoothing):
        """Each row's loss, its weight in a mean, and the probabilities, in one launch."""
        self._missing()

    def cross_entropy_backward(self, gx, probs, target, weight, scale, wsum, ignore_index,
                               label_smoothing):
        """The logits' gradient, each row's scaled by ``scale``; ``wsum``: the weights' sum."""
        self._missing()

    def optimizer_step(self, rule, param, grad, states, hyper, flags):
        """One step of ``rule`` (adam, sgd, rmsprop) on one parameter, in place: ``states``
        the rule's state buffers (None where absent), ``hyper`` its float32 constants,
        ``flags`` its choices (a dict of ints, in the order the kernel takes them)."""
        self._missing()

    def optimizer_steps(self, rule, steps):
        """One step of ``rule`` on every parameter of a group: ``steps`` holds each one's
        ``optimizer_step`` arguments after the rule. Here one ``optimizer_step`` each; a
        driver with a multi-tensor kernel overrides it to step them all in one launch
        (``gpu/fused.py``'s OWN names what is each tensor's own, the rest is the group's)."""
        for step in steps:
            self.optimizer_step(rule, *step)

    def layer_norm(self, y, mean, rstd, x, w, b, rows, cols, eps):
        """Normalise each of ``rows`` rows of ``cols``: y, and each row's mean and 1/std."""
        self._missing()

    def layer_norm_backward(self, gx, mean, rstd, x, g, w, rows, cols):
        """The input's gradient of ``layer_norm``, one row per launch group."""
        self._missing()

    def attention(self, out, lse, q, k, v, mask, causal, scale):
        """Scaled dot-product attention (``gpu/fused.py``'s shapes): out and each row's
        log-sum-exp; only a driver whose ``fused_dtypes`` names ``attention`` has it."""
        self._missing()

    def attention_backward(self, gq, gk, gv, g, q, k, v, out, lse, mask, causal, scale):
        """The gradients of ``attention``'s q, k and v from the output's gradient g."""
        self._missing()

    def recurrent(self, mode, reverse, sizes, out, h, c, saved, hprev, pre, gi, w, b, w_hr):
        """One recurrent layer and direction's time loop over packed rows (``sizes``: each
        step's rows, int64), in one launch: out, hprev, saved written; h and c (None but for
        the LSTM) from the initial state to the final; ``pre``: scratch (batch, gates)."""
        self._missing()

    def recurrent_backward(self, mode, reverse, sizes, ggi, gh, gc, gp, gproj, dhc, gout, saved, hprev, w,
                           w_hr):
        """Backpropagation through ``recurrent``'s time loop in one launch: ggi and gp (the
        GRU's hidden share, else ggi itself) and gproj (with a projection) written; gh and gc
        from the final state's gradients to the initial's; ``dhc``: scratch or None."""
        self._missing()

    # ---------------------------------------------------------------- products

    def matmul(self, out, a, b, sizes, layout):
        """The strided batched product: ``sizes`` (n, k, m, count), ``layout`` each
        operand's offset, batch stride, row and column strides."""
        self._missing()

    def dense(self, out, a, b, sizes):
        """The dense engine (for ``dense_dtypes``): contiguous a and b."""
        self._missing()
