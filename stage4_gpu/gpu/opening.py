"""A driver's runtime, opened once on first use. Opening can fail (the optional package
missing, no adapter or GPU, a driver that crashes on open, the device turned off by an
environment variable); the failure is kept, so every later call reports the same reason
at once instead of trying again."""
import os
import threading

from ..device import DeviceError


class Opening:
    """The runtime ``open()`` makes, on first use. ``name`` prefixes every reason, and
    ``STAGEGRAD_<NAME>=0`` turns the device off; ``not_installed`` says what to install
    ({} is the ImportError); ``failed`` says what could not be opened."""

    def __init__(self, name, open, not_installed, failed):
        self._name, self._open, self._switch = name, open, f"STAGEGRAD_{name.upper()}"
        self._not_installed, self._failed = not_installed, failed
        self._runtime = self._failure = None
        self._lock = threading.Lock()

    @property
    def opened(self):
        """Whether the runtime has been opened."""
        return self._runtime is not None

    def runtime(self):
        """The one runtime, opened on first use; a DeviceError saying why when it cannot be."""
        if self._runtime is None:
            with self._lock:
                if self._runtime is None and self._failure is None:
                    self._failure = self._try()
        if self._failure is not None:
            raise DeviceError(self._failure)
        return self._runtime

    def _try(self):
        """Open the runtime: None, or why it cannot be opened."""
        if os.environ.get(self._switch) == "0":
            return f"{self._name}: turned off by {self._switch}=0"
        try:
            self._runtime = self._open()
        except ImportError as e:
            return f"{self._name}: " + self._not_installed.format(e)
        except DeviceError as e:
            return str(e)
        except Exception as e:  # a driver that fails to open: report it, never crash
            return f"{self._name}: {self._failed}: {type(e).__name__}: {e}"
        return None

    def is_available(self):
        """Whether the device can be opened here."""
        try:
            self.runtime()
        except DeviceError:
            return False
        return True

    def unavailable_reason(self):
        """Why ``is_available()`` is False ('' when it is True)."""
        try:
            self.runtime()
        except DeviceError as e:
            return str(e)
        return ""
