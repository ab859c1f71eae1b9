"""The primitive set of a device (stage 0's contract, ``stage0_python/backend.py``) over
device buffers. ``../backend.py`` routes a primitive here when its buffers live on a
device; each primitive reaches its operands' driver through them. Creation primitives
are the host's: the frontend moves what they make (``Buffer.upload``)."""
from ..capabilities import CapabilityError
from ..strided import (  # noqa: F401  (the views: the same on every device)
    alias,
    diagonal,
    expand,
    is_contiguous,
    permute,
    reshape,
    shares_storage,
    slice,
    storage_id,
    storage_offset,
    strides,
    windows,
)
from .conv import conv2d, conv2d_backward  # noqa: F401
from .elementwise import binary, cast, unary, where  # noqa: F401
from .fused import (  # noqa: F401
    adam_step,
    attention,
    attention_backward,
    cross_entropy,
    cross_entropy_backward,
    layer_norm,
    layer_norm_backward,
    log_softmax,
    recurrent,
    recurrent_backward,
    rmsprop_step,
    sgd_step,
    softmax,
    softmax_backward,
)
from .index import fold, gather, put, scan, scatter_add, sort, take, unfold  # noqa: F401
from .matmul import matmul  # noqa: F401
from .movement import assign, cat, contiguous, copy, data_ptr, set_data  # noqa: F401
from .reduce import arg_reduce, reduce  # noqa: F401


def to_dlpack(x, versioned=False):
    """Refused, with the driver's reason: no device here shares its memory through DLPack."""
    raise CapabilityError(x.driver.dlpack_refusal)
