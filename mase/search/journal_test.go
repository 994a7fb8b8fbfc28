package search

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// appendRecords appends raw lines to a journal file.
func appendRecords(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(l + "\n"); err != nil {
			t.Fatal(err)
		}
	}
}

// deadOwnerJSON is the owner record of a process of this machine that has
// exited (a child that was started and waited for).
var deadOwnerJSON = sync.OnceValue(func() string {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		panic(err)
	}
	self := selfOwner()
	o := owner{Host: self.Host, PID: cmd.Process.Pid, Boot: self.Boot, Start: 1}
	b, _ := json.Marshal(o)
	return string(b)
})

// readJournal parses every line of a journal, failing on an unreadable one.
func readJournal(t *testing.T, path string) []journalRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("journal does not end with a newline: %q", b[max(0, len(b)-40):])
	}
	var recs []journalRecord
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var r journalRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("journal line %d %q: %v", len(recs)+1, sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}

func openStudy(t *testing.T, path, name string, sampler Sampler, logger *slog.Logger) *Study {
	t.Helper()
	if logger == nil {
		logger = quiet
	}
	j, err := OpenJournal(path, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	s, err := NewStudy(Config{Name: name, Sampler: sampler, Storage: j, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestJournalRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "study.jsonl")
	s := openStudy(t, path, "rt", mustTPE(t, TPEOptions{Seed: 1, NStartupTrials: 4}), nil)
	if err := s.Optimize(context.Background(), roundTripObjective, 15, 0); err != nil {
		t.Fatal(err)
	}
	// A value JSON cannot hold is refused, naming the problem.
	tr, _ := s.Ask(context.Background())
	if err := tr.SetUserAttr("model", func() {}); err == nil || !strings.Contains(err.Error(), "JSON-encodable") {
		t.Fatalf("SetUserAttr(func): %v", err)
	}
	s.Tell(tr, 1, nil)
	before, _ := s.Trials()

	s2 := openStudy(t, path, "rt", NewRandomSampler(0), nil)
	after, err := s2.Trials()
	if err != nil {
		t.Fatal(err)
	}
	compareReopened(t, before, after)
	if _, ok := after[0].Params["typed"]; !ok {
		t.Fatal("typed choice missing")
	}
	for _, tr := range after {
		if v, ok := tr.Params["typed"]; ok && reflect.TypeOf(v) != nil {
			switch v.(type) {
			case int8, uint, float32, float64, bool, string:
			default:
				t.Errorf("choice %v came back as %T", v, v)
			}
		}
	}
	// The recorded direction is enforced.
	j, _ := OpenJournal(path, quiet)
	defer j.Close()
	if _, err := NewStudy(Config{Name: "rt", Direction: Maximize, Storage: j, Logger: quiet}); err == nil || !strings.Contains(err.Error(), "direction minimize") {
		t.Fatalf("direction mismatch: %v", err)
	}
	// Every line is one JSON record.
	for _, r := range readJournal(t, path) {
		if r.Op == "" || r.Study != "rt" {
			t.Fatalf("record %+v", r)
		}
	}
}

// TestJournalCrashResume: a trial left Running by a dead process becomes
// Fail, a cut-short final line is ignored with a warning and then removed,
// and OptimizeUntil brings the study to its total without losing or
// duplicating a finished trial.
func TestJournalCrashResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crash.jsonl")
	s := openStudy(t, path, "c", NewRandomSampler(1), nil)
	if err := s.Optimize(context.Background(), sphere, 3, 0); err != nil {
		t.Fatal(err)
	}
	done, _ := s.Trials()
	s.storage.(*JournalStorage).Close()
	appendRecords(t, path,
		fmt.Sprintf(`{"op":"create_trial","study":"c","trial":3,"owner":%s}`, deadOwnerJSON()),
		`{"op":"set_param","study":"c","trial":3,"name":"x0","value":0.25,"dist":{"type":"float","low":-5,"high":5}}`)
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"op":"finish_trial","study":"c","trial":3,"sta`) // the crash hit mid-write
	f.Close()

	var logBuf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logBuf, nil))
	s2 := openStudy(t, path, "c", NewRandomSampler(2), logger)
	if !strings.Contains(logBuf.String(), "cut-short record") {
		t.Errorf("no warning about the cut-short line; log:\n%s", logBuf.String())
	}
	ts, _ := s2.Trials()
	if len(ts) != 4 || ts[3].State != Fail || !strings.Contains(ts[3].Message, "is gone") || ts[3].Params["x0"] != 0.25 {
		t.Fatalf("crashed trial: %+v", ts[len(ts)-1])
	}
	if err := s2.OptimizeUntil(context.Background(), sphere, 6, 0); err != nil {
		t.Fatal(err)
	}
	ts, _ = s2.Trials()
	if len(ts) != 7 || countStates(ts, Complete) != 6 {
		t.Fatalf("after OptimizeUntil(6): %d trials, %d complete", len(ts), countStates(ts, Complete))
	}
	for i := range done {
		if ts[i].Value != done[i].Value || !reflect.DeepEqual(ts[i].Params, done[i].Params) {
			t.Errorf("finished trial %d changed on resume", i)
		}
	}
	recs := readJournal(t, path) // no cut-short line is left
	finishes := map[int]int{}
	for _, r := range recs {
		if r.Op == opFinishTrial {
			finishes[*r.Trial]++
		}
	}
	for n := range 7 {
		if finishes[n] != 1 {
			t.Errorf("trial %d has %d finish records", n, finishes[n])
		}
	}
	// An unreadable line in the middle is skipped with a warning.
	appendRecords(t, path, `not json`, `{"op":"set_param","study":"c","trial":99}`)
	logBuf.Reset()
	s3 := openStudy(t, path, "c", NewRandomSampler(3), logger)
	if ts3, _ := s3.Trials(); len(ts3) != 7 {
		t.Errorf("%d trials after bad lines, want 7", len(ts3))
	}
	if !strings.Contains(logBuf.String(), "unreadable journal line") || !strings.Contains(logBuf.String(), "does not apply") {
		t.Errorf("bad lines not reported; log:\n%s", logBuf.String())
	}
}

func checkUniqueNumbers(t *testing.T, path, study string, want int) map[int]bool {
	t.Helper()
	numbers, pids := map[int]bool{}, map[int]bool{}
	for _, r := range readJournal(t, path) {
		if r.Op == opCreateTrial && r.Study == study {
			if numbers[*r.Trial] {
				t.Fatalf("trial number %d allocated twice", *r.Trial)
			}
			numbers[*r.Trial] = true
			pids[r.Owner.PID] = true
		}
	}
	if len(numbers) != want {
		t.Fatalf("%d trials in the journal, want %d", len(numbers), want)
	}
	for n := range want {
		if !numbers[n] {
			t.Fatalf("trial number %d missing", n)
		}
	}
	return pids
}

func TestJournalConcurrentGoroutines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.jsonl")
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			// Each worker opens its own file description, as a process would.
			j, err := OpenJournal(path, quiet)
			if err != nil {
				t.Error(err)
				return
			}
			defer j.Close()
			s, err := NewStudy(Config{Name: "shared", Sampler: mustTPE(t, TPEOptions{Seed: int64(w), NStartupTrials: 5}), Storage: j, Logger: quiet})
			if err != nil {
				t.Error(err)
				return
			}
			if err := s.Optimize(context.Background(), sphere, 10, 0); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	checkUniqueNumbers(t, path, "shared", 40)
	s := openStudy(t, path, "shared", nil, nil)
	if ts, _ := s.Trials(); countStates(ts, Complete) != 40 {
		t.Fatalf("%d complete trials, want 40", countStates(ts, Complete))
	}
}

func TestJournalMultiProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mp.jsonl")
	runWorkers(t, path, 3, 8)
	if pids := checkUniqueNumbers(t, path, "mp", 24); len(pids) != 3 {
		t.Errorf("trials came from %d processes, want 3", len(pids))
	}
}

// TestJournalProcessCrash: a worker process dies in its third trial; a new
// process resumes the study, marks that trial Fail and completes the total.
func TestJournalProcessCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "killed.jsonl")
	out, err := runChild(path, "crash", 3, 1).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("crashing child: %v\n%s", err, out)
	}
	s := openStudy(t, path, "mp", mustTPE(t, TPEOptions{Seed: 9}), nil)
	ts, _ := s.Trials()
	if len(ts) != 3 || countStates(ts, Complete) != 2 || ts[2].State != Fail || len(ts[2].Params) != 5 {
		t.Fatalf("after the crash: %d trials, trial 2 %v with %d params", len(ts), ts[2].State, len(ts[2].Params))
	}
	if err := s.OptimizeUntil(context.Background(), sphere, 5, 0); err != nil {
		t.Fatal(err)
	}
	ts, _ = s.Trials()
	if len(ts) != 6 || countStates(ts, Complete) != 5 {
		t.Fatalf("after OptimizeUntil(5): %d trials, %d complete", len(ts), countStates(ts, Complete))
	}
	checkUniqueNumbers(t, path, "mp", 6)
}
