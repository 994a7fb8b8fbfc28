package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomase/gomase/mase/safetensors"
	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/search/storages"
)

// TestMain lets the tests run this test binary as the mase command
// (GOMASE_RUN_AS_MASE=1), so a test can kill a real mase process. The
// warning of a binary built without GOEXPERIMENT=simd is off (TestSIMDWarning
// checks it).
func TestMain(m *testing.M) {
	simdWarnings = false
	if os.Getenv("GOMASE_RUN_AS_MASE") == "1" {
		// The environment is the test's (offline unless it says otherwise).
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	// --pretrained auto never reaches the network or the user's
	// HuggingFace cache in tests: it falls back to the seeded initialisation.
	os.Setenv("GOMASE_OFFLINE", "1")
	cache, err := os.MkdirTemp("", "gomase-hf-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("HF_HUB_CACHE", cache)
	code := m.Run()
	os.RemoveAll(cache)
	os.Exit(code)
}

// tinyNAS are the flags of a NAS search whose trials take well under a
// second: a small space on 64 SST-2 sentences.
var tinyNAS = []string{"--space", "nas", "--quick", "--num-layers", "1,2", "--num-heads", "2", "--hidden-sizes", "32,64",
	"--intermediate-sizes", "64,128", "--limit", "64", "--eval-limit", "64"}

func decodeTrialLines(t *testing.T, out string) (trials []trialLine, best *trialLine) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var b struct{ Best *trialLine }
		if err := json.Unmarshal([]byte(line), &b); err == nil && b.Best != nil {
			best = b.Best
			continue
		}
		var tl trialLine
		if err := json.Unmarshal([]byte(line), &tl); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		trials = append(trials, tl)
	}
	return trials, best
}

func TestSearchNASPrintsTrialsAndBest(t *testing.T) {
	plotPath := filepath.Join(t.TempDir(), "best.svg")
	code, out, errOut := runCLI(append(append([]string{"search"}, tinyNAS...), "--sampler", "random", "--trials", "3", "--plot", plotPath)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	trials, best := decodeTrialLines(t, out)
	if len(trials) != 3 || best == nil {
		t.Fatalf("%d trial lines, best %v:\n%s", len(trials), best, out)
	}
	for i, tr := range trials {
		if tr.Number != i || tr.State != "complete" || tr.Value == nil || *tr.Value < 0 || *tr.Value > 1 || tr.Duration <= 0 {
			t.Errorf("trial line %+v", tr)
		}
		if _, ok := tr.Params["hidden_size"]; !ok {
			t.Errorf("trial %d params %v", i, tr.Params)
		}
	}
	for _, tr := range trials {
		if *tr.Value > *best.Value {
			t.Errorf("best %v but trial %d has %v", *best.Value, tr.Number, *tr.Value)
		}
	}
	svg, err := os.ReadFile(plotPath)
	if err != nil || !strings.Contains(string(svg), "<svg") {
		t.Errorf("plot: %v", err)
	}
}

func TestSearchGridVisitsEachPointOnce(t *testing.T) {
	// 2 × 1 × 2 × 2 = 8 architectures with every Linear kept; asking for
	// more stops at 8.
	code, out, errOut := runCLI(append(append([]string{"search"}, tinyNAS...), "--sampler", "grid", "--grid-layer-choices", "linear", "--trials", "10", "--epochs", "0")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	trials, _ := decodeTrialLines(t, out)
	seen := map[string]bool{}
	for _, tr := range trials {
		key := ""
		for _, p := range []string{"num_layers", "num_heads", "hidden_size", "intermediate_size"} {
			js, _ := json.Marshal(tr.Params[p])
			key += string(js) + ","
		}
		if seen[key] {
			t.Errorf("grid point %s visited twice", key)
		}
		seen[key] = true
	}
	if len(seen) != 8 {
		t.Errorf("%d grid points visited, want 8", len(seen))
	}
}

func TestSearchBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--trials", "2"}, "--space is required (allowed: nas, mixed-precision, toy)"},
		{[]string{"--space", "toy", "--toy-sleep", "-1s"}, `invalid value "-1s" for flag -toy-sleep: want a duration of 0 or more`},
		{[]string{"--space", "nass"}, `unknown --space "nass"`},
		{append(slices.Clone(tinyNAS), "--sampler", "cmaes"), `unknown --sampler "cmaes" (allowed: random, grid, tpe)`},
		{append(slices.Clone(tinyNAS), "--trials", "0"), "--trials must be ≥ 1"},
		{append(slices.Clone(tinyNAS), "--hidden-sizes", "30", "--num-heads", "4"), "hidden_size 30 is not a multiple of num_heads 4"},
		{append(slices.Clone(tinyNAS), "--post-epochs", "1"), "--post-epochs needs --compress"},
		{[]string{"--space", "mixed-precision", "--formats", "int8"}, `"int8"`},
		{[]string{"--space", "mixed-precision", "--bits", "real"}, `unknown --bits "real"`},
		{[]string{"--space", "mixed-precision", "--lambda", "-1"}, `invalid value "-1" for flag -lambda: want a finite number in [0, 1e+06]`},
		{[]string{"--space", "mixed-precision", "--checkpoint", "x", "--pretrained", "off"}, "give one of them"},
		{append(slices.Clone(tinyNAS), "--pretrained", "auto"), "--pretrained is for --space mixed-precision"},
		{append(slices.Clone(tinyNAS), "--retry-failed", "-1"), "--retry-failed must be ≥ 0"},
		{append(slices.Clone(tinyNAS), "--tpe-startup", "-2"), "--tpe-startup must be ≥ 0"},
		{append(slices.Clone(tinyNAS), "--heartbeat", "-1s"), `invalid value "-1s" for flag -heartbeat: want a duration of 0 or more`},
		{append(slices.Clone(tinyNAS), "--heartbeat", "60s"), "--heartbeat needs a --storage (a journal file or a postgresql:// URL)"},
		{[]string{"--space", "toy", "--best", "best"}, "--best is for --space nas"},
	} {
		code, _, errOut := runCLI(append([]string{"search"}, c.args...)...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errOut, c.want)
		}
	}
}

// searchStorages are the --storage values TestSearchKilledAndResumed runs
// with; search_pg_test.go adds a PostgreSQL database.
var searchStorages = []struct {
	name string
	spec func(t *testing.T) string
}{
	{"journal", func(t *testing.T) string { return filepath.Join(t.TempDir(), "study.jsonl") }},
}

// TestSearchKilledAndResumed kills a mase search with a storage (a journal,
// a PostgreSQL database) after two finished trials, starts it again, and
// checks that the study ends with the requested number of complete trials,
// the first two kept as they were and no trial number or completed trial
// duplicated.
func TestSearchKilledAndResumed(t *testing.T) {
	for _, st := range searchStorages {
		t.Run(st.name, func(t *testing.T) { searchKilledAndResumed(t, st.spec(t)) })
	}
}

func searchKilledAndResumed(t *testing.T, storage string) {
	args := append([]string{"search"}, tinyNAS...)
	args = append(args, "--sampler", "tpe", "--trials", "6", "--storage", storage, "--study", "resume-test")
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "GOMASE_RUN_AS_MASE=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var first []trialLine
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for len(first) < 2 && sc.Scan() {
		var tl trialLine
		if err := json.Unmarshal(sc.Bytes(), &tl); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		first = append(first, tl)
	}
	// Kill it mid-run (it is into its third trial or about to be).
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if len(first) != 2 {
		t.Fatalf("the first run printed %d trials before the kill", len(first))
	}

	start := time.Now()
	code, out, errOut := runCLI(args...)
	if code != 0 {
		t.Fatalf("resumed run: exit %d: %s", code, errOut)
	}
	if i := strings.Index(errOut, "resuming study"); i < 0 {
		t.Errorf("the resumed run did not say it resumed: %s", errOut)
	} else {
		t.Log(strings.SplitN(errOut[i:], "\n", 2)[0])
	}
	second, best := decodeTrialLines(t, out)
	if best == nil {
		t.Fatal("no best line")
	}

	if u, err := url.Parse(storage); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && strings.Contains(errOut, pw) {
			t.Errorf("the password of the storage URL is in the output: %s", errOut)
		}
	}
	j, err := storages.Open(storage, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	st, err := search.NewStudy(search.Config{Name: "resume-test", Direction: search.Maximize, Storage: j, Sampler: search.NewRandomSampler(0)})
	if err != nil {
		t.Fatal(err)
	}
	all, err := st.Trials()
	if err != nil {
		t.Fatal(err)
	}
	complete, numbers := 0, map[int]bool{}
	for _, tr := range all {
		if numbers[tr.Number] {
			t.Errorf("trial number %d twice", tr.Number)
		}
		numbers[tr.Number] = true
		if tr.State == search.Complete {
			complete++
		}
	}
	if complete != 6 {
		t.Errorf("%d complete trials in the storage, want 6 (trials: %d)", complete, len(all))
	}
	for _, f := range first {
		tr := all[f.Number]
		js1, _ := json.Marshal(f.Params)
		js2, _ := json.Marshal(tr.Params)
		if tr.State != search.Complete || tr.Value != *f.Value || string(js1) != string(js2) {
			t.Errorf("trial %d changed after the resume: %v %v %s, was %v %s", f.Number, tr.State, tr.Value, js2, *f.Value, js1)
		}
	}
	for _, s := range second {
		if s.Number < 2 {
			t.Errorf("the resumed run re-ran trial %d", s.Number)
		}
	}
	if len(second) < 4 {
		t.Errorf("the resumed run finished %d trials, want at least 4", len(second))
	}
	t.Logf("resumed run: %d trials in %v; the storage holds %d trials", len(second), time.Since(start), len(all))
}

// TestSearchStorageErrors: a PostgreSQL URL that does not work is reported
// in one line, without its password, before any data is loaded.
func TestSearchStorageErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := l.Addr().String()
	l.Close()
	for _, c := range []struct{ storage, want string }{
		{"postgres://gomase:s3cr3t-pw@" + down + "/db", "cannot connect to PostgreSQL at " + down + ": "},
		{"postgresql://gomase:s3cr3t-pw@localhost:port/db", "malformed PostgreSQL URL postgresql://gomase:xxxxx@localhost:port/db"},
	} {
		code, _, errOut := runCLI(append(append([]string{"search"}, tinyNAS...), "--storage", c.storage)...)
		if code == 0 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "s3cr3t-pw") || strings.Contains(errOut, "data:") {
			t.Errorf("--storage %s: exit %d, stderr %q, want %q before loading data, without the password", c.storage, code, errOut, c.want)
		}
	}
}

func TestSearchMixedPrecisionCost(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	code, out, errOut := runCLI("search", "--space", "mixed-precision", "--quick", "--limit", "64", "--eval-limit", "64",
		"--sampler", "random", "--trials", "2", "--formats", "integer,minifloat_ieee", "--widths", "8,16", "--frac-widths", "2,4", "--lambda", "0.01")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "gomase-search-*")); len(left) > 0 {
		t.Errorf("the temporary starting model was left behind: %v", left)
	}
	trials, best := decodeTrialLines(t, out)
	if len(trials) != 2 || best == nil {
		t.Fatalf("output:\n%s", out)
	}
	for _, tr := range trials {
		acc, _ := tr.UserAttrs["accuracy"].(float64)
		bits, _ := tr.UserAttrs["w_avg_bits"].(float64)
		if bits < 8 || bits > 32 || tr.Value == nil || diff(*tr.Value, acc-0.01*bits) > 1e-9 {
			t.Errorf("trial %d: value %v, accuracy %v, bits %v", tr.Number, tr.Value, acc, bits)
		}
		if _, ok := tr.Params["bert.encoder.layer.0.attention.self.query_type"]; !ok {
			t.Errorf("params %v", tr.Params)
		}
	}
}

func diff(a, b float64) float64 {
	if a > b {
		return a - b
	}
	return b - a
}

// foreignStorages writes, in dir, files that are not study journals, as a
// mistyped --storage may name them: a checkpoint, a model's JSON
// configuration, a text file without a final newline, an Optuna journal.
// It returns each file's path and a word its refusal must give.
func foreignStorages(t *testing.T, dir string) map[string]string {
	t.Helper()
	values := make([]float32, 4096)
	for i := range values {
		values[i] = float32(i)*0.37 - 100 // many of these hold a newline byte
	}
	w, err := safetensors.NewF32([]int{64, 64}, values)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{filepath.Join(dir, "model.safetensors"): "binary"}
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), &safetensors.File{Tensors: map[string]*safetensors.Tensor{"fc.weight": w}}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ content, reason string }{
		"config.json": {`{"hidden_size": 128, "num_hidden_layers": 2}` + "\n", "JSON"},
		"notes.txt":   {"trial notes\nlast line without a newline", "text"},
		"optuna.log":  {`{"op_code": 0, "worker_id": "w", "study_name": "s", "directions": [2]}` + "\n", "Optuna journal"},
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		files[path] = c.reason
	}
	return files
}

// TestSearchStorageNotAJournal: `mase search`, `search export` and `search
// import` refuse a --storage file that is not a journal in one line naming
// it, and leave it byte for byte as it was.
func TestSearchStorageNotAJournal(t *testing.T) {
	dir := t.TempDir()
	optunaIn := filepath.Join(dir, "in.log")
	if err := os.WriteFile(optunaIn, []byte(`{"op_code": 0, "worker_id": "w", "study_name": "in", "directions": [2]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, reason := range foreignStorages(t, dir) {
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"search", "--space", "toy", "--trials", "2", "--storage", path, "--study", "s"},
			{"search", "export", "--storage", path, "--study", "s", filepath.Join(dir, "out.log")},
			{"search", "import", "--storage", path, optunaIn},
		} {
			code, _, errOut := runCLI(args...)
			if code == 0 || strings.Count(strings.TrimSpace(errOut), "\n") > 0 || !strings.Contains(errOut, path+" is not a gomase study journal") ||
				!strings.Contains(errOut, reason) {
				t.Errorf("%s: exit %d, stderr (%d bytes) %.400q; want one line saying that %s is not a journal (%s)",
					strings.Join(args[:2], " "), code, len(errOut), errOut, filepath.Base(path), reason)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
				t.Errorf("%s changed %s: %d bytes, was %d", strings.Join(args[:2], " "), filepath.Base(path), len(after), len(before))
				os.WriteFile(path, before, 0o644)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out.log")); err == nil {
		t.Error("a refused export wrote its file")
	}
}

// TestSearchRepairsCutShortJournal: a journal whose last record was cut
// short by a crash is still taken; the search goes on, removing just that
// record and saying so once.
func TestSearchRepairsCutShortJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "study.jsonl")
	args := []string{"search", "--space", "toy", "--trials", "2", "--storage", path, "--study", "cut"}
	if code, _, errOut := runCLI(args...); code != 0 {
		t.Fatal(errOut)
	}
	kept, _ := os.ReadFile(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"op":"create_trial","study":"cut","trial":2,"ti`)
	f.Close()
	args[4] = "3"
	code, out, errOut := runCLI(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if trials, _ := decodeTrialLines(t, out); len(trials) != 1 {
		t.Errorf("%d trials run, want 1", len(trials))
	}
	if strings.Count(errOut, "ends with a cut-short record") != 1 || strings.Count(errOut, "removed a cut-short final journal record") != 1 ||
		strings.Count(errOut, "level=WARN") != 2 {
		t.Errorf("want one warning about the cut-short record and one about its removal:\n%s", errOut)
	}
	after, _ := os.ReadFile(path)
	if !bytes.HasPrefix(after, kept) || after[len(after)-1] != '\n' || bytes.Contains(after, []byte(`"ti{`)) {
		t.Errorf("the journal was not repaired by removing just its cut-short record:\n%s", after[len(kept):])
	}
}
