package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gomase/gomase/mase/search/storages"
)

// searchBadInputFiles writes the hostile study files the search rows of
// TestSearchBadInputsThroughTheBinary point mase at and returns their folder.
func searchBadInputFiles(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, body string) { writeTestFile(t, dir, name, body) }
	sparse := func(name, head string, size int64) {
		t.Helper()
		write(name, head)
		if err := os.Truncate(filepath.Join(dir, name), size); err != nil {
			t.Fatal(err)
		}
	}
	header := `{"format":"gomase-search-journal","v":1}` + "\n"
	toyStudy := header + `{"op":"create_study","study":"toy-study","v":1,"direction":"maximize"}` + "\n"
	// Journals whose only running trial belongs to a worker no process
	// here can judge: another machine's, one with no worker recorded, and
	// one whose finish record is unreadable.
	write("other-host.jsonl", toyStudy+`{"op":"create_trial","study":"toy-study","trial":0,"owner":{"host":"old-container-7c1d","pid":1}}`+"\n")
	write("no-owner.jsonl", toyStudy+`{"op":"create_trial","study":"toy-study","trial":0}`+"\n")
	write("unreadable-finish.jsonl", toyStudy+`{"op":"create_trial","study":"toy-study","trial":0,"owner":{"host":"old-container-7c1d","pid":1}}`+"\n"+
		`{"op":"finish_trial","study":"toy-study","tri`+"\x00\x00"+`al":0}`+"\n")
	sparse("huge.jsonl", header, 6<<30)
	sparse("huge-optuna.log", `{"op_code": 0, "worker_id": "w", "study_name": "s", "directions": [1]}`+"\n", 6<<30)
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.log")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.log"), 0o644); err != nil {
		t.Fatal(err)
	}
	write("number-name.log", `{"op_code": 0, "worker_id": "w", "study_name": 123, "directions": [1]}`+"\n")
	write("step0.log", `{"op_code": 0, "worker_id": "w", "study_name": "s", "directions": [1]}`+"\n"+
		`{"op_code": 4, "worker_id": "w", "study_id": 0, "datetime_start": "2024-01-01T00:00:00", "state": 1, "value": 1.0, "datetime_complete": "2024-01-01T00:00:01", `+
		`"distributions": {"x": "{\"name\": \"FloatDistribution\", \"attributes\": {\"step\": 0.0, \"low\": 0.0, \"high\": 1.0, \"log\": false}}"}, "params": {"x": 0.5}}`+"\n")
	write("done.jsonl", toyStudy+`{"op":"add_trial","study":"toy-study","trial":0,"state":"complete","value":0.5}`+"\n")
	write("notes.json", `{"mine": true}`+"\n")
	if err := os.MkdirAll(filepath.Join(dir, "best", "y.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestSearchBadInputsThroughTheBinary drives the study storages' bad
// inputs through the mase binary as TestBadInputsThroughTheBinary does:
// each must end, within seconds and before any trial, with a non-zero exit
// and a last line that contains what the table says, never a Go crash, and
// leave the files it was given as they were. A search whose only running
// trial cannot be judged used to wait for it without end; a journal or
// Optuna journal that is a device, a FIFO or gigabytes long used to be read
// whole; --best into a folder failed every trial after training it.
func TestSearchBadInputsThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary many times")
	}
	d := searchBadInputFiles(t)
	f := func(name string) string { return filepath.Join(d, name) }
	nas := func(extra ...string) []string { return append(append([]string{"search"}, tinyNAS...), extra...) }
	cases := []struct {
		args []string
		want string
	}{
		// Trials whose worker cannot be judged: reported at once, with the remedy.
		{[]string{"search", "--space", "toy", "--storage", f("other-host.jsonl"), "--trials", "1"},
			"mase search fail --storage " + f("other-host.jsonl") + " --study toy-study --trial 0"},
		{[]string{"search", "--space", "toy", "--storage", f("other-host.jsonl"), "--trials", "1"}, `its worker runs on machine "old-container-7c1d"`},
		{[]string{"search", "--space", "toy", "--storage", f("no-owner.jsonl"), "--trials", "1"}, "no worker is recorded with it"},
		{[]string{"search", "--space", "toy", "--storage", f("unreadable-finish.jsonl"), "--trials", "1"}, "if one was this trial's finish record, its result is lost"},
		// Files read whole, devices and FIFOs.
		{[]string{"search", "--space", "toy", "--storage", f("huge.jsonl")}, "is 6 GiB, more than the 4 GiB allowed for a study journal"},
		{[]string{"search", "import", "--storage", f("new.jsonl"), f("zero.log")}, "is a character device, not a regular file"},
		{[]string{"search", "import", "--storage", f("new.jsonl"), f("fifo.log")}, "is a named pipe (FIFO), not a regular file"},
		{[]string{"search", "import", "--storage", f("new.jsonl"), f("huge-optuna.log")}, "is 6 GiB, more than the 512 MiB allowed for an Optuna journal"},
		// What an Optuna journal holds.
		{[]string{"search", "import", "--storage", f("new.jsonl"), f("number-name.log")}, "named by the number 123, not a string"},
		{[]string{"search", "import", "--storage", f("new.jsonl"), f("step0.log")}, "step 0 is not > 0 (Optuna refuses it"},
		// Output paths, before any trial.
		{nas("--best", f("best/y")), "--best: checkpoint " + f("best/y.json") + " is a folder or special file"},
		{nas("--best", f("missing/best")), "no folder " + f("missing") + " to write it in"},
		{nas("--best", f("notes")), "--best: checkpoint " + f("notes.json") + " exists and is not a MaseGraph graph file: refusing to overwrite it"},
		{[]string{"search", "--space", "toy", "--best", f("best/x")}, "--best is for --space nas"},
		{[]string{"search", "export", "--storage", f("done.jsonl"), "--study", "toy-study", f("missing/out.log")}, "no folder " + f("missing")},
		// mase search fail.
		{[]string{"search", "fail", "--storage", f("done.jsonl"), "--study", "toy-study"}, "--trial is required"},
		{[]string{"search", "fail", "--storage", f("done.jsonl"), "--study", "toy-study", "--trial", "0"}, "trial 0 of study toy-study is complete, not running"},
		{[]string{"search", "fail", "--storage", f("done.jsonl"), "--study", "toy-study", "--trial", "5"}, "study toy-study has no trial 5 (it has 1 trials"},
		{[]string{"search", "fail", "--storage", f("done.jsonl"), "--study", "toy-study", "--trial", "0,x"}, `--trial: "x" is not a trial number`},
		{[]string{"search", "fail", "--storage", f("no-such.jsonl"), "--study", "toy-study", "--trial", "0"}, "no such journal file"},
		{[]string{"search", "--space", "toy", "--heartbeat", "1m"}, "--heartbeat needs a --storage"},
	}
	before := snapshot(t, d)
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, stdout, msg := badRun(t, d, 60*time.Second, []string{"GOMASE_DATA_DIR=" + dataDirForTests(t)}, nil, c.args...)
			wantRefusal(t, code, msg, c.want)
			if strings.Contains(stdout, `"number":`) {
				t.Errorf("a trial ran before the refusal: %.300s", stdout)
			}
		})
	}
	if after := snapshot(t, d); after != before {
		t.Errorf("the files the commands were given changed:\nbefore %s\nafter  %s", before, after)
	}
	if _, err := os.Lstat(f("new.jsonl")); err == nil {
		t.Error("a refused import left new.jsonl")
	}
}

// TestSearchFailGoesOn: the remedy the refusal names works: mase search
// fail marks the unjudged trial failed, saying so, and the same search then
// runs to its end.
func TestSearchFailGoesOn(t *testing.T) {
	d := searchBadInputFiles(t)
	j := filepath.Join(d, "other-host.jsonl")
	code, out, errOut := runCLI("search", "fail", "--storage", j, "--study", "toy-study", "--trial", "0")
	if code != 0 || !strings.Contains(out, `"failed":[0]`) || !strings.Contains(errOut, "marked trial(s) 0 of study toy-study") {
		t.Fatalf("search fail: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runCLI("search", "--space", "toy", "--storage", j, "--trials", "1")
	if code != 0 || !strings.Contains(out, `"best"`) {
		t.Fatalf("the search after search fail: exit %d, stderr %q", code, errOut)
	}
}

// TestSearchHeartbeatWithJournal: --heartbeat is accepted with a journal
// (it was refused as PostgreSQL-only), and the worker writes heartbeat
// records while its trial runs.
func TestSearchHeartbeatWithJournal(t *testing.T) {
	j := filepath.Join(t.TempDir(), "hb.jsonl")
	code, _, errOut := runCLI("search", "--space", "toy", "--storage", j, "--heartbeat", "50ms", "--toy-sleep", "400ms", "--trials", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, _ := os.ReadFile(j)
	if n := bytes.Count(b, []byte(`"op":"heartbeat"`)); n < 3 || !bytes.Contains(b, []byte(`"heartbeat_ms":50`)) {
		t.Errorf("%d heartbeat records in the journal, want several with heartbeat_ms 50:\n%s", n, b)
	}
}

// TestSearchNamesPrintedQuoted: a study whose name holds a newline and a
// terminal escape sequence is printed with them escaped, never raw, so a
// message stays one line and cannot drive the terminal.
func TestSearchNamesPrintedQuoted(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "odd.log")
	name := "evil\nname\x1b[31m red"
	nj, _ := json.Marshal(name)
	line := fmt.Sprintf(`{"op_code": 0, "worker_id": "w", "study_name": %s, "directions": [2]}`, nj)
	if err := os.WriteFile(in, []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "odd.jsonl")
	code, stdout, errOut := runCLI("search", "import", "--storage", out, in)
	if code != 0 {
		t.Fatalf("import: %s", errOut)
	}
	if strings.ContainsRune(errOut, '\x1b') || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, `"evil\nname\x1b[31m red"`) {
		t.Errorf("stderr %q: want one line with the name escaped", errOut)
	}
	if strings.ContainsRune(stdout, '\x1b') {
		t.Errorf("stdout holds a raw escape: %q", stdout)
	}
	code, _, errOut = runCLI("search", "fail", "--storage", out, "--study", name, "--trial", "0")
	if code == 0 || strings.ContainsRune(errOut, '\x1b') || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("search fail of the odd study: exit %d, stderr %q", code, errOut)
	}
}

// TestSearchImportSweepsKilledTemps: an import killed midway leaves its
// temporary journal; the next import into the same file removes it (and
// only it) and succeeds.
func TestSearchImportSweepsKilledTemps(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "big.log")
	var b bytes.Buffer
	b.WriteString(`{"op_code": 0, "worker_id": "w", "study_name": "big", "directions": [1]}` + "\n")
	for i := range 40000 {
		fmt.Fprintf(&b, `{"op_code": 4, "worker_id": "w", "study_id": 0, "datetime_start": "2024-01-01T00:00:00", "state": 1, "value": %d.5, `+
			`"datetime_complete": "2024-01-01T00:00:01", "distributions": {}, "params": {}}`+"\n", i)
	}
	if err := os.WriteFile(in, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, ".new.jsonl.tmp-mine")
	os.WriteFile(foreign, []byte("the user's\n"), 0o644)
	out := filepath.Join(dir, "new.jsonl")
	cmd := exec.Command(os.Args[0], "search", "import", "--storage", out, in)
	cmd.Env = append(os.Environ(), "GOMASE_RUN_AS_MASE=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	temps := func() []string {
		m, _ := filepath.Glob(filepath.Join(dir, ".new.jsonl.tmp-*"))
		return slices.DeleteFunc(m, func(s string) bool { return s == foreign })
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(temps()) == 0 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := os.Lstat(out); err == nil {
		t.Skip("the import finished before it could be killed")
	}
	left := temps()
	if len(left) != 1 {
		t.Fatalf("the killed import left %d temporary journals, want 1", len(left))
	}
	if code, _, errOut := runCLI("search", "import", "--storage", out, in); code != 0 {
		t.Fatalf("import after the killed one: %s", errOut)
	}
	if left := temps(); len(left) != 0 {
		t.Errorf("temporary journals left after the next import: %v", left)
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Errorf("a file that is not an import's temporary journal was removed: %v", err)
	}
	j, err := storages.OpenJournal(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if ts, err := j.Trials("big"); err != nil || len(ts) != 40000 {
		t.Errorf("the imported study: %d trials, %v", len(ts), err)
	}
}
