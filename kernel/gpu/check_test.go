// Package gpu holds the GPU check (check.sh) and its dry runs: the script
// runs against a bundle of fake binaries (this test binary, re-executed),
// so the deadline, the stack dump of a hung step, the switch to
// GOMASE_CUDA_KERNELS=off after a fault and the four-file limit are
// tested on any machine.
package gpu

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeEnv tells a re-executed test binary to act as a bundle binary: "hang"
// sleeps, "fault" reports an illegal address and fails, "ok" prints its
// arguments and whether the CUDA kernels are on.
const fakeEnv = "GOMASE_CHECK_FAKE"

func TestMain(m *testing.M) {
	switch os.Getenv(fakeEnv) {
	case "":
		os.Exit(m.Run())
	case "hang":
		fmt.Println("fake: started, now hanging")
		time.Sleep(time.Hour)
	case "fault":
		fmt.Fprintln(os.Stderr, "fake: cuLaunchKernel: CUDA_ERROR_ILLEGAL_ADDRESS")
		os.Exit(1)
	default:
		kernels := os.Getenv("GOMASE_CUDA_KERNELS")
		if kernels == "" {
			kernels = "on"
		}
		fmt.Printf("fake %s %s: kernels %s\n", filepath.Base(os.Args[0]), strings.Join(os.Args[1:], " "), kernels)
	}
	os.Exit(0)
}

// fakeBundle writes a bundle whose binaries are this test binary acting as
// behaviour[name] ("ok" when absent); cuda.test is xz-compressed, as
// `make gpu-bundle` leaves the binaries, when xz is installed.
func fakeBundle(t *testing.T, behaviour map[string]string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"mase", "cuda.test", "backend.test", "train.test"} {
		b := behaviour[name]
		if b == "" {
			b = "ok"
		}
		// exec -a keeps the name the step ran, so "ok" can print it.
		script := fmt.Sprintf("#!/bin/bash\n%s=%s exec -a %s %q \"$@\"\n", fakeEnv, b, name, self)
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		if name == "cuda.test" {
			if _, err := exec.LookPath("xz"); err == nil {
				if out, err := exec.Command("xz", path).CombinedOutput(); err != nil {
					t.Fatalf("xz: %v: %s", err, out)
				}
			}
		}
	}
	return dir
}

// runCheck runs check.sh on bundle with DEADLINE=deadline and returns the
// output folder, the summary and the step tails.
func runCheck(t *testing.T, bundle string, deadline int, env ...string) (out, summary, tails string, took time.Duration) {
	t.Helper()
	for _, f := range []string{"check.sh", "pjrt_env.py"} { // read here, so that go test's cache sees them change
		if _, err := os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	out = filepath.Join(t.TempDir(), "out")
	cmd := exec.Command("bash", "check.sh", bundle)
	cmd.Env = append(os.Environ(), "OUT="+out, fmt.Sprintf("DEADLINE=%d", deadline), "GOMASE_CUDA_KERNELS=", "GOMASE_CUDA_PLUGIN=/nonexistent/cuda_plugin.so")
	cmd.Env = append(cmd.Env, env...)
	start := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("check.sh: %v\n%s", err, b)
	}
	took = time.Since(start)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return out, read("summary.txt"), read("tails.txt"), took
}

// checkOutputs checks that the check left at most four files, with the logs
// archive among them.
func checkOutputs(t *testing.T, out string) {
	t.Helper()
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) > 4 || !strings.Contains(strings.Join(names, " "), "logs.tgz") {
		t.Errorf("output files %v: want at most 4, logs.tgz among them", names)
	}
}

// TestCheckCutsAHungStep: a hung kernel test is stopped at the deadline with
// SIGQUIT (its goroutine stacks land in the tails), the kernels are off for
// what follows, and every later step is skipped for lack of time.
func TestCheckCutsAHungStep(t *testing.T) {
	t.Parallel()
	const deadline = 35
	bundle := fakeBundle(t, map[string]string{"cuda.test": "hang"})
	out, summary, tails, took := runCheck(t, bundle, deadline)
	for _, want := range []string{
		"=== cuda_device: rc=124 CUT",
		"GOMASE_CUDA_KERNELS=off from here on: the driver-level kernel test faulted",
		"SKIP trainer_tests", "SKIP train_sst2", "SKIP compile_b8x128",
		"done at t=",
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	if strings.Contains(summary, "=== kernels_xla") {
		t.Errorf("the custom calls ran after the kernels faulted:\n%s", summary)
	}
	if !strings.Contains(tails, "SIGQUIT") || !strings.Contains(tails, "goroutine 1") {
		t.Errorf("the hung step's stacks are not in the tails:\n%s", tails)
	}
	if limit := (deadline + 15) * time.Second; took > limit {
		t.Errorf("the check took %v with a %d s deadline", took, deadline)
	}
	checkOutputs(t, out)
}

// TestCheckRunsEveryStep: with time enough every step runs, in order; a
// faulting kernel test turns the kernels off for the later steps.
func TestCheckRunsEveryStep(t *testing.T) {
	t.Parallel()
	bundle := fakeBundle(t, map[string]string{"cuda.test": "fault"})
	out, summary, tails, _ := runCheck(t, bundle, 300)
	last := -1
	for _, name := range []string{"env", "cuda_device", "trainer_tests", "train_graph", "train_fused", "mem_b64x512", "sdpa_f32", "sdpa_f32_off", "train_sst2", "mxint8_graph", "sdpa_f16", "packed_kernel", "packed_gomlx", "compile_b8x128", "profile_xla"} {
		i := strings.Index(summary, "=== "+name+":")
		if i < 0 || i < last {
			t.Errorf("step %s missing or out of order:\n%s", name, summary)
		}
		last = i
	}
	if !strings.Contains(summary, "=== cuda_device: rc=1 FAILED") || !strings.Contains(summary, "GOMASE_CUDA_KERNELS=off from here on") {
		t.Errorf("the fault did not turn the kernels off:\n%s", summary)
	}
	if !strings.Contains(tails, "fake mase bench sdpa --backend xla:cuda,notf32 --dtype float32 --mask --loop 50 --reps 11 --json: kernels off") {
		t.Errorf("later steps did not run with the kernels off:\n%s", tails)
	}
	if strings.Contains(summary, "is missing from the bundle") || strings.Contains(summary, "could not decompress") {
		t.Errorf("the bundle was not unpacked:\n%s", summary)
	}
	checkOutputs(t, out)
}

// TestCheckRunsTheNamedSteps: STEPS picks steps by name (env always runs);
// a STEPS that is no regular expression is refused.
func TestCheckRunsTheNamedSteps(t *testing.T) {
	t.Parallel()
	bundle := fakeBundle(t, nil)
	out, summary, _, _ := runCheck(t, bundle, 300, "STEPS=cuda_device|sdpa_f32.*")
	var ran []string
	for _, line := range strings.Split(summary, "\n") {
		if name, ok := strings.CutPrefix(line, "=== "); ok {
			ran = append(ran, name[:strings.Index(name, ":")])
		}
	}
	if got := strings.Join(ran, " "); got != "env cuda_device sdpa_f32 sdpa_f32_off sdpa_f32_tuned" {
		t.Errorf("STEPS=cuda_device|sdpa_f32.* ran %q:\n%s", got, summary)
	}
	checkOutputs(t, out)
	cmd := exec.Command("bash", "check.sh", bundle)
	cmd.Env = append(os.Environ(), "STEPS=sdpa_(", "OUT="+t.TempDir())
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "STEPS must be an extended regular expression") {
		t.Errorf("STEPS=sdpa_(: %v, %s", err, b)
	}
}

// TestCheckRefusesABadDeadline: DEADLINE must be whole seconds.
func TestCheckRefusesABadDeadline(t *testing.T) {
	cmd := exec.Command("bash", "check.sh", t.TempDir())
	cmd.Env = append(os.Environ(), "DEADLINE=5m", "OUT="+t.TempDir())
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "DEADLINE must be a whole number of seconds (got '5m')") {
		t.Errorf("DEADLINE=5m: %v, %s", err, b)
	}
}
