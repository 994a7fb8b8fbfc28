//go:build unix

package storages_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/search/internal/searchtest"
	"github.com/gomase/gomase/mase/search/storages"
	"github.com/gomase/gomase/mase/search/studydata"

	"github.com/gomase/gomase/internal/pgtest"
)

// TestStorageRetry: on every storage, a trial failed with retries enqueues a
// Waiting trial with its parameters and attributes, failed_trial and
// retry_history, which the next start runs; the retries of one original
// trial stop at the limit; a dead worker's trial is retried too.
func TestStorageRetry(t *testing.T) {
	for _, k := range storageKinds {
		t.Run(k.name, func(t *testing.T) {
			s := k.open(t)
			if _, _, err := s.CreateStudy("r", studydata.Minimize); err != nil {
				t.Fatal(err)
			}
			fd, cd := studydata.FloatDistribution{Low: 0, High: 1}, studydata.CategoricalDistribution{Choices: []any{"a", 2}}
			n, _, err := createTrial(s, "r")
			if err != nil {
				t.Fatal(err)
			}
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(s.SetParam("r", n, "x", 0.25, fd))
			must(s.SetParam("r", n, "c", 1, cd))
			must(s.SetUserAttr("r", n, "note", "first"))
			must(s.SetSystemAttr("r", n, "grid_id", "3"))
			attempt := n
			var history []int
			for round := 1; round <= 3; round++ {
				ft, retry, err := s.FinishTrial("r", attempt, studydata.Fail, 0, "boom", 2)
				must(err)
				if ft.State != studydata.Fail || ft.Number != attempt {
					t.Fatalf("round %d: finished %+v", round, ft)
				}
				history = append(history, attempt)
				if round == 3 {
					if retry != nil {
						t.Fatalf("a third retry of trial 0 with retries 2: %+v", retry)
					}
					break
				}
				if retry == nil {
					t.Fatalf("round %d: no retry", round)
				}
				hj := strings.ReplaceAll(fmt.Sprint(history), " ", ",")
				if retry.State != studydata.Waiting || retry.Params["x"] != 0.25 || retry.Params["c"] != 2 || retry.UserAttrs["note"] != "first" ||
					retry.SystemAttrs["grid_id"] != "3" || retry.SystemAttrs[studydata.FailedTrialAttr] != "0" || retry.SystemAttrs[studydata.RetryHistoryAttr] != hj {
					t.Fatalf("round %d: retry %+v, want history %s", round, retry, hj)
				}
				// The next start runs the retry, with what it holds.
				st, err := s.StartTrial("r", nil)
				must(err)
				if st.Number != retry.Number || st.State != studydata.Running || st.Started.IsZero() || st.Params["x"] != 0.25 || st.InternalParams["c"] != 1 {
					t.Fatalf("round %d: started %+v, want the retry %d", round, st, retry.Number)
				}
				attempt = st.Number
			}
			// No more waiting trial: a new one starts.
			if n, _, err := createTrial(s, "r"); err != nil || n != 3 {
				t.Fatalf("new trial %d %v, want 3", n, err)
			}
			must2 := func(_ studydata.FrozenTrial, err error) { must(err) }
			must2(finishTrial(s, "r", 3, studydata.Complete, 1, ""))
			searchtest.WantErr(t, "setParam(waiting)", s.SetParam("r", 4, "x", 0.5, fd), "does not exist")

			// Enqueued trials start first, in number order.
			for range 2 {
				if _, err := s.EnqueueTrial("r", studydata.FrozenTrial{SystemAttrs: map[string]string{studydata.FixedParamsAttr: `{"x":0.5}`}}); err != nil {
					t.Fatal(err)
				}
			}
			ts, err := s.Trials("r")
			must(err)
			if len(ts) != 6 || ts[4].State != studydata.Waiting || !ts[4].Started.IsZero() || ts[4].SystemAttrs[studydata.FixedParamsAttr] != `{"x":0.5}` {
				t.Fatalf("after enqueue: %d trials, trial 4 %+v", len(ts), ts[4])
			}
			searchtest.WantErr(t, "setParam(waiting)", s.SetParam("r", 4, "x", 0.5, fd), "is waiting (enqueued), not running")
			var seen *studydata.FrozenTrial
			_, err = s.StartTrial("r", func(ts []studydata.FrozenTrial, w *studydata.FrozenTrial) (map[string]string, error) {
				seen = w
				return nil, studydata.ErrWait
			})
			if !errors.Is(err, studydata.ErrWait) || seen == nil || seen.Number != 4 {
				t.Fatalf("plan saw waiting trial %v, start returned %v", seen, err)
			}
			st, err := s.StartTrial("r", func([]studydata.FrozenTrial, *studydata.FrozenTrial) (map[string]string, error) {
				return map[string]string{"k": "v"}, nil
			})
			must(err)
			if st.Number != 4 || st.SystemAttrs["k"] != "v" || st.State != studydata.Running {
				t.Fatalf("started %+v, want trial 4 with k=v", st)
			}
			if k.orphan == nil {
				return
			}
			// A dead worker's trial, failed by FailStale, is retried.
			dead := k.orphan(t, s, "r", deadOwner(t))
			stale, err := s.FailStale("r", 1)
			must(err)
			if len(stale) != 1 || stale[0].Number != dead || stale[0].Retry != dead+1 {
				t.Fatalf("failStale: %+v, want trial %d retried as %d", stale, dead, dead+1)
			}
			ts, err = s.Trials("r")
			must(err)
			if r := ts[dead+1]; r.State != studydata.Waiting || r.SystemAttrs[studydata.FailedTrialAttr] != fmt.Sprint(dead) || r.SystemAttrs[studydata.RetryHistoryAttr] != fmt.Sprintf("[%d]", dead) {
				t.Fatalf("retry of the dead worker's trial: %+v", r)
			}
		})
	}
}

// TestRetryFailedStudy: with RetryFailed, a trial whose objective fails is
// run again with the same parameters, and OptimizeUntil counts complete
// trials only.
func TestRetryFailedStudy(t *testing.T) {
	s := searchtest.NewStudy(t, search.Config{Sampler: search.NewRandomSampler(4), RetryFailed: 1})
	obj := func(tr *search.Trial) (float64, error) {
		x, err := tr.SuggestFloat("x", 0, 1)
		if err != nil {
			return 0, err
		}
		if tr.Number()%4 == 0 {
			return 0, errors.New("flaky")
		}
		return x, nil
	}
	if err := s.OptimizeUntil(context.Background(), obj, 8, 0); err != nil {
		t.Fatal(err)
	}
	ts, _ := s.Trials()
	if studydata.CountStates(ts, studydata.Complete) != 8 {
		t.Fatalf("%d complete, want 8", studydata.CountStates(ts, studydata.Complete))
	}
	retried := 0
	for _, tr := range ts {
		if tr.State != studydata.Fail {
			continue
		}
		var r *studydata.FrozenTrial
		for i := range ts {
			if ts[i].SystemAttrs[studydata.RetryHistoryAttr] == fmt.Sprintf("[%d]", tr.Number) {
				r = &ts[i]
			}
		}
		if tr.Number%4 != 0 || r == nil || r.Params["x"] != tr.Params["x"] || r.SystemAttrs[studydata.FailedTrialAttr] != fmt.Sprint(tr.Number) {
			t.Errorf("failed trial %d: retry %+v", tr.Number, r)
			continue
		}
		retried++
	}
	if retried == 0 {
		t.Fatal("no trial was retried")
	}
}

func TestEnqueueTrial(t *testing.T) {
	s := searchtest.NewStudy(t, search.Config{Sampler: search.NewRandomSampler(1)})
	n, err := s.EnqueueTrial(map[string]any{"x": 0.5, "n": 3, "c": "b"})
	if err != nil || n != 0 {
		t.Fatalf("EnqueueTrial: %d %v", n, err)
	}
	if _, err := s.EnqueueTrial(map[string]any{"f": func() {}}); err == nil || !strings.Contains(err.Error(), "JSON-encodable") {
		t.Errorf("EnqueueTrial(func): %v", err)
	}
	var got map[string]any
	err = s.Optimize(context.Background(), func(tr *search.Trial) (float64, error) {
		x, _ := tr.SuggestFloat("x", 0, 1)
		n, _ := tr.SuggestInt("n", 0, 10)
		c, _ := tr.SuggestCategorical("c", []any{"a", "b"})
		y, _ := tr.SuggestFloat("y", 0, 1) // not fixed: sampled
		if got == nil {
			got = map[string]any{"x": x, "n": n, "c": c, "y": y}
		}
		return x, nil
	}, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got["x"] != 0.5 || got["n"] != 3 || got["c"] != "b" {
		t.Fatalf("the enqueued trial got %v", got)
	}
	ts, _ := s.Trials()
	if len(ts) != 2 || ts[0].SystemAttrs[studydata.FixedParamsAttr] == "" || ts[1].SystemAttrs[studydata.FixedParamsAttr] != "" {
		t.Fatalf("trials %+v", ts)
	}
}

// workerStorages open one storage per worker on a shared study: journals
// on one file, PostgreSQL connections to one database.
var workerStorages = []struct {
	name string
	open func(t *testing.T) func() studydata.Storage
}{
	{"journal", func(t *testing.T) func() studydata.Storage {
		path := filepath.Join(t.TempDir(), "w.jsonl")
		return func() studydata.Storage {
			j, err := storages.OpenJournal(path, searchtest.Quiet)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { j.Close() })
			return j
		}
	}},
	{"postgres", func(t *testing.T) func() studydata.Storage {
		u := pgDatabase(t)
		return func() studydata.Storage { return openPG(t, u) }
	}},
}

// TestWorkersExactTotal: four workers, each with its own storage, run
// OptimizeUntil(10) on one study: exactly 10 complete trials, none more.
func TestWorkersExactTotal(t *testing.T) {
	for _, ws := range workerStorages {
		t.Run(ws.name, func(t *testing.T) {
			open := ws.open(t)
			var wg sync.WaitGroup
			for w := range 4 {
				s := searchtest.NewStudy(t, search.Config{Name: "exact", Sampler: search.NewRandomSampler(int64(w)), Storage: open()})
				wg.Go(func() {
					if err := s.OptimizeUntil(context.Background(), func(tr *search.Trial) (float64, error) {
						return tr.SuggestFloat("x", 0, 1)
					}, 10, 0); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			ts := checkStudyNumbers(t, open(), "exact")
			if len(ts) != 10 || studydata.CountStates(ts, studydata.Complete) != 10 {
				t.Fatalf("%d trials, %d complete; want exactly 10", len(ts), studydata.CountStates(ts, studydata.Complete))
			}
		})
	}
}

// TestGridWorkers: workers with the same grid and the same seed (the worst
// case: they would all pick the same point first) visit each point once.
func TestGridWorkers(t *testing.T) {
	for _, ws := range workerStorages {
		t.Run(ws.name, func(t *testing.T) {
			open := ws.open(t)
			var wg sync.WaitGroup
			for range 3 {
				g, err := search.NewGridSampler(searchtest.Grid, 5)
				if err != nil {
					t.Fatal(err)
				}
				s := searchtest.NewStudy(t, search.Config{Name: "grid", Sampler: g, Storage: open()})
				wg.Go(func() {
					if err := s.Optimize(context.Background(), searchtest.GridObjective, 0, 0); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			ts := checkStudyNumbers(t, open(), "grid")
			seen := map[string]int{}
			for _, tr := range ts {
				if tr.State != studydata.Complete {
					t.Errorf("trial %d: %v %s", tr.Number, tr.State, tr.Message)
				}
				seen[tr.SystemAttrs[search.GridIDAttr]]++
			}
			if len(ts) != 12 || len(seen) != 12 {
				t.Fatalf("%d trials over %d points, want 12 over 12: %v", len(ts), len(seen), seen)
			}
		})
	}
}

// checkStudyNumbers returns the trials of a study, checking that they are
// numbered 0, 1, … without gaps.
func checkStudyNumbers(t testing.TB, s studydata.Storage, study string) []studydata.FrozenTrial {
	t.Helper()
	ts, err := s.Trials(study)
	if err != nil {
		t.Fatal(err)
	}
	for i, tr := range ts {
		if tr.Number != i {
			t.Fatalf("trials()[%d] is trial %d", i, tr.Number)
		}
	}
	return ts
}

// TestPostgresUpgradeFromV1: a database of schema version 1 (no waiting
// trials) is upgraded in place; its trials stay, and retries work.
func TestPostgresUpgradeFromV1(t *testing.T) {
	u := pgDatabase(t)
	p := openPG(t, u)
	ctx := context.Background()
	_, err := storages.Pool(p).Exec(ctx, `DROP TABLE gomase_trial_params, gomase_trial_user_attrs, gomase_trial_system_attrs, gomase_trials, gomase_studies, gomase_schema_version`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storages.Pool(p).Exec(ctx, storages.PGMigrations[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := storages.Pool(p).Exec(ctx, `INSERT INTO gomase_schema_version (version) VALUES (1);
		INSERT INTO gomase_studies (name, direction, next_trial) VALUES ('old', 'minimize', 1);
		INSERT INTO gomase_trials (study_id, number, state, started, owner_host) SELECT id, 0, 'running', now(), 'elsewhere' FROM gomase_studies`); err != nil {
		t.Fatal(err)
	}
	q := openPG(t, u)
	if v := pgInts(t, q, "SELECT version FROM gomase_schema_version"); !reflect.DeepEqual(v, []int{storages.PGSchemaVersion}) {
		t.Fatalf("schema version %v after the upgrade, want [%d]", v, storages.PGSchemaVersion)
	}
	if _, retry, err := q.FinishTrial("old", 0, studydata.Fail, 0, "boom", 1); err != nil || retry == nil || retry.Number != 1 {
		t.Fatalf("failing trial 0 of the upgraded database: retry %+v, %v", retry, err)
	}
	ts := checkStudyNumbers(t, q, "old")
	if len(ts) != 2 || ts[0].State != studydata.Fail || ts[1].State != studydata.Waiting || !ts[1].Started.IsZero() {
		t.Fatalf("trials after the upgrade %+v", ts)
	}
}

// pgDurable is a private PostgreSQL server with PostgreSQL's durability
// defaults (a commit waits for the disk), for BenchmarkWorkers; the tests'
// server (pgServer) skips them.
var pgDurable struct {
	once sync.Once
	srv  *pgtest.Server
	err  error
}

func pgDurableDatabase(b *testing.B) string {
	pgDurable.once.Do(func() {
		dir, err := os.MkdirTemp("", "gomase-search-pg-durable-")
		if err != nil {
			pgDurable.err = err
			return
		}
		if pgDurable.srv, pgDurable.err = pgtest.StartWith(dir, pgtest.Options{Durable: true}); pgDurable.err != nil {
			os.RemoveAll(dir)
			return
		}
		afterTests = append(afterTests, func() {
			pgDurable.srv.Stop()
			os.RemoveAll(dir)
		})
	})
	if pgDurable.err != nil {
		b.Fatal(pgDurable.err)
	}
	return pgDurable.srv.Database(b)
}

// BenchmarkWorkers measures the trials per second of a trivial objective
// (three parameters, no work; random sampler) that 1, 2 or 4 workers run on
// one study with OptimizeUntil, as `mase search` workers do: each worker has
// its own storage (the journal file opened again, its own PostgreSQL
// connection pool). b.N is the number of complete trials of the study;
// trials/s is b.N over the wall time. Storages: a journal file (every
// change fsynced), PostgreSQL with its durability defaults, and PostgreSQL
// as the tests run it (fsync and synchronous_commit off).
//
//	go test -run '^$' -bench Workers -benchtime 300x ./mase/search/
func BenchmarkWorkers(b *testing.B) {
	storages := []struct {
		name string
		open func(b *testing.B) func() studydata.Storage
	}{
		{"journal", func(b *testing.B) func() studydata.Storage {
			path := filepath.Join(b.TempDir(), "w.jsonl")
			return func() studydata.Storage {
				j, err := storages.OpenJournal(path, searchtest.Quiet)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { j.Close() })
				return j
			}
		}},
		{"postgres", func(b *testing.B) func() studydata.Storage {
			u := pgDurableDatabase(b)
			return func() studydata.Storage { return openPG(b, u) }
		}},
		{"postgres-nosync", func(b *testing.B) func() studydata.Storage {
			u := pgDatabase(b)
			return func() studydata.Storage { return openPG(b, u) }
		}},
	}
	obj := func(t *search.Trial) (float64, error) {
		x, err1 := t.SuggestFloat("x", -1, 1)
		n, err2 := t.SuggestInt("n", 0, 10)
		_, err3 := t.SuggestCategorical("c", []any{"a", "b", "c"})
		return x + float64(n), errors.Join(err1, err2, err3)
	}
	for _, st := range storages {
		for _, workers := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("%s/workers=%d", st.name, workers), func(b *testing.B) {
				open := st.open(b)
				studies := make([]*search.Study, workers)
				for w := range studies {
					studies[w] = searchtest.NewStudy(b, search.Config{Name: "bench", Sampler: search.NewRandomSampler(int64(w)), Storage: open()})
				}
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for _, s := range studies {
					wg.Go(func() {
						if err := s.OptimizeUntil(context.Background(), obj, b.N, 0); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				if ts := checkStudyNumbers(b, studies[0].Storage(), "bench"); studydata.CountStates(ts, studydata.Complete) != b.N || len(ts) != b.N {
					b.Fatalf("%d trials, %d complete; want %d", len(ts), studydata.CountStates(ts, studydata.Complete), b.N)
				}
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "trials/s")
			})
		}
	}
}
