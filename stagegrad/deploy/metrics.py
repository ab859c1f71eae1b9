"""What ``GET /metrics`` reports, in Prometheus's text format: requests by route and status,
latency percentiles over the last requests, and the sizes of the batches the model ran."""
import threading
from collections import Counter, deque

WINDOW = 10000  # latencies kept for the percentiles


class Metrics:
    """Thread-safe counters of a deployment."""

    def __init__(self):
        self._lock = threading.Lock()
        self.requests = Counter()  # (route, status) -> count
        self.latencies = deque(maxlen=WINDOW)  # seconds, of answered predictions and generations
        self.batches = Counter()  # batch size -> count

    def request(self, route, status, seconds=None):
        """Count one answered request (and its latency, when it did model work)."""
        with self._lock:
            self.requests[(route, status)] += 1
            if seconds is not None:
                self.latencies.append(seconds)

    def batch(self, size):
        """Count one batch the model ran."""
        with self._lock:
            self.batches[size] += 1

    def percentile(self, q):
        """The ``q``-th percentile (0-100) of the kept latencies, in seconds (None: none yet)."""
        with self._lock:
            values = sorted(self.latencies)
        if not values:
            return None
        return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]

    def text(self, model):
        """The Prometheus exposition of everything counted."""
        lines = ["# HELP stagegrad_requests_total Requests answered, by route and status.",
                 "# TYPE stagegrad_requests_total counter"]
        with self._lock:
            requests, batches = dict(self.requests), dict(self.batches)
        for (route, status), n in sorted(requests.items()):
            lines.append(f'stagegrad_requests_total{{model="{model}",route="{route}",status="{status}"}} {n}')
        lines += ["# HELP stagegrad_latency_seconds Latency of answered model requests (last "
                  f"{WINDOW}).", "# TYPE stagegrad_latency_seconds summary"]
        for q in (50, 95, 99):
            value = self.percentile(q)
            if value is not None:
                lines.append(f'stagegrad_latency_seconds{{model="{model}",quantile="{q / 100}"}} {value:.6f}')
        lines += ["# HELP stagegrad_batch_size Instances per batch the model ran.",
                  "# TYPE stagegrad_batch_size histogram"]
        total = 0
        for size in sorted(batches):
            total += batches[size]
            lines.append(f'stagegrad_batch_size_bucket{{model="{model}",le="{size}"}} {total}')
        lines.append(f'stagegrad_batch_size_bucket{{model="{model}",le="+Inf"}} {total}')
        lines.append(f'stagegrad_batch_size_count{{model="{model}"}} {total}')
        lines.append(f'stagegrad_batch_size_sum{{model="{model}"}} {sum(s * n for s, n in batches.items())}')
        return "\n".join(lines) + "\n"
