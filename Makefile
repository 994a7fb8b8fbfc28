# gomase — the two commands users run are `make labs` and `make test`.
# Every Go build here uses GOEXPERIMENT=simd (the Go backend's AVX2/AVX-512
# matmul kernels); a plain build works too, only slower.
export GOEXPERIMENT := simd
# BACKEND (or GOMLX_BACKEND) picks the compute backend of the labs and the tests: go (default) or
# xla:cuda / xla:PATH on a GPU machine (docs/GPU.md). The notebooks' kernels inherit it.
BACKEND ?=
ifneq ($(BACKEND),)
export GOMLX_BACKEND := $(BACKEND)
endif
export GOMLX_BACKEND ?= go

GO ?= go
REPORTS ?= reports

.PHONY: ptx setup labs test vet unit fuzz notebooks build fmt lint-docker gpu-bundle

## setup: install Jupyter, Chromium, the HDL tools, PostgreSQL and Optuna 3.1 (Debian; kernel/setup.sh's apt_packages), GoNB/goimports/gopls
##        (pinned) and the "Go (gomase)" kernelspec; idempotent. The search storage tests run a private PostgreSQL server from Debian's
##        binaries; the Optuna journal export/import tests run Debian's python3-optuna.
setup:
	bash kernel/setup.sh

## build: compile the mase CLI into bin/mase.
build:
	$(GO) build -o bin/mase ./cmd/mase

## labs: set up, then execute every notebook and write HTML reports to $(REPORTS)/ (index.html is updated as each finishes).
##       The scale is standard on the CPU (within an hour on 2 cores) and full, the labs' own, with a GPU BACKEND;
##       QUICK=1 (CI's, minutes per notebook), FULL=1 or SCALE=quick|standard|full choose it;
##       NOTEBOOKS="notebooks/lab0_tutorial1.ipynb ..." picks some.
QUICK ?=
FULL ?=
SCALE ?=
NOTEBOOKS ?=
labs: setup build
	bin/mase labs $(if $(SCALE),--scale $(SCALE)) $(if $(QUICK),--quick) $(if $(FULL),--full) --check --screenshots $(REPORTS)/screenshots --out $(REPORTS) $(NOTEBOOKS)

vet:
	$(GO) vet ./...

## unit: every Go test (a package may take minutes on a cold build cache: the kernel tests compile GoMLX in GoNB); browser-driven tests leave their screenshots in $(ARTEFACTS).
ARTEFACTS ?= $(CURDIR)/$(REPORTS)/artefacts
unit:
	GOMASE_ARTEFACTS=$(ARTEFACTS) $(GO) test -timeout 25m ./...

## fuzz: run each fuzz target for a bounded number of inputs ($(FUZZTIME) each; an iteration count, not a duration, so a loaded machine cannot trip the fuzzer's deadline).
FUZZTIME ?= 30000x
FUZZ_TARGETS := ./mase/quant:FuzzQuantizers ./mase/quant:FuzzParseLinearConfig \
	./mase/passes:FuzzQuantizeArgsFromJSON ./mase/passes:FuzzPruneArgsFromJSON \
	./mase/search/storages:FuzzJournalRead \
	./mase/torchbin:FuzzParse ./mase/torchbin:FuzzPickle ./mase/pretrained:FuzzParseConfig \
	./mase/checkpoint:FuzzImportGraph ./rtl/emit:FuzzDesignJSON ./kernel/runner:FuzzLoadNotebook \
	./mase/search/optuna:FuzzOptunaImport ./mase/limits:FuzzCgroupFiles ./mase/data:FuzzReadSST2TSV ./mase/data:FuzzReadIMDbTar
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

## ptx: regenerate the PTX of kernels/cuda from its CUDA sources with clang-14 (installed with apt when
##      missing; no CUDA toolkit needed). The PTX is committed; a test fails when it is stale.
ptx:
	command -v clang-14 >/dev/null 2>&1 || { apt-get update && apt-get install -y clang-14; }
	sh kernels/cuda/gen_ptx.sh

## gpu-bundle: bin/gpu-bundle/ for a GPU machine: bin/mase and the training, backend and CUDA-kernel test binaries
##             with the XLA backend (cgo), xz-compressed, the data the check reads (GPU_DATA: SST-2 and the tokenizer;
##             add imdb for the IMDb epoch), and kernel/gpu's check scripts. Run there as
##             `bash kernel/gpu/check.sh bin/gpu-bundle` (docs/GPU.md). Prints the bundle's size and the tree's, and
##             fails when the bundle passes GPU_BUNDLE_MAX_MIB (a GPU machine takes 64 MiB with the tree).
##             Needs a C compiler and xz.
GPU_BUNDLE ?= bin/gpu-bundle
GPU_DATA ?= bert-base-uncased sst2
GPU_BUNDLE_MAX_MIB ?= 40
DATA_DIR ?= $(CURDIR)/../shared/data
gpu-bundle:
	rm -rf $(GPU_BUNDLE) && mkdir -p $(GPU_BUNDLE)/data
	CGO_ENABLED=1 $(GO) build -ldflags "-s -w" -o $(GPU_BUNDLE)/mase ./cmd/mase
	CGO_ENABLED=1 $(GO) test -c -ldflags "-s -w" -o $(GPU_BUNDLE)/train.test ./mase/train
	CGO_ENABLED=1 $(GO) test -c -ldflags "-s -w" -o $(GPU_BUNDLE)/backend.test ./mase/backend
	CGO_ENABLED=1 $(GO) test -c -ldflags "-s -w" -o $(GPU_BUNDLE)/cuda.test ./kernels/cuda
	xz -T2 -f $(GPU_BUNDLE)/mase $(GPU_BUNDLE)/train.test $(GPU_BUNDLE)/backend.test $(GPU_BUNDLE)/cuda.test
	for d in $(GPU_DATA); do cp -r $(DATA_DIR)/$$d $(GPU_BUNDLE)/data/ || exit 1; done
	-cp ../shared/bench/gpu_peer.py $(GPU_BUNDLE)/
	@bundle=$$(du -sm $(GPU_BUNDLE) | cut -f1); tree=$$(git ls-files -z | du -cm --files0-from=- | tail -1 | cut -f1); \
	 echo "gpu-bundle: $(GPU_BUNDLE) $${bundle} MiB + the tree's tracked files $${tree} MiB = $$((bundle + tree)) MiB (a GPU machine takes 64)"; \
	 if [ "$$bundle" -gt $(GPU_BUNDLE_MAX_MIB) ]; then echo "gpu-bundle: $${bundle} MiB is above GPU_BUNDLE_MAX_MIB=$(GPU_BUNDLE_MAX_MIB): leave data out of GPU_DATA" >&2; exit 1; fi
