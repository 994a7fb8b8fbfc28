package kernelspec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNewAndWrite(t *testing.T) {
	data := t.TempDir()
	s, err := New(Options{Root: "/src/gomase/", GoNB: "/go/bin/gonb", PathDirs: []string{"/go/bin", "/usr/local/go/bin"}, LogFile: LogFile(data)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(s.Argv, " "), "--log_file="+filepath.Join(data, "kernels", "gomase", "gonb.log")) {
		t.Errorf("argv %q does not send GoNB's log to the kernelspec directory", s.Argv)
	}
	if !strings.Contains(strings.Join(s.Argv, " "), " --raw_error") {
		t.Errorf("argv %q lacks --raw_error (text compile errors for the console and the runner)", s.Argv)
	}
	if got, want := s.GoWork(), "/src/gomase"; got != want {
		t.Errorf("GoWork() = %q, want %q", got, want)
	}
	if s.Env["GOEXPERIMENT"] != "simd" || s.Env["GOMASE_ROOT"] != "/src/gomase" {
		t.Errorf("env misses the gomase settings: %v", s.Env)
	}
	if _, ok := s.Env["GOMLX_BACKEND"]; ok {
		t.Errorf("the kernelspec pins GOMLX_BACKEND=%q: a GPU backend set by the caller would be overridden", s.Env["GOMLX_BACKEND"])
	}
	if v, ok := s.Env["GOFLAGS"]; !ok || v != "" {
		t.Errorf("GOFLAGS = %q (set: %v), want it set to empty: workspace builds reject -mod=mod", v, ok)
	}
	if s.Env["GOPROXY"] != "off" {
		t.Errorf("GOPROXY = %q, want off (GoNB's go get must not hit the network)", s.Env["GOPROXY"])
	}
	if !strings.HasPrefix(s.Env["PATH"], "/go/bin:/usr/local/go/bin:") || !strings.HasSuffix(s.Env["PATH"], "${PATH}") {
		t.Errorf("PATH = %q, want the tool directories first and ${PATH} last", s.Env["PATH"])
	}

	changed, err := Write(data, s)
	if err != nil || !changed {
		t.Fatalf("first Write: changed=%v err=%v, want a new file", changed, err)
	}
	changed, err = Write(data, s)
	if err != nil || changed {
		t.Fatalf("second Write: changed=%v err=%v, want no change", changed, err)
	}
	back, err := Read(Dir(data))
	if err != nil {
		t.Fatal(err)
	}
	if back.GoWork() != "/src/gomase" || back.DisplayName != DisplayName || back.Argv[0] != "/go/bin/gonb" {
		t.Errorf("read back %+v", back)
	}

	// A clone elsewhere rewrites the spec.
	s2, err := New(Options{Root: "/elsewhere/gomase", GoNB: "/go/bin/gonb"})
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := Write(data, s2); err != nil || !changed {
		t.Fatalf("Write after moving the root: changed=%v err=%v, want a rewrite", changed, err)
	}
	raw, _ := os.ReadFile(filepath.Join(Dir(data), "kernel.json"))
	if !strings.Contains(string(raw), `"--go_work=/elsewhere/gomase"`) {
		t.Errorf("kernel.json does not use the new root:\n%s", raw)
	}
}

func TestNewRejectsBadPaths(t *testing.T) {
	for _, o := range []Options{
		{Root: "relative", GoNB: "/bin/gonb"},
		{Root: "/a,b", GoNB: "/bin/gonb"},
		{Root: "/a", GoNB: "gonb"},
		{Root: "/a", GoNB: "/bin/gonb", PathDirs: []string{"bin"}},
		{Root: "/a", GoNB: "/bin/gonb", LogFile: "gonb.log"},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) succeeded, want an error", o)
		}
	}
}
