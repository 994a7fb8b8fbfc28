package data

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The complete labelled set in the shared data: 25,000 + 25,000 reviews,
// 12,500 per label, the README's rating histogram, sorted order.
func TestIMDbSharedTarball(t *testing.T) {
	want := shared(t, "imdb/aclImdb_labelled.tar.gz")
	t.Setenv("GOMASE_IMDB", "")
	start := time.Now()
	ds, err := LoadIMDb(IMDbOptions{NoDownload: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("read %s in %v", ds.Source, time.Since(start))
	if ds.Source != want {
		t.Errorf("source %s, want the shared tarball %s", ds.Source, want)
	}
	if got := ds.SplitNames(); !slices.Equal(got, []string{"train", "test"}) {
		t.Fatalf("splits %v", got)
	}
	// Rating histograms from imdb/README.md.
	wantRatings := map[string]map[int]int{
		"train": {1: 5100, 2: 2284, 3: 2420, 4: 2696, 7: 2496, 8: 3009, 9: 2263, 10: 4732},
		"test":  {1: 5022, 2: 2302, 3: 2541, 4: 2635, 7: 2307, 8: 2850, 9: 2344, 10: 4999},
	}
	for _, s := range ds.Splits {
		if s.Len() != 25000 {
			t.Errorf("%s: %d reviews, want 25,000", s.Name, s.Len())
		}
		if c := s.LabelCounts(); c[0] != 12500 || c[1] != 12500 {
			t.Errorf("%s: label counts %v, want 12,500 each", s.Name, c)
		}
		ratings := map[int]int{}
		for i, e := range s.Examples {
			ratings[e.Rating]++
			if (e.Label == 1) != (e.Rating >= 7) {
				t.Fatalf("%s: %s has label %d and rating %d", s.Name, e.ID, e.Label, e.Rating)
			}
			if i > 0 && s.Examples[i-1].Label > e.Label {
				t.Fatalf("%s: not sorted by label at %d", s.Name, i)
			}
		}
		if !reflect.DeepEqual(ratings, wantRatings[s.Name]) {
			t.Errorf("%s ratings %v, want %v", s.Name, ratings, wantRatings[s.Name])
		}
	}
	train, _ := ds.Split("train")
	test, _ := ds.Split("test")
	// Sorted: neg 0..12499, then pos 0..12499.
	for i, want := range map[int]string{0: "train/neg/0_3", 12499: "train/neg/12499_2", 12500: "train/pos/0_9"} {
		if got := train.Examples[i].ID; got != want {
			t.Errorf("train[%d] = %s, want %s", i, got, want)
		}
	}
	if e := test.Examples[6850]; e.ID != "test/neg/6850_2" || e.Text != "Read the book, forget the movie!" || e.Rating != 2 || e.Label != 0 {
		t.Errorf("test[6850] = %+v", e)
	}
	if last := test.Examples[24999]; last.ID != "test/pos/12499_10" || last.Rating != 10 {
		t.Errorf("last test review %+v", last)
	}
	// Spec acceptance case 8: one epoch at batch 8 = 3,125 steps.
	if n := NumBatches(train.Len(), 8, false); n != 3125 {
		t.Errorf("steps per epoch %d, want 3125", n)
	}
	// Limit on the real data: balanced, deterministic.
	if err := ds.Limit(1000, 7); err != nil {
		t.Fatal(err)
	}
	for _, s := range ds.Splits {
		if c := s.LabelCounts(); s.Len() != 1000 || c[0] != 500 || c[1] != 500 {
			t.Errorf("limited %s: %d examples, labels %v", s.Name, s.Len(), c)
		}
	}
}

func TestIMDbSyntheticTarAndFolder(t *testing.T) {
	dir := t.TempDir()
	tarPath := writeFile(t, dir, "aclImdb_v1.tar.gz", tarGz(t, tinyIMDb()))
	fromTar, err := ReadIMDb(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	wantTrain := []Example{
		{Text: "bad film", Label: 0, Rating: 4, ID: "train/neg/0_4"},
		{Text: "awful <br /><br />film", Label: 0, Rating: 1, ID: "train/neg/1_1"},
		{Text: "great film, two", Label: 1, Rating: 10, ID: "train/pos/2_10"},
		{Text: "great film, ten", Label: 1, Rating: 8, ID: "train/pos/10_8"}, // numeric, not string, order
	}
	train, _ := fromTar.Split("train")
	if !reflect.DeepEqual(train.Examples, wantTrain) {
		t.Errorf("train from tar:\n got %+v\nwant %+v", train.Examples, wantTrain)
	}
	test, _ := fromTar.Split("test")
	if got := ids(test.Examples); !slices.Equal(got, []string{"test/neg/0_3", "test/neg/3_2", "test/pos/0_7"}) {
		t.Errorf("test from tar: %v", got)
	}
	if _, err := fromTar.Split("unsup"); err == nil || !strings.Contains(err.Error(), "train, test") {
		t.Errorf("unknown split: %v", err)
	}

	// The same files extracted: read from aclImdb's parent and from aclImdb.
	root := t.TempDir()
	writeTree(t, root, tinyIMDb())
	for _, p := range []string{root, filepath.Join(root, "aclImdb")} {
		fromDir, err := ReadIMDb(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if !reflect.DeepEqual(fromDir.Splits, fromTar.Splits) {
			t.Errorf("folder %s differs from the tarball", p)
		}
	}

	// A plain (uncompressed) tar is accepted too.
	files := tinyIMDb()
	files["aclImdb/test/pos/5_9.txt"] = "another"
	gz, err := gzip.NewReader(bytes.NewReader(tarGz(t, files)))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(gz)
	if err != nil {
		t.Fatal(err)
	}
	plain := writeFile(t, dir, "plain.tar", raw)
	ds, err := ReadIMDb(plain)
	if err != nil || ds.Splits[1].Len() != 4 {
		t.Errorf("second archive: %v", err)
	}
}

func TestIMDbMalformed(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name   string
		edit   func(map[string]string)
		wanted []string
	}{
		{"bad file name", func(f map[string]string) { f["aclImdb/train/pos/great.txt"] = "x" }, []string{"train/pos/great.txt", "<id>_<rating>.txt"}},
		{"rating out of range", func(f map[string]string) { f["aclImdb/test/neg/4_11.txt"] = "x" }, []string{"test/neg/4_11.txt", "rating 1–10"}},
		{"missing folder", func(f map[string]string) { delete(f, "aclImdb/test/pos/0_7.txt") }, []string{"no reviews in test/pos", "{train,test}/{pos,neg}"}},
		{"duplicate id", func(f map[string]string) { f["aclImdb/train/neg/1_3.txt"] = "again" }, []string{"occurs twice"}},
	}
	for i, c := range cases {
		files := tinyIMDb()
		c.edit(files)
		p := writeFile(t, dir, fmt.Sprintf("case%d.tar.gz", i), tarGz(t, files))
		_, err := ReadIMDb(p)
		wantErr(t, c.name, err, c.wanted...)
	}
	// Not an archive at all.
	junk := writeFile(t, dir, "junk.tar.gz", []byte("<html>not found</html>"))
	_, err := ReadIMDb(junk)
	wantErr(t, "junk", err, junk, "not a readable tar archive")
	badGz := writeFile(t, dir, "bad.tar.gz", []byte{0x1f, 0x8b, 0, 1, 2})
	_, err = ReadIMDb(badGz)
	wantErr(t, "bad gzip", err, "not a readable gzip file")
	// A folder without the layout.
	_, err = ReadIMDb(t.TempDir())
	wantErr(t, "empty folder", err, "lacks train/neg")
	_, err = LoadIMDb(IMDbOptions{Path: junk, Limit: -1})
	wantErr(t, "negative limit", err, "limit -1 is negative")
}

// Where LoadIMDb looks, in order, and the error listing every place.
func TestIMDbLocations(t *testing.T) {
	dataDir, cacheDir := isolate(t)
	tarball := writeFile(t, t.TempDir(), "x.tar.gz", tarGz(t, tinyIMDb()))

	_, err := LoadIMDb(IMDbOptions{NoDownload: true})
	wantErr(t, "nothing anywhere", err,
		"IMDb dataset not found",
		filepath.Join(dataDir, "imdb", "aclImdb_labelled.tar.gz"),
		filepath.Join(dataDir, "imdb", "aclImdb_v1.tar.gz"),
		filepath.Join(dataDir, "imdb", "aclImdb"),
		filepath.Join(cacheDir, "imdb", "aclImdb_v1.tar.gz"),
		"download disabled")

	// Extracted folder in the data directory.
	writeTree(t, filepath.Join(dataDir, "imdb"), tinyIMDb())
	ds, err := LoadIMDb(IMDbOptions{NoDownload: true})
	if err != nil || ds.Source != filepath.Join(dataDir, "imdb", "aclImdb") {
		t.Fatalf("data-dir folder: %v %v", ds, err)
	}
	// The tarball in the data directory comes first.
	files := tinyIMDb()
	files["aclImdb/train/neg/7_2.txt"] = "tarball only"
	writeFile(t, dataDir, "imdb/aclImdb_labelled.tar.gz", tarGz(t, files))
	ds, err = LoadIMDb(IMDbOptions{NoDownload: true})
	if err != nil || !strings.HasSuffix(ds.Source, "aclImdb_labelled.tar.gz") || ds.Splits[0].Len() != 5 {
		t.Fatalf("data-dir tarball: %v", err)
	}
	// GOMASE_IMDB beats the data directory; the explicit path beats both.
	t.Setenv("GOMASE_IMDB", tarball)
	if ds, err = LoadIMDb(IMDbOptions{}); err != nil || ds.Source != tarball {
		t.Fatalf("GOMASE_IMDB: %v", err)
	}
	explicit := filepath.Join(dataDir, "imdb")
	if ds, err = LoadIMDb(IMDbOptions{Path: explicit}); err != nil || ds.Source != explicit {
		t.Fatalf("explicit path: %v", err)
	}
	// A wrong explicit choice is an error, not a reason to look elsewhere.
	_, err = LoadIMDb(IMDbOptions{Path: filepath.Join(dataDir, "nope")})
	wantErr(t, "missing explicit path", err, "IMDbOptions.Path", "nope", "does not exist")
	t.Setenv("GOMASE_IMDB", filepath.Join(dataDir, "gone.tar.gz"))
	_, err = LoadIMDb(IMDbOptions{})
	wantErr(t, "missing GOMASE_IMDB", err, "GOMASE_IMDB", "gone.tar.gz")
}

// The download fallback against a local server: junk and an archive of
// the wrong layout are refused and leave nothing behind; a good archive is
// kept in the cache and used from there afterwards.
func TestIMDbDownload(t *testing.T) {
	_, cacheDir := isolate(t)
	var body []byte
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		if body == nil {
			http.NotFound(w, r)
			return
		}
		w.Write(body)
	}))
	defer srv.Close()
	old := IMDbURL
	IMDbURL = srv.URL + "/aclImdb_v1.tar.gz"
	defer func() { IMDbURL = old }()

	// An explicitly configured data directory that is missing is an error,
	// not a reason to download.
	dataDir := os.Getenv("GOMASE_DATA_DIR")
	t.Setenv("GOMASE_DATA_DIR", filepath.Join(dataDir, "missing"))
	_, err := LoadIMDb(IMDbOptions{})
	wantErr(t, "missing GOMASE_DATA_DIR", err, "GOMASE_DATA_DIR", "missing")
	if hits != 0 {
		t.Errorf("a wrong GOMASE_DATA_DIR led to a download")
	}
	t.Setenv("GOMASE_DATA_DIR", dataDir)

	_, err = LoadIMDb(IMDbOptions{})
	wantErr(t, "HTTP 404", err, "404", IMDbURL)
	body = []byte("<html>maintenance</html>")
	_, err = LoadIMDb(IMDbOptions{})
	wantErr(t, "junk", err, "not usable", "not a readable tar archive")
	wrong := tinyIMDb()
	for name := range wrong {
		if strings.Contains(name, "/test/") {
			delete(wrong, name)
		}
	}
	body = tarGz(t, wrong)
	_, err = LoadIMDb(IMDbOptions{})
	wantErr(t, "wrong layout", err, "no reviews in test/neg")
	if left := filesIn(t, cacheDir); len(left) != 0 {
		t.Fatalf("failed downloads left %v", left)
	}

	body = tarGz(t, tinyIMDb())
	ds, err := LoadIMDb(IMDbOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cached := filepath.Join(cacheDir, "imdb", "aclImdb_v1.tar.gz")
	if ds.Source != cached || ds.Splits[0].Len() != 4 || ds.Splits[1].Len() != 3 {
		t.Errorf("downloaded dataset from %s: %v", ds.Source, ds.SplitNames())
	}
	if left := filesIn(t, cacheDir); !slices.Equal(left, []string{cached}) {
		t.Errorf("cache holds %v, want only %s", left, cached)
	}
	srv.Close()
	before := hits
	if _, err := LoadIMDb(IMDbOptions{}); err != nil || hits != before {
		t.Errorf("cached archive not used: %v (hits %d→%d)", err, before, hits)
	}
}

// The 1,000-review samples, and malformed jsonl.
func TestIMDbSample(t *testing.T) {
	shared(t, "imdb/sample/train.jsonl")
	ds, err := LoadIMDbSample(IMDbOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ds.Splits {
		if c := s.LabelCounts(); s.Len() != 1000 || c[0] != 500 || c[1] != 500 {
			t.Errorf("%s: %d reviews, labels %v; want 1,000 with 500 each", s.Name, s.Len(), c)
		}
		for i, e := range s.Examples {
			f, ok, err := parseIMDbName(e.ID + ".txt")
			if !ok || err != nil || f.rating != e.Rating || f.label != e.Label || f.split != s.Name || e.Text == "" {
				t.Fatalf("%s[%d] = %s (rating %d)", s.Name, i, e.ID, e.Rating)
			}
			if i > 0 {
				p, _, _ := parseIMDbName(s.Examples[i-1].ID + ".txt")
				if p.label > f.label || (p.label == f.label && p.num >= f.num) {
					t.Fatalf("%s not sorted at %d: %s then %s", s.Name, i, s.Examples[i-1].ID, e.ID)
				}
			}
		}
	}
	lim, err := LoadIMDbSample(IMDbOptions{Limit: 64, Seed: 1})
	if err != nil || lim.Splits[0].Len() != 64 || lim.Splits[0].LabelCounts()[1] != 32 {
		t.Errorf("limited sample: %v", err)
	}

	dir := t.TempDir()
	good := `{"id": "train/neg/3_1", "label": 0, "rating": 1, "text": "bad"}` + "\n"
	cases := []struct {
		train  string
		wanted []string
	}{
		{good + "{not json}\n", []string{"train.jsonl line 2", "not a JSON object"}},
		{good + `{"id": "x", "label": 0}` + "\n", []string{"line 2", `no "text"`}},
		{good + `{"text": "t"}` + "\n", []string{"line 2", `no "label"`}},
		{`{"text": "t", "label": 3}` + "\n", []string{"line 1", "label 3 is not 0 (neg) or 1 (pos)"}},
		{`{"id": "train/pos/3_9", "text": "t", "label": 0}` + "\n", []string{"line 1", "does not match"}},
		{"\n\n", []string{"no examples"}},
	}
	writeFile(t, dir, "test.jsonl", []byte(good))
	for _, c := range cases {
		writeFile(t, dir, "train.jsonl", []byte(c.train))
		_, err := LoadIMDbSample(IMDbOptions{Path: dir})
		wantErr(t, c.train, err, c.wanted...)
	}
	os.Remove(filepath.Join(dir, "test.jsonl"))
	writeFile(t, dir, "train.jsonl", []byte(good))
	_, err = LoadIMDbSample(IMDbOptions{Path: dir})
	wantErr(t, "missing test.jsonl", err, "test.jsonl")
}
