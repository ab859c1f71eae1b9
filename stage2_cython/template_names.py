"""What every ``.pyx.tp`` template of stage 2 sees besides its own ``{{py:}}`` block: the
dtype lists a kernel is written for, as (code name in ``_types.pxd``, C type), taken from
the vocabulary; ``FUNCTIONS``, the op table's float functions (``stage0_python/op_table.py``),
with ``LIBC_NAMES``, the C functions their expressions call; and ``dispatch``, which writes
the branch on a dtype code, so that no template spells one out by hand::

    {{for BRANCH, T in dispatch("code", NUMERIC)}}
    {{BRANCH}}
        kernel(<{{T}}*>out, <{{T}}*>x, &it)
    {{endfor}}

``setup.py`` loads this file by its path when it renders the templates (the stage's
package cannot be imported before it is built).
"""
import re

from stage0_python.op_table import FUNCTIONS
from stage0_python.vocabulary import bool_, float32, float64, int32, int64

# the dtypes stage 2's kernels compute in, in code order (bool, integers, floats)
ALL = [(d.name.upper(), d.name + "_t") for d in sorted((bool_, int32, int64, float32, float64),
                                                       key=lambda d: d.code)]


def dispatch(var, dtypes):
    """(``if``/``elif var == CODE:``, C type) per dtype, the last one's branch a bare
    ``else:`` (callers check the code first, so the last branch needs no test)."""
    return [("else:" if i == len(dtypes) - 1 else ("elif " if i else "if ") + f"{var} == {code}:", ctype)
            for i, (code, ctype) in enumerate(dtypes)]


# the op table's float functions, and the libc functions their C expressions call
LIBC_NAMES = sorted({name for f in FUNCTIONS for name in re.findall(r"([a-z_]\w*)\(", f.c)})

NAMESPACE = {"ALL": ALL, "NUMERIC": ALL[1:], "FLOATS": ALL[3:], "INTEGRAL": ALL[:3], "dispatch": dispatch,
             "FUNCTIONS": FUNCTIONS, "LIBC_NAMES": LIBC_NAMES}
