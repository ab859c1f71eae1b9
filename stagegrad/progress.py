"""A dependency-free progress bar: redraws in place on a terminal, prints a line every
10% otherwise (so CI logs stay readable)."""
import sys
import time


class Progress:
    def __init__(self, total, desc, stream=None, width=28):
        self.total, self.desc, self.width = total, desc, width
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.start = time.perf_counter()
        self._last_draw = 0.0
        self._last_decile = -1

    def update(self, done, **stats):
        now = time.perf_counter()
        decile = done * 10 // max(self.total, 1)
        final = done >= self.total
        if self.tty:
            if not final and now - self._last_draw < 0.1:
                return
        elif decile == self._last_decile and not final:
            return
        self._last_draw, self._last_decile = now, decile
        elapsed = now - self.start
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - done) / rate if rate > 0 else float("inf")
        filled = self.width * done // max(self.total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        extra = "  ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in stats.items())
        line = (f"{self.desc} [{bar}] {done}/{self.total}  {extra}  "
                f"{elapsed:.0f}s elapsed, eta {eta:.0f}s" if eta != float("inf") else
                f"{self.desc} [{bar}] {done}/{self.total}  {extra}")
        if self.tty:
            self.stream.write("\r" + line + "\033[K" + ("\n" if final else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
