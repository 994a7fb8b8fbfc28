//go:build unix

package storages_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/search/internal/searchtest"
	"github.com/gomase/gomase/mase/search/searchbench"
	"github.com/gomase/gomase/mase/search/storages"
	"github.com/gomase/gomase/mase/search/studydata"
)

// otherHost is a worker of another machine (a container that is gone, say).
var otherHost = storages.Owner{Host: "old-container-1f2e", PID: 1, Start: 42}

// journalWithOrphan makes a journal holding study "u" with one complete
// trial and trial 1 Running in the worker o, then the raw lines extra.
func journalWithOrphan(t *testing.T, o storages.Owner, extra ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "u.jsonl")
	j, err := storages.OpenJournal(path, searchtest.Quiet)
	if err != nil {
		t.Fatal(err)
	}
	s := searchtest.NewStudy(t, search.Config{Name: "u", Sampler: search.NewRandomSampler(1), Storage: j})
	if err := s.Optimize(context.Background(), searchbench.Sphere5, 1, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := storages.OrphanTrial(j, "u", o); err != nil {
		t.Fatal(err)
	}
	j.Close()
	appendRecords(t, path, extra...)
	return path
}

// TestUnjudgedTrialsReportedNotWaited: a resumed study whose only running
// trial belongs to a worker it cannot judge — on another machine without a
// heartbeat, with no worker recorded, or one whose finish record is
// unreadable — warns of it at once, and OptimizeUntil returns an
// *UnjudgedError naming it and the remedy instead of waiting for it (it
// used to wait until its context ended). With WaitForUnjudged it waits.
func TestUnjudgedTrialsReportedNotWaited(t *testing.T) {
	for _, c := range []struct {
		name  string
		owner storages.Owner
		extra []string
		why   string
	}{
		{"another machine", otherHost, nil, `its worker runs on machine "old-container-1f2e"`},
		{"no worker recorded", storages.Owner{}, nil, "no worker is recorded with it"},
		{"unreadable finish record", otherHost, []string{`{"op":"finish_trial","study":"u","trial":1,"state":"compl` + "\x00garbage"},
			"the journal has 1 line(s) that could not be read (the first is line 11)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := journalWithOrphan(t, c.owner, c.extra...)
			j, err := storages.OpenJournal(path, searchtest.Quiet)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			var logBuf bytes.Buffer
			s, err := search.NewStudy(search.Config{Name: "u", Sampler: search.NewRandomSampler(2), Storage: j,
				Logger: slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelWarn}))})
			if err != nil {
				t.Fatal(err)
			}
			if log := logBuf.String(); !strings.Contains(log, "cannot check") || !strings.Contains(log, "trials=[1]") {
				t.Errorf("no warning at once about trial 1; log:\n%s", log)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err = s.OptimizeUntil(ctx, searchbench.Sphere5, 2, 0)
			var ue *search.UnjudgedError
			if !errors.As(err, &ue) || !reflect.DeepEqual(search.UnjudgedNumbers(ue.Trials), []int{1}) {
				t.Fatalf("OptimizeUntil: %v; want an *UnjudgedError naming trial 1", err)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, c.why) || !strings.Contains(msg, "mase search fail") ||
				!strings.Contains(msg, "trial 1") {
				t.Errorf("error %q: want one line naming trial 1, %q and the remedy", msg, c.why)
			}
			ts, _ := s.Trials()
			if len(ts) != 2 || ts[1].State != studydata.Running {
				t.Errorf("the unjudged trial was changed: %d trials", len(ts))
			}

			// Told to wait, it waits (until its context ends), and says why.
			logBuf.Reset()
			w := searchtest.NewStudy(t, search.Config{Name: "u", Sampler: search.NewRandomSampler(3), Storage: j, WaitForUnjudged: true,
				Logger: slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelWarn}))})
			short, stop := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer stop()
			if err := w.OptimizeUntil(short, searchbench.Sphere5, 2, 0); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("OptimizeUntil with WaitForUnjudged: %v, want the context's deadline", err)
			}

			// Marked failed by hand (what mase search fail does), it no
			// longer holds the study up.
			if _, _, err := j.FinishTrial("u", 1, studydata.Fail, 0, "marked failed by hand", 0); err != nil {
				t.Fatal(err)
			}
			if err := s.OptimizeUntil(ctx, searchbench.Sphere5, 2, 0); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestUnjudgedAmongLiveTrials: a worker waiting for a live trial and an
// unjudged one warns of the unjudged one at once and waits; once the live
// trial is done and only the unjudged one is left, it returns the error.
func TestUnjudgedAmongLiveTrials(t *testing.T) {
	path := journalWithOrphan(t, otherHost)
	j, err := storages.OpenJournal(path, searchtest.Quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var logBuf bytes.Buffer
	s := searchtest.NewStudy(t, search.Config{Name: "u", Sampler: search.NewRandomSampler(4), Storage: j,
		Logger: slog.New(slog.NewTextHandler(&syncWriter{w: &logBuf}, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	live, err := s.Ask(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		// complete 1, running 2 (the live one and the orphan): the limit 3 is reached.
		done <- s.OptimizeUntil(context.Background(), searchbench.Sphere5, 3, 20*time.Second)
	}()
	time.Sleep(500 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("OptimizeUntil returned while a live trial ran: %v", err)
	default:
	}
	if _, err := s.Tell(live, 0.5, nil); err != nil {
		t.Fatal(err)
	}
	err = <-done
	var ue *search.UnjudgedError
	if !errors.As(err, &ue) {
		t.Fatalf("after the live trial finished: %v, want an *UnjudgedError", err)
	}
}

// syncWriter serialises the writes of a logger used by two goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// TestPostgresUnjudgedTrials: a running trial of another host without a
// heartbeat is unjudged; with a heartbeat, or on this host, it is judged.
func TestPostgresUnjudgedTrials(t *testing.T) {
	u := pgDatabase(t)
	p := openPG(t, u)
	if _, _, err := p.CreateStudy("u", studydata.Minimize); err != nil {
		t.Fatal(err)
	}
	far, _, err := createTrial(storages.As(p, otherHost), "u")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := createTrial(p, "u"); err != nil { // this process: judged
		t.Fatal(err)
	}
	got, err := p.UnjudgedTrials("u")
	if err != nil || len(got) != 1 || got[0].Number != far || !strings.Contains(got[0].Why, "sends no heartbeat") {
		t.Fatalf("UnjudgedTrials: %+v %v; want trial %d", got, err, far)
	}
	if _, err := storages.Pool(p).Exec(context.Background(), "UPDATE gomase_trials SET heartbeat_ms = 1000 WHERE number = $1", far); err != nil {
		t.Fatal(err)
	}
	if got, err := p.UnjudgedTrials("u"); err != nil || len(got) != 0 {
		t.Fatalf("UnjudgedTrials with a heartbeat: %+v %v; want none", got, err)
	}
	if _, err := p.UnjudgedTrials("nope"); err == nil {
		t.Error("UnjudgedTrials of a missing study: no error")
	}
}

// TestJournalHeartbeat: seen from another machine, a journal trial whose
// worker beats is left alone, and is marked Fail once the beats stop; a
// trial whose worker sends none is unjudged, never failed from there; a
// heartbeat turned off clears the interval; and a worker killed mid-trial
// with the heartbeat on has its trial failed from another machine.
func TestJournalHeartbeat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hb.jsonl")
	const interval = 100 * time.Millisecond
	open := func() *storages.JournalStorage {
		j, err := storages.OpenJournal(path, searchtest.Quiet)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { j.Close() })
		return j
	}
	worker := open()
	if err := worker.SetHeartbeat(interval); err != nil {
		t.Fatal(err)
	}
	ws := searchtest.NewStudy(t, search.Config{Name: "hb", Storage: worker})
	beating, err := ws.Ask(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	silent := open()
	ss := searchtest.NewStudy(t, search.Config{Name: "hb", Storage: silent})
	quiet, err := ss.Ask(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := open()
	storages.SetJournalHost(elsewhere, "another-machine")
	sameHost := open()

	time.Sleep(2 * storages.HeartbeatGrace(interval))
	if failed, err := failStale(elsewhere, "hb"); err != nil || len(failed) != 0 {
		t.Fatalf("failStale while the heartbeat beats: %v %v", failed, err)
	}
	unjudged, err := elsewhere.UnjudgedTrials("hb")
	if err != nil || !reflect.DeepEqual(search.UnjudgedNumbers(unjudged), []int{quiet.Number()}) {
		t.Fatalf("UnjudgedTrials from another machine: %+v %v; want only trial %d, which sends no heartbeat", unjudged, err, quiet.Number())
	}
	// The heartbeat stops (as if the worker were killed).
	worker.Close()
	time.Sleep(storages.HeartbeatGrace(interval) + 2*interval)
	if failed, err := failStale(sameHost, "hb"); err != nil || len(failed) != 0 {
		t.Fatalf("failStale on the same machine (the process lives): %v %v", failed, err)
	}
	failed, err := failStale(elsewhere, "hb")
	if err != nil || !reflect.DeepEqual(failed, []int{beating.Number()}) {
		t.Fatalf("failStale from another machine after the heartbeat stopped: %v %v, want [%d]", failed, err, beating.Number())
	}
	ts, _ := elsewhere.Trials("hb")
	if got := ts[beating.Number()]; got.State != studydata.Fail || !got.Recovered || !strings.Contains(got.Message, "sent no heartbeat for") ||
		!strings.Contains(got.Message, "one was due every 100ms") {
		t.Errorf("trial %d: %v %q", got.Number, got.State, got.Message)
	}
	if ts[quiet.Number()].State != studydata.Running {
		t.Errorf("the trial without heartbeat is %v, want running", ts[quiet.Number()].State)
	}
	if _, err := ss.Tell(quiet, 1, nil); err != nil {
		t.Fatal(err)
	}

	// Turned off, the heartbeat clears its interval: the trial is no
	// longer judged by it.
	p := open()
	if err := p.SetHeartbeat(interval); err != nil {
		t.Fatal(err)
	}
	n, _, err := createTrial(p, "hb")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetHeartbeat(0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(storages.HeartbeatGrace(interval) + 2*interval)
	if failed, err := failStale(elsewhere, "hb"); err != nil || len(failed) != 0 {
		t.Fatalf("failStale after SetHeartbeat(0): %v %v", failed, err)
	}
	if unjudged, _ := elsewhere.UnjudgedTrials("hb"); !reflect.DeepEqual(search.UnjudgedNumbers(unjudged), []int{n}) {
		t.Errorf("after SetHeartbeat(0), UnjudgedTrials: %+v, want trial %d", unjudged, n)
	}
	if _, err := finishTrial(p, "hb", n, studydata.Complete, 1, ""); err != nil {
		t.Fatal(err)
	}

	// A worker process killed mid-trial with the heartbeat on: another
	// machine fails its trial once the heartbeat is stale.
	out, err := runChild(path, "heartbeat", 1, 1).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("crashing child: %v\n%s", err, out)
	}
	var killed []int
	deadline := time.Now().Add(10 * time.Second)
	for len(killed) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if killed, err = failStale(elsewhere, "mp"); err != nil {
			t.Fatal(err)
		}
	}
	if len(killed) != 1 {
		t.Fatalf("the killed child's trial was not failed from another machine")
	}
}

// TestJournalHeartbeatClockSkew: a heartbeat recorded long ago by the
// worker's clock is not taken as stale until this process, too, has read
// the journal for the grace without a newer beat (a worker whose clock is
// behind is not failed early); then it is.
func TestJournalHeartbeatClockSkew(t *testing.T) {
	path := journalWithOrphan(t, otherHost,
		fmt.Sprintf(`{"op":"heartbeat","study":"u","trial":1,"time":%q,"heartbeat_ms":100}`, time.Now().Add(-time.Hour).Format(time.RFC3339Nano)))
	j, err := storages.OpenJournal(path, searchtest.Quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if failed, err := failStale(j, "u"); err != nil || len(failed) != 0 {
		t.Fatalf("failStale just after reading the beat: %v %v, want none", failed, err)
	}
	if unjudged, _ := j.UnjudgedTrials("u"); len(unjudged) != 0 {
		t.Errorf("a beating trial is unjudged: %+v", unjudged)
	}
	time.Sleep(storages.HeartbeatGrace(100*time.Millisecond) + 100*time.Millisecond)
	if failed, err := failStale(j, "u"); err != nil || !reflect.DeepEqual(failed, []int{1}) {
		t.Fatalf("failStale after the grace: %v %v, want [1]", failed, err)
	}
}
