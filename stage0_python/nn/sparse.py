"""``Embedding``: a lookup table of trainable vectors."""
from ..autograd import no_grad
from ..shapes import ShapeError
from . import functional as F
from . import init
from .module import Module, Parameter, _empty, _with_options


class Embedding(Module):
    """Rows of ``weight`` (num_embeddings, embedding_dim), initialised N(0, 1), picked by
    integer indices. The ``padding_idx`` row starts at zero and gets no gradient."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, _freeze=False, device=None,
                 dtype=None):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx ({padding_idx}) must be within "
                                 f"num_embeddings ({num_embeddings})")
            padding_idx %= num_embeddings
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        if sparse:
            raise ValueError("Embedding: sparse gradients are not supported; use sparse=False")
        self.sparse = sparse
        if _weight is None:
            self.weight = Parameter(_empty((num_embeddings, embedding_dim), dtype, device),
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ShapeError(f"Embedding: _weight of shape {tuple(_weight.shape)} does not match "
                                 f"({num_embeddings}, {embedding_dim})")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self):
        """Draw the weight again from N(0, 1), zeroing the ``padding_idx`` row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        return _with_options(f"{self.num_embeddings}, {self.embedding_dim}",
                             ("padding_idx", self.padding_idx, self.padding_idx is not None),
                             ("max_norm", self.max_norm, self.max_norm is not None),
                             ("norm_type", self.norm_type, self.norm_type != 2),
                             ("scale_grad_by_freq", self.scale_grad_by_freq, bool(self.scale_grad_by_freq)))

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, sparse=False):
        """An Embedding over the given 2-D weights; see torch.nn.Embedding.from_pretrained."""
        if embeddings.ndim != 2:
            raise ShapeError(f"Embedding.from_pretrained: embeddings must be 2-D, got shape "
                             f"{tuple(embeddings.shape)}")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)


class EmbeddingBag(Module):
    """See torch.nn.EmbeddingBag: the sum, mean or max of bags of rows of ``weight``
    (initialised N(0, 1)), without materialising each bag's rows in the output."""

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None,
                 include_last_offset=False, padding_idx=None, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"EmbeddingBag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
        if sparse:
            raise ValueError("EmbeddingBag: sparse gradients are not supported; use sparse=False")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"EmbeddingBag: padding_idx ({padding_idx}) must be within "
                                 f"num_embeddings ({num_embeddings})")
            padding_idx %= num_embeddings
        self.mode, self.sparse = mode, sparse
        self.include_last_offset, self.padding_idx = include_last_offset, padding_idx
        if _weight is None:
            self.weight = Parameter(_empty((num_embeddings, embedding_dim), dtype, device))
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ShapeError(f"EmbeddingBag: _weight of shape {tuple(_weight.shape)} does not match "
                                 f"({num_embeddings}, {embedding_dim})")
            self.weight = Parameter(_weight)

    def reset_parameters(self):
        """Draw the weight again from N(0, 1), zeroing the ``padding_idx`` row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse, per_sample_weights,
                               self.include_last_offset, self.padding_idx)

    def extra_repr(self):
        return _with_options(f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}",
                             ("padding_idx", self.padding_idx, self.padding_idx is not None))
