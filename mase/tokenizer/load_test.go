package tokenizer

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gomase/gomase/internal/offlinetest"
	"github.com/gomase/gomase/mase/datadir"
)

// vocabServer serves body (swappable) on 127.0.0.1 and counts requests.
type vocabServer struct {
	*httptest.Server
	body        atomic.Pointer[[]byte]
	contentType atomic.Pointer[string] // "" or nil: Go's guess
	status      atomic.Int32
	requests    atomic.Int32
}

func newVocabServer(t *testing.T, body []byte) *vocabServer {
	t.Helper()
	s := &vocabServer{}
	s.body.Store(&body)
	s.status.Store(http.StatusOK)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if ct := s.contentType.Load(); ct != nil && *ct != "" {
			w.Header().Set("Content-Type", *ct)
		}
		w.WriteHeader(int(s.status.Load()))
		w.Write(*s.body.Load())
	}))
	t.Cleanup(s.Close)
	old := VocabURL
	VocabURL = s.URL + "/bert-base-uncased/resolve/main/vocab.txt"
	t.Cleanup(func() { VocabURL = old })
	return s
}

// offline makes the data directory an empty one and the cache a fresh
// one, so that BertBaseUncased must download; it returns the cache.
func offline(t *testing.T) string {
	t.Helper()
	datadir.SetDir("")
	t.Setenv(datadir.EnvDataDir, t.TempDir())
	cache := filepath.Join(t.TempDir(), "cache")
	t.Setenv(datadir.EnvCacheDir, cache)
	t.Setenv("HF_HUB_CACHE", filepath.Join(t.TempDir(), "hf"))
	return cache
}

func TestVocabFromHubCache(t *testing.T) {
	good := realVocabBytes(t)
	cache := offline(t)
	srv := newVocabServer(t, good)
	// The layout transformers leaves after from_pretrained("bert-base-uncased").
	hf := os.Getenv("HF_HUB_CACHE")
	commit := "86b5e0934494bd15c9632b12f734a8a67f723594"
	repo := filepath.Join(hf, "models--bert-base-uncased")
	snap := filepath.Join(repo, "snapshots", commit, "vocab.txt")
	for p, b := range map[string][]byte{filepath.Join(repo, "refs", "main"): []byte(commit), snap: good} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if p, err := FindVocab(); err != nil || p != snap {
		t.Fatalf("FindVocab = %q, %v; want the hub cache's %s", p, err, snap)
	}
	if n := srv.requests.Load(); n != 0 || len(cacheEntries(t, cache)) != 0 {
		t.Errorf("%d requests, cache %v", n, cacheEntries(t, cache))
	}
	// A file with another checksum there is not trusted: FindVocab downloads.
	if err := os.WriteFile(snap, []byte("[PAD]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := FindVocab(); err != nil || p == snap {
		t.Fatalf("FindVocab = %q, %v; want a download", p, err)
	}
	if n := srv.requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func realVocabBytes(t *testing.T) []byte {
	t.Helper()
	p, err := datadir.Find(VocabRel)
	if err != nil {
		t.Fatalf("the shared data must be beside the checkout (CI always has it): %v", err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// cacheEntries lists what is under the cache directory (nothing when it
// does not exist).
func cacheEntries(t *testing.T, cache string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func TestDownloadIntoCache(t *testing.T) {
	good := realVocabBytes(t)
	cache := offline(t)
	srv := newVocabServer(t, good)

	tok, err := BertBaseUncased()
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Encode("AI may take over the world one day"); !slices.Equal(got, golden[0].ids) {
		t.Errorf("downloaded vocabulary encodes to %v", got)
	}
	cached := filepath.Join(cache, "bert-base-uncased", "vocab.txt")
	if b, err := os.ReadFile(cached); err != nil || !slices.Equal(b, good) {
		t.Fatalf("the cache does not hold the downloaded file: %v", err)
	}
	if files := cacheEntries(t, cache); len(files) != 1 {
		t.Errorf("the cache holds %v, want only %s", files, cached)
	}

	// The second call reads the cache: no request, even with the server down.
	srv.Close()
	if p, err := FindVocab(); err != nil || p != cached {
		t.Fatalf("cached vocabulary not used: %q, %v", p, err)
	}
	if n := srv.requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestDownloadChecksumMismatchLeavesNothing(t *testing.T) {
	good := realVocabBytes(t)
	cache := offline(t)
	// A valid-looking vocabulary that is not bert-base-uncased's.
	tampered := slices.Clone(good)
	copy(tampered[len(tampered)-6:], "#####\n")
	newVocabServer(t, tampered)

	_, err := BertBaseUncased()
	if err == nil {
		t.Fatal("a download with the wrong sha256 was accepted")
	}
	for _, want := range []string{"sha256", VocabSHA256, "127.0.0.1", filepath.Join(cache, "bert-base-uncased", "vocab.txt"), "GOMASE_DATA_DIR"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if files := cacheEntries(t, cache); len(files) != 0 {
		t.Errorf("a failed download left %v in the cache", files)
	}
	if _, err := os.Stat(filepath.Join(cache, "bert-base-uncased")); err == nil {
		t.Errorf("a failed download left an empty directory in the cache")
	}
}

func TestDownloadErrors(t *testing.T) {
	good := realVocabBytes(t)
	cache := offline(t)
	srv := newVocabServer(t, good)

	srv.status.Store(http.StatusNotFound)
	if _, err := BertBaseUncased(); err == nil || !strings.Contains(err.Error(), "HTTP status 404") {
		t.Errorf("HTTP 404: %v", err)
	}

	srv.status.Store(http.StatusOK)
	huge := make([]byte, maxVocabBytes+10)
	srv.body.Store(&huge)
	if _, err := BertBaseUncased(); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized body: %v", err)
	}

	srv.Close()
	if _, err := BertBaseUncased(); err == nil || !strings.Contains(err.Error(), "download from http://127.0.0.1") {
		t.Errorf("server down: %v", err)
	}
	if files := cacheEntries(t, cache); len(files) != 0 {
		t.Errorf("failed downloads left %v in the cache", files)
	}
}

// A data directory given explicitly that does not exist is an error, not
// a reason to download.
func TestWrongDataDirDoesNotDownload(t *testing.T) {
	good := realVocabBytes(t)
	offline(t)
	srv := newVocabServer(t, good)
	missing := filepath.Join(t.TempDir(), "missing")
	t.Setenv(datadir.EnvDataDir, missing)
	_, err := BertBaseUncased()
	if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "GOMASE_DATA_DIR") {
		t.Errorf("want an error naming %s and GOMASE_DATA_DIR, got %v", missing, err)
	}
	if n := srv.requests.Load(); n != 0 {
		t.Errorf("%d download requests for a misconfigured data directory", n)
	}
}

// A malformed vocabulary in the data directory is reported, naming the
// file, and not replaced by a download.
func TestMalformedVocabInDataDir(t *testing.T) {
	good := realVocabBytes(t)
	offline(t)
	srv := newVocabServer(t, good)
	dir := t.TempDir()
	t.Setenv(datadir.EnvDataDir, dir)
	p := filepath.Join(dir, "bert-base-uncased", "vocab.txt")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("[PAD]\n[UNK]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := BertBaseUncased(); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "[CLS] [SEP]") {
		t.Errorf("malformed vocabulary: %v", err)
	}
	if n := srv.requests.Load(); n != 0 {
		t.Errorf("%d download requests", n)
	}
}

func TestBertBaseUncasedFromSharedData(t *testing.T) {
	datadir.SetDir("")
	t.Setenv(datadir.EnvDataDir, "")
	t.Setenv(datadir.EnvCacheDir, filepath.Join(t.TempDir(), "unused"))
	old := VocabURL
	VocabURL = "http://127.0.0.1:1/never-fetched"
	defer func() { VocabURL = old }()
	tok, err := BertBaseUncased()
	if err != nil {
		t.Fatalf("the shared data must be beside the checkout (CI always has it): %v", err)
	}
	if tok.Vocab().Size() != 30522 {
		t.Errorf("vocabulary of %d tokens, want 30522", tok.Vocab().Size())
	}
}

// The download path's limits, HTML refusal and cancellation, and a bad
// cached copy named with how to clear it.
func TestDownloadRefusals(t *testing.T) {
	good := realVocabBytes(t)
	for _, c := range []struct {
		name string
		body []byte
		ct   string
		ctx  func() context.Context
		want []string
	}{
		{"HTML page", []byte("<!DOCTYPE html><html>sign in</html>"), "text/html", context.Background,
			[]string{"vocab.txt from http://127.0.0.1", "is an HTML page (Content-Type text/html)", "nothing was kept"}},
		{"larger than the cap", bytes.Repeat([]byte("[PAD]\n"), maxVocabBytes/6+10), "text/plain", context.Background,
			[]string{"vocab.txt from 127.0.0.1", "larger than the limit of 8388608 bytes (the cap for vocab.txt)"}},
		{"cancelled", good, "text/plain", func() context.Context {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(errors.New("SIGTERM received"))
			return ctx
		}, []string{"download from http://127.0.0.1", "SIGTERM received"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cache := offline(t)
			srv := newVocabServer(t, c.body)
			srv.contentType.Store(&c.ct)
			_, err := BertBaseUncasedContext(c.ctx())
			for _, w := range c.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v lacks %q", err, w)
				}
			}
			if files := cacheEntries(t, cache); len(files) != 0 {
				t.Errorf("a refused download left %v", files)
			}
		})
	}

	// A cached copy edited by hand is named, with how to clear it.
	cache := offline(t)
	cached := filepath.Join(cache, filepath.FromSlash(VocabRel))
	os.MkdirAll(filepath.Dir(cached), 0o755)
	os.WriteFile(cached, []byte("[PAD]\n[UNK]\n"), 0o644)
	_, err := BertBaseUncased()
	if err == nil || !strings.Contains(err.Error(), "remove "+cached) {
		t.Errorf("bad cached vocabulary: %v", err)
	}
}

// TestOfflineVocabularyMakesNoNetworkAccess: with GOMASE_OFFLINE on and no
// vocabulary on disk, loading it fails naming the setting, without a
// request (the guard's dialer fails the test if one is made).
func TestOfflineVocabularyMakesNoNetworkAccess(t *testing.T) {
	offline(t)
	dials := offlinetest.Guard(t)
	_, err := BertBaseUncased()
	if err == nil || !strings.Contains(err.Error(), "GOMASE_OFFLINE forbids downloading") {
		t.Errorf("offline load = %v, want the offline setting named", err)
	}
	if n := dials.Load(); n != 0 {
		t.Errorf("%d dials in offline mode", n)
	}
}
