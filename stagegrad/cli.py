"""``stagegrad``: the project's command line."""
import argparse
import sys

from . import (bench_site, cuda_ladder, devices, docs, gemm_ladder, journey, profile, simd_paths, train,
               train_text)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="stagegrad", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("train", help="train a model of the zoo with any installed stage: an MLP, CNN, "
                                     "ResNet-18 or MobileNetV2 on MNIST, a GPT or LSTM on Shakespeare")
    train.add_arguments(p)
    p.set_defaults(run=train.run)
    p = sub.add_parser("sample", help="generate text from a GPT or LSTM checkpoint")
    train_text.add_sample_arguments(p)
    p.set_defaults(run=train_text.sample)
    p = sub.add_parser("journey", help="measure every installed stage against NumPy and PyTorch: "
                                       "table, JSON and plots")
    journey.add_arguments(p)
    p.set_defaults(run=journey.run)
    p = sub.add_parser("gemm-ladder", help="stage 3's GEMM one idea at a time, next to OpenBLAS: "
                                           "table, JSON and a plot")
    gemm_ladder.add_arguments(p)
    p.set_defaults(run=gemm_ladder.run)
    p = sub.add_parser("simd-paths", help="stage 3's kernels on every SIMD path and thread count, next to "
                                          "NumPy and PyTorch")
    simd_paths.add_arguments(p)
    p.set_defaults(run=simd_paths.run)
    p = sub.add_parser("devices", help="stage 4's webgpu device next to stage 3 and PyTorch on the CPU: "
                                       "per-op cost, copies, and where the device overtakes stage 3")
    devices.add_arguments(p)
    p.set_defaults(run=devices.run)
    p = sub.add_parser("cuda-ladder", help="stage 4's SGEMM tiers on an NVIDIA GPU, each checked against "
                                           "and timed next to cuBLAS and PyTorch CUDA")
    cuda_ladder.add_arguments(p)
    p.set_defaults(run=cuda_ladder.run)
    p = sub.add_parser("profile", help="where each microsecond of an MLP training step goes, per stage")
    profile.add_arguments(p)
    p.set_defaults(run=profile.run)
    p = sub.add_parser("docs", help="build the documentation site (Sphinx, warnings as errors)")
    docs.add_arguments(p)
    p.set_defaults(run=docs.run)
    p = sub.add_parser("bench-site", help="publish the asv benchmark site, self-contained so that it "
                                          "works offline")
    bench_site.add_arguments(p)
    p.set_defaults(run=bench_site.run)
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except (ValueError, RuntimeError, OSError) as e:  # OSError: a file that cannot be read or written
        print(f"stagegrad {args.command}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
