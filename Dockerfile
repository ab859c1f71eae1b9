# stagegrad on Debian, for those who prefer a container:
#   docker build -t stagegrad .
#   docker run --rm stagegrad            # the test suite (./dev test)
#   docker run --rm stagegrad ./dev journey
#   docker build --target deploy -t stagegrad-deploy . && \
#     docker run --rm -p 8080:8080 -v "$PWD/out:/models" stagegrad-deploy /models/cnn.ckpt
#                                        # serve a checkpoint `./dev train --save` wrote (docs/deploy.md)
# The image is built by the same script a machine uses (./dev), so the two cannot drift:
# ./dev installs the system packages, the virtual environment and the oracles it needs.
FROM debian:bookworm AS base
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        python3 python3-venv ca-certificates && rm -rf /var/lib/apt/lists/*
WORKDIR /stagegrad
COPY . .
RUN ./dev setup test
CMD ["./dev", "test"]

# a checkpoint served over HTTP on port 8080 (the container's loopback would reach no one)
FROM base AS deploy
EXPOSE 8080
ENTRYPOINT ["./dev", "deploy", "--host", "0.0.0.0", "--port", "8080"]

FROM base AS test
CMD ["./dev", "test"]
