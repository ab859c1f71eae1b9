"""``sg.distributed``: data-parallel training across processes and hosts on MPI, with
``torch.distributed``'s names.

A program that ``mpirun -n N`` starts calls ``init_process_group()``; each process then
knows its rank (``get_rank()``) among ``get_world_size()``, and the collectives
(``all_reduce``, ``broadcast``, ``all_gather``, ``reduce_scatter``, ``barrier``) combine
tensors across all of them. ``sg.nn.parallel.DistributedDataParallel`` averages a model's
gradients with them, and ``sg.utils.data.DistributedSampler`` gives each rank its share
of a dataset. The transport is MPI itself (Open MPI through ``mpi4py``), never one of
this project's own; where it is missing, ``is_available()`` is False and
``unavailable_reason()`` says why.
"""
from .collectives import (
                          ReduceOp,
                          Work,
                          all_gather,
                          all_gather_into_tensor,
                          all_reduce,
                          barrier,
                          broadcast,
                          reduce_scatter,
                          reduce_scatter_tensor,
)
from .process_group import (
                          destroy_process_group,
                          get_backend,
                          get_rank,
                          get_world_size,
                          init_process_group,
                          is_available,
                          is_initialized,
                          unavailable_reason,
)

__all__ = ["init_process_group", "destroy_process_group", "is_available", "is_initialized",
           "unavailable_reason", "get_rank", "get_world_size", "get_backend", "ReduceOp", "Work",
           "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter",
           "reduce_scatter_tensor", "barrier"]
