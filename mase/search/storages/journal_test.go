package storages_test

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

	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/search/internal/searchtest"
	"github.com/gomase/gomase/mase/search/searchbench"
	"github.com/gomase/gomase/mase/search/storages"
	"github.com/gomase/gomase/mase/search/studydata"
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
	self := storages.SelfOwner()
	o := storages.Owner{Host: self.Host, PID: cmd.Process.Pid, Boot: self.Boot, Start: 1}
	b, _ := json.Marshal(o)
	return string(b)
})

// readJournal parses every record of a journal (the lines after the header,
// if any), failing on an unreadable one.
func readJournal(t *testing.T, path string) []storages.JournalRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("journal does not end with a newline: %q", b[max(0, len(b)-40):])
	}
	var recs []storages.JournalRecord
	sc := bufio.NewScanner(bytes.NewReader(bytes.TrimPrefix(b, []byte(storages.JournalHeaderLine))))
	for sc.Scan() {
		var r storages.JournalRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("journal line %d %q: %v", len(recs)+1, sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}

func openStudy(t *testing.T, path, name string, sampler search.Sampler, logger *slog.Logger) *search.Study {
	t.Helper()
	if logger == nil {
		logger = searchtest.Quiet
	}
	j, err := storages.OpenJournal(path, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	s, err := search.NewStudy(search.Config{Name: name, Sampler: sampler, Storage: j, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestJournalRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "study.jsonl")
	s := openStudy(t, path, "rt", searchtest.MustTPE(t, search.TPEOptions{Seed: 1, NStartupTrials: 4}), nil)
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

	s2 := openStudy(t, path, "rt", search.NewRandomSampler(0), nil)
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
	j, _ := storages.OpenJournal(path, searchtest.Quiet)
	defer j.Close()
	if _, err := search.NewStudy(search.Config{Name: "rt", Direction: studydata.Maximize, Storage: j, Logger: searchtest.Quiet}); err == nil || !strings.Contains(err.Error(), "direction minimize") {
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
	s := openStudy(t, path, "c", search.NewRandomSampler(1), nil)
	if err := s.Optimize(context.Background(), searchbench.Sphere5, 3, 0); err != nil {
		t.Fatal(err)
	}
	done, _ := s.Trials()
	s.Storage().(*storages.JournalStorage).Close()
	appendRecords(t, path,
		fmt.Sprintf(`{"op":"create_trial","study":"c","trial":3,"owner":%s}`, deadOwnerJSON()),
		`{"op":"set_param","study":"c","trial":3,"name":"x0","value":0.25,"dist":{"type":"float","low":-5,"high":5}}`)
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"op":"finish_trial","study":"c","trial":3,"sta`) // the crash hit mid-write
	f.Close()

	var logBuf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logBuf, nil))
	s2 := openStudy(t, path, "c", search.NewRandomSampler(2), logger)
	if !strings.Contains(logBuf.String(), "cut-short record") {
		t.Errorf("no warning about the cut-short line; log:\n%s", logBuf.String())
	}
	ts, _ := s2.Trials()
	if len(ts) != 4 || ts[3].State != studydata.Fail || !strings.Contains(ts[3].Message, "is gone") || ts[3].Params["x0"] != 0.25 {
		t.Fatalf("crashed trial: %+v", ts[len(ts)-1])
	}
	if err := s2.OptimizeUntil(context.Background(), searchbench.Sphere5, 6, 0); err != nil {
		t.Fatal(err)
	}
	ts, _ = s2.Trials()
	if len(ts) != 7 || studydata.CountStates(ts, studydata.Complete) != 6 {
		t.Fatalf("after OptimizeUntil(6): %d trials, %d complete", len(ts), studydata.CountStates(ts, studydata.Complete))
	}
	for i := range done {
		if ts[i].Value != done[i].Value || !reflect.DeepEqual(ts[i].Params, done[i].Params) {
			t.Errorf("finished trial %d changed on resume", i)
		}
	}
	recs := readJournal(t, path) // no cut-short line is left
	finishes := map[int]int{}
	for _, r := range recs {
		if r.Op == storages.OpFinishTrial {
			finishes[*r.Trial]++
		}
	}
	for n := range 7 {
		if finishes[n] != 1 {
			t.Errorf("trial %d has %d finish records", n, finishes[n])
		}
	}
	// Bad lines in the middle are skipped, counted in one warning.
	appendRecords(t, path, `not json`, `{"op":"set_param","study":"c","trial":99}`)
	logBuf.Reset()
	s3 := openStudy(t, path, "c", search.NewRandomSampler(3), logger)
	if ts3, _ := s3.Trials(); len(ts3) != 7 {
		t.Errorf("%d trials after bad lines, want 7", len(ts3))
	}
	if !strings.Contains(logBuf.String(), "unreadable=1 not_applying=1") {
		t.Errorf("bad lines not reported; log:\n%s", logBuf.String())
	}
}

func checkUniqueNumbers(t *testing.T, path, study string, want int) map[int]bool {
	t.Helper()
	numbers, pids := map[int]bool{}, map[int]bool{}
	for _, r := range readJournal(t, path) {
		if r.Op == storages.OpCreateTrial && r.Study == study {
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
			j, err := storages.OpenJournal(path, searchtest.Quiet)
			if err != nil {
				t.Error(err)
				return
			}
			defer j.Close()
			s, err := search.NewStudy(search.Config{Name: "shared", Sampler: searchtest.MustTPE(t, search.TPEOptions{Seed: int64(w), NStartupTrials: 5}), Storage: j, Logger: searchtest.Quiet})
			if err != nil {
				t.Error(err)
				return
			}
			if err := s.Optimize(context.Background(), searchbench.Sphere5, 10, 0); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	checkUniqueNumbers(t, path, "shared", 40)
	s := openStudy(t, path, "shared", nil, nil)
	if ts, _ := s.Trials(); studydata.CountStates(ts, studydata.Complete) != 40 {
		t.Fatalf("%d complete trials, want 40", studydata.CountStates(ts, studydata.Complete))
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
	s := openStudy(t, path, "mp", searchtest.MustTPE(t, search.TPEOptions{Seed: 9}), nil)
	ts, _ := s.Trials()
	if len(ts) != 3 || studydata.CountStates(ts, studydata.Complete) != 2 || ts[2].State != studydata.Fail || len(ts[2].Params) != 5 {
		t.Fatalf("after the crash: %d trials, trial 2 %v with %d params", len(ts), ts[2].State, len(ts[2].Params))
	}
	if err := s.OptimizeUntil(context.Background(), searchbench.Sphere5, 5, 0); err != nil {
		t.Fatal(err)
	}
	ts, _ = s.Trials()
	if len(ts) != 6 || studydata.CountStates(ts, studydata.Complete) != 5 {
		t.Fatalf("after OptimizeUntil(5): %d trials, %d complete", len(ts), studydata.CountStates(ts, studydata.Complete))
	}
	checkUniqueNumbers(t, path, "mp", 6)
}

// TestJournalRefusesForeignFiles: OpenJournal refuses a file that is not a
// journal in one line naming the file and what it holds, before writing
// anything, and logs nothing.
func TestJournalRefusesForeignFiles(t *testing.T) {
	for _, c := range storages.ForeignFiles {
		t.Run(c.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "study.jsonl")
			if err := os.WriteFile(path, []byte(c.Content), 0o644); err != nil {
				t.Fatal(err)
			}
			var logBuf bytes.Buffer
			j, err := storages.OpenJournal(path, slog.New(slog.NewTextHandler(&logBuf, nil)))
			if err == nil {
				// Before the fix the file was taken; a study then wrote into it.
				s, serr := search.NewStudy(search.Config{Name: "s", Sampler: search.NewRandomSampler(1), Storage: j, Logger: searchtest.Quiet})
				if serr == nil {
					s.Optimize(context.Background(), searchbench.Sphere5, 1, 0)
				}
				j.Close()
				t.Errorf("OpenJournal took a %s", c.Name)
			} else if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, path) || !strings.Contains(msg, c.Reason) {
				t.Errorf("error %q: want one line naming %s and %q", msg, path, c.Reason)
			}
			if logBuf.Len() > 0 {
				t.Errorf("%d log bytes for a refused file, want none:\n%.300s", logBuf.Len(), logBuf.String())
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, []byte(c.Content)) {
				t.Errorf("the file changed: %d bytes, was %d", len(got), len(c.Content))
			}
		})
	}
}

// TestJournalHeader: a new journal, and an existing empty file adopted as
// one, start with the header line; reopened, the study is there.
func TestJournalHeader(t *testing.T) {
	for _, existing := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "h.jsonl")
		if existing {
			os.WriteFile(path, nil, 0o644)
		}
		s := openStudy(t, path, "h", search.NewRandomSampler(1), nil)
		if err := s.Optimize(context.Background(), searchbench.Sphere5, 2, 0); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		if !bytes.HasPrefix(b, []byte(storages.JournalHeaderLine)) || bytes.Count(b, []byte(storages.JournalHeaderLine)) != 1 {
			t.Errorf("existing empty file %v: the journal does not start with the header once: %.80q", existing, b)
		}
		s2 := openStudy(t, path, "h", search.NewRandomSampler(2), nil)
		if ts, _ := s2.Trials(); studydata.CountStates(ts, studydata.Complete) != 2 {
			t.Errorf("existing empty file %v: %d complete trials after reopening, want 2", existing, studydata.CountStates(ts, studydata.Complete))
		}
	}
}

// TestJournalRepairsOnlyItsCutShortTail: a journal (with the header, or
// written before it) whose last record was cut short is read with one
// warning and left unchanged by reading; the next write removes just the
// cut-short tail, saying so once. A tail that is not a record is never
// removed: writing is refused and the file stays as it is.
func TestJournalRepairsOnlyItsCutShortTail(t *testing.T) {
	study := `{"op":"create_study","study":"r","v":1,"direction":"minimize"}` + "\n"
	trial := fmt.Sprintf(`{"op":"create_trial","study":"r","trial":0,"owner":%s}`, deadOwnerJSON()) + "\n"
	cut := `{"op":"finish_trial","study":"r","trial":0,"sta`
	for _, c := range []struct {
		name, keep, tail string
		trials           int // trials read before the write
	}{
		{"journal", storages.JournalHeaderLine + study + trial, cut, 1},
		{"journal written before the header", study + trial, cut, 1},
		{"journal with a cut-short first record", storages.JournalHeaderLine, `{"op":"create_st`, 0},
		{"only a cut-short header", "", `{"format":"gomase-sea`, 0},
		{"only a cut-short first record written before the header", "", `{"op":"create_study","study":"r","v`, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "r.jsonl")
			os.WriteFile(path, []byte(c.keep+c.tail), 0o644)
			var logBuf bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logBuf, nil))
			j, err := storages.OpenJournal(path, logger)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			if got, _ := os.ReadFile(path); string(got) != c.keep+c.tail {
				t.Fatal("opening the journal changed it")
			}
			if n := strings.Count(logBuf.String(), "ends with a cut-short record"); n != 1 {
				t.Errorf("%d warnings about the cut-short record, want 1:\n%s", n, logBuf.String())
			}
			s, err := search.NewStudy(search.Config{Name: "r", Sampler: search.NewRandomSampler(1), Storage: j, Logger: logger})
			if err != nil {
				t.Fatal(err)
			}
			if ts, _ := s.Trials(); len(ts) != c.trials {
				t.Errorf("%d trials, want %d", len(ts), c.trials)
			}
			if err := s.Optimize(context.Background(), searchbench.Sphere5, 1, 0); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			if !strings.HasPrefix(string(got), c.keep) {
				t.Errorf("the write changed the complete lines:\n%s", got)
			}
			readJournal(t, path) // every line a record (the tail is gone), a final newline
			if n := strings.Count(logBuf.String(), "removed a cut-short"); n != 1 {
				t.Errorf("%d log lines about the repair, want 1:\n%s", n, logBuf.String())
			}
		})
	}

	t.Run("tail that is not a record", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "r.jsonl")
		content := storages.JournalHeaderLine + study + "\x00\x01\x02 not a record"
		os.WriteFile(path, []byte(content), 0o644)
		j, err := storages.OpenJournal(path, searchtest.Quiet)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		_, err = search.NewStudy(search.Config{Name: "other", Storage: j, Logger: searchtest.Quiet})
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a cut-short record") {
			t.Errorf("writing after a tail that is not a record: %v", err)
		}
		if got, _ := os.ReadFile(path); string(got) != content {
			t.Errorf("the file changed:\n%q", got)
		}
	})
}

// TestJournalBadLinesSummarised: unreadable lines and records that do not
// apply are reported in one warning with their counts, not one each.
func TestJournalBadLinesSummarised(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.jsonl")
	s := openStudy(t, path, "b", search.NewRandomSampler(1), nil)
	if err := s.Optimize(context.Background(), searchbench.Sphere5, 2, 0); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i := range 300 {
		lines = append(lines, fmt.Sprintf("garbage %d", i))
	}
	for i := range 200 {
		lines = append(lines, fmt.Sprintf(`{"op":"set_param","study":"b","trial":%d}`, 100+i))
	}
	appendRecords(t, path, lines...)
	var logBuf bytes.Buffer
	s2 := openStudy(t, path, "b", search.NewRandomSampler(2), slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if ts, _ := s2.Trials(); studydata.CountStates(ts, studydata.Complete) != 2 {
		t.Errorf("%d complete trials, want 2", studydata.CountStates(ts, studydata.Complete))
	}
	log := strings.TrimSpace(logBuf.String())
	if strings.Count(log, "\n") != 0 || !strings.Contains(log, "unreadable=300") || !strings.Contains(log, "not_applying=200") {
		t.Errorf("want one warning with unreadable=300 and not_applying=200; log:\n%.600s", log)
	}
}

// TestCreateJournal: a journal made with CreateJournal appears only when
// its fill succeeded and the context is not done; otherwise nothing is left
// in the folder. An existing file is never replaced.
func TestCreateJournal(t *testing.T) {
	createStudy := func(j *storages.JournalStorage) error {
		_, err := search.NewStudy(search.Config{Name: "c", Storage: j, Logger: searchtest.Quiet})
		return err
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name  string
		ctx   context.Context
		fill  func(*storages.JournalStorage) error
		exist bool
		want  string // "" for success
	}{
		{"success", context.Background(), createStudy, false, ""},
		{"fill fails after writing", context.Background(), func(j *storages.JournalStorage) error {
			if err := createStudy(j); err != nil {
				return err
			}
			return errors.New("bad input")
		}, false, "bad input"},
		{"interrupted", cancelled, createStudy, false, "context canceled; nothing was written"},
		{"existing file", context.Background(), createStudy, true, "already exists"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "new.jsonl")
			if c.exist {
				os.WriteFile(path, []byte("mine\n"), 0o644)
			}
			err := storages.CreateJournal(c.ctx, path, searchtest.Quiet, c.fill)
			entries, _ := os.ReadDir(dir)
			got, _ := os.ReadFile(path)
			switch {
			case c.want == "":
				if err != nil || len(entries) != 1 || !bytes.HasPrefix(got, []byte(storages.JournalHeaderLine)) {
					t.Fatalf("err %v, %d files, journal %q", err, len(entries), got)
				}
				if len(readJournal(t, path)) != 1 {
					t.Errorf("want the study's record in the journal")
				}
			case err == nil || !strings.Contains(err.Error(), c.want):
				t.Errorf("err %v, want %q", err, c.want)
			case c.exist && (len(entries) != 1 || string(got) != "mine\n"):
				t.Errorf("the existing file changed, or a file was left: %d files, %q", len(entries), got)
			case !c.exist && len(entries) != 0:
				t.Errorf("a failed CreateJournal left %d files", len(entries))
			}
		})
	}
}
