package main

import (
	"encoding/json"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gomase/gomase/internal/optunatest"
	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/search/storages"
)

// optunaWriteScript: Optuna 3.1 runs the toy space (search_toy.go) for 5
// trials into a journal (trial 2 raises, so it fails), enqueues a sixth with
// fixed parameters, and prints its trials.
const optunaWriteScript = `
import json, math, sys, warnings
warnings.simplefilter("ignore")
import optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
storage = optuna.storages.JournalStorage(optuna.storages.JournalFileStorage(sys.argv[1]))
study = optuna.create_study(study_name="from-optuna", direction="maximize", storage=storage,
                            sampler=optuna.samplers.RandomSampler(seed=3))
bonus = {"relu": 0.0, "gelu": 0.5, "tanh": -0.5}
def objective(trial):
    x = trial.suggest_float("x", -5, 5)
    lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
    layers = trial.suggest_int("layers", 1, 8)
    dropout = trial.suggest_float("dropout", 0, 0.5, step=0.1)
    act = trial.suggest_categorical("act", ["relu", "gelu", "tanh"])
    trial.set_user_attr("note", "from optuna")
    if trial.number == 2:
        raise RuntimeError("boom")
    l = math.log10(lr) + 2.5
    return -(x - 1) ** 2 - l * l - (layers - 4) ** 2 / 4 - 4 * (dropout - 0.2) ** 2 + bonus[act]
study.optimize(objective, n_trials=5, catch=(RuntimeError,))
study.enqueue_trial({"x": 1.0, "lr": 0.003, "layers": 4, "dropout": 0.2, "act": "gelu"})
print(json.dumps([{"number": t.number, "state": t.state.name, "value": t.value, "params": t.params,
                   "user_attrs": t.user_attrs} for t in study.trials]))
`

// optunaLoadScript loads a study from a journal and prints its trials and
// its best trial.
const optunaLoadScript = `
import json, sys, warnings
warnings.simplefilter("ignore")
import optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
storage = optuna.storages.JournalStorage(optuna.storages.JournalFileStorage(sys.argv[1]))
study = optuna.load_study(study_name=sys.argv[2], storage=storage)
b = study.best_trial
print(json.dumps({"trials": [{"number": t.number, "state": t.state.name, "value": t.value, "params": t.params,
                              "user_attrs": t.user_attrs} for t in study.trials],
                  "best": {"number": b.number, "value": b.value, "params": b.params}}))
`

type optunaTrial struct {
	Number    int
	State     string
	Value     *float64
	Params    map[string]any
	UserAttrs map[string]any `json:"user_attrs"`
}

// TestSearchOptunaRoundTrip: a study Optuna wrote is imported with `mase
// search import`, continued by `mase search` (its enqueued trial first, with
// its fixed parameters, then new trials numbered on), exported with `mase
// search export` and loaded by Optuna with every trial and the best one.
func TestSearchOptunaRoundTrip(t *testing.T) {
	optunatest.Version(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "optuna.log")
	var wrote []optunaTrial
	if err := json.Unmarshal(optunatest.Run(t, optunaWriteScript, in), &wrote); err != nil {
		t.Fatal(err)
	}
	if len(wrote) != 6 || wrote[2].State != "FAIL" || wrote[5].State != "WAITING" {
		t.Fatalf("Optuna wrote %+v", wrote)
	}

	storage := filepath.Join(dir, "study.jsonl")
	code, out, errOut := runCLI("search", "import", in, "--storage", storage)
	if code != 0 {
		t.Fatalf("import: exit %d: %s", code, errOut)
	}
	var imp struct {
		Imported string
		Trials   int
		States   map[string]int
	}
	if err := json.Unmarshal([]byte(out), &imp); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if imp.Imported != "from-optuna" || imp.Trials != 6 || !reflect.DeepEqual(imp.States, map[string]int{"complete": 4, "fail": 1, "waiting": 1}) {
		t.Fatalf("import printed %s", out)
	}

	// Go on: 7 complete trials in all, 4 there: the enqueued trial 5, then 6 and 7.
	code, out, errOut = runCLI("search", "--space", "toy", "--sampler", "tpe", "--trials", "7", "--storage", storage,
		"--study", "from-optuna", "--seed", "5")
	if code != 0 {
		t.Fatalf("continuing the study: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, `resuming study "from-optuna"`) {
		t.Errorf("the continued search did not say it resumed: %s", errOut)
	}
	lines, _ := decodeTrialLines(t, out)
	if len(lines) != 3 || lines[0].Number != 5 || lines[1].Number != 6 || lines[2].Number != 7 {
		t.Fatalf("continued with trials %+v, want 5 (the enqueued one), 6, 7", lines)
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	if got, want := js(lines[0].Params), `{"act":"gelu","dropout":0.2,"layers":4,"lr":0.003,"x":1}`; got != want {
		t.Errorf("the enqueued trial ran with %s, want Optuna's fixed parameters %s", got, want)
	}

	exported := filepath.Join(dir, "exported.log")
	code, out, errOut = runCLI("search", "export", "--format", "optuna-journal", "--storage", storage, "--study", "from-optuna", exported)
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	var loaded struct {
		Trials []optunaTrial
		Best   struct {
			Number int
			Value  float64
			Params map[string]any
		}
	}
	if err := json.Unmarshal(optunatest.Run(t, optunaLoadScript, exported, "from-optuna"), &loaded); err != nil {
		t.Fatal(err)
	}
	if len(loaded.Trials) != 8 {
		t.Fatalf("Optuna loaded %d trials, want 8", len(loaded.Trials))
	}
	for i, lt := range loaded.Trials {
		if lt.Number != i {
			t.Errorf("Optuna's trial %d has number %d", i, lt.Number)
		}
		switch {
		case i < 5: // Optuna's own: unchanged by the round trip
			w := wrote[i]
			if lt.State != w.State || js(lt.Value) != js(w.Value) || js(lt.Params) != js(w.Params) || js(lt.UserAttrs) != js(w.UserAttrs) {
				t.Errorf("trial %d: Optuna wrote %+v, loads %+v after the round trip", i, w, lt)
			}
		default:
			l := lines[i-5]
			if lt.State != "COMPLETE" || lt.Value == nil || *lt.Value != *l.Value || js(lt.Params) != js(l.Params) {
				t.Errorf("trial %d: gomase ran %+v, Optuna loads %+v", i, l, lt)
			}
		}
	}
	st, err := storages.Open(storage, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := search.NewStudy(search.Config{Name: "from-optuna", Direction: search.Maximize, Storage: st, Sampler: search.NewRandomSampler(0),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	best, err := s.BestTrial()
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Best.Number != best.Number || math.Abs(loaded.Best.Value-best.Value) != 0 || js(loaded.Best.Params) != js(best.Params) {
		t.Errorf("Optuna's best trial %+v, gomase's %d %v %v", loaded.Best, best.Number, best.Value, best.Params)
	}
	t.Logf("best: trial %d, %.6g %s", best.Number, best.Value, js(best.Params))
}

// TestSearchExportImportErrors: one-line errors naming what is wrong.
func TestSearchExportImportErrors(t *testing.T) {
	dir := t.TempDir()
	exists := filepath.Join(dir, "exists.log")
	os.WriteFile(exists, nil, 0o644)
	journal := filepath.Join(dir, "s.jsonl")
	if code, _, errOut := runCLI("search", "--space", "toy", "--trials", "2", "--storage", journal, "--study", "s"); code != 0 {
		t.Fatal(errOut)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "--storage", journal, "--study", "s"}, "no output file given"},
		{[]string{"export", "--storage", journal, "--study", "s", "a.log", "b.log"}, "2 files given (a.log, b.log)"},
		{[]string{"export", "--format", "csv", "--storage", journal, "--study", "s", "x.log"}, `unknown --format "csv" (allowed: optuna-journal)`},
		{[]string{"export", "--storage", journal, "x.log"}, "--study is required"},
		{[]string{"export", "--study", "s", filepath.Join(dir, "x.log")}, "--storage is required"},
		{[]string{"export", "--storage", journal, "--study", "s", exists}, "already exists; export writes a new Optuna journal"},
		{[]string{"export", "--storage", filepath.Join(dir, "none.jsonl"), "--study", "s", filepath.Join(dir, "x.log")}, "no such journal file"},
		{[]string{"export", "--storage", journal, "--study", "t", filepath.Join(dir, "x.log")}, `study "t" does not exist in the storage`},
		{[]string{"import", "--storage", journal}, "no Optuna journal given"},
		{[]string{"import", exists}, "--storage is required"},
		{[]string{"import", "--storage", journal, exists}, "the journal holds no study"},
	} {
		code, _, errOut := runCLI(append([]string{"search"}, c.args...)...)
		if code == 0 || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q, want one line with %q", c.args, code, errOut, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.log")); err == nil {
		t.Error("a failed export left its file")
	}
	// A study imported twice.
	out := filepath.Join(dir, "s.log")
	if code, _, errOut := runCLI("search", "export", "--storage", journal, "--study", "s", out); code != 0 {
		t.Fatal(errOut)
	}
	code, _, errOut := runCLI("search", "import", "--storage", journal, out)
	if code == 0 || !strings.Contains(errOut, `study "s" already exists in the storage; import it under another name or into another storage`) {
		t.Errorf("import into the study's own storage: exit %d, %q", code, errOut)
	}
	code, outJSON, errOut := runCLI("search", "import", "--storage", journal, "--as", "s2", out)
	if code != 0 || !strings.Contains(outJSON, `"imported":"s2"`) || !strings.Contains(outJSON, `"trials":2`) {
		t.Errorf("import --as s2: exit %d, %s %s", code, outJSON, errOut)
	}
}

// TestSearchImportFailureLeavesNothing: an import that fails leaves no
// journal (and no temporary file) behind; one that succeeds leaves just
// the journal.
func TestSearchImportFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, content, want string }{
		{"empty.log", "", "the journal holds no study"},
		{"multi.log", `{"op_code": 0, "worker_id": "w", "study_name": "mo", "directions": [1, 2]}` + "\n", "has 2 objectives"},
		{"broken.log", `{"op_code": 0, "worker_id": "w", "study_name": "b", "directions": [2]}` + "\nnot json\n" +
			`{"op_code": 0, "worker_id": "w", "study_name": "c", "directions": [2]}` + "\n", "line 2 is not JSON"},
	} {
		in := filepath.Join(dir, c.name)
		if err := os.WriteFile(in, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "new.jsonl")
		code, _, errOut := runCLI("search", "import", "--storage", out, in)
		if code == 0 || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("import %s: exit %d, stderr %q, want one line with %q", c.name, code, errOut, c.want)
		}
		if _, err := os.Lstat(out); err == nil {
			t.Errorf("import %s failed but left %s", c.name, filepath.Base(out))
			os.Remove(out)
		}
	}
	good := filepath.Join(dir, "good.log")
	os.WriteFile(good, []byte(`{"op_code": 0, "worker_id": "w", "study_name": "g", "directions": [2]}`+"\n"), 0o644)
	out := filepath.Join(dir, "new.jsonl")
	if code, _, errOut := runCLI("search", "import", "--storage", out, good); code != 0 {
		t.Fatalf("import: %s", errOut)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"broken.log", "empty.log", "good.log", "multi.log", "new.jsonl"}; !reflect.DeepEqual(names, want) {
		t.Errorf("files after the imports: %v, want %v", names, want)
	}
	st, err := storages.OpenJournal(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := search.NewStudy(search.Config{Name: "g", Direction: search.Maximize, Storage: st}); err != nil {
		t.Errorf("the imported study: %v", err)
	}
}
