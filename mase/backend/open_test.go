package backend

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		in     string
		want   Spec
		isPath bool
		str    string
	}{
		{"go", Spec{Backend: "go"}, false, "go"},
		{" go ", Spec{Backend: "go"}, false, "go"},
		{"go:", Spec{Backend: "go"}, false, "go"},
		{"go:ops_sequential", Spec{Backend: "go", Options: "ops_sequential"}, false, "go:ops_sequential"},
		{"go:parallelism=-1", Spec{Backend: "go", Options: "parallelism=-1"}, false, "go:parallelism=-1"},
		{"xla:cuda", Spec{Backend: "xla", Plugin: "cuda"}, false, "xla:cuda"},
		{"xla:cuda,memory_fraction=0.5,preallocate", Spec{Backend: "xla", Plugin: "cuda", PluginOptions: "memory_fraction=0.5,preallocate"}, false, "xla:cuda,memory_fraction=0.5,preallocate"},
		{"xla:/opt/jax_plugins/xla_cuda12/xla_cuda_plugin.so", Spec{Backend: "xla", Plugin: "/opt/jax_plugins/xla_cuda12/xla_cuda_plugin.so"}, true, "xla:/opt/jax_plugins/xla_cuda12/xla_cuda_plugin.so"},
		{"xla:/x/pjrt_c_api_cuda_plugin.so,notf32", Spec{Backend: "xla", Plugin: "/x/pjrt_c_api_cuda_plugin.so", PluginOptions: "notf32"}, true, "xla:/x/pjrt_c_api_cuda_plugin.so,notf32"},
		{"xla:./plugin.so", Spec{Backend: "xla", Plugin: "./plugin.so"}, true, "xla:./plugin.so"},
		{"xla:plugin.so", Spec{Backend: "xla", Plugin: "plugin.so"}, true, "xla:plugin.so"},
	} {
		got, err := ParseSpec(tc.in)
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want || got.IsPath() != tc.isPath || got.String() != tc.str {
			t.Errorf("ParseSpec(%q) = %+v (IsPath %v, String %q); want %+v, %v, %q", tc.in, got, got.IsPath(), got.String(), tc.want, tc.isPath, tc.str)
		}
		if again, err := ParseSpec(got.String()); err != nil || again != got {
			t.Errorf("ParseSpec(%q) round trip: %+v, %v", got.String(), again, err)
		}
	}
}

func TestParseSpecErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "empty backend"},
		{"nope", `unknown backend "nope"`},
		{"stablehlo:cuda", `unknown backend "stablehlo"`},
		{"xla", "xla needs a plugin"},
		{"xla:", "xla needs a plugin"},
		{"xla:,preallocate", "xla needs a plugin"},
		{"xla:cpu", "xla:cpu is not offered"},
		{"xla:gpu", `unknown xla plugin "gpu"`},
		{"xla:tpu", `unknown xla plugin "tpu"`},
	} {
		_, err := ParseSpec(tc.in)
		if err == nil {
			t.Errorf("ParseSpec(%q): no error", tc.in)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "allowed: "+Allowed) || strings.Contains(msg, "\n") {
			t.Errorf("ParseSpec(%q): %q; want one line with %q and the allowed forms", tc.in, msg, tc.want)
		}
	}
}

// writeFile creates a file (and its directories) under dir.
func writeFile(t *testing.T, path string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("not a shared library"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// env is a fake environment.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestCUDASearchFindsJAXPlugin(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home", "user")
	venv := filepath.Join(root, "srv", "venv")
	// A virtual environment on PATH (not activated), laid out as pip
	// installs jax[cuda12]; and a go-xla install that must lose to it.
	writeFile(t, filepath.Join(venv, "bin", "python3"))
	want := writeFile(t, filepath.Join(venv, "lib", "python3.11", "site-packages", "jax_plugins", "xla_cuda12", "xla_cuda_plugin.so"))
	writeFile(t, filepath.Join(root, "usr", "local", "lib", "go-xla", "nvidia", "pjrt_c_api_cuda_plugin.so"))
	os.MkdirAll(filepath.Join(root, "usr", "bin"), 0o755) // on PATH, no python

	e := map[string]string{"PATH": filepath.Join(root, "usr", "bin") + ":" + filepath.Join(venv, "bin")}
	s := NewCUDASearch(root, home, env(e))
	got, err := s.Find()
	if err != nil || got != want {
		t.Fatalf("Find() = %q, %v; want %q\nglobs %q", got, err, want, s.Globs)
	}
	if !IsJAXPluginPath(got) {
		t.Errorf("IsJAXPluginPath(%q) false", got)
	}

	// Without the venv on PATH: the system site-packages, then go-xla's directory.
	sys := writeFile(t, filepath.Join(root, "usr", "local", "lib", "python3.12", "dist-packages", "jax_plugins", "xla_cuda13", "xla_cuda_plugin.so"))
	if got, err := NewCUDASearch(root, home, env(nil)).Find(); err != nil || got != sys {
		t.Errorf("system site-packages: Find() = %q, %v; want %q", got, err, sys)
	}
	os.Remove(sys)
	goxla := filepath.Join(root, "usr", "local", "lib", "go-xla", "nvidia", "pjrt_c_api_cuda_plugin.so")
	if got, err := NewCUDASearch(root, home, env(nil)).Find(); err != nil || got != goxla {
		t.Errorf("go-xla directory: Find() = %q, %v; want %q", got, err, goxla)
	}
	if IsJAXPluginPath(goxla) {
		t.Errorf("IsJAXPluginPath(%q) true", goxla)
	}

	// VIRTUAL_ENV, CONDA_PREFIX, PYTHONPATH and ~/.local are searched too.
	for name, vars := range map[string]map[string]string{
		"VIRTUAL_ENV":  {"VIRTUAL_ENV": filepath.Join(root, "a")},
		"CONDA_PREFIX": {"CONDA_PREFIX": filepath.Join(root, "a")},
		"PYTHONPATH":   {"PYTHONPATH": filepath.Join(root, "x") + ":" + filepath.Join(root, "a", "lib", "python3.10", "site-packages")},
	} {
		p := writeFile(t, filepath.Join(root, "a", "lib", "python3.10", "site-packages", "jax_plugins", "xla_cuda12", "xla_cuda_plugin.so"))
		if got, err := NewCUDASearch(root, home, env(vars)).Find(); err != nil || got != p {
			t.Errorf("%s: Find() = %q, %v; want %q", name, got, err, p)
		}
		os.RemoveAll(filepath.Join(root, "a"))
	}
	user := writeFile(t, filepath.Join(home, ".local", "lib", "python3.11", "site-packages", "jax_plugins", "xla_cuda12", "xla_cuda_plugin.so"))
	if got, err := NewCUDASearch(root, home, env(nil)).Find(); err != nil || got != user {
		t.Errorf("~/.local: Find() = %q, %v; want %q", got, err, user)
	}

	// PJRT_PLUGIN_LIBRARY_PATH replaces go-xla's default directories.
	os.Remove(user)
	only := filepath.Join(root, "only")
	if _, err := NewCUDASearch(root, home, env(map[string]string{"PJRT_PLUGIN_LIBRARY_PATH": only})).Find(); err == nil {
		t.Error("PJRT_PLUGIN_LIBRARY_PATH: found a plugin outside it")
	}
	p := writeFile(t, filepath.Join(only, "pjrt_c_api_cuda_plugin.so"))
	if got, err := NewCUDASearch(root, home, env(map[string]string{"PJRT_PLUGIN_LIBRARY_PATH": only})).Find(); err != nil || got != p {
		t.Errorf("PJRT_PLUGIN_LIBRARY_PATH: Find() = %q, %v; want %q", got, err, p)
	}
}

func TestCUDASearchExplicit(t *testing.T) {
	root := t.TempDir()
	// Found by the search, but GOMASE_CUDA_PLUGIN wins.
	writeFile(t, filepath.Join(root, "usr", "local", "lib", "go-xla", "pjrt_c_api_cuda_plugin.so"))
	mine := writeFile(t, filepath.Join(root, "mine", "plugin.so"))
	if got, err := NewCUDASearch(root, "", env(map[string]string{CUDAPluginEnv: mine})).Find(); err != nil || got != mine {
		t.Errorf("Find() = %q, %v; want %q", got, err, mine)
	}
	// Set but wrong: an error, not a fall-back to the search.
	for _, bad := range []string{filepath.Join(root, "missing.so"), filepath.Join(root, "mine")} {
		_, err := NewCUDASearch(root, "", env(map[string]string{CUDAPluginEnv: bad})).Find()
		if err == nil || !strings.Contains(err.Error(), CUDAPluginEnv) || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s=%s: %v", CUDAPluginEnv, bad, err)
		}
	}
}

func TestCUDASearchNothingFound(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	// A directory named like the plugin is not a plugin.
	os.MkdirAll(filepath.Join(root, "usr", "local", "lib", "go-xla", "pjrt_c_api_cuda_plugin.so"), 0o755)
	s := NewCUDASearch(root, home, env(map[string]string{"VIRTUAL_ENV": "/venv[1]", "LD_LIBRARY_PATH": "relative:/opt/lib"}))
	_, err := s.Find()
	if err == nil {
		t.Fatal("found a plugin in an empty tree")
	}
	msg := err.Error()
	for _, want := range []string{
		"no CUDA PJRT plugin found", CUDAPluginEnv + " is unset",
		`/venv\[1]/lib/python3*/site-packages/jax_plugins/xla_cuda*/xla_cuda_plugin.so`,
		filepath.Join(home, ".local/lib/python3*/site-packages/jax_plugins/xla_cuda*/xla_cuda_plugin.so"),
		filepath.Join(root, "usr/local/lib/python3*/site-packages/jax_plugins/xla_cuda*/xla_cuda_plugin.so"),
		filepath.Join(root, "usr/lib/python3/dist-packages/jax_plugins/xla_cuda*/xla_cuda_plugin.so"),
		filepath.Join(root, "opt/conda/lib/python3*/site-packages/jax_plugins/xla_cuda*/xla_cuda_plugin.so"),
		filepath.Join(home, ".local/lib/go-xla/pjrt_c_api_cuda_plugin.so"),
		filepath.Join(root, "usr/local/lib/go-xla/nvidia/pjrt_c_api_cuda_plugin.so"),
		"/opt/lib/pjrt_c_api_cuda_plugin.so",
		`pip install "jax[cuda12]"`, "xla:/path/to/xla_cuda_plugin.so",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "relative") || strings.Contains(msg, "\n") {
		t.Errorf("error lists a relative path or spans lines:\n%s", msg)
	}
	// The JAX locations come before go-xla's.
	if strings.Index(msg, "jax_plugins") > strings.Index(msg, "go-xla") {
		t.Errorf("search order: go-xla's directories before JAX's:\n%s", msg)
	}
}

func TestCheckPluginFile(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, filepath.Join(dir, "p.so"))
	if got, err := CheckPluginFile(f); err != nil || got != f {
		t.Errorf("CheckPluginFile(%q) = %q, %v", f, got, err)
	}
	t.Chdir(dir)
	if got, err := CheckPluginFile("p.so"); err != nil || got != f {
		t.Errorf("relative: CheckPluginFile = %q, %v; want %q", got, err, f)
	}
	for path, want := range map[string]string{filepath.Join(dir, "nope.so"): "no such file", dir: "is a directory"} {
		if _, err := CheckPluginFile(path); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("CheckPluginFile(%q): %v; want %q", path, err, want)
		}
	}
}

func TestOpenGo(t *testing.T) {
	for _, spec := range []string{"go", "go:ops_sequential"} {
		b, err := Open(spec)
		if err != nil {
			t.Fatalf("Open(%q): %v", spec, err)
		}
		if b == nil || b.Name() == "" {
			t.Errorf("Open(%q) = %v", spec, b)
		}
		b.Finalize()
	}
	if _, err := Open("go:no_such_option"); err == nil || !strings.Contains(err.Error(), "no_such_option") {
		t.Errorf(`Open("go:no_such_option"): %v`, err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	fake := writeFile(t, filepath.Join(dir, "fake_plugin.so"))
	t.Setenv(CUDAPluginEnv, filepath.Join(dir, "absent.so"))
	for spec, want := range map[string]string{
		"nope":                       "allowed: " + Allowed,
		"xla:cpu":                    "xla:cpu is not offered",
		"xla:" + dir + "/missing.so": "no such file",
		"xla:" + dir:                 "is a directory",
		"xla:cuda":                   CUDAPluginEnv,
		// A file that is no shared library: loading fails with an error.
		"xla:" + fake: fake,
	} {
		if !XLAAvailable && strings.HasPrefix(spec, "xla:") && spec != "xla:cpu" {
			want = "no XLA backend"
		}
		b, err := Open(spec)
		if err == nil || b != nil {
			t.Errorf("Open(%q) = %v, %v; want an error", spec, b, err)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q): %q; want %q in it", spec, err, want)
		}
		t.Logf("Open(%q): %v", spec, err)
	}
}

// TestOpenNotAPlugin loads a real shared library that is no PJRT plugin:
// dlopen succeeds, the GetPjrtApi symbol is missing, Open says so.
func TestOpenNotAPlugin(t *testing.T) {
	if !XLAAvailable {
		t.Skip("no XLA backend in this build")
	}
	var lib string
	for _, p := range []string{"/lib/x86_64-linux-gnu/libm.so.6", "/lib/aarch64-linux-gnu/libm.so.6", "/usr/lib64/libm.so.6", "/lib64/libm.so.6"} {
		if isFile(p) {
			lib = p
			break
		}
	}
	if lib == "" {
		t.Skip("no libm.so.6 found")
	}
	b, err := Open("xla:" + lib)
	if err == nil || b != nil || !strings.Contains(err.Error(), "GetPjrtApi") {
		t.Errorf("Open(xla:%s) = %v, %v; want an error about GetPjrtApi", lib, b, err)
	}
}

// TestOpenNilPlugin loads a shared library whose GetPjrtApi returns NULL:
// go-xla v0.4.1 then dereferences a nil plugin, and Open must turn the
// panic into an error. It needs a C compiler to build the library.
func TestOpenNilPlugin(t *testing.T) {
	if !XLAAvailable {
		t.Skip("no XLA backend in this build")
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	dir := t.TempDir()
	src, lib := filepath.Join(dir, "nil.c"), filepath.Join(dir, "nil_plugin.so")
	if err := os.WriteFile(src, []byte("void *GetPjrtApi(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Skipf("cannot build a shared library: %v\n%s", err, out)
	}
	b, err := Open("xla:" + lib)
	if err == nil || b != nil || !strings.Contains(err.Error(), "panicked") {
		t.Errorf("Open(xla:%s) = %v, %v; want the panic as an error", lib, b, err)
	}
}

func TestDefaultSpec(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "")
	if got := DefaultSpec(); got != "go" {
		t.Errorf("DefaultSpec() = %q with GOMLX_BACKEND empty", got)
	}
	t.Setenv("GOMLX_BACKEND", "xla:cuda")
	if got := DefaultSpec(); got != "xla:cuda" {
		t.Errorf("DefaultSpec() = %q", got)
	}
}
