package data

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The shared re-split of GLUE's SST-2: row and label counts of its README.
func TestSST2Shared(t *testing.T) {
	want := shared(t, "sst2")
	t.Setenv("GOMASE_SST2", "")
	ds, err := LoadSST2(SST2Options{NoDownload: true})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Source != want {
		t.Errorf("source %s, want %s", ds.Source, want)
	}
	counts := map[string][3]int{ // rows, neg, pos
		"train": {60614, 26786, 33828},
		"dev":   {6735, 2994, 3741},
		"test":  {872, 428, 444},
	}
	if got := ds.SplitNames(); !slices.Equal(got, []string{"train", "dev", "test"}) {
		t.Fatalf("splits %v", got)
	}
	for _, s := range ds.Splits {
		c := s.LabelCounts()
		if got := [3]int{s.Len(), c[0], c[1]}; got != counts[s.Name] {
			t.Errorf("%s: rows/neg/pos %v, want %v", s.Name, got, counts[s.Name])
		}
	}
	first := Example{Text: "when are bears bears and ", Label: 1, Rating: -1, ID: "train.tsv:2"}
	if got := ds.Splits[0].Examples[0]; got != first {
		t.Errorf("first train row %+v, want %+v", got, first)
	}
	if got := ds.Splits[2].Examples[1]; got.Text != "unflinchingly bleak and desperate " || got.Label != 0 || got.ID != "test.tsv:3" {
		t.Errorf("second test row %+v", got)
	}
}

func TestSST2Malformed(t *testing.T) {
	good := "sentence\tlabel\na fine film \t1\n"
	cases := []struct {
		name, train string
		wanted      []string
	}{
		{"no header", "a fine film \t1\n", []string{"train.tsv line 1", `header is "a fine film \t1"`, `want "sentence\tlabel"`}},
		{"no tab", good + "a row without a label\n", []string{"train.tsv line 3", "no tab", "sentence<TAB>label"}},
		{"bad label", good + "ok \t1\nbad \t2\n", []string{"train.tsv line 4", `label "2" is not 0 (negative) or 1 (positive)`}},
		{"empty sentence", good + " \t0\n", []string{"line 3", "empty sentence"}},
		{"empty row", good + "\nmore \t1\n", []string{"line 3", "empty row"}},
		{"no rows", "sentence\tlabel\n", []string{"header but no rows"}},
		{"empty file", "", []string{"is empty"}},
	}
	for _, c := range cases {
		dir := t.TempDir()
		writeFile(t, dir, "train.tsv", []byte(c.train))
		writeFile(t, dir, "dev.tsv", []byte(good))
		writeFile(t, dir, "test.tsv", []byte(good))
		_, err := ReadSST2(dir)
		wantErr(t, c.name, err, c.wanted...)
	}
	// CRLF line ends and a last line without a newline are fine.
	dir := t.TempDir()
	writeFile(t, dir, "train.tsv", []byte("sentence\tlabel\r\nfirst \t0\r\nlast\t1"))
	writeFile(t, dir, "dev.tsv", []byte(good))
	writeFile(t, dir, "test.tsv", []byte(good))
	ds, err := ReadSST2(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Example{{"first ", 0, -1, "train.tsv:2"}, {"last", 1, -1, "train.tsv:3"}}
	if !reflect.DeepEqual(ds.Splits[0].Examples, want) {
		t.Errorf("got %+v, want %+v", ds.Splits[0].Examples, want)
	}
	// A missing file and a test.tsv of neither layout.
	writeFile(t, dir, "test.tsv", []byte("id\ttext\n1\tx\n"))
	_, err = ReadSST2(dir)
	wantErr(t, "odd test header", err, "test.tsv line 1", `"index\tsentence"`)
	dir = t.TempDir()
	writeFile(t, dir, "train.tsv", []byte(good))
	_, err = ReadSST2(dir)
	wantErr(t, "missing dev", err, "lacks dev.tsv")
	_, err = LoadSST2(SST2Options{Path: dir, Limit: -3})
	wantErr(t, "negative limit", err, "limit -3 is negative")
}

// glueSST2 is a small SST-2 in GLUE's layout: 40 training rows, 6 dev
// rows, an unlabelled test set and the "original" folder.
func glueSST2() map[string]string {
	var train, dev strings.Builder
	train.WriteString("sentence\tlabel\n")
	for i := range 40 {
		fmt.Fprintf(&train, "train sentence %d \t%d\n", i, i%2)
	}
	dev.WriteString("sentence\tlabel\n")
	for i := range 6 {
		fmt.Fprintf(&dev, "dev sentence %d \t%d\n", i, (i+1)%2)
	}
	return map[string]string{
		"SST-2/train.tsv":               train.String(),
		"SST-2/dev.tsv":                 dev.String(),
		"SST-2/test.tsv":                "index\tsentence\n0\tunlabelled one\n1\tunlabelled two\n",
		"SST-2/original/README.txt":     "Stanford Sentiment Treebank",
		"SST-2/original/dictionary.txt": "a|0\n",
	}
}

// GLUE's layout is mapped to train (90 % of GLUE train), dev (the other
// 10 %) and test (GLUE dev), the same from a zip and a folder.
func TestSST2GLUELayout(t *testing.T) {
	dir := t.TempDir()
	zipPath := writeFile(t, dir, "SST-2.zip", zipOf(t, glueSST2()))
	fromZip, err := ReadSST2(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	checkGLUESplits(t, fromZip)
	extracted := t.TempDir()
	writeTree(t, extracted, glueSST2())
	for _, p := range []string{extracted, filepath.Join(extracted, "SST-2")} {
		fromDir, err := ReadSST2(p)
		if err != nil {
			t.Fatal(err)
		}
		for i := range fromDir.Splits {
			if !slices.Equal(texts(fromDir.Splits[i]), texts(fromZip.Splits[i])) {
				t.Errorf("%s: split %s differs from the zip's", p, fromDir.Splits[i].Name)
			}
		}
	}
	// A zip lacking a file.
	files := glueSST2()
	delete(files, "SST-2/dev.tsv")
	bad := writeFile(t, dir, "bad.zip", zipOf(t, files))
	_, err = ReadSST2(bad)
	wantErr(t, "zip without dev", err, "lacks SST-2/dev.tsv")
}

func texts(s *Split) []string { return s.Texts() }

func checkGLUESplits(t *testing.T, ds *Dataset) {
	t.Helper()
	if got := ds.SplitNames(); !slices.Equal(got, []string{"train", "dev", "test"}) {
		t.Fatalf("splits %v", got)
	}
	train, dev, test := ds.Splits[0], ds.Splits[1], ds.Splits[2]
	if train.Len() != 36 || dev.Len() != 4 || test.Len() != 6 {
		t.Fatalf("sizes %d/%d/%d, want 36/4/6", train.Len(), dev.Len(), test.Len())
	}
	// train ∪ dev is GLUE's training set, each row once, each part in file order.
	var all []string
	for _, s := range []*Split{train, dev} {
		var lines []int
		for _, e := range s.Examples {
			var n int
			if _, err := fmt.Sscanf(e.ID, "train.tsv:%d", &n); err != nil {
				t.Fatalf("%s id %q", s.Name, e.ID)
			}
			lines = append(lines, n)
			all = append(all, e.Text)
		}
		if !slices.IsSorted(lines) {
			t.Errorf("%s not in file order: %v", s.Name, lines)
		}
	}
	slices.Sort(all)
	all = slices.Compact(all)
	if len(all) != 40 {
		t.Errorf("train+dev hold %d distinct GLUE training rows, want 40", len(all))
	}
	if test.Examples[0].Text != "dev sentence 0 " || test.Examples[0].Label != 1 || test.Examples[0].ID != "dev.tsv:2" {
		t.Errorf("test[0] = %+v, want GLUE's first dev row", test.Examples[0])
	}
}

// Where LoadSST2 looks, and the download fallback against a local server.
func TestSST2LocationsAndDownload(t *testing.T) {
	dataDir, cacheDir := isolate(t)
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if body == nil {
			http.Error(w, "gone", http.StatusGone)
			return
		}
		w.Write(body)
	}))
	defer srv.Close()
	old := SST2URL
	SST2URL = srv.URL + "/SST-2.zip"
	defer func() { SST2URL = old }()
	cached := filepath.Join(cacheDir, "sst2", "SST-2.zip")

	_, err := LoadSST2(SST2Options{NoDownload: true})
	wantErr(t, "nothing anywhere", err, "SST-2 dataset not found",
		filepath.Join(dataDir, "sst2", "train.tsv"), cached, "download disabled")
	t.Setenv("GOMASE_DATA_DIR", filepath.Join(dataDir, "missing"))
	_, err = LoadSST2(SST2Options{})
	wantErr(t, "missing GOMASE_DATA_DIR", err, "GOMASE_DATA_DIR", "missing")
	if err != nil && strings.Contains(err.Error(), SST2URL) {
		t.Errorf("a wrong GOMASE_DATA_DIR led to a download: %v", err)
	}
	t.Setenv("GOMASE_DATA_DIR", dataDir)
	_, err = LoadSST2(SST2Options{})
	wantErr(t, "HTTP 410", err, "410", SST2URL)
	body = []byte("PK but not a zip")
	_, err = LoadSST2(SST2Options{})
	wantErr(t, "junk", err, "not usable", "not a readable zip archive")
	files := glueSST2()
	files["SST-2/train.tsv"] += "broken row\n"
	body = zipOf(t, files)
	_, err = LoadSST2(SST2Options{})
	wantErr(t, "malformed zip", err, "SST-2/train.tsv line 42", "no tab")
	if left := filesIn(t, cacheDir); len(left) != 0 {
		t.Fatalf("failed downloads left %v", left)
	}

	body = zipOf(t, glueSST2())
	ds, err := LoadSST2(SST2Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Source != cached {
		t.Errorf("source %s, want %s", ds.Source, cached)
	}
	checkGLUESplits(t, ds)
	srv.Close()
	again, err := LoadSST2(SST2Options{})
	if err != nil || !reflect.DeepEqual(again.Splits, ds.Splits) {
		t.Fatalf("from the cache: %v", err)
	}
	lim, err := LoadSST2(SST2Options{Limit: 10, Seed: 3})
	if err != nil || lim.Splits[0].Len() != 10 || lim.Splits[0].LabelCounts()[0] != 5 {
		t.Errorf("limit 10: %v", err)
	}

	// The data directory beats the cache; GOMASE_SST2 and Path beat both.
	good := "sentence\tlabel\nfine \t1\nbad \t0\n"
	for _, f := range []string{"train.tsv", "dev.tsv", "test.tsv"} {
		writeFile(t, filepath.Join(dataDir, "sst2"), f, []byte(good))
	}
	if ds, err = LoadSST2(SST2Options{}); err != nil || ds.Source != filepath.Join(dataDir, "sst2") || ds.Splits[0].Len() != 2 {
		t.Fatalf("data dir: %v", err)
	}
	t.Setenv("GOMASE_SST2", cached)
	if ds, err = LoadSST2(SST2Options{}); err != nil || ds.Source != cached {
		t.Fatalf("GOMASE_SST2: %v", err)
	}
	_, err = LoadSST2(SST2Options{Path: filepath.Join(dataDir, "missing")})
	wantErr(t, "missing explicit path", err, "SST2Options.Path", "missing", "does not exist")
}
