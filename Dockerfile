# The offload workshop, anywhere (notebooks/README.md, "Run it anywhere"): Debian 12, the kernel
# built in-tree by scripts/setup (the README's quick start: apt and pip packages, PoCL and Intel's
# OpenCL CPU runtime, configure, make), JupyterLab, and the notebooks. No GPU needed.
#
#   docker build -t offload-workshop .
#   docker run --rm -p 8888:8888 offload-workshop        # open the http://127.0.0.1:8888/lab?token=... link
#
# The build runs what CI runs on every change (.ci/run): scripts/setup, scripts/workshop check,
# and the tour (scripts/quickstart = setup + tour) on the kernel just built.
FROM debian:12

ENV DEBIAN_FRONTEND=noninteractive \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    PIP_NO_CACHE_DIR=1 \
    LANG=C.UTF-8

# scripts/setup starts from a python3 with pip (Debian's: it adds --break-system-packages).
RUN apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends python3 python3-pip ca-certificates \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/offload
COPY . .
RUN bash scripts/quickstart \
    && python3 scripts/workshop check \
    && rm -rf /var/lib/apt/lists/* /root/.cache

# The in-tree kernelspec "Python 3 (offload)" (written by make), beside ipykernel's.
ENV JUPYTER_PATH=/opt/offload/share/jupyter
EXPOSE 8888
WORKDIR /opt/offload/notebooks
CMD ["jupyter", "lab", "--ip=0.0.0.0", "--port=8888", "--no-browser", "--allow-root"]
