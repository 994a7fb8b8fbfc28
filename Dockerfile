# gomase in a container: Debian 12 (bookworm) with Go 1.26, Jupyter, GoNB, Chromium,
# Verilator, Icarus Verilog and Yosys, set up by the same script as `make setup`
# (`make setup` → kernel/setup.sh, the one source of truth), serving the lab notebooks on port 8888
# with the "Go (gomase)" kernel as the default.
#
#   docker build -t gomase .
#   docker run --rm -p 8888:8888 -v /path/to/shared/data:/opt/shared/data gomase
#
# The labs read their data from /opt/shared/data (GOMASE_DATA_DIR); see docs/data.md.
FROM golang:1.26.8-bookworm

ENV DEBIAN_FRONTEND=noninteractive \
    GOEXPERIMENT=simd \
    GOMLX_BACKEND=go \
    GOMASE_DATA_DIR=/opt/shared/data

WORKDIR /opt/gomase
COPY . .

# make setup (kernel/setup.sh): Debian packages, GoNB/goimports/gopls, the module
# cache and the kernelspec for /opt/gomase.
RUN make setup \
    && make build \
    && rm -rf /var/lib/apt/lists/*

EXPOSE 8888
CMD ["jupyter", "notebook", "--ip=0.0.0.0", "--port=8888", "--no-browser", "--allow-root", \
     "--MultiKernelManager.default_kernel_name=gomase", "--notebook-dir=/opt/gomase/notebooks"]
