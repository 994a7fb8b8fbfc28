package data

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/datadir"
	"github.com/gomase/gomase/mase/tokenizer"
)

// shared returns the path of rel in the shared data directory; the tests
// that need the real data fail, not skip, without it (CI always has it).
func shared(t *testing.T, rel string) string {
	t.Helper()
	p, err := datadir.Find(rel)
	if err != nil {
		t.Fatalf("this test needs the shared data (../shared/data beside the checkout, or $GOMASE_DATA_DIR): %v", err)
	}
	return p
}

// bert returns the real bert-base-uncased tokenizer from the shared data.
func bert(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	shared(t, "bert-base-uncased/vocab.txt")
	tok, err := tokenizer.BertBaseUncased()
	if err != nil {
		t.Fatalf("bert-base-uncased tokenizer: %v", err)
	}
	return tok
}

// isolate points the data and cache directories at empty temporary
// folders and clears the dataset variables, so that only what a test puts
// in place can be found.
func isolate(t *testing.T) (dataDir, cacheDir string) {
	t.Helper()
	dataDir, cacheDir = t.TempDir(), t.TempDir()
	t.Setenv("GOMASE_DATA_DIR", dataDir)
	t.Setenv("GOMASE_CACHE_DIR", cacheDir)
	t.Setenv("GOMASE_IMDB", "")
	t.Setenv("GOMASE_SST2", "")
	return dataDir, cacheDir
}

// tinyIMDb is a small dataset in the official layout, with the members
// the loader must skip (README, unsup, bag-of-words files).
func tinyIMDb() map[string]string {
	return map[string]string{
		"aclImdb/README":                "Large Movie Review Dataset v1.0",
		"aclImdb/imdb.vocab":            "the\nand\n",
		"aclImdb/imdbEr.txt":            "0.1\n",
		"aclImdb/train/labeledBow.feat": "0 0:1\n",
		"aclImdb/train/urls_pos.txt":    "http://example.com\n",
		"aclImdb/train/unsup/0_0.txt":   "unlabelled review",
		"aclImdb/train/pos/10_8.txt":    "great film, ten",
		"aclImdb/train/pos/2_10.txt":    "great film, two",
		"aclImdb/train/neg/1_1.txt":     "awful <br /><br />film",
		"aclImdb/train/neg/0_4.txt":     "bad film",
		"aclImdb/test/pos/0_7.txt":      "good test film",
		"aclImdb/test/neg/3_2.txt":      "poor test film",
		"aclImdb/test/neg/0_3.txt":      "weak test film",
	}
}

// tarGz builds a gzip-compressed tar of files (with their folders).
func tarGz(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	dirs := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		for d := filepath.Dir(name); d != "."; d = filepath.Dir(d) {
			if !dirs[d] {
				dirs[d] = true
				if err := tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
					t.Fatal(err)
				}
			}
		}
		body := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// zipOf builds a zip archive of files.
func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeTree writes files under root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// writeFile writes body to dir/name and returns the path.
func writeFile(t *testing.T, dir, name string, body []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, body, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// wantErr fails unless err is non-nil and contains every fragment.
func wantErr(t *testing.T, what string, err error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one containing %q", what, fragments)
		return
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("%s: error %q lacks %q", what, err, f)
		}
	}
}

// filesIn lists the regular files under dir (recursively).
func filesIn(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// ids returns the examples' IDs.
func ids(ex []Example) []string {
	out := make([]string, len(ex))
	for i, e := range ex {
		out[i] = e.ID
	}
	return out
}
