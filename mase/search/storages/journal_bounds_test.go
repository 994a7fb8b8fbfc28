//go:build unix

package storages_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/search/internal/searchtest"
	"github.com/gomase/gomase/mase/search/searchbench"
	"github.com/gomase/gomase/mase/search/storages"
	"github.com/gomase/gomase/mase/search/studydata"
)

// TestJournalKeepsCompleteLastRecord: a journal whose last record is
// complete but lacks its final newline (a crash cut just the newline) keeps
// that record: its trial is read as it finished (it used to be thrown away
// and the trial failed), and the next write adds the newline and keeps
// every byte before it. The same holds for a journal that is only its
// header, or only a study's creation written before the header.
func TestJournalKeepsCompleteLastRecord(t *testing.T) {
	t.Run("finished trial", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "k.jsonl")
		s := openStudy(t, path, "k", search.NewRandomSampler(1), nil)
		if err := s.Optimize(context.Background(), searchbench.Sphere5, 2, 0); err != nil {
			t.Fatal(err)
		}
		before, _ := s.Trials()
		s.Storage().(*storages.JournalStorage).Close()
		whole, _ := os.ReadFile(path)
		cut := bytes.TrimSuffix(whole, []byte("\n"))
		if err := os.WriteFile(path, cut, 0o644); err != nil {
			t.Fatal(err)
		}

		var logBuf bytes.Buffer
		s2 := openStudy(t, path, "k", search.NewRandomSampler(2), slog.New(slog.NewTextHandler(&logBuf, nil)))
		after, _ := s2.Trials()
		if len(after) != 2 || after[1].State != studydata.Complete || after[1].Value != before[1].Value {
			t.Fatalf("the last trial after reopening: %d trials, last %v %v; want complete with %v", len(after), after[len(after)-1].State,
				after[len(after)-1].Value, before[1].Value)
		}
		if !strings.Contains(logBuf.String(), "complete record without its final newline") || strings.Contains(logBuf.String(), "cut-short") {
			t.Errorf("want one warning about the missing newline and none about a cut-short record; log:\n%s", logBuf.String())
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, cut) {
			t.Error("reading the journal changed it")
		}
		if err := s2.Optimize(context.Background(), searchbench.Sphere5, 1, 0); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		if !bytes.HasPrefix(got, whole) {
			t.Errorf("the write did not keep the journal and add its newline:\n%q", got[:min(len(got), len(whole)+1)])
		}
		readJournal(t, path) // every line a record, a final newline
		s3 := openStudy(t, path, "k", search.NewRandomSampler(3), nil)
		if ts, _ := s3.Trials(); studydata.CountStates(ts, studydata.Complete) != 3 {
			t.Errorf("%d complete trials after the write, want 3", studydata.CountStates(ts, studydata.Complete))
		}
	})
	for _, c := range []struct{ name, content string }{
		{"only the header", strings.TrimSuffix(storages.JournalHeaderLine, "\n")},
		{"only a study's creation written before the header", `{"op":"create_study","study":"k","v":1,"direction":"minimize"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "k.jsonl")
			os.WriteFile(path, []byte(c.content), 0o644)
			s := openStudy(t, path, "k", search.NewRandomSampler(1), nil)
			if err := s.Optimize(context.Background(), searchbench.Sphere5, 1, 0); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			if !bytes.HasPrefix(got, []byte(c.content+"\n")) || bytes.Count(got, []byte(`"op":"create_study"`)) != 1 {
				t.Errorf("journal:\n%s", got)
			}
			readJournal(t, path)
		})
	}
}

// TestJournalBoundsLines: a line longer than the bound is skipped as
// unreadable without being held whole (reading a 64 MiB line allocates far
// less than 64 MiB), the records around it are read, and a record longer
// than the bound is refused in one line before anything is written.
func TestJournalBoundsLines(t *testing.T) {
	defer storages.SetMaxJournalLine(1 << 20)()
	path := filepath.Join(t.TempDir(), "long.jsonl")
	s := openStudy(t, path, "l", search.NewRandomSampler(1), nil)
	if err := s.Optimize(context.Background(), searchbench.Sphere5, 1, 0); err != nil {
		t.Fatal(err)
	}
	s.Storage().(*storages.JournalStorage).Close()
	long := `{"op":"set_user_attr","study":"l","trial":0,"name":"blob","value":"` + strings.Repeat("x", 64<<20) + `"}`
	appendRecords(t, path, long, `{"op":"create_study","study":"after","v":1,"direction":"maximize"}`)
	long = ""

	var logBuf bytes.Buffer
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	j, err := storages.OpenJournal(path, slog.New(slog.NewTextHandler(&logBuf, nil)))
	runtime.ReadMemStats(&m1)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 16<<20 {
		t.Errorf("reading a journal with a 64 MiB line allocated %d MiB; a line is read up to its bound only", alloc>>20)
	}
	if !strings.Contains(logBuf.String(), "unreadable=1") || !strings.Contains(logBuf.String(), "longer than the 1 MiB a record may be") {
		t.Errorf("the long line is not reported; log:\n%.500s", logBuf.String())
	}
	if _, err := j.StudyDirection("after"); err != nil {
		t.Errorf("the record after the long line was not read: %v", err)
	}

	s2 := searchtest.NewStudy(t, search.Config{Name: "l", Sampler: search.NewRandomSampler(2), Storage: j})
	tr, err := s2.Ask(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	size := func() int64 { fi, _ := os.Stat(path); return fi.Size() }
	before := size()
	err = tr.SetUserAttr("blob", strings.Repeat("y", 2<<20))
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "a record may take at most 1 MiB") {
		t.Errorf("a 2 MiB user attribute: %v; want a one-line refusal", err)
	}
	if size() != before {
		t.Error("the refused record was written")
	}
}

// TestJournalSizeBound: a journal larger than the bound (a sparse file of
// 5 GiB after a valid header) is refused at once, in one line, before it is
// read.
func TestJournalSizeBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.jsonl")
	if err := os.WriteFile(path, []byte(storages.JournalHeaderLine), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 5<<30); err != nil {
		t.Fatal(err)
	}
	_, err := storages.OpenJournal(path, searchtest.Quiet)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "is 5 GiB, more than the 4 GiB allowed for a study journal") {
		t.Fatalf("OpenJournal of 5 GiB: %v", err)
	}
}

// TestCreateJournalSweepsKilledTemps: CreateJournal removes the temporary
// journals its killed runs left for the same path — named as it names
// them, on this machine, by a process that is gone — and nothing else: not
// a live process's, not another machine's, not a file of another name or
// content.
func TestCreateJournalSweepsKilledTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "new.jsonl")
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	self := storages.SelfOwner()
	dead := storages.Owner{Host: self.Host, PID: cmd.Process.Pid, Boot: self.Boot, Start: 1}
	elsewhere := storages.Owner{Host: "another-machine", PID: cmd.Process.Pid, Start: 1}
	files := map[string]string{
		storages.TempPrefix(path, dead) + "a1":                              storages.JournalHeaderLine + `{"op":"create_study","study":"s","v":1,"direction":"minimize"}` + "\n",
		storages.TempPrefix(path, dead) + "b2":                              "",
		storages.TempPrefix(path, self) + "c3":                              storages.JournalHeaderLine,
		storages.TempPrefix(path, elsewhere) + "d4":                         storages.JournalHeaderLine,
		storages.TempPrefix(path, dead) + "e5":                              "not a journal: the user's\n",
		".new.jsonl.tmp-notours":                                            storages.JournalHeaderLine,
		storages.TempPrefix(filepath.Join(dir, "other.jsonl"), dead) + "f6": storages.JournalHeaderLine,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := storages.CreateJournal(context.Background(), path, searchtest.Quiet, func(j *storages.JournalStorage) error {
		_, _, err := j.CreateStudy("s", studydata.Minimize)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for name := range files {
		_, err := os.Lstat(filepath.Join(dir, name))
		swept := strings.HasPrefix(name, storages.TempPrefix(path, dead)) && !strings.HasSuffix(name, "e5")
		if swept != os.IsNotExist(err) {
			t.Errorf("%s: removed %v, want %v", name, os.IsNotExist(err), swept)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(files)-2+1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("folder holds %s", strings.Join(names, ", "))
	}
}
