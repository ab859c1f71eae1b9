"""Sizes that depend on dynamic axes, found by tracing more than once.

A traced forward sees plain ints: ``x.reshape(B * T, C)`` records ``(24, 16)``. To export
a graph whose batch size (or sequence length) may change, ``export`` traces the model
once at the example's sizes, once more for each dynamic axis with only that axis moved,
and once with every axis moved. An int that differs between the traces is a ``Sym``: a
sum of coefficients times products of axis sizes, fitted from the first traces and
checked against the last. Two forms cover the shapes models compute: ``a * d + b`` for
one axis (``T``, ``T - 1``, ``2 * T + 1``) and ``c * d1 * d2 ...`` for several (``B * T``,
``B * H``). Anything else is refused by ``fit`` with the values it saw.
"""


class Sym:
    """An int that depends on dynamic axes: ``terms`` maps a tuple of axis numbers
    (a product of their sizes; ``()`` is the constant term) to its coefficient."""

    __slots__ = ("terms",)

    def __init__(self, terms):
        self.terms = {m: c for m, c in terms.items() if c}

    @staticmethod
    def of(v):
        return v if isinstance(v, Sym) else Sym({(): v})

    def simplified(self):
        """A plain int when no axis is left in it."""
        if not any(self.terms):
            return self.terms.get((), 0)
        return self

    def __add__(self, other):
        terms = dict(self.terms)
        for m, c in Sym.of(other).terms.items():
            terms[m] = terms.get(m, 0) + c
        return Sym(terms).simplified()

    __radd__ = __add__

    def __neg__(self):
        return Sym({m: -c for m, c in self.terms.items()})

    def __sub__(self, other):
        return self + -Sym.of(other)

    def __rsub__(self, other):
        return -self + other

    def __mul__(self, other):
        if isinstance(other, Sym):
            terms = {}
            for m1, c1 in self.terms.items():
                for m2, c2 in other.terms.items():
                    m = tuple(sorted(m1 + m2))
                    terms[m] = terms.get(m, 0) + c1 * c2
            return Sym(terms).simplified()
        return Sym({m: c * other for m, c in self.terms.items()}).simplified()

    __rmul__ = __mul__

    def value(self, sizes):
        total = 0
        for m, c in self.terms.items():
            for axis in m:
                c *= sizes[axis]
            total += c
        return total

    def __repr__(self):
        return " + ".join(f"{c}" + "".join(f"*d{a}" for a in m) for m, c in self.terms.items()) or "0"


def _product(sizes, axes):
    p = 1
    for a in axes:
        p *= sizes[a]
    return p


def fit(values, sizes):
    """The int (or Sym) that gives ``values[t]`` at ``sizes[t]`` in every trace ``t``.

    Trace 0 has the example's sizes, trace ``1 + i`` moves axis ``i`` alone, the last
    moves them all. Returns None when no supported form fits."""
    v0, base = values[0], sizes[0]
    if all(v == v0 for v in values):
        return v0
    moved = [i for i in range(len(base)) if values[1 + i] != v0]
    if len(moved) == 1:
        i = moved[0]
        step = sizes[1 + i][i] - base[i]
        if (values[1 + i] - v0) % step:
            return None
        a = (values[1 + i] - v0) // step
        guess = Sym({(i,): a, (): v0 - a * base[i]})
    else:
        p = _product(base, moved)
        if v0 % p:
            return None
        guess = Sym({tuple(moved): v0 // p})
    if all(guess.value(s) == v for v, s in zip(values, sizes)):
        return guess
    return None


def same(a, b):
    """Whether two sizes (ints or Syms) are the same in every trace."""
    return Sym.of(a).terms == Sym.of(b).terms
