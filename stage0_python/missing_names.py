"""The error for a name a namespace lacks: it names the stage, the name, and where the
op-coverage table lists what each stage offers (a program written for PyTorch learns at
once that this name, not its own code, is the problem)."""
COVERAGE = "the op-coverage table, docs/api/coverage.md"


def no_attribute(module, name):
    """The AttributeError for ``module.name`` (``module`` a dotted module name)."""
    stage = module.partition(".")[0]
    return AttributeError(f"module {module!r} has no attribute {name!r}: {stage} does not offer it "
                          f"(what each stage offers under PyTorch's names: {COVERAGE})")
