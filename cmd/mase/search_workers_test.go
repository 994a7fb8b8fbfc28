//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gomase/gomase/internal/pgtest"
	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/search/storages"
)

// worker is a `mase search` process: this test binary run as mase.
type worker struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{} // closed when the process has exited
	err            error         // its exit status, once done
}

func startWorker(t *testing.T, args ...string) *worker {
	t.Helper()
	w := &worker{cmd: exec.Command(os.Args[0], args...), done: make(chan struct{})}
	w.cmd.Env = append(os.Environ(), "GOMASE_RUN_AS_MASE=1")
	w.cmd.Stdout, w.cmd.Stderr = &w.stdout, &w.stderr
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		w.err = w.cmd.Wait()
		close(w.done)
	}()
	t.Cleanup(func() {
		w.cmd.Process.Kill() // if it still runs
		<-w.done
	})
	return w
}

// wait waits for the worker to exit, failing the test if it fails or takes
// more than a minute.
func (w *worker) wait(t *testing.T, name string) {
	t.Helper()
	select {
	case <-w.done:
		if w.err != nil {
			t.Fatalf("%s: %v\nstderr:\n%s", name, w.err, w.stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("%s still runs after a minute\nstderr:\n%s", name, w.stderr.String())
	}
}

// studyTrials reads every trial of a study.
func studyTrials(t *testing.T, storage, study string) []search.FrozenTrial {
	t.Helper()
	st, err := storages.Open(storage, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := search.NewStudy(search.Config{Name: study, Direction: search.Maximize, Storage: st, Sampler: search.NewRandomSampler(0),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := s.Trials()
	if err != nil {
		t.Fatal(err)
	}
	for i, tr := range ts {
		if tr.Number != i {
			t.Fatalf("trials()[%d] is trial %d: numbers are not 0, 1, 2, …", i, tr.Number)
		}
	}
	return ts
}

// TestSearchWorkers runs `mase search` worker processes on one study in a
// PostgreSQL database of a private server (internal/pgtest), with the toy
// objective.
func TestSearchWorkers(t *testing.T) {
	srv := pgtest.New(t)
	t.Run("tpe", func(t *testing.T) { searchWorkersTPE(t, srv.Database(t)) })
	t.Run("grid", func(t *testing.T) { searchWorkersGrid(t, srv.Database(t)) })
}

// searchWorkersTPE: three TPE workers (seeds 1, 2, 3) share a study of 12
// trials with --retry-failed 1; the second is SIGKILLed in the middle of a
// trial. The study ends with exactly 12 complete trials; the killed trial is
// marked Fail and retried once with its parameters; no number is used twice;
// and the survivors' TPE proposals depend on the other workers' trials.
func searchWorkersTPE(t *testing.T, u string) {
	const study, total, startup = "workers", 12, 4
	args := func(seed int) []string {
		return []string{"search", "--space", "toy", "--toy-sleep", "250ms", "--sampler", "tpe", "--tpe-startup", strconv.Itoa(startup),
			"--trials", strconv.Itoa(total), "--storage", u, "--study", study, "--retry-failed", "1", "--heartbeat", "1s",
			"--seed", strconv.Itoa(seed)}
	}
	start := time.Now()
	workers := []*worker{startWorker(t, args(1)...), startWorker(t, args(2)...), startWorker(t, args(3)...)}
	victim := workers[1]

	// Kill the second worker in the middle of a trial: once the database
	// shows it running one with its five parameters set.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	killed := -1
	for killed < 0 {
		err := conn.QueryRow(ctx, `SELECT t.number FROM gomase_trials t
			WHERE t.owner_pid = $1 AND t.state = 'running'
			AND (SELECT count(*) FROM gomase_trial_params p WHERE p.study_id = t.study_id AND p.number = t.number) = 5`,
			victim.cmd.Process.Pid).Scan(&killed)
		if err != nil && ctx.Err() != nil {
			t.Fatalf("worker 2 never ran a trial: %v\nstderr:\n%s", err, victim.stderr.String())
		}
		if err != nil {
			time.Sleep(5 * time.Millisecond) // not yet (or no table yet)
		}
	}
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.done
	workers[0].wait(t, "worker 1")
	workers[2].wait(t, "worker 3")
	t.Logf("3 workers, worker 2 killed in trial %d: %v", killed, time.Since(start).Round(time.Millisecond))

	ts := studyTrials(t, u, study)
	complete, states := 0, map[search.TrialState]int{}
	for _, tr := range ts {
		states[tr.State]++
		if tr.State == search.Complete {
			complete++
		}
	}
	if complete != total || len(ts) != total+1 || states[search.Fail] != 1 {
		t.Fatalf("%d trials (%v), %d complete; want exactly %d complete and the killed one failed", len(ts), states, complete, total)
	}
	k := ts[killed]
	if k.State != search.Fail || !strings.Contains(k.Message, "is gone") {
		t.Errorf("killed trial %d: %v %q, want failed as gone", killed, k.State, k.Message)
	}
	var retry *search.FrozenTrial
	for i := range ts {
		if ts[i].SystemAttrs["failed_trial"] != "" {
			if retry != nil {
				t.Errorf("trials %d and %d both retry a trial", retry.Number, ts[i].Number)
			}
			retry = &ts[i]
		}
	}
	if retry == nil || retry.Number <= killed || retry.State != search.Complete ||
		retry.SystemAttrs["failed_trial"] != strconv.Itoa(killed) || retry.SystemAttrs["retry_history"] != fmt.Sprintf("[%d]", killed) ||
		!reflect.DeepEqual(retry.Params, k.Params) {
		t.Fatalf("retry of killed trial %d (params %v): %+v", killed, k.Params, retry)
	}
	t.Logf("trial %d retried as trial %d with the same parameters %v", killed, retry.Number, retry.Params)

	// TPE reads the other workers' trials. A worker's proposals depend only on
	// its seed and the trials it reads, so without the others' trials they
	// would be those of the same search run alone. They start the same (the
	// random start-up trials, drawn before the study holds 4 complete ones)
	// and then differ: once the study's start-up trials are complete, the
	// worker proposes from TPE with the others' results, where alone it would
	// still draw at random.
	for i, w := range []*worker{workers[0], workers[2]} {
		seed := []int{1, 3}[i]
		lines, _ := decodeTrialLines(t, w.stdout.String())
		var sampled []trialLine
		for _, l := range lines {
			if l.Number != retry.Number {
				sampled = append(sampled, l)
			}
		}
		if len(sampled) < 2 {
			t.Fatalf("worker %d ran %d trials of its own; too few to compare", seed, len(sampled))
		}
		code, out, errOut := runCLI("search", "--space", "toy", "--sampler", "tpe", "--tpe-startup", strconv.Itoa(startup),
			"--trials", strconv.Itoa(len(sampled)), "--seed", strconv.Itoa(seed))
		if code != 0 {
			t.Fatalf("the run alone: %s", errOut)
		}
		alone, _ := decodeTrialLines(t, out)
		js := func(p map[string]any) string { b, _ := json.Marshal(p); return string(b) }
		if js(sampled[0].Params) != js(alone[0].Params) {
			t.Errorf("worker %d's first trial %s differs from the same search alone %s: the seed does not fix the start-up draws",
				seed, js(sampled[0].Params), js(alone[0].Params))
		}
		differ := -1
		for j := range sampled {
			if js(sampled[j].Params) != js(alone[j].Params) {
				differ = j
				break
			}
		}
		if differ < 0 {
			t.Errorf("worker %d proposed exactly what it proposes alone over %d trials: its sampler ignored the other workers' trials", seed, len(sampled))
			continue
		}
		t.Logf("worker %d: its trial %d (its %d-th) is %s with the others' trials, %s alone", seed, sampled[differ].Number, differ+1,
			js(sampled[differ].Params), js(alone[differ].Params))
	}
}

// searchWorkersGrid: two grid workers with the same seed share the toy grid
// (24 points) on PostgreSQL: each point is evaluated exactly once.
func searchWorkersGrid(t *testing.T, u string) {
	args := []string{"search", "--space", "toy", "--toy-sleep", "10ms", "--sampler", "grid", "--trials", "100",
		"--storage", u, "--study", "grid"}
	start := time.Now()
	a, b := startWorker(t, args...), startWorker(t, args...)
	a.wait(t, "worker 1")
	b.wait(t, "worker 2")
	ts := studyTrials(t, u, "grid")
	seen := map[string]int{}
	for _, tr := range ts {
		if tr.State != search.Complete {
			t.Errorf("trial %d: %v %s", tr.Number, tr.State, tr.Message)
		}
		js, _ := json.Marshal(tr.Params)
		seen[string(js)]++
	}
	for p, n := range seen {
		if n != 1 {
			t.Errorf("grid point %s evaluated %d times", p, n)
		}
	}
	la, _ := decodeTrialLines(t, a.stdout.String())
	lb, _ := decodeTrialLines(t, b.stdout.String())
	if len(ts) != 24 || len(seen) != 24 || len(la)+len(lb) != 24 {
		t.Fatalf("%d trials over %d points (workers: %d + %d), want the 24 grid points once", len(ts), len(seen), len(la), len(lb))
	}
	t.Logf("2 grid workers: %d + %d trials over the 24 points in %v", len(la), len(lb), time.Since(start).Round(time.Millisecond))
}
