package storages_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/search/internal/searchtest"
	"github.com/gomase/gomase/mase/search/searchbench"
	"github.com/gomase/gomase/mase/search/storages"
	"github.com/gomase/gomase/mase/search/studydata"
)

// afterTests run once every test of the package has (a shared server's stop).
var afterTests []func()

func TestMain(m *testing.M) {
	code := m.Run()
	for _, f := range afterTests {
		f()
	}
	os.Exit(code)
}

// storageKind is a storage implementation under the shared semantics tests.
type storageKind struct {
	name string
	// open returns a new, empty storage.
	open func(t *testing.T) studydata.Storage
	// jsonOnly: user attributes must be JSON-encodable.
	jsonOnly bool
	// orphan records a Running trial of study owned by o (another process),
	// returning its number; nil when the storage cannot hold one.
	orphan func(t *testing.T, s studydata.Storage, study string, o storages.Owner) int
}

// storageKinds are the storages the shared tests run on; postgres_test.go
// adds PostgreSQL's.
var storageKinds = []storageKind{
	{name: "memory", open: func(*testing.T) studydata.Storage { return storages.NewInMemoryStorage() }},
	{
		name: "journal",
		open: func(t *testing.T) studydata.Storage {
			j, err := storages.OpenJournal(filepath.Join(t.TempDir(), "s.jsonl"), searchtest.Quiet)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { j.Close() })
			return j
		},
		jsonOnly: true,
		orphan: func(t *testing.T, s studydata.Storage, study string, o storages.Owner) int {
			j := s.(*storages.JournalStorage)
			number, err := storages.OrphanTrial(j, study, o)
			if err != nil {
				t.Fatal(err)
			}
			return number
		},
	},
}

// deadOwner is a process of this machine that has exited.
func deadOwner(t *testing.T) storages.Owner {
	var o storages.Owner
	if err := json.Unmarshal([]byte(deadOwnerJSON()), &o); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestStorageSemantics checks that every storage validates and records
// changes alike: the journal and PostgreSQL against the in-memory model.
func TestStorageSemantics(t *testing.T) {
	for _, k := range storageKinds {
		t.Run(k.name, func(t *testing.T) {
			s := k.open(t)
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			// Studies: created once, the recorded direction wins.
			d, existed, err := s.CreateStudy("a", studydata.Maximize)
			if err != nil || d != studydata.Maximize || existed {
				t.Fatalf("createStudy(a): %v %v %v", d, existed, err)
			}
			d, existed, err = s.CreateStudy("a", studydata.Minimize)
			if err != nil || d != studydata.Maximize || !existed {
				t.Fatalf("createStudy(a) again: %v %v %v", d, existed, err)
			}
			noStudy := `study "nope" does not exist in the storage`
			_, _, err = createTrial(s, "nope")
			searchtest.WantErr(t, "createTrial(nope)", err, noStudy)
			_, err = s.Trials("nope")
			searchtest.WantErr(t, "trials(nope)", err, noStudy)
			searchtest.WantErr(t, "setParam(nope)", s.SetParam("nope", 0, "x", 0, studydata.FloatDistribution{Low: 0, High: 1}), noStudy)
			_, err = finishTrial(s, "nope", 0, studydata.Complete, 1, "")
			searchtest.WantErr(t, "finishTrial(nope)", err, noStudy)

			// Trials are numbered from 0 in each study.
			n0, start0, err := createTrial(s, "a")
			must(err)
			n1, _, err := createTrial(s, "a")
			must(err)
			n2, _, err := createTrial(s, "a")
			must(err)
			if n0 != 0 || n1 != 1 || n2 != 2 {
				t.Fatalf("trial numbers %d %d %d", n0, n1, n2)
			}
			must2 := func(_ studydata.Direction, _ bool, err error) { must(err) }
			must2(s.CreateStudy("b", studydata.Minimize))
			if nb, _, err := createTrial(s, "b"); err != nil || nb != 0 {
				t.Fatalf("first trial of b: %d %v", nb, err)
			}
			for _, n := range []int{3, -1} {
				searchtest.WantErr(t, "setParam(unknown trial)", s.SetParam("a", n, "x", 0, studydata.FloatDistribution{Low: 0, High: 1}),
					`does not exist in study "a" (it has 3 trials)`)
			}

			// Parameters keep their distribution; attributes.
			fd := studydata.FloatDistribution{Low: 0, High: 1}
			cd := studydata.CategoricalDistribution{Choices: []any{"a", 2, nil}}
			must(s.SetParam("a", 0, "x", 0.5, fd))
			must(s.SetParam("a", 0, "x", 0.75, fd))
			searchtest.WantErr(t, "setParam(other distribution)", s.SetParam("a", 0, "x", 0.5, studydata.FloatDistribution{Low: 0, High: 2}),
				`parameter "x" of trial 0 is already set with distribution`)
			must(s.SetParam("a", 0, "c", 1, cd))
			must(s.SetParam("a", 0, "n", 3, studydata.IntDistribution{Low: 1, High: 9, Step: 2}))
			must(s.SetUserAttr("a", 0, "note", "hi"))
			must(s.SetUserAttr("a", 0, "note", "hello"))
			must(s.SetUserAttr("a", 0, "m", map[string]any{"acc": 0.5}))
			must(s.SetSystemAttr("a", 0, "grid", "g1"))
			if k.jsonOnly {
				searchtest.WantErr(t, "setUserAttr(func)", s.SetUserAttr("a", 0, "f", func() {}), "JSON-encodable")
			}

			// Finishing.
			_, err = finishTrial(s, "a", 0, studydata.Running, 1, "")
			searchtest.WantErr(t, "finish as running", err, "cannot finish trial 0 in state running")
			_, err = finishTrial(s, "a", 0, studydata.Complete, math.NaN(), "")
			searchtest.WantErr(t, "complete with NaN", err, "a complete trial needs a finite value")
			_, err = finishTrial(s, "a", 0, studydata.Complete, math.Inf(1), "")
			searchtest.WantErr(t, "complete with +Inf", err, "a complete trial needs a finite value")
			ft, err := finishTrial(s, "a", 0, studydata.Complete, 1.5, "")
			must(err)
			if ft.Number != 0 || ft.State != studydata.Complete || ft.Value != 1.5 || ft.Params["x"] != 0.75 || ft.Params["c"] != 2 ||
				ft.Params["n"] != 3 || ft.UserAttrs["note"] != "hello" || ft.SystemAttrs["grid"] != "g1" ||
				ft.Finished.IsZero() || ft.Finished.Before(ft.Started) || !ft.Started.Equal(start0) {
				t.Errorf("finished trial 0: %+v", ft)
			}
			_, err = finishTrial(s, "a", 0, studydata.Fail, 0, "again")
			searchtest.WantErr(t, "finish twice", err, `trial 0 of study "a" is already finished (complete); only a running trial can change`)
			searchtest.WantErr(t, "setParam(finished)", s.SetParam("a", 0, "y", 0, fd), "is already finished")
			ft, err = finishTrial(s, "a", 1, studydata.Pruned, 3, "too slow")
			must(err)
			if ft.State != studydata.Pruned || !math.IsNaN(ft.Value) || ft.Message != "too slow" {
				t.Errorf("pruned trial 1: %+v", ft)
			}
			searchtest.WantErr(t, "setUserAttr(pruned)", s.SetUserAttr("a", 1, "k", 1), "already finished (pruned: too slow)")
			searchtest.WantErr(t, "setSystemAttr(pruned)", s.SetSystemAttr("a", 1, "k", "v"), "already finished (pruned: too slow)")

			// trials: in number order, the running one with NaN and no end.
			ts, err := s.Trials("a")
			must(err)
			if len(ts) != 3 {
				t.Fatalf("%d trials, want 3", len(ts))
			}
			for i, tr := range ts {
				if tr.Number != i {
					t.Errorf("trials()[%d] is trial %d", i, tr.Number)
				}
			}
			if ts[2].State != studydata.Running || !math.IsNaN(ts[2].Value) || !ts[2].Finished.IsZero() || ts[2].Duration() != 0 {
				t.Errorf("running trial: %+v", ts[2])
			}
			want := map[string]any{"x": 0.75, "c": 2, "n": 3}
			if !reflect.DeepEqual(ts[0].Params, want) || ts[0].InternalParams["c"] != 1 || !ts[0].Distributions["c"].Equal(cd) {
				t.Errorf("trial 0 params %v internal %v distributions %v", ts[0].Params, ts[0].InternalParams, ts[0].Distributions)
			}
			if m, ok := ts[0].UserAttrs["m"].(map[string]any); k.jsonOnly && (!ok || m["acc"] != 0.5) {
				t.Errorf("user attribute m came back as %#v", ts[0].UserAttrs["m"])
			}

			// failStale leaves this process's trial and fails a dead process's.
			failed, err := failStale(s, "a")
			if err != nil || len(failed) != 0 {
				t.Fatalf("failStale with a live owner: %v %v", failed, err)
			}
			if k.orphan == nil {
				return
			}
			_, err = failStale(s, "nope")
			searchtest.WantErr(t, "failStale(nope)", err, noStudy)
			n := k.orphan(t, s, "a", deadOwner(t))
			if n != 3 {
				t.Fatalf("orphan trial %d, want 3", n)
			}
			failed, err = failStale(s, "a")
			if err != nil || !reflect.DeepEqual(failed, []int{3}) {
				t.Fatalf("failStale: %v %v, want [3]", failed, err)
			}
			ts, err = s.Trials("a")
			must(err)
			if ts[3].State != studydata.Fail || !ts[3].Recovered || !strings.Contains(ts[3].Message, "is gone") || ts[2].State != studydata.Running {
				t.Errorf("after failStale: trial 3 %v %q, trial 2 %v", ts[3].State, ts[3].Message, ts[2].State)
			}
			if failed, err = failStale(s, "a"); err != nil || len(failed) != 0 {
				t.Errorf("failStale again: %v %v", failed, err)
			}
		})
	}
}

// createTrial starts a new trial with no plan (the old createTrial).
func createTrial(s studydata.Storage, study string) (int, time.Time, error) {
	ft, err := s.StartTrial(study, nil)
	return ft.Number, ft.Started, err
}

// finishTrial finishes a trial without retry.
func finishTrial(s studydata.Storage, study string, number int, state studydata.TrialState, value float64, msg string) (studydata.FrozenTrial, error) {
	ft, _, err := s.FinishTrial(study, number, state, value, msg, 0)
	return ft, err
}

// failStale fails stale trials without retry and returns their numbers.
func failStale(s studydata.Storage, study string) ([]int, error) {
	st, err := s.FailStale(study, 0)
	var out []int
	for _, f := range st {
		out = append(out, f.Number)
	}
	return out, err
}

// TestStorageHelperProcess is the child process of the multi-process
// tests: a worker on the storage SEARCH_CHILD_STORAGE (a journal file or a
// PostgreSQL URL) that runs SEARCH_CHILD_N trials of study "mp". In mode
// "crash" or "heartbeat" (which first turns the storage's heartbeat on) it
// exits in the middle of its last trial, leaving it Running.
func TestStorageHelperProcess(t *testing.T) {
	spec := os.Getenv("SEARCH_CHILD_STORAGE")
	if spec == "" {
		t.Skip("helper process for the multi-process storage tests")
	}
	mode := os.Getenv("SEARCH_CHILD_MODE")
	n, _ := strconv.Atoi(os.Getenv("SEARCH_CHILD_N"))
	seed, _ := strconv.ParseInt(os.Getenv("SEARCH_CHILD_SEED"), 10, 64)
	st, err := storages.Open(spec, searchtest.Quiet)
	if err != nil {
		t.Fatal(err)
	}
	if mode == "heartbeat" {
		if err := st.(interface{ SetHeartbeat(time.Duration) error }).SetHeartbeat(100 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	s, err := search.NewStudy(search.Config{Name: "mp", Sampler: searchtest.MustTPE(t, search.TPEOptions{Seed: seed}), Storage: st, Logger: searchtest.Quiet})
	if err != nil {
		t.Fatal(err)
	}
	started := 0
	err = s.Optimize(context.Background(), func(tr *search.Trial) (float64, error) {
		started++
		v, err := searchbench.Sphere5(tr)
		if mode != "worker" && started == n {
			os.Exit(3) // killed mid-trial: the trial stays Running
		}
		return v, err
	}, n, 0)
	if err != nil {
		t.Fatal(err)
	}
}

// runChild returns the command of a TestStorageHelperProcess child.
func runChild(spec, mode string, n int, seed int64) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestStorageHelperProcess$")
	cmd.Env = append(os.Environ(), "SEARCH_CHILD_STORAGE="+spec, "SEARCH_CHILD_MODE="+mode,
		"SEARCH_CHILD_N="+strconv.Itoa(n), "SEARCH_CHILD_SEED="+strconv.FormatInt(seed, 10))
	return cmd
}

// runWorkers runs workers child processes of n trials each on spec at
// once (seeds 0, 1, …) and waits for all of them.
func runWorkers(t *testing.T, spec string, workers, n int) {
	t.Helper()
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for w := range workers {
		cmd := runChild(spec, "worker", n, int64(w))
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v\n%s", i, err, outs[i])
		}
	}
}
