package optuna

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/search/internal/searchtest"
	"github.com/gomase/gomase/mase/search/storages"
	"github.com/gomase/gomase/mase/search/studydata"

	"github.com/gomase/gomase/internal/optunatest"
)

// optunaStudy is a study with every kind of parameter and every state: 7
// trials run (trial 2 fails and is retried as trial 3, trial 5 is pruned),
// trial 7 left running and trial 8 enqueued.
func optunaStudy(t *testing.T) *search.Study {
	t.Helper()
	s := searchtest.NewStudy(t, search.Config{Name: "exported", Sampler: search.NewRandomSampler(11), RetryFailed: 1})
	obj := func(tr *search.Trial) (float64, error) {
		x, err1 := tr.SuggestFloat("x", -1, 1)
		lr, err2 := tr.SuggestFloat("lr", 1e-5, 1e-1, search.WithLog())
		n, err3 := tr.SuggestInt("n", 1, 9, search.WithStep(2))
		k, err4 := tr.SuggestInt("k", 1, 64, search.WithLog())
		d, err5 := tr.SuggestFloat("d", 0, 1, search.WithStep(0.25))
		c, err6 := tr.SuggestCategorical("c", []any{"relu", 4, 0.5, true, nil})
		if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
			return 0, err
		}
		tr.SetUserAttr("info", map[string]any{"k": k, "tag": "é✓", "list": []any{1.5, "a"}})
		switch tr.Number() {
		case 2:
			return 0, errors.New("boom: the objective failed")
		case 5:
			return 0, fmt.Errorf("%w: too slow", search.ErrPruned)
		}
		v := (x-0.3)*(x-0.3) + math.Log10(lr)/10 + float64(n)/10 + float64(k)/100 + d
		if c == "relu" {
			v -= 1
		}
		return v, nil
	}
	if err := s.Optimize(context.Background(), obj, 7, 0); err != nil {
		t.Fatal(err)
	}
	running, err := s.Ask(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := running.SuggestFloat("x", -1, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnqueueTrial(map[string]any{"x": 0.25, "c": "relu"}); err != nil {
		t.Fatal(err)
	}
	return s
}

func exportFile(t *testing.T, s *search.Study) string {
	t.Helper()
	var buf bytes.Buffer
	n, err := ExportJournal(s.Storage(), s.Name(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != 9 {
		t.Fatalf("exported %d trials, want 9", n)
	}
	path := filepath.Join(t.TempDir(), "optuna.log")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOptunaExportImportRoundTrip: a study exported and imported again is
// the same study (a running trial comes back failed).
func TestOptunaExportImportRoundTrip(t *testing.T) {
	s := optunaStudy(t)
	path := exportFile(t, s)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mem := storages.NewInMemoryStorage()
	imp, err := ImportJournal(mem, f, "", "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[studydata.TrialState]int{studydata.Complete: 5, studydata.Fail: 2, studydata.Pruned: 1, studydata.Waiting: 1}
	if imp.Study != "exported" || imp.Direction != studydata.Minimize || !reflect.DeepEqual(imp.Trials, want) || len(imp.Notes) != 1 {
		t.Fatalf("import %+v, want 9 trials %v and a note on the running one", imp, want)
	}
	before, _ := s.Trials()
	after, err := mem.Trials("exported")
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range before {
		b := after[i]
		if a.State == studydata.Running {
			if b.State != studydata.Fail || !b.Recovered || !strings.Contains(b.Message, "it was running there") {
				t.Errorf("running trial %d came back %v %q", a.Number, b.State, b.Message)
			}
			a.State, a.Message, a.Recovered, a.Finished = b.State, b.Message, true, b.Finished
		}
		ja, _ := json.Marshal(a.UserAttrs)
		jb, _ := json.Marshal(b.UserAttrs)
		if a.Number != b.Number || a.State != b.State || !(a.Value == b.Value || math.IsNaN(a.Value) && math.IsNaN(b.Value)) ||
			!reflect.DeepEqual(a.Params, b.Params) || !reflect.DeepEqual(a.InternalParams, b.InternalParams) || len(a.Distributions) != len(b.Distributions) ||
			string(ja) != string(jb) || !reflect.DeepEqual(a.SystemAttrs, b.SystemAttrs) || a.Message != b.Message || a.Recovered != b.Recovered {
			t.Errorf("trial %d:\n was %+v\n now %+v", a.Number, a, b)
		}
		for name, d := range a.Distributions {
			if !d.Equal(b.Distributions[name]) {
				t.Errorf("trial %d, %s: distribution %v came back %v", a.Number, name, d, b.Distributions[name])
			}
		}
		if a.State != studydata.Waiting && !a.Started.Truncate(time.Microsecond).Equal(b.Started) {
			t.Errorf("trial %d started %v, came back %v", a.Number, a.Started, b.Started)
		}
	}
	// Importing again into the same storage is refused.
	f.Seek(0, 0)
	if _, err := ImportJournal(mem, f, "exported", ""); err == nil || !strings.Contains(err.Error(), `study "exported" already exists`) {
		t.Errorf("second import: %v", err)
	}
}

// TestOptunaImportReplay replays a journal written operation by operation,
// as Optuna's optimize writes it (the example of Optuna 3.1's format), with
// what a replay must tolerate.
func TestOptunaImportReplay(t *testing.T) {
	const float = `"{\"name\": \"FloatDistribution\", \"attributes\": {\"step\": null, \"low\": 1e-05, \"high\": 0.1, \"log\": true}}"`
	const cat = `"{\"name\": \"CategoricalDistribution\", \"attributes\": {\"choices\": [2, 4, 8]}}"`
	lines := []string{
		`{"op_code": 0, "worker_id": "W", "study_name": "gone", "directions": [1]}`,
		`{"op_code": 0, "worker_id": "W", "study_name": "s", "directions": [2]}`,
		`{"op_code": 0, "worker_id": "W", "study_name": "s", "directions": [1]}`,                          // a second creation: ignored
		`{"op_code": 4, "worker_id": "W", "study_id": 0, "datetime_start": "2024-06-07T17:27:27.000001"}`, // trial 0 of "gone"
		`{"op_code": 1, "worker_id": "W", "study_id": 0}`,
		`{"op_code": 4, "worker_id": "W", "study_id": 1, "datetime_start": "2024-06-07T17:27:27.682770"}`,
		`{"op_code": 5, "worker_id": "W", "trial_id": 1, "param_name": "x", "param_value_internal": 0.0031622776601683794, "distribution": ` + float + `}`,
		`{"op_code": 5, "worker_id": "W", "trial_id": 1, "param_name": "layers", "param_value_internal": 1, "distribution": ` + cat + `}`,
		`{"op_code": 8, "worker_id": "W", "trial_id": 1, "user_attr": {"loss": NaN}}`,
		`{"op_code": 9, "worker_id": "W", "trial_id": 1, "system_attr": {"constraints": [Infinity, -Infinity]}}`,
		`{"op_code": 7, "worker_id": "W", "trial_id": 1, "step": 0, "intermediate_value": 0.5}`,
		`{"op_code": 6, "worker_id": "W", "trial_id": 1, "state": 1, "values": [0.8], "datetime_complete": "2024-06-07T17:27:27.689197"}`,
		`{"op_code": 6, "worker_id": "W", "trial_id": 1, "state": 3, "values": null, "datetime_complete": "2024-06-07T17:27:28.0"}`, // finished: ignored
		`{"op_code": 4, "worker_id": "W", "study_id": 1, "datetime_start": "2024-06-07T17:27:27.690779+00:00"}`,
		`{"op_code": 5, "worker_id": "W", "trial_id": 2, "param_name": "x", "param_value_internal": 0.00012, "distribution": "{\"name\": \"LogUniformDistribution\", \"attributes\": {\"low\": 1e-05, \"high\": 0.1}}"}`,
		`{"op_code": 5, "worker_id": "W", "trial_id": 2, "param_name": "layers", "param_value_internal": 0, "distribution": "{\"name\": \"CategoricalDistribution\", \"attributes\": {\"choices\": [1, 2]}}"}`, // other choices: ignored
		`{"op_code": 10, "worker_id": "W", "trial_ids": [2]}`,
		`{"op_code": 6, "worker_id": "W", "trial_id": 2, "state": 3, "values": null, "datetime_complete": "2024-06-07T17:27:27.697112Z"}`,
		`{"op_code": 4, "worker_id": "W", "study_id": 1, "datetime_start": "2024-06-07T17:27:29.000000"}`, // left running
		`{"op_code": 4, "worker_id": "W", "study_id": 1, "datetime_start": null, "state": 4, "system_attrs": {"fixed_params": {"x": 0.01}}}`,
		`{"op_code": 4, "worker_id": "W", "study_id": 1, "datetime_start": "2024-06-07T17:27:30.000000", "state": 1, "value": Infinity, "values": null, "datetime_complete": "2024-06-07T17:27:31.000000", "distributions": {}, "params": {}, "user_attrs": {}, "system_attrs": {}, "intermediate_values": {"3": NaN}}`,
		`{"op_code": 4, "worker_id": "W", "study_id": 1, "datetime_st`, // cut short by a crash
	}
	mem := storages.NewInMemoryStorage()
	imp, err := ImportJournal(mem, strings.NewReader(strings.Join(lines, "\n")), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if imp.Study != "s" || imp.Direction != studydata.Maximize || len(imp.Notes) != 3 {
		t.Fatalf("import %+v", imp)
	}
	ts, _ := mem.Trials("s")
	if len(ts) != 5 {
		t.Fatalf("%d trials, want 5", len(ts))
	}
	t0, t1, t2, t3, t4 := ts[0], ts[1], ts[2], ts[3], ts[4]
	if t0.State != studydata.Complete || t0.Value != 0.8 || t0.Params["x"] != 0.0031622776601683794 || t0.Params["layers"] != 4 ||
		!t0.Distributions["x"].Equal(studydata.FloatDistribution{Low: 1e-5, High: 0.1, Log: true}) ||
		t0.UserAttrs["loss"] != "NaN" || t0.SystemAttrs["optuna:constraints"] != "[Infinity,-Infinity]" ||
		t0.Started.Format(optunaTime) != "2024-06-07T17:27:27.682770" || t0.Finished.Sub(t0.Started) != 6427*time.Microsecond {
		t.Errorf("trial 0: %+v", t0)
	}
	if t1.State != studydata.Fail || t1.Params["x"] != 0.00012 || len(t1.Params) != 1 || !t1.Distributions["x"].Equal(studydata.FloatDistribution{Low: 1e-5, High: 0.1, Log: true}) ||
		!t1.Started.Equal(time.Date(2024, 6, 7, 17, 27, 27, 690779000, time.UTC)) {
		t.Errorf("trial 1: %+v", t1)
	}
	if t2.State != studydata.Fail || !t2.Recovered || !strings.Contains(t2.Message, "it was running there") {
		t.Errorf("trial 2 (left running): %+v", t2)
	}
	if t3.State != studydata.Waiting || t3.SystemAttrs[studydata.FixedParamsAttr] != `{"x":0.01}` {
		t.Errorf("trial 3 (enqueued): %+v", t3)
	}
	if t4.State != studydata.Fail || !strings.Contains(t4.Message, "its value was +Inf") {
		t.Errorf("trial 4 (value +Inf): %+v", t4)
	}

	for _, c := range []struct{ journal, want string }{
		{`{"op_code": 0, "worker_id": "W", "study_name": "a", "directions": [1]}` + "\n" + `{"op_code": 0, "worker_id": "W", "study_name": "b", "directions": [1]}` + "\n",
			`the journal holds 2 studies ("a", "b"); name the one to import`},
		{`{"op_code": 0, "worker_id": "W", "study_name": "m", "directions": [1, 2]}` + "\n", `study "m" has 2 objectives`},
		{`{"op_code": 0, "worker_id": "W", "study_name": "a"` + "\n" + `{"op_code": 1, "worker_id": "W", "study_id": 0}` + "\n", "line 1 is not JSON"},
		{`{"op_code": 11, "worker_id": "W"}` + "\n", "unknown op_code 11"},
		{"", "the journal holds no study"},
	} {
		_, err := ImportJournal(storages.NewInMemoryStorage(), strings.NewReader(c.journal), "", "")
		searchtest.WantErr(t, "import", err, c.want)
	}
	_, err = ImportJournal(storages.NewInMemoryStorage(), strings.NewReader(lines[1]+"\n"), "nope", "")
	searchtest.WantErr(t, "import --study nope", err, `the journal has no study "nope" (it has "s")`)
}

// TestOptunaLoadsExport: Optuna 3.1 (Debian's python3-optuna) loads an
// exported study with its trials, parameters (of their Python types),
// distributions, values, attributes and best trial.
func TestOptunaLoadsExport(t *testing.T) {
	optunatest.Version(t)
	s := optunaStudy(t)
	path := exportFile(t, s)
	out := optunatest.Run(t, `
import json, sys, warnings
warnings.simplefilter("ignore")
import optuna
from optuna.distributions import distribution_to_json
optuna.logging.set_verbosity(optuna.logging.WARNING)
storage = optuna.storages.JournalStorage(optuna.storages.JournalFileStorage(sys.argv[1]))
study = optuna.load_study(study_name=sys.argv[2], storage=storage)
trials = [{"number": t.number, "state": t.state.name, "value": t.value, "params": t.params,
           "types": {k: type(v).__name__ for k, v in t.params.items()},
           "distributions": {k: json.loads(distribution_to_json(d)) for k, d in t.distributions.items()},
           "user_attrs": t.user_attrs, "system_attrs": t.system_attrs,
           "start": t.datetime_start.isoformat() if t.datetime_start else None} for t in study.trials]
best = study.best_trial
print(json.dumps({"direction": study.direction.name, "trials": trials,
                  "best": {"number": best.number, "value": best.value, "params": best.params}}))
`, path, "exported")
	var got struct {
		Direction string
		Trials    []struct {
			Number        int
			State         string
			Value         *float64
			Params        map[string]any
			Types         map[string]string
			Distributions map[string]map[string]any
			UserAttrs     map[string]any `json:"user_attrs"`
			SystemAttrs   map[string]any `json:"system_attrs"`
			Start         *string
		}
		Best struct {
			Number int
			Value  float64
			Params map[string]any
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	ts, _ := s.Trials()
	if got.Direction != "MINIMIZE" || len(got.Trials) != len(ts) {
		t.Fatalf("Optuna loaded %s with %d trials, want MINIMIZE with %d", got.Direction, len(got.Trials), len(ts))
	}
	norm := func(v any) string {
		js, _ := json.Marshal(v)
		var x any
		json.Unmarshal(js, &x)
		js, _ = json.Marshal(x)
		return string(js)
	}
	wantType := map[string]string{"x": "float", "lr": "float", "d": "float", "n": "int", "k": "int"}
	for i, tr := range ts {
		o := got.Trials[i]
		if o.Number != tr.Number || o.State != strings.ToUpper(tr.State.String()) {
			t.Errorf("trial %d: Optuna has number %d state %s, gomase %v", tr.Number, o.Number, o.State, tr.State)
		}
		if (tr.State == studydata.Complete) != (o.Value != nil) || (o.Value != nil && *o.Value != tr.Value) {
			t.Errorf("trial %d: Optuna value %v, gomase %v", tr.Number, o.Value, tr.Value)
		}
		if norm(o.Params) != norm(tr.Params) {
			t.Errorf("trial %d: Optuna params %s, gomase %s", tr.Number, norm(o.Params), norm(tr.Params))
		}
		for name, typ := range o.Types {
			want := wantType[name]
			if name == "c" {
				want = map[any]string{"relu": "str", 4: "int", 0.5: "float", true: "bool", nil: "NoneType"}[tr.Params["c"]]
			}
			if typ != want {
				t.Errorf("trial %d: parameter %s is a Python %s, want %s", tr.Number, name, typ, want)
			}
		}
		if len(o.Distributions) > 0 {
			if d := o.Distributions["lr"]; d != nil && norm(d) != `{"attributes":{"high":0.1,"log":true,"low":0.00001,"step":null},"name":"FloatDistribution"}` {
				t.Errorf("trial %d: lr's distribution in Optuna %s", tr.Number, norm(d))
			}
			if d := o.Distributions["c"]; d != nil && norm(d) != `{"attributes":{"choices":["relu",4,0.5,true,null]},"name":"CategoricalDistribution"}` {
				t.Errorf("trial %d: c's distribution in Optuna %s", tr.Number, norm(d))
			}
		}
		if tr.State != studydata.Waiting && (o.Start == nil || *o.Start != tr.Started.Local().Format(optunaTime)) {
			t.Errorf("trial %d: Optuna's datetime_start %v, gomase %v", tr.Number, o.Start, tr.Started)
		}
		if len(tr.UserAttrs) > 0 && norm(o.UserAttrs) != norm(tr.UserAttrs) {
			t.Errorf("trial %d: user attributes in Optuna %s, gomase %s", tr.Number, norm(o.UserAttrs), norm(tr.UserAttrs))
		}
	}
	if r := got.Trials[3].SystemAttrs; norm(r["failed_trial"]) != "2" || norm(r["retry_history"]) != "[2]" {
		t.Errorf("the retry's system attributes in Optuna: %v", r)
	}
	if r := got.Trials[2].SystemAttrs; r["fail_reason"] != "boom: the objective failed" {
		t.Errorf("the failed trial's system attributes in Optuna: %v", r)
	}
	if r := got.Trials[8].SystemAttrs; norm(r["fixed_params"]) != `{"c":"relu","x":0.25}` {
		t.Errorf("the enqueued trial's system attributes in Optuna: %v", r)
	}
	best, _ := s.BestTrial()
	if got.Best.Number != best.Number || got.Best.Value != best.Value || norm(got.Best.Params) != norm(best.Params) {
		t.Errorf("Optuna's best trial %+v, gomase's %d %v %v", got.Best, best.Number, best.Value, best.Params)
	}
}

func TestCompactJSONKeepsStrings(t *testing.T) {
	v := map[string]any{"a, b": []any{"x: y", json.Number("3"), 0.5, math.Inf(1)}, "n": nil}
	if got, want := compactJSON(v), `{"a, b":["x: y",3,0.5,Infinity],"n":null}`; got != want {
		t.Errorf("compactJSON = %s, want %s", got, want)
	}
	var b pyJSON
	b.value(v)
	if got, want := string(b.take()), `{"a, b": ["x: y", 3, 0.5, Infinity], "n": null}`; got != want {
		t.Errorf("pyJSON = %s, want %s", got, want)
	}
}
