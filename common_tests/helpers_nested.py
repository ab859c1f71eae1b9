"""A helper for the tests that compare nested Python structures holding tensors (a
collated batch, a loaded checkpoint) with what PyTorch makes of the same input."""
from .oracle import assert_close


def assert_same_nested(ours, theirs, torch, where="obj"):
    """``ours`` has ``theirs``'s structure: dicts with the same keys in the same order, lists
    and tuples of the same type and length, a tensor where PyTorch has one, with close
    values, and equal leaves of the same type; ``where`` names the path in a failure."""
    if isinstance(theirs, torch.Tensor):
        assert hasattr(ours, "grad_fn"), f"{where}: expected a tensor, got {type(ours).__name__}"
        assert_close(ours, theirs)
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs), where
        for k in theirs:
            assert_same_nested(ours[k], theirs[k], torch, f"{where}[{k!r}]")
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), \
            f"{where}: {type(ours).__name__} != {type(theirs).__name__}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same_nested(a, b, torch, f"{where}[{i}]")
    else:
        assert ours == theirs and type(ours) is type(theirs), where
