"""The machine's two measured ceilings (the roofline), tracked alongside the results so a
change of machine or of BLAS shows up in the history. Running it prints the CPU's SIMD
features, once per ``asv run``."""
import sys

from stagegrad import machine, roofline


class Roofline:
    timeout = 120

    def track_fma_peak(self):
        print(f"stagegrad benchmarks on {machine.banner()}", file=sys.stderr)
        return roofline.measure_peak_gflops()["gflops"]

    track_fma_peak.unit = "GFLOP/s"

    def track_copy_bandwidth(self):
        return roofline.measure_bandwidth_gbs()["gbs"]

    track_copy_bandwidth.unit = "GB/s"
