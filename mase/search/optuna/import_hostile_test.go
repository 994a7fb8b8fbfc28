package optuna

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/search/internal/searchtest"
	"github.com/gomase/gomase/mase/search/storages"
	"github.com/gomase/gomase/mase/search/studydata"

	"github.com/gomase/gomase/internal/optunatest"
)

// studyLine is a CREATE_STUDY line whose study_name is the JSON name.
func studyLine(name string) string {
	return `{"op_code": 0, "worker_id": "W", "study_name": ` + name + `, "directions": [1]}` + "\n"
}

// TestImportRefusesStudyNamesThatAreNotStrings: a study named by a number
// (or null, a boolean, a list) is refused in one line saying so — it used
// to be imported under the empty name, which no command can name — while
// another study of the same journal, named by a string, still imports;
// a study named "" imports only under another name (as).
func TestImportRefusesStudyNamesThatAreNotStrings(t *testing.T) {
	for name, want := range map[string]string{
		"123":   "named by the number 123, not a string",
		"null":  "named by null, not a string",
		"true":  "named by the boolean true, not a string",
		"[1]":   "named by a list, not a string",
		"1.5e3": "named by the number 1.5e3, not a string",
	} {
		mem := storages.NewInMemoryStorage()
		_, err := ImportJournal(mem, strings.NewReader(studyLine(name)), "", "")
		searchtest.WantErr(t, "import of a study named "+name, err, want)
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("error of %s is not one line: %q", name, err)
		}
		if _, err := mem.StudyDirection(""); err == nil {
			t.Errorf("a study named by %s was imported as the empty name", name)
		}
	}
	journal := studyLine("123") + studyLine(`"123"`)
	_, err := ImportJournal(storages.NewInMemoryStorage(), strings.NewReader(journal), "", "")
	searchtest.WantErr(t, "import of two studies", err, `2 studies (the number 123 (not a string), "123")`)
	mem := storages.NewInMemoryStorage()
	if imp, err := ImportJournal(mem, strings.NewReader(journal), "123", ""); err != nil || imp.Study != "123" {
		t.Errorf("import of the study named by the string \"123\": %+v, %v", imp, err)
	}

	_, err = ImportJournal(storages.NewInMemoryStorage(), strings.NewReader(studyLine(`""`)), "", "")
	searchtest.WantErr(t, "import of a study named \"\"", err, `the study's name is "" (empty), which no gomase command can name; give it one with --as NAME`)
	if imp, err := ImportJournal(storages.NewInMemoryStorage(), strings.NewReader(studyLine(`""`)), "", "renamed"); err != nil || imp.Study != "renamed" {
		t.Errorf("import of a study named \"\" as renamed: %+v, %v", imp, err)
	}
}

// bigJournal is an Optuna journal of n complete trials, each with a
// parameter of its own name (what made the replay quadratic).
func bigJournal(n int) []byte {
	var b bytes.Buffer
	b.WriteString(studyLine(`"big"`))
	dist := `"{\"name\": \"FloatDistribution\", \"attributes\": {\"step\": null, \"low\": 0.0, \"high\": 1.0, \"log\": false}}"`
	for i := range n {
		fmt.Fprintf(&b, `{"op_code": 4, "worker_id": "W", "study_id": 0, "datetime_start": "2024-01-01T00:00:00.000000"}`+"\n")
		fmt.Fprintf(&b, `{"op_code": 5, "worker_id": "W", "trial_id": %d, "param_name": "p%d", "param_value_internal": 0.5, "distribution": %s}`+"\n", i, i, dist)
		fmt.Fprintf(&b, `{"op_code": 5, "worker_id": "W", "trial_id": %d, "param_name": "shared", "param_value_internal": 0.25, "distribution": %s}`+"\n", i, dist)
		fmt.Fprintf(&b, `{"op_code": 6, "worker_id": "W", "trial_id": %d, "state": 1, "values": [%d.0], "datetime_complete": "2024-01-01T00:00:01.000000"}`+"\n", i, i)
	}
	return b.Bytes()
}

// TestImportReplayIsLinear counts the earlier trials the replay looks at to
// check each parameter's distribution against the study's first of that
// name: at most one per parameter line, however many trials there are (it
// used to look at every earlier trial, so that 20,000 trials took 8 s and
// 40,000 took 78 s). No clock is read.
func TestImportReplayIsLinear(t *testing.T) {
	const n = 20000
	j, err := replayOptunaJournal(bytes.NewReader(bigJournal(n)))
	if err != nil {
		t.Fatal(err)
	}
	if j.compared > 2*n {
		t.Errorf("replaying %d trials with 2 parameters each compared %d distributions; want at most %d (one per parameter line)", n, j.compared, 2*n)
	}
	if s := j.studies[0]; len(s.trials) != n || len(j.trials[s.trials[n-1]].params) != 2 {
		t.Fatalf("replay built %d trials", len(s.trials))
	}
}

// BenchmarkImportJournal imports journals of 5,000 to 40,000 trials into
// memory; ns/trial stays flat as the journal grows (go test -bench
// ImportJournal ./mase/search/optuna).
func BenchmarkImportJournal(b *testing.B) {
	for _, n := range []int{5000, 10000, 20000, 40000} {
		data := bigJournal(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if _, err := ImportJournal(storages.NewInMemoryStorage(), bytes.NewReader(data), "", ""); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/trial")
		})
	}
}

// zeros is an endless reader of zero bytes (/dev/zero).
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestImportBoundsWhatItReads: a journal is read a line at a time; a line
// longer than the bound (endless zeros, as from /dev/zero) and a journal
// longer than JournalFile.Max are refused in one line, having read only a
// little past the bound.
func TestImportBoundsWhatItReads(t *testing.T) {
	defer func(n int) { maxLine = n }(maxLine)
	maxLine = 1 << 20
	counted := &countingReader{r: zeros{}}
	_, err := ImportJournal(storages.NewInMemoryStorage(), counted, "", "")
	searchtest.WantErr(t, "import of endless zeros", err, "line 1 is longer than the 1 MiB a journal line may be")
	if counted.n > 4<<20 {
		t.Errorf("read %d bytes of an endless line; want a little more than the bound", counted.n)
	}

	defer func(f int64) { JournalFile.Max = f }(JournalFile.Max)
	JournalFile.Max = 1 << 20
	endless := io.MultiReader(strings.NewReader(studyLine(`"s"`)), strings.NewReader(strings.Repeat("\n", 2<<20)))
	_, err = ImportJournal(storages.NewInMemoryStorage(), endless, "", "")
	searchtest.WantErr(t, "import of a long journal", err, "the journal is longer than the 1 MiB allowed for an Optuna journal")
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestImportDistributionsAsOptuna: distributions Optuna refuses are refused
// in one line (a float step of 0, a log flag that is not a boolean, as
// well as the ranges Optuna's constructors refuse); a stepped range whose
// high is off its grid is imported as Optuna holds it, its high moved down
// (checked against Optuna 3.1 itself), with a note; an export writes it so.
func TestImportDistributionsAsOptuna(t *testing.T) {
	trial := func(dist string) string {
		return studyLine(`"s"`) + `{"op_code": 4, "worker_id": "W", "study_id": 0, "datetime_start": "2024-01-01T00:00:00", "state": 1, "value": 1.0, ` +
			`"datetime_complete": "2024-01-01T00:00:01", "distributions": {"x": ` + dist + `}, "params": {"x": 0}}` + "\n"
	}
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	for dist, want := range map[string]string{
		`{"name": "FloatDistribution", "attributes": {"step": 0.0, "low": 0.0, "high": 1.0, "log": false}}`:  "step 0 is not > 0 (Optuna refuses it",
		`{"name": "FloatDistribution", "attributes": {"step": -0.5, "low": 0.0, "high": 1.0, "log": false}}`: "step -0.5 is not > 0",
		`{"name": "FloatDistribution", "attributes": {"step": null, "low": 0.0, "high": 1.0, "log": "yes"}}`: "log yes is not a boolean",
		`{"name": "IntDistribution", "attributes": {"step": 1, "low": 0, "high": 10, "log": 1}}`:             "log 1 is not a boolean",
		`{"name": "FloatDistribution", "attributes": {"step": null, "low": 2.0, "high": 1.0, "log": false}}`: "low must be ≤ high",
		`{"name": "FloatDistribution", "attributes": {"step": null, "low": 0.0, "high": 1.0, "log": true}}`:  "a log scale needs low > 0",
		`{"name": "IntDistribution", "attributes": {"step": 0, "low": 0, "high": 10, "log": false}}`:         "step must be ≥ 1",
		`{"name": "IntDistribution", "attributes": {"step": 2, "low": 1, "high": 10, "log": true}}`:          "step and log cannot be combined",
		`{"name": "CategoricalDistribution", "attributes": {"choices": []}}`:                                 "has no choices",
	} {
		_, err := ImportJournal(storages.NewInMemoryStorage(), strings.NewReader(trial(quote(dist))), "", "")
		searchtest.WantErr(t, dist, err, want)
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error not one line: %q", dist, err)
		}
	}

	optunatest.Version(t)
	for _, c := range []struct {
		dist string
		want studydata.Distribution
	}{
		{`{"name": "FloatDistribution", "attributes": {"step": 0.3, "low": 0.0, "high": 1.0, "log": false}}`, studydata.FloatDistribution{Low: 0, High: 0.9, Step: 0.3}},
		{`{"name": "FloatDistribution", "attributes": {"step": 0.007, "low": 0.001, "high": 1.0, "log": false}}`, studydata.FloatDistribution{Low: 0.001, High: 0.995, Step: 0.007}},
		{`{"name": "IntDistribution", "attributes": {"step": 3, "low": 0, "high": 10, "log": false}}`, studydata.IntDistribution{Low: 0, High: 9, Step: 3}},
	} {
		path := filepath.Join(t.TempDir(), "j.log")
		if err := os.WriteFile(path, []byte(trial(quote(c.dist))), 0o644); err != nil {
			t.Fatal(err)
		}
		high := strings.TrimSpace(string(optunatest.Run(t, `
import sys, warnings
warnings.simplefilter("ignore")
import optuna
s = optuna.load_study(study_name="s", storage=optuna.storages.JournalStorage(optuna.storages.JournalFileStorage(sys.argv[1])))
print(repr(s.trials[0].distributions["x"].high))`, path)))
		mem := storages.NewInMemoryStorage()
		f, _ := os.Open(path)
		imp, err := ImportJournal(mem, f, "", "")
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		ts, _ := mem.Trials("s")
		got := ts[0].Distributions["x"]
		if !got.Equal(c.want) || fmt.Sprint(highOf(got)) != strings.TrimSuffix(high, ".0") {
			t.Errorf("%s: imported %v; want %v, whose high Optuna gives as %s", c.dist, got, c.want, high)
		}
		if len(imp.Notes) != 1 || !strings.Contains(imp.Notes[0], "is not a whole number of steps; imported as "+c.want.String()) {
			t.Errorf("%s: notes %q", c.dist, imp.Notes)
		}
	}

	// An export writes a stepped range off its grid as Optuna would hold it.
	mem := storages.NewInMemoryStorage()
	off := studydata.FloatDistribution{Low: 0, High: 1, Step: 0.3}
	if err := mem.ImportStudy("e", studydata.Minimize, []studydata.FrozenTrial{{State: studydata.Complete, Value: 1,
		Distributions: map[string]studydata.Distribution{"x": off}, InternalParams: map[string]float64{"x": 0.3}}}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := ExportJournal(mem, "e", &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `\"high\": 0.9`) {
		t.Errorf("export of %v: %s", off, out.String())
	}
}

// highOf is a distribution's high as a number.
func highOf(d studydata.Distribution) any {
	switch d := d.(type) {
	case studydata.FloatDistribution:
		return d.High
	case studydata.IntDistribution:
		return d.High
	}
	return nil
}

// FuzzOptunaImport: whatever an Optuna journal holds, ImportJournal either
// refuses it in one line or imports one study whose trials are numbered
// from 0, read back whole, and exported again; it never panics.
func FuzzOptunaImport(f *testing.F) {
	f.Add(bigJournal(3))
	f.Add([]byte(studyLine("123")))
	f.Add([]byte(studyLine(`""`) + studyLine(`"b"`)))
	f.Add([]byte(studyLine(`"s"`) + `{"op_code": 4, "worker_id": "W", "study_id": 0, "datetime_start": null, "state": 4, "system_attrs": {"fixed_params": {"x": 0.01}}}` + "\n"))
	f.Add([]byte(studyLine(`"s"`) + `{"op_code": 4, "worker_id": "W", "study_id": 0, "state": 1, "value": NaN, "datetime_start": "2024-01-01T00:00:00", ` +
		`"datetime_complete": "2024-01-01T00:00:01", "distributions": {"c": "{\"name\": \"CategoricalDistribution\", \"attributes\": {\"choices\": [1, \"a\", null]}}"}, "params": {"c": 2}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := storages.NewInMemoryStorage()
		imp, err := ImportJournal(mem, bytes.NewReader(data), "", "")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("refusal %q is not one line", err)
			}
			return
		}
		ts, err := mem.Trials(imp.Study)
		if err != nil {
			t.Fatalf("the imported study %q: %v", imp.Study, err)
		}
		total := 0
		for _, n := range imp.Trials {
			total += n
		}
		if len(ts) != total {
			t.Fatalf("%d trials stored, %d counted", len(ts), total)
		}
		for i, tr := range ts {
			if tr.Number != i {
				t.Fatalf("trial %d has number %d", i, tr.Number)
			}
		}
		var out bytes.Buffer
		if _, err := ExportJournal(mem, imp.Study, &out); err != nil {
			t.Fatalf("export of the imported study: %v", err)
		}
	})
}
