"""A dependency-free progress bar: redraws in place on a terminal, prints a line every
10% otherwise (so CI logs stay readable).

A line never exceeds the terminal's width less one column (a line that fills the last
column wraps on some terminals, and then every redraw leaves a line behind): the bar
narrows first, then the elapsed time, the estimate and the statistics are dropped in
turn, last the line is cut.
Numbers are written by ``stat`` and ``seconds``, which the commands' summary lines use
too, so a loss or a rate reads the same in the bar and in the summary.
"""
import io
import os
import shutil
import sys
import time

BAR_WIDTH = (8, 28)  # the narrowest and widest bar, in characters


def stat(name, value):
    """``name`` and ``value`` as the bar and the summaries write them: a rate (a name
    ending in ``/s``) as a whole number before its unit, an accuracy as a percentage, any
    other float to four decimals, anything else as it prints."""
    if isinstance(value, float):
        if name.endswith("/s"):
            return f"{value:.0f} {name}"
        if name in ("acc", "accuracy"):
            return f"{name} {value:.2%}"
        return f"{name} {value:.4f}"
    return f"{name} {value}"


def seconds(s):
    """A duration: tenths of a second below a minute, whole seconds above."""
    return f"{s:.1f} s" if s < 60 else f"{s:.0f} s"


def fit(parts, columns):
    """The line ``desc [bar] count  stats  timing`` in at most ``columns - 1`` characters.

    ``parts`` is ``(desc, fraction, count, stats, timings)``: ``stats`` the statistics'
    texts, ``timings`` the timing text from the fullest to the shortest. The bar narrows
    down to ``BAR_WIDTH[0]``; below that the next shorter timing is tried, then none, then
    the statistics are dropped from the last."""
    desc, fraction, count, stats, timings = parts
    room = max(columns - 1, 1)
    tails = [stats + [t] for t in timings] + [stats[:n] for n in range(len(stats), -1, -1)]
    for pieces in tails:
        tail = "".join("  " + p for p in pieces)
        fixed = len(desc) + len(count) + len(tail) + 4  # the bar's brackets and a space each side
        width = min(BAR_WIDTH[1], room - fixed)
        if width >= BAR_WIDTH[0]:
            break
    width = max(width, 0)
    filled = int(width * fraction)
    line = f"{desc} [{'#' * filled}{'.' * (width - filled)}] {count}{tail}" if width else f"{desc} {count}"
    return line[:room]


def _columns(stream):
    """The width of the terminal ``stream`` writes to: ``$COLUMNS`` when set (as
    ``shutil.get_terminal_size`` reads it), else the stream's own terminal (standard error
    may be one while standard output, which ``shutil`` asks, is redirected), else 80."""
    if not os.environ.get("COLUMNS"):
        try:
            return os.get_terminal_size(stream.fileno()).columns or 80
        except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
            pass
    return shutil.get_terminal_size((80, 24)).columns


class Progress:
    """A progress bar over ``total`` steps, labelled ``desc``, written to ``stream``
    (standard error by default). ``columns`` fixes the width; by default it is the
    terminal's, looked up at every redraw so a resized window is followed."""

    def __init__(self, total, desc, stream=None, columns=None):
        self.total, self.desc = total, desc
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.columns = columns
        self.start = time.perf_counter()
        self._last_draw = 0.0
        self._last_decile = -1

    def line(self, done, elapsed, **stats):
        """The text drawn after ``done`` steps and ``elapsed`` seconds."""
        rate = done / elapsed if elapsed > 0 else 0.0
        timings = [f"{seconds(elapsed)} elapsed"]
        if rate > 0 and done < self.total:
            eta = f"eta {seconds((self.total - done) / rate)}"
            timings = [f"{timings[0]}, {eta}", eta]
        columns = self.columns or _columns(self.stream)
        return fit((self.desc, min(done / max(self.total, 1), 1.0), f"{done}/{self.total}",
                    [stat(k, v) for k, v in stats.items()], timings), columns)

    def update(self, done, **stats):
        """Record that ``done`` steps are finished; ``stats`` (name=value) are shown."""
        now = time.perf_counter()
        decile = done * 10 // max(self.total, 1)
        final = done >= self.total
        if self.tty:
            if not final and now - self._last_draw < 0.1:
                return
        elif decile == self._last_decile and not final:
            return
        self._last_draw, self._last_decile = now, decile
        line = self.line(done, now - self.start, **stats)
        if self.tty:
            self.stream.write("\r" + line + "\033[K" + ("\n" if final else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
