// Package kernelspec writes and reads the Jupyter kernelspec of the gomase
// kernel: GoNB started with a go.work that uses this repository, so notebooks
// import the working copy's packages, and with the environment every gomase
// build needs (GOEXPERIMENT=simd, GOMASE_ROOT, an empty GOFLAGS since
// workspace builds reject -mod=mod, GOPROXY=off so GoNB's automatic `go get`
// cannot fail on the network, and a PATH with the Go tools). GOMLX_BACKEND
// is not set: the kernel takes the one of whoever starts Jupyter (unset:
// gomase's Go backend), so `GOMLX_BACKEND=xla:cuda jupyter notebook` or
// `make labs BACKEND=xla:cuda` runs the notebooks on a GPU.
//
// A kernelspec is the small JSON file `<jupyter data dir>/kernels/<name>/kernel.json`
// that Jupyter reads to start a kernel; see
// https://jupyter-client.readthedocs.io/en/latest/kernels.html#kernel-specs.
package kernelspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Name is the kernel name notebooks and `jupyter console --kernel` use.
const Name = "gomase"

// DisplayName is the name Jupyter shows in its kernel menus.
const DisplayName = "Go (gomase)"

// Spec is the content of a kernel.json file.
type Spec struct {
	// Argv starts the kernel; Jupyter replaces {connection_file}.
	Argv []string `json:"argv"`
	// DisplayName is shown in Jupyter's menus.
	DisplayName string `json:"display_name"`
	// Language is the notebook language ("go").
	Language string `json:"language"`
	// InterruptMode is "message": GoNB handles interrupt_request messages.
	InterruptMode string `json:"interrupt_mode"`
	// Env is added to the kernel's environment. jupyter_client substitutes
	// ${VAR} from the environment of the process that starts the kernel.
	Env map[string]string `json:"env"`
}

// Options are the machine-specific facts a Spec is built from.
type Options struct {
	// Root is the absolute path of the gomase repository (the directory of
	// its go.mod); notebooks get a go.work that uses it.
	Root string
	// GoNB is the absolute path of the installed gonb binary.
	GoNB string
	// PathDirs are prepended to the kernel's PATH (GOPATH/bin with gonb,
	// goimports and gopls; GOROOT/bin with go).
	PathDirs []string
	// LogFile, when set, receives GoNB's own log (klog) instead of the
	// kernel's stderr, which `jupyter console` prints into the REPL. Only
	// fatal messages still go to stderr. The file is appended to and
	// restarted when it reaches 10 MB.
	LogFile string
}

// New returns the gomase kernelspec for opts. It fails when a path is
// missing or relative, since Jupyter starts kernels from arbitrary
// directories.
func New(opts Options) (Spec, error) {
	if opts.Root == "" || !filepath.IsAbs(opts.Root) {
		return Spec{}, fmt.Errorf("kernelspec: repository root %q must be an absolute path", opts.Root)
	}
	if opts.GoNB == "" || !filepath.IsAbs(opts.GoNB) {
		return Spec{}, fmt.Errorf("kernelspec: gonb binary %q must be an absolute path", opts.GoNB)
	}
	if strings.Contains(opts.Root, ",") {
		return Spec{}, fmt.Errorf("kernelspec: repository root %q contains a comma, which GoNB's -go_work flag uses as a separator; clone the repository into a path without commas", opts.Root)
	}
	for _, d := range opts.PathDirs {
		if !filepath.IsAbs(d) {
			return Spec{}, fmt.Errorf("kernelspec: PATH entry %q must be an absolute path", d)
		}
	}
	if opts.LogFile != "" && !filepath.IsAbs(opts.LogFile) {
		return Spec{}, fmt.Errorf("kernelspec: log file %q must be an absolute path", opts.LogFile)
	}
	root := filepath.Clean(opts.Root)
	// --raw_error: GoNB reports compile errors as a plain-text error output
	// (cell line, code context and message) instead of an HTML display whose
	// error output only says "exit status 1". `jupyter console` cannot show
	// HTML, and the headless runner reads the text; notebooks show it too.
	argv := []string{opts.GoNB, "--kernel", "{connection_file}", "--go_work=" + root, "--raw_error"}
	if opts.LogFile != "" {
		argv = append(argv, "--logtostderr=false", "--log_file="+opts.LogFile,
			"--log_file_max_size=10", "--stderrthreshold=FATAL")
	}
	path := strings.Join(append(append([]string{}, opts.PathDirs...), "${PATH}"), string(os.PathListSeparator))
	return Spec{
		Argv:          argv,
		DisplayName:   DisplayName,
		Language:      "go",
		InterruptMode: "message",
		Env: map[string]string{
			"GOEXPERIMENT": "simd",
			"GOMASE_ROOT":  root,
			// GoNB builds cells in workspace mode (go.work), where the go
			// command refuses -mod=mod ("-mod may only be set to readonly or
			// vendor when in workspace mode"); clear what the Makefile and
			// CI export.
			"GOFLAGS": "",
			// GoNB runs `go get` before every build. For a notebook that
			// imports a package of a required module (gonbui, gomlx) it asks
			// the proxy for module versions, which our proxy refuses (403)
			// and the cell fails. Offline, `go get` is a no-op and builds
			// use the module cache, which setup fills for the whole
			// repository; a module go.mod does not require fails clearly
			// ("module lookup disabled by GOPROXY=off"): add it to go.mod.
			"GOPROXY": "off",
			"PATH":    path,
		},
	}, nil
}

// LogFile returns where setup points GoNB's log: gonb.log in the kernelspec
// directory under dataDir.
func LogFile(dataDir string) string {
	return filepath.Join(Dir(dataDir), "gonb.log")
}

// Dir returns the directory of the gomase kernelspec under a Jupyter data
// directory (the output of `jupyter --data-dir`).
func Dir(dataDir string) string {
	return filepath.Join(dataDir, "kernels", Name)
}

// Marshal returns the kernel.json bytes of s: indented, keys sorted, with a
// trailing newline, so equal specs give equal bytes.
func (s Spec) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write stores s as kernel.json in Dir(dataDir), unless the file already
// holds exactly that content. It reports whether it wrote the file.
func Write(dataDir string, s Spec) (changed bool, err error) {
	if dataDir == "" {
		return false, errors.New("kernelspec: empty Jupyter data directory (expected the output of `jupyter --data-dir`)")
	}
	want, err := s.Marshal()
	if err != nil {
		return false, fmt.Errorf("kernelspec: encoding kernel.json: %w", err)
	}
	dir := Dir(dataDir)
	file := filepath.Join(dir, "kernel.json")
	if have, err := os.ReadFile(file); err == nil && bytes.Equal(have, want) {
		return false, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("kernelspec: %w", err)
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, want, 0o644); err != nil {
		return false, fmt.Errorf("kernelspec: %w", err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return false, fmt.Errorf("kernelspec: %w", err)
	}
	return true, nil
}

// Read parses the kernel.json in dir (a kernelspec directory, as listed by
// `jupyter kernelspec list`).
func Read(dir string) (Spec, error) {
	var s Spec
	data, err := os.ReadFile(filepath.Join(dir, "kernel.json"))
	if err != nil {
		return s, fmt.Errorf("kernelspec: %w", err)
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("kernelspec: %s: %w", filepath.Join(dir, "kernel.json"), err)
	}
	return s, nil
}

// GoWork returns the value of the --go_work flag in s's argv, or "" when
// there is none.
func (s Spec) GoWork() string {
	for i, a := range s.Argv {
		for _, prefix := range []string{"--go_work=", "-go_work="} {
			if v, ok := strings.CutPrefix(a, prefix); ok {
				return v
			}
		}
		if (a == "--go_work" || a == "-go_work") && i+1 < len(s.Argv) {
			return s.Argv[i+1]
		}
	}
	return ""
}
