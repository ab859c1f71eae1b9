# stagegrad on Debian, for those who prefer a container:
#   docker build -t stagegrad .
#   docker run --rm stagegrad            # the test suite (./dev test)
#   docker run --rm stagegrad ./dev journey
# The image is built by the same script a machine uses (./dev), so the two cannot drift:
# ./dev installs the system packages, the virtual environment and the oracles it needs.
FROM debian:bookworm
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        python3 python3-venv ca-certificates && rm -rf /var/lib/apt/lists/*
WORKDIR /stagegrad
COPY . .
RUN ./dev setup test
CMD ["./dev", "test"]
