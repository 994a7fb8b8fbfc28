# gomase in a container: Debian 12 with Go 1.26, Jupyter from Debian, GoNB and
# the "Go (gomase)" kernel, serving the lab notebooks.
#
#   docker build -t gomase .
#   docker run --rm -p 8888:8888 -v "$PWD/../shared:/shared:ro" gomase
#
# The labs read real data from /shared/data (GOMASE_DATA_DIR); mount the
# shared/ folder that sits beside a checkout there.
FROM golang:1.26-bookworm

ENV GOEXPERIMENT=simd \
    GOMLX_BACKEND=go \
    GOMASE_DATA_DIR=/shared/data \
    PATH=/root/go/bin:/usr/local/go/bin:$PATH

WORKDIR /gomase
COPY . .

# make setup installs Jupyter and Chromium (apt), GoNB/goimports/gopls
# (pinned, from the Go module proxy) and the kernelspec for /gomase.
RUN make setup && make build && go build ./...

EXPOSE 8888
CMD ["jupyter", "notebook", "--ip=0.0.0.0", "--port=8888", "--no-browser", "--allow-root", "--notebook-dir=/gomase/notebooks"]
