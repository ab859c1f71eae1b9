"""Functional forms of the ``nn`` layers, as in ``torch.nn.functional``.

One part per family: ``activations``, ``linear_maps``, ``im2col`` (unfold, fold),
``convolution``, ``pooling``, ``padding``, ``normalization``, ``dropouts``, ``embeddings``,
``losses``, ``distances``, ``resampling`` and ``attention``; what several share is in
``helpers``. The losses and activations of the stage's core ``functional`` are re-exported
here. Everything is built from differentiable Tensor operations, except the im2col step of
convolution and pooling: ``unfold``/``fold`` are backend kernels, wrapped in a ``Function``
pair whose backwards are each other.
"""
# every name imported one by one, so that readers and autodoc see them (the reference test
# checks that each name of ``__all__`` is bound here by an import naming it): first the core's
# softmax, classification losses and activations (relu and silu are activations.py's, with
# ``inplace=``), then each part's
from ...functional import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    gelu,
    l1_loss,
    log_softmax,
    logsigmoid,
    mse_loss,
    nll_loss,
    one_hot,
    sigmoid,
    softmax,
    softplus,
    tanh,
)
from .activations import (
    celu,
    elu,
    glu,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    mish,
    prelu,
    relu,
    relu6,
    selu,
    silu,
    softmin,
    softshrink,
    softsign,
    tanhshrink,
    threshold,
)
from .attention import multi_head_attention_forward, scaled_dot_product_attention
from .convolution import conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d
from .distances import cosine_similarity, normalize, pairwise_distance
from .dropouts import alpha_dropout, dropout, dropout1d, dropout2d
from .embeddings import embedding, embedding_bag
from .im2col import fold, unfold
from .linear_maps import bilinear, linear
from .losses import huber_loss, kl_div, smooth_l1_loss
from .normalization import batch_norm, group_norm, instance_norm, layer_norm, local_response_norm, rms_norm
from .padding import pad
from .pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
    max_unpool1d,
    max_unpool2d,
)
from .resampling import interpolate, pixel_shuffle, pixel_unshuffle, upsample, upsample_bilinear, upsample_nearest

# every public name (a literal: linters then count the imports as re-exports)
__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "alpha_dropout", "avg_pool1d", "avg_pool2d", "avg_pool3d", "batch_norm", "bilinear",
           "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "celu", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
           "conv_transpose2d", "conv_transpose3d", "cosine_similarity", "cross_entropy", "dropout", "dropout1d",
           "dropout2d",
           "elu", "embedding", "embedding_bag", "fold", "gelu", "glu", "group_norm", "hardshrink",
           "hardsigmoid", "hardswish", "hardtanh", "huber_loss", "instance_norm", "interpolate", "kl_div",
           "l1_loss", "layer_norm", "leaky_relu", "linear", "local_response_norm", "log_softmax",
           "logsigmoid", "max_pool1d", "max_pool2d", "max_pool3d", "max_unpool1d", "max_unpool2d", "mish",
           "mse_loss",
           "multi_head_attention_forward", "nll_loss", "normalize", "one_hot", "pad", "pairwise_distance",
           "pixel_shuffle", "pixel_unshuffle", "prelu", "relu", "relu6", "rms_norm",
           "scaled_dot_product_attention", "selu", "sigmoid", "silu", "smooth_l1_loss", "softmax", "softmin",
           "softplus", "softshrink", "softsign", "tanh", "tanhshrink", "threshold", "unfold", "upsample",
           "upsample_bilinear", "upsample_nearest"]


def __getattr__(name):
    from ...missing_names import no_attribute
    raise no_attribute(__name__, name)
