# gomase — the two commands users run are `make labs` and `make test`.
# Every Go build here uses GOEXPERIMENT=simd (the Go backend's AVX2/AVX-512
# matmul kernels); a plain build works too, only slower.
export GOEXPERIMENT := simd
export GOMLX_BACKEND ?= go

GO ?= go
REPORTS ?= reports

.PHONY: setup labs test vet unit fuzz notebooks build fmt lint-docker

## setup: install Jupyter (Debian), GoNB/goimports/gopls (pinned) and the "Go (gomase)" kernelspec; idempotent.
setup:
	bash kernel/setup.sh

## build: compile the mase CLI into bin/mase.
build:
	$(GO) build -o bin/mase ./cmd/mase

## labs: set up, then execute every notebook and write HTML reports to $(REPORTS)/ (index.html is updated as each finishes).
##       QUICK=1 runs them in quick mode (about 15 minutes); NOTEBOOKS="notebooks/lab0_tutorial1.ipynb ..." picks some.
QUICK ?=
NOTEBOOKS ?=
labs: setup build
	bin/mase labs $(if $(QUICK),--quick) --check --screenshots $(REPORTS)/screenshots --out $(REPORTS) $(NOTEBOOKS)

vet:
	$(GO) vet ./...

## unit: every Go test (a package may take minutes on a cold build cache: the kernel tests compile GoMLX in GoNB); browser-driven tests leave their screenshots in $(ARTEFACTS).
ARTEFACTS ?= $(CURDIR)/$(REPORTS)/artefacts
unit:
	GOMASE_ARTEFACTS=$(ARTEFACTS) $(GO) test -timeout 25m ./...

## fuzz: run each fuzz target for a bounded number of inputs ($(FUZZTIME) each; an iteration count, not a duration, so a loaded machine cannot trip the fuzzer's deadline).
FUZZTIME ?= 30000x
FUZZ_TARGETS := ./mase/quant:FuzzQuantizers ./mase/quant:FuzzParseLinearConfig \
	./mase/passes:FuzzQuantizeArgsFromJSON ./mase/passes:FuzzPruneArgsFromJSON
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name ($$pkg, $(FUZZTIME))"; \
		$(GO) test $$pkg -run NONE -fuzz "^$$name\$$" -fuzztime $(FUZZTIME); \
	done

## notebooks: execute every notebook in quick mode (what CI runs), check every report and the index in headless Chromium, screenshot the index and the first report.
notebooks: build
	bin/mase labs --quick --check --screenshots $(REPORTS)/quick/screenshots --out $(REPORTS)/quick

## lint-docker: lint the Dockerfile with dockerfile-utils (npm, pinned; installed under .cache/npm). No Docker engine is needed.
DOCKERFILE_UTILS ?= dockerfile-utils@0.16.3
lint-docker:
	@command -v npm >/dev/null 2>&1 || { echo "lint-docker: npm not found; installing Debian's"; apt-get update -qq && apt-get install -y -qq npm; }
	npm install --silent --no-audit --no-fund --prefix .cache/npm $(DOCKERFILE_UTILS)
	.cache/npm/node_modules/.bin/dockerfile-utils lint Dockerfile

## test: set up, vet, lint the Dockerfile, unit tests, bounded fuzzing, then every notebook in quick mode.
test: setup vet lint-docker unit fuzz notebooks

fmt:
	gofmt -w $$(git ls-files '*.go')
