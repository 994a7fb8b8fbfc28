#!/usr/bin/env bash
# kernel/setup.sh — install what the gomase notebooks need, and only what is missing:
#   1. Jupyter (notebook, nbconvert, nbclient, console, ipykernel), Chromium, the HDL tools,
#      PostgreSQL (whose server binaries mase/search's storage tests run a private server with) and
#      Optuna 3.1 (python3-optuna: the tests of the Optuna journal export and import load and write
#      journals with it) from Debian;
#   2. GoNB, goimports and gopls at the versions pinned in kernel/tools/go.mod and
#      kernel/tools/gopls/go.mod, into $(go env GOPATH)/bin, and every module of the
#      repository's go.mod into the module cache (the kernel builds offline);
#   3. the "Go (gomase)" kernelspec (kernel name: gomase) for this checkout.
# Run it as `make setup`. It is idempotent: a second run installs nothing.
# Works as root (CI, containers) or as a user with sudo (for apt-get only).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
JUPYTER=/usr/bin/jupyter
installed=()
found=()

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- 1. Debian packages
apt_packages=(jupyter-notebook jupyter-nbconvert python3-nbclient jupyter-client jupyter-console python3-ipykernel chromium verilator g++ make iverilog yosys tmux postgresql python3-optuna)

pkg_installed() {
	# Capture first: with pipefail, grep -q exiting early can fail the writer.
	local status
	status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
	[[ $status == *"ok installed"* ]]
}

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
	for p in "${apt_packages[@]}"; do
		if pkg_installed "$p"; then found+=("$p"); else missing+=("$p"); fi
	done
else
	# Not Debian: accept the programs if they are there, else say what is needed.
	[ -x "$JUPYTER" ] && command -v chromium >/dev/null 2>&1 ||
		die "no dpkg here; install Jupyter (notebook, nbconvert, nbclient, console, ipykernel) as $JUPYTER and chromium by hand"
	found+=(jupyter chromium)
fi
if [ ${#missing[@]} -gt 0 ]; then
	SUDO=()
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null 2>&1 || die "need root or sudo to apt-get install: ${missing[*]}"
		SUDO=(sudo)
	fi
	say "apt-get install ${missing[*]}"
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
	installed+=("${missing[@]}")
fi
[ -x "$JUPYTER" ] || die "$JUPYTER is missing (Debian packages: ${apt_packages[*]})"
command -v chromium >/dev/null 2>&1 || die "chromium is missing (Debian package: chromium)"
if [ ${#missing[@]} -gt 0 ]; then # a fresh install: check that the pieces run
	"$JUPYTER" nbconvert --version >/dev/null 2>&1 || die "$JUPYTER nbconvert does not run"
	"$JUPYTER" console --version >/dev/null 2>&1 || die "$JUPYTER console does not run"
fi

# ---------------------------------------------------------------- 2. Go tools
command -v go >/dev/null 2>&1 || export PATH="/usr/local/go/bin:$PATH"
command -v go >/dev/null 2>&1 || die "go is not on PATH nor in /usr/local/go/bin; install Go 1.26"
GOPATH_FIRST=$(go env GOPATH | cut -d: -f1)
GOBIN_DIR="$GOPATH_FIRST/bin"
GOROOT_BIN="$(go env GOROOT)/bin"

# pinned_version MODFILE MODULE: the version MODFILE requires of MODULE.
pinned_version() {
	awk -v m="$2" '($1 == m && $2 ~ /^v/) { print $2; exit } ($1 == "require" && $2 == m) { print $3; exit }' "$1"
}
# built_version BINARY MODULE: the version of MODULE BINARY was built from ("" if none).
built_version() {
	[ -x "$1" ] || return 0
	go version -m "$1" 2>/dev/null | awk -v m="$2" '($1 == "mod" || $1 == "dep") && $2 == m { print $3; exit }'
}

# install_tools MODDIR BINARY:MODULE...: `go install tool` in MODDIR unless every
# BINARY in GOBIN_DIR was already built from the pinned version of its MODULE.
install_tools() {
	local dir=$1 need=0 pair bin mod want have
	shift
	for pair in "$@"; do
		bin=${pair%%:*} mod=${pair#*:}
		want=$(pinned_version "$dir/go.mod" "$mod")
		[ -n "$want" ] || die "$dir/go.mod does not pin $mod"
		have=$(built_version "$GOBIN_DIR/$bin" "$mod")
		if [ "$have" = "$want" ]; then found+=("$bin@$want"); else need=1; fi
	done
	[ $need = 1 ] || return 0
	say "go install tool (in ${dir#"$ROOT"/}): $*"
	(cd "$dir" && GOBIN="$GOBIN_DIR" GOFLAGS=-mod=mod go install tool)
	for pair in "$@"; do
		bin=${pair%%:*} mod=${pair#*:}
		want=$(pinned_version "$dir/go.mod" "$mod")
		have=$(built_version "$GOBIN_DIR/$bin" "$mod")
		[ "$have" = "$want" ] || die "$GOBIN_DIR/$bin reports $mod ${have:-(no version)}, want $want"
		installed+=("$bin@$want")
	done
}

install_tools "$ROOT/kernel/tools" gonb:github.com/janpfeifer/gonb goimports:golang.org/x/tools
install_tools "$ROOT/kernel/tools/gopls" gopls:golang.org/x/tools/gopls

# The kernel builds cells with GOPROXY=off (see kernel/kernelspec): put every
# module of the repository's build list into the module cache, so a notebook can
# import any package of any module go.mod requires. It runs on a copy of
# go.mod/go.sum because `go mod download` adds hashes to go.sum; the checkout
# stays untouched. Warm, it takes a few milliseconds.
modtmp=$(mktemp -d)
cp "$ROOT/go.mod" "$modtmp/go.mod"
[ -f "$ROOT/go.sum" ] && cp "$ROOT/go.sum" "$modtmp/go.sum"
if ! (cd "$modtmp" && GOFLAGS=-mod=mod GOWORK=off go mod download all >"$modtmp/log" 2>&1); then
	say "warning: go mod download all failed; notebooks may miss modules:"
	sed 's/^/setup:   /' "$modtmp/log" | tail -5
fi
rm -rf "$modtmp"

# ---------------------------------------------------------------- 3. kernelspec
DATA_DIR=$("$JUPYTER" --data-dir)
spec_out=$(cd "$ROOT" && GOFLAGS=-mod=mod go run ./kernel/cmd/kernelspec \
	-root "$ROOT" -gonb "$GOBIN_DIR/gonb" -data-dir "$DATA_DIR" -path "$GOBIN_DIR:$GOROOT_BIN")
case $spec_out in
wrote*)
	installed+=("kernelspec:gomase")
	# Capture first: with pipefail, grep -q exiting early can kill the writer (SIGPIPE) and fail the check.
	kernels=$("$JUPYTER" kernelspec list 2>/dev/null) || kernels=""
	grep -qE '^\s+gomase\s' <<<"$kernels" ||
		die "jupyter kernelspec list does not show gomase after writing $DATA_DIR/kernels/gomase"
	;;
*) found+=("kernelspec:gomase") ;;
esac

# ---------------------------------------------------------------- summary
say "installed: ${installed[*]:-nothing}"
say "found:     ${found[*]:-nothing}"
say "kernelspec: $spec_out"
say "try:       $JUPYTER console --kernel gomase   (REPL)   |   make labs   (notebooks -> reports/)"
