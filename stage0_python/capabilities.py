"""The error a stage raises for what it declares it cannot do."""


# one class for every stage (the vocabulary's), so that code one stage inherits from another
# raises the error the program catches as ``sg.CapabilityError``
from stage0_python.vocabulary import CapabilityError


def refusal(stage_module_name, capability, call, why):
    """A function that raises, for ``call``, the CapabilityError saying ``why`` the stage
    lacks ``capability``: what a backend offers in place of a primitive it cannot have."""
    def refuse(*args, **kwargs):
        raise lacking(stage_module_name, capability, f"{call}: {why}")
    refuse.__doc__ = f"Refused: {why}."
    return refuse


def lacking(stage_module_name, capability, message):
    """A CapabilityError that names the stage and the capability after ``message``."""
    stage = stage_module_name.partition(".")[0]
    return CapabilityError(f"{message} ({stage} lacks {capability}: its LACKS names it)")
