"""Nested Python structures holding tensors (a forward's output, a traced call's
arguments): the values of one kind they hold."""


def leaves(obj, kind):
    """The instances of ``kind`` in ``obj``: ``obj`` itself, or those nested in its tuples,
    lists and dict values, in order."""
    if isinstance(obj, kind):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from leaves(o, kind)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from leaves(o, kind)
