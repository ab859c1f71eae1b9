"""The one random-number algorithm every stage reproduces bit for bit.

Generator: PCG32 (PCG-XSH-RR, 64-bit state, 32-bit output; O'Neill 2014) with the
fixed stream increment ``INC``. ``manual_seed(s)`` sets ``state = 0``, steps once,
adds ``s mod 2**64``, steps again (the reference seeding procedure).

Derived draws, in the order elements are laid out (row-major):

- ``uniform`` float32: ``(u32 >> 8) * 2**-24``; float64: ``((a >> 5) * 2**26 + (b >> 6)) * 2**-53``
  from two consecutive words ``a, b``; both lie in [0, 1).
- ``normal``: Box-Muller on pairs of float64 uniforms ``u1, u2`` (each from two words):
  ``r = sqrt(-2 log(1 - u1))``, elements ``r cos(2 pi u2)`` then ``r sin(2 pi u2)``;
  an odd count discards the last sine. Computed in float64, then rounded to the dtype.
- ``randint(low, high)``: ``n = high - low``; words below ``2**32 mod n`` are rejected,
  then ``low + u32 mod n``. Ranges over 2**32 use 64-bit words ``(a << 32) | b`` likewise.
- ``randperm(n)``: Fisher-Yates from the last position down, ``j = randint(0, i + 1)``.
"""
import math
import threading

MULT = 6364136223846793005
INC = 1442695040888963407  # odd: the stream selector
MASK64 = (1 << 64) - 1


class Generator:
    """A PCG32 stream. ``manual_seed`` makes every later draw reproducible.

    Safe to share between threads, as PyTorch's default generator is: every draw holds
    ``_lock`` (reentrant) from reading the state to writing it back, so two threads never
    draw the same numbers. Compiled stages draw under the same lock. A generator per
    thread avoids the contention."""

    def __init__(self, seed=0x853C49E6748FEA9B):
        self._lock = threading.RLock()
        self.manual_seed(seed)

    def __getstate__(self):  # a lock cannot be pickled or copied: a copy gets its own
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def manual_seed(self, seed):
        """Seed the stream (an int); see torch.Generator.manual_seed."""
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError(f"manual_seed expects an int, got {type(seed).__name__}")
        with self._lock:
            self._state = 0
            self._next()
            self._state = (self._state + seed) & MASK64
            self._next()
            self._seed = seed
        return self

    def initial_seed(self):
        """The seed of the stream; see torch.Generator.initial_seed."""
        return self._seed

    def get_state(self):
        """The stream's 64-bit state, an int (PyTorch's is a ByteTensor); see torch.Generator.get_state."""
        return self._state

    def set_state(self, state):
        """Restore a state that ``get_state`` returned; see torch.Generator.set_state."""
        with self._lock:
            self._state = int(state) & MASK64

    def _next(self):
        old = self._state
        self._state = (old * MULT + INC) & MASK64
        xorshifted = (((old >> 18) ^ old) >> 27) & 0xFFFFFFFF
        rot = old >> 59
        return ((xorshifted >> rot) | (xorshifted << ((-rot) & 31))) & 0xFFFFFFFF

    def words(self, n):
        """``n`` raw 32-bit outputs (the inner loop is inlined: it dominates init time)."""
        with self._lock:
            state = self._state
            out = [0] * n
            for i in range(n):
                old = state
                state = (old * MULT + INC) & MASK64
                x = (((old >> 18) ^ old) >> 27) & 0xFFFFFFFF
                rot = old >> 59
                out[i] = ((x >> rot) | (x << ((-rot) & 31))) & 0xFFFFFFFF
            self._state = state
        return out

    def uniform(self, n, double=False):
        """``n`` draws from [0, 1) as Python floats (53-bit with ``double``, else 24-bit), as the module
        docstring specifies."""
        if double:
            w = self.words(2 * n)
            return [((w[i] >> 5) * 67108864.0 + (w[i + 1] >> 6)) * (1.0 / 9007199254740992.0)
                    for i in range(0, 2 * n, 2)]
        return [(x >> 8) * (1.0 / 16777216.0) for x in self.words(n)]

    def normal(self, n):
        """``n`` draws from N(0, 1) as Python floats (Box-Muller; see the module docstring)."""
        u = self.uniform(n + (n & 1), double=True)
        out = []
        two_pi = 2.0 * math.pi
        for i in range(0, len(u), 2):
            r = math.sqrt(-2.0 * math.log(1.0 - u[i]))
            t = two_pi * u[i + 1]
            out.append(r * math.cos(t))
            out.append(r * math.sin(t))
        return out[:n]

    def randint(self, low, high, n):
        """``n`` integers from ``[low, high)`` (see the module docstring)."""
        span = high - low
        if span <= 0:
            raise ValueError(f"randint: expected low < high, got low={low}, high={high}")
        wide = span > 0xFFFFFFFF
        limit = 1 << (64 if wide else 32)
        threshold = (limit - span) % span
        out = []
        with self._lock:
            while len(out) < n:
                if wide:
                    r = (self._next() << 32) | self._next()
                else:
                    r = self._next()
                if r >= threshold:
                    out.append(low + r % span)
        return out

    def randperm(self, n):
        """A permutation of ``range(n)`` as a list (Fisher-Yates; see the module docstring)."""
        perm = list(range(n))
        with self._lock:
            for i in range(n - 1, 0, -1):
                j = self.randint(0, i + 1, 1)[0]
                perm[i], perm[j] = perm[j], perm[i]
        return perm


default_generator = Generator()


def manual_seed(seed):
    """Seed the default generator; see torch.manual_seed. The generator is the project's own, so a seed
    gives the same numbers on every stage, not PyTorch's."""
    return default_generator.manual_seed(seed)


def seed():
    """Reseed the default generator from the OS and return the seed."""
    import os
    s = int.from_bytes(os.urandom(8), "little")
    default_generator.manual_seed(s)
    return s


def initial_seed():
    """The seed of the default generator; see torch.initial_seed."""
    return default_generator.initial_seed()
