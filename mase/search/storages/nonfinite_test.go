//go:build unix

package storages_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/search/internal/searchtest"
	"github.com/gomase/gomase/mase/search/searchbench"
	"github.com/gomase/gomase/mase/search/storages"
	"github.com/gomase/gomase/mase/search/studydata"
)

// TestStoragesRefuseNonFiniteValues: every storage refuses to complete a
// trial with NaN or ±Inf, and to import a complete trial holding one, in
// one line naming the trial, and records nothing.
func TestStoragesRefuseNonFiniteValues(t *testing.T) {
	for _, k := range storageKinds {
		t.Run(k.name, func(t *testing.T) {
			s := k.open(t)
			if _, _, err := s.CreateStudy("n", studydata.Minimize); err != nil {
				t.Fatal(err)
			}
			n, _, err := createTrial(s, "n")
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
				_, err := finishTrial(s, "n", n, studydata.Complete, v, "")
				if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), fmt.Sprintf("trial %d with value %v", n, v)) {
					t.Errorf("completing with %v: %v", v, err)
				}
				err = s.ImportStudy(fmt.Sprintf("imported-%v", v), studydata.Minimize, []studydata.FrozenTrial{{State: studydata.Complete, Value: v}})
				if err == nil || !strings.Contains(err.Error(), "a complete trial needs a finite value") {
					t.Errorf("importing a complete trial with %v: %v", v, err)
				}
				if _, err := s.StudyDirection(fmt.Sprintf("imported-%v", v)); err == nil {
					t.Errorf("the refused import of %v left its study", v)
				}
			}
			ts, _ := s.Trials("n")
			if len(ts) != 1 || ts[0].State != studydata.Running {
				t.Errorf("after the refusals: %d trials, %v", len(ts), ts[0].State)
			}
		})
	}
}

// TestPostgresNonFiniteValueNotBest: a trial stored as complete with NaN
// (or ±Inf) by another program is read as failed, with a message, and
// reported by study and trial in a warning: a resumed study neither ranks
// it best (it used to: NaN compares false with everything) nor hands it to
// the sampler.
func TestPostgresNonFiniteValueNotBest(t *testing.T) {
	u := pgDatabase(t)
	p := openPG(t, u)
	s := searchtest.NewStudy(t, search.Config{Name: "nan", Direction: studydata.Maximize, Sampler: search.NewRandomSampler(1), Storage: p})
	if err := s.Optimize(context.Background(), searchbench.Sphere5, 3, 0); err != nil {
		t.Fatal(err)
	}
	for number, v := range map[int]string{0: "NaN", 2: "-Infinity"} {
		if _, err := storages.Pool(p).Exec(context.Background(), "UPDATE gomase_trials SET value = $1::float8 WHERE number = $2", v, number); err != nil {
			t.Fatal(err)
		}
	}
	var logBuf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	fresh, err := storages.OpenPostgres(u, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	s2 := searchtest.NewStudy(t, search.Config{Name: "nan", Direction: studydata.Maximize, Sampler: search.NewRandomSampler(2), Storage: fresh, Logger: logger})
	best, err := s2.BestTrial()
	if err != nil || best.Number != 1 || math.IsNaN(best.Value) {
		t.Fatalf("BestTrial: trial %d value %v, %v; want trial 1, the only finite one", best.Number, best.Value, err)
	}
	ts, _ := s2.Trials()
	for _, n := range []int{0, 2} {
		if ts[n].State != studydata.Fail || !strings.Contains(ts[n].Message, "which is not a finite number; read as failed") {
			t.Errorf("trial %d: %v %q", n, ts[n].State, ts[n].Message)
		}
	}
	log := logBuf.String()
	if !strings.Contains(log, "study=nan") || !strings.Contains(log, "trial 0 value NaN") || !strings.Contains(log, "trial 2 value -Inf") {
		t.Errorf("the warning does not name the study and trials; log:\n%s", log)
	}
}

// TestJournalNonFiniteValueReadAsFailed: a journal whose finish or
// add_trial record holds a value that is not a finite number (written by
// hand or another program) reads that trial as failed, saying so, instead
// of leaving it running or dropping it (which broke the numbering of the
// trials after it).
func TestJournalNonFiniteValueReadAsFailed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nan.jsonl")
	s := openStudy(t, path, "v", search.NewRandomSampler(1), nil)
	if err := s.Optimize(context.Background(), searchbench.Sphere5, 1, 0); err != nil {
		t.Fatal(err)
	}
	s.Storage().(*storages.JournalStorage).Close()
	appendRecords(t, path,
		fmt.Sprintf(`{"op":"create_trial","study":"v","trial":1,"owner":%s}`, deadOwnerJSON()),
		`{"op":"finish_trial","study":"v","trial":1,"state":"complete","value":1e999}`,
		`{"op":"add_trial","study":"v","trial":2,"state":"complete","value":"NaN"}`,
		`{"op":"add_trial","study":"v","trial":3,"state":"complete","value":0.5}`)
	var logBuf bytes.Buffer
	s2 := openStudy(t, path, "v", search.NewRandomSampler(2), slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelWarn})))
	ts, _ := s2.Trials()
	if len(ts) != 4 || ts[3].State != studydata.Complete || ts[3].Value != 0.5 {
		t.Fatalf("%d trials; want 4, the last complete with 0.5", len(ts))
	}
	for _, n := range []int{1, 2} {
		if ts[n].State != studydata.Fail || !strings.Contains(ts[n].Message, "which is not a finite number; read as failed") {
			t.Errorf("trial %d: %v %q", n, ts[n].State, ts[n].Message)
		}
	}
	if log := logBuf.String(); !strings.Contains(log, "study v trial 1 value 1e999") || !strings.Contains(log, `study v trial 2 value \"NaN\"`) {
		t.Errorf("the warning does not name the trials; log:\n%s", log)
	}
}
