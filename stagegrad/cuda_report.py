"""What the CUDA commands' reports share (``cuda-ladder``, ``cuda-bandwidth``): stage 4's cuda
device opened for a report, which records whether it is available and which GPU it is, and
the GPU named in the report's text."""
import time


def open_report(**fields):
    """Stage 4, a new report and the cuda device's runtime. The report holds when it was made,
    ``fields``, whether the device is ``available`` (and the ``reason`` when it is not) and no
    ``rows`` yet; where the device is available its runtime is entered and the report names
    the ``gpu`` and its compute ``capability``, else the runtime is None."""
    from . import load_stage
    sg = load_stage("4")
    report = {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **fields, "available": sg.cuda.is_available(),
              "reason": sg.cuda.unavailable_reason(), "rows": []}
    if not report["available"]:
        return sg, report, None
    from stage4_gpu.cuda.runtime import runtime
    rt = runtime()
    rt.enter()
    report["gpu"] = rt.name
    report["capability"] = list(rt.capability)
    return sg, report, rt


def gpu_named(report):
    """``NAME (compute capability X.Y)``: the GPU a report was measured on."""
    return f"{report['gpu']} (compute capability {'.'.join(map(str, report['capability']))})"
