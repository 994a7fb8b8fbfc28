package hub

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	commitA = "0123456789abcdef0123456789abcdef01234567"
	commitB = "89abcdef0123456789abcdef0123456789abcdef"
	token   = "hf_secret_token"
)

// fakeRepo is one repository served by fakeHub.
type fakeRepo struct {
	commits map[string]string // revision -> commit
	files   map[string]string
	lfs     map[string]bool // served through a redirect to the CDN
	private bool
}

// fakeHub serves /<id>/resolve/<rev>/<file> like the Hugging Face Hub,
// redirecting LFS files to a second server (the CDN).
type fakeHub struct {
	srv, cdn   *httptest.Server
	repos      map[string]*fakeRepo
	requests   atomic.Int64
	breakNext  atomic.Bool // next file response is cut after 100 bytes
	corruptCDN atomic.Bool // next CDN response has one byte changed
	stallNext  atomic.Bool // next file response stalls after the headers
	stop       chan struct{}

	mu       sync.Mutex
	hubAuth  []string // Authorization headers seen by the hub
	cdnAuth  []string // Authorization headers seen by the CDN
	lastPath string   // last escaped request path seen by the hub
}

func newFakeHub(t *testing.T) *fakeHub {
	t.Helper()
	h := &fakeHub{stop: make(chan struct{}), repos: map[string]*fakeRepo{
		"org/model": {
			commits: map[string]string{"main": commitA, commitA: commitA, "refs/pr/1": commitB},
			files: map[string]string{
				"config.json":        `{"hidden_size": 8}`,
				"sub/dir/vocab.txt":  "[PAD]\n[UNK]\n",
				"model.safetensors":  strings.Repeat("W", 1000),
				"big.bin":            strings.Repeat("B", 1000),
				"name with space.md": "spaces",
			},
			lfs: map[string]bool{"model.safetensors": true},
		},
		"org/private": {
			commits: map[string]string{"main": commitB},
			files:   map[string]string{"config.json": `{"private": true}`, "model.safetensors": strings.Repeat("P", 2000)},
			lfs:     map[string]bool{"model.safetensors": true},
			private: true,
		},
	}}
	h.cdn = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	h.srv = httptest.NewServer(http.HandlerFunc(h.serveHub))
	t.Cleanup(func() {
		close(h.stop)
		h.srv.Close()
		h.cdn.Close()
	})
	return h
}

func (h *fakeHub) path() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastPath
}

func sha1hex(s string) string   { b := sha1.Sum([]byte(s)); return hex.EncodeToString(b[:]) }
func sha256hex(s string) string { b := sha256.Sum256([]byte(s)); return hex.EncodeToString(b[:]) }

func (h *fakeHub) serveHub(w http.ResponseWriter, r *http.Request) {
	h.requests.Add(1)
	h.mu.Lock()
	h.hubAuth = append(h.hubAuth, r.Header.Get("Authorization"))
	h.lastPath = r.URL.EscapedPath()
	h.mu.Unlock()
	h.mu.Lock() // guards repos, which tests may change between requests
	defer h.mu.Unlock()

	parts := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	if len(parts) < 5 || parts[2] != "resolve" {
		http.NotFound(w, r)
		return
	}
	id := parts[0] + "/" + parts[1]
	rev, _ := url.PathUnescape(parts[3])
	file, _ := url.PathUnescape(strings.Join(parts[4:], "/"))
	repo := h.repos[id]
	if repo == nil {
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, "repo not found", http.StatusNotFound)
		return
	}
	if repo.private && r.Header.Get("Authorization") != "Bearer "+token {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	commit, ok := repo.commits[rev]
	if !ok {
		w.Header().Set("X-Error-Code", "RevisionNotFound")
		http.Error(w, "revision not found", http.StatusNotFound)
		return
	}
	w.Header().Set("X-Repo-Commit", commit)
	body, ok := repo.files[file]
	if !ok {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(w, "entry not found", http.StatusNotFound)
		return
	}
	if repo.lfs[file] {
		w.Header().Set("X-Linked-Etag", `"`+sha256hex(body)+`"`)
		w.Header().Set("X-Linked-Size", fmt.Sprint(len(body)))
		http.Redirect(w, r, h.cdn.URL+"/blobs/"+sha256hex(body)+"?sig=x", http.StatusFound)
		return
	}
	etag := sha1hex(body)
	switch {
	case h.breakNext.CompareAndSwap(true, false):
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nETag: %q\r\nX-Repo-Commit: %s\r\n\r\n%s",
			len(body), etag, commit, body[:100])
		conn.Close()
		return
	case h.stallNext.CompareAndSwap(true, false):
		w.Header().Set("ETag", `"`+etag+`"`)
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(body[:10]))
		w.(http.Flusher).Flush()
		h.mu.Unlock()
		defer h.mu.Lock()
		select {
		case <-h.stop:
		case <-r.Context().Done():
		}
		return
	}
	w.Header().Set("ETag", `"`+etag+`"`)
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.Write([]byte(body))
}

func (h *fakeHub) serveCDN(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.cdnAuth = append(h.cdnAuth, r.Header.Get("Authorization"))
	defer h.mu.Unlock()
	sum := strings.TrimPrefix(r.URL.Path, "/blobs/")
	for _, repo := range h.repos {
		for _, body := range repo.files {
			if sha256hex(body) == sum {
				if h.corruptCDN.CompareAndSwap(true, false) {
					body = "X" + body[1:]
				}
				w.Header().Set("ETag", `W/"cdn-etag"`)
				w.Header().Set("Content-Length", fmt.Sprint(len(body)))
				w.Write([]byte(body))
				return
			}
		}
	}
	http.NotFound(w, r)
}

// setup points the environment at the fake hub and a fresh cache.
func setup(t *testing.T, endpoint string) string {
	t.Helper()
	cache := t.TempDir()
	for _, k := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "GOMASE_OFFLINE", "HF_HOME", "XDG_CACHE_HOME"} {
		t.Setenv(k, "")
	}
	t.Setenv("HF_TOKEN_PATH", filepath.Join(t.TempDir(), "token")) // absent: no saved token
	t.Setenv("HF_ENDPOINT", endpoint)
	t.Setenv("HF_HUB_CACHE", cache)
	return cache
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func checkOneLine(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("expected an error")
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("error leaks the token: %q", err)
	}
}

func wantContains(t *testing.T, err error, subs ...string) {
	t.Helper()
	checkOneLine(t, err)
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
}

// entries lists the names in dir, or nil when it does not exist.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestDownloadCacheLayoutThenOffline(t *testing.T) {
	h := newFakeHub(t)
	cache := setup(t, h.srv.URL)
	repo := filepath.Join(cache, "models--org--model")

	var last [2]int64
	opts := Options{Progress: func(file string, done, total int64) { last = [2]int64{done, total} }}
	p, err := Resolve("org/model", "config.json", opts)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(repo, "snapshots", commitA, "config.json")
	if p != want {
		t.Fatalf("path %s, want %s", p, want)
	}
	body := h.repos["org/model"].files["config.json"]
	if got := mustRead(t, p); got != body {
		t.Fatalf("content %q", got)
	}
	if last != [2]int64{int64(len(body)), int64(len(body))} {
		t.Errorf("last progress %v", last)
	}
	if got := mustRead(t, filepath.Join(repo, "refs", "main")); got != commitA {
		t.Errorf("refs/main = %q", got)
	}
	if got := mustRead(t, filepath.Join(repo, "blobs", sha1hex(body))); got != body {
		t.Errorf("blob content %q", got)
	}
	if target, err := os.Readlink(p); err != nil || target != "../../blobs/"+sha1hex(body) {
		t.Errorf("symlink target %q, %v", target, err)
	}

	// A file in a subfolder gets a deeper relative link.
	p2, err := Resolve("org/model", "sub/dir/vocab.txt", Options{})
	if err != nil {
		t.Fatal(err)
	}
	vocab := h.repos["org/model"].files["sub/dir/vocab.txt"]
	if target, err := os.Readlink(p2); err != nil || target != "../../../../blobs/"+sha1hex(vocab) {
		t.Errorf("nested symlink target %q, %v", target, err)
	}
	if mustRead(t, p2) != vocab {
		t.Error("nested content differs")
	}

	// Cached files are returned without a request, even with the server gone.
	n := h.requests.Load()
	h.srv.Close()
	again, err := Resolve("org/model", "config.json", Options{})
	if err != nil || again != p {
		t.Fatalf("second resolve %q, %v", again, err)
	}
	again, err = Resolve("org/model", "config.json", Options{Offline: true, Revision: commitA})
	if err != nil || again != p {
		t.Fatalf("resolve by commit %q, %v", again, err)
	}
	if h.requests.Load() != n {
		t.Error("cached resolve made a request")
	}
	// No temporary files remain anywhere in the cache.
	filepath.Walk(cache, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(info.Name(), ".") && info.Name() != ".no_exist" {
			t.Errorf("leftover %s", path)
		}
		return nil
	})

	// With the server gone, an uncached file names the endpoint and the fix.
	_, err = Resolve("org/model", "big.bin", Options{})
	wantContains(t, err, "big.bin", "org/model", h.srv.URL, "HF_HUB_OFFLINE=1")
}

func TestEscapedNamesAndRevisionWithSlash(t *testing.T) {
	h := newFakeHub(t)
	cache := setup(t, h.srv.URL)
	p, err := Resolve("org/model", "name with space.md", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if mustRead(t, p) != "spaces" {
		t.Error("wrong content")
	}
	if h.path() != "/org/model/resolve/main/name%20with%20space.md" {
		t.Errorf("path %s", h.path())
	}
	p, err = Resolve("org/model", "config.json", Options{Revision: "refs/pr/1"})
	if err != nil {
		t.Fatal(err)
	}
	if h.path() != "/org/model/resolve/refs%2Fpr%2F1/config.json" {
		t.Errorf("path %s", h.path())
	}
	repo := filepath.Join(cache, "models--org--model")
	if p != filepath.Join(repo, "snapshots", commitB, "config.json") {
		t.Errorf("path %s", p)
	}
	if got := mustRead(t, filepath.Join(repo, "refs", "refs", "pr", "1")); got != commitB {
		t.Errorf("refs/refs/pr/1 = %q", got)
	}
	if _, err := Resolve("org/model", "config.json", Options{Revision: "../x"}); err == nil {
		t.Error("revision with .. accepted")
	}
}

// buildFixture lays out a cache the way transformers leaves it.
func buildFixture(t *testing.T, cache string) {
	t.Helper()
	repo := filepath.Join(cache, "models--google--bert-tiny")
	files := map[string]string{"config.json": `{"fixture": 1}`, "tokenizer/vocab.txt": "a\nb\n"}
	for name, body := range files {
		blob := filepath.Join(repo, "blobs", sha1hex(body))
		link := filepath.Join(repo, "snapshots", commitA, filepath.FromSlash(name))
		for _, d := range []string{filepath.Dir(blob), filepath.Dir(link)} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(blob, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(filepath.Dir(link), blob)
		if err := os.Symlink(rel, link); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(repo, "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(commitA), 0o644); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(repo, ".no_exist", commitA, "tokenizer.json")
	os.MkdirAll(filepath.Dir(marker), 0o755)
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFixtureCacheOffline(t *testing.T) {
	setup(t, "http://127.0.0.1:1")
	home := t.TempDir()
	buildFixture(t, filepath.Join(home, "hub"))
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_HOME", home) // cache at $HF_HOME/hub
	t.Setenv("HF_HUB_OFFLINE", "1")

	p, err := Resolve("google/bert-tiny", "config.json", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if mustRead(t, p) != `{"fixture": 1}` {
		t.Error("wrong content")
	}
	p, err = Resolve("google/bert-tiny", "tokenizer/vocab.txt", Options{Revision: commitA})
	if err != nil || mustRead(t, p) != "a\nb\n" {
		t.Fatalf("nested by commit: %q, %v", p, err)
	}

	// Known absent (marker) and absent from the snapshot: ok=false offline.
	for _, f := range []string{"tokenizer.json", "pytorch_model.bin"} {
		if _, ok, err := ResolveOptional("google/bert-tiny", f, Options{}); ok || err != nil {
			t.Errorf("%s: ok=%v err=%v", f, ok, err)
		}
	}
	_, err = Resolve("google/bert-tiny", "pytorch_model.bin", Options{})
	wantContains(t, err, "pytorch_model.bin", "google/bert-tiny", "HF_HUB_OFFLINE")
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("want ErrNotFound, got %v", err)
	}

	// A revision never cached is an error, not ok=false.
	_, ok, err := ResolveOptional("google/bert-tiny", "config.json", Options{Revision: "v2"})
	if ok || err == nil {
		t.Errorf("uncached revision: ok=%v err=%v", ok, err)
	}
	wantContains(t, err, "refs/v2", "HF_HUB_OFFLINE")
}

func TestLocalFolder(t *testing.T) {
	setup(t, "http://127.0.0.1:1")
	t.Setenv("HF_HUB_OFFLINE", "1")
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(dir, "sub", "a.txt"), []byte("a"), 0o644)

	p, err := Resolve(dir, "config.json", Options{})
	if err != nil || p != filepath.Join(dir, "config.json") {
		t.Fatalf("%q, %v", p, err)
	}
	if p, err := Resolve(dir, "sub/a.txt", Options{}); err != nil || mustRead(t, p) != "a" {
		t.Fatalf("%q, %v", p, err)
	}
	_, err = Resolve(dir, "model.safetensors", Options{})
	wantContains(t, err, "model.safetensors", dir)
	if _, ok, err := ResolveOptional(dir, "model.safetensors", Options{}); ok || err != nil {
		t.Errorf("optional: ok=%v err=%v", ok, err)
	}

	// A relative folder that exists is used even if it looks like a repo id.
	t.Chdir(dir)
	if p, err := Resolve("sub", "a.txt", Options{}); err != nil || mustRead(t, p) != "a" {
		t.Fatalf("relative: %q, %v", p, err)
	}
	_, err = Resolve("./missing", "config.json", Options{})
	wantContains(t, err, "missing", "does not exist")
}

func TestRedirectDropsToken(t *testing.T) {
	h := newFakeHub(t)
	cache := setup(t, h.srv.URL)
	t.Setenv("HF_TOKEN", token)

	p, err := Resolve("org/private", "model.safetensors", Options{})
	if err != nil {
		t.Fatal(err)
	}
	body := h.repos["org/private"].files["model.safetensors"]
	if mustRead(t, p) != body {
		t.Fatal("wrong content")
	}
	// The blob is named by X-Linked-Etag, not the CDN's ETag.
	blob := filepath.Join(cache, "models--org--private", "blobs", sha256hex(body))
	if mustRead(t, blob) != body {
		t.Error("blob not named by X-Linked-Etag")
	}
	if target, _ := os.Readlink(p); target != "../../blobs/"+sha256hex(body) {
		t.Errorf("target %q", target)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.hubAuth) != 1 || h.hubAuth[0] != "Bearer "+token {
		t.Errorf("hub saw %q", h.hubAuth)
	}
	if len(h.cdnAuth) != 1 || h.cdnAuth[0] != "" {
		t.Errorf("CDN saw Authorization %q", h.cdnAuth)
	}
}

func TestKeepAuth(t *testing.T) {
	u := func(s string) *url.URL { v, _ := url.Parse(s); return v }
	for _, c := range []struct {
		from, to string
		keep     bool
	}{
		{"https://huggingface.co/a", "https://huggingface.co/b", true},
		{"https://huggingface.co/a", "https://HuggingFace.co:443/b", true},
		{"http://huggingface.co/a", "https://huggingface.co/b", true},
		{"https://huggingface.co/a", "http://huggingface.co/b", false},
		{"https://huggingface.co/a", "https://cdn-lfs.huggingface.co/b", false},
		{"http://127.0.0.1:1000/a", "http://127.0.0.1:1001/b", false},
	} {
		if got := keepAuth(u(c.from), u(c.to)); got != c.keep {
			t.Errorf("keepAuth(%s, %s) = %v", c.from, c.to, got)
		}
	}
}

func TestAuthentication(t *testing.T) {
	h := newFakeHub(t)
	setup(t, h.srv.URL)
	_, err := Resolve("org/private", "config.json", Options{})
	wantContains(t, err, "repository org/private needs authentication: set HF_TOKEN (HTTP 401", "no token was sent")
	if !errors.Is(err, ErrUnauthorized) {
		t.Errorf("want ErrUnauthorized: %v", err)
	}
	_, err = Resolve("org/private", "config.json", Options{Token: "wrong"})
	wantContains(t, err, "HTTP 401", "token sent was refused")

	t.Setenv("HUGGING_FACE_HUB_TOKEN", token)
	p, err := Resolve("org/private", "config.json", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if mustRead(t, p) != `{"private": true}` {
		t.Error("wrong content")
	}
}

func TestSavedToken(t *testing.T) {
	h := newFakeHub(t)
	setup(t, h.srv.URL)
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// HF_TOKEN_PATH (set by setup) names a missing file: no token.
	t.Setenv("HF_HOME", home)
	_, err := Resolve("org/private", "config.json", Options{})
	wantContains(t, err, "no token was sent")
	// Without HF_TOKEN_PATH, $HF_HOME/token is read, as huggingface-cli login writes it.
	t.Setenv("HF_TOKEN_PATH", "")
	if p, err := TokenPath(); err != nil || p != filepath.Join(home, "token") {
		t.Errorf("TokenPath = %q, %v", p, err)
	}
	if _, err := Resolve("org/private", "config.json", Options{}); err != nil {
		t.Fatal(err)
	}
	// $HF_TOKEN wins over the file.
	t.Setenv("HF_TOKEN", "wrong")
	_, err = Resolve("org/private", "model.safetensors", Options{})
	wantContains(t, err, "token sent was refused")
}

func TestCorruptLFSDownload(t *testing.T) {
	h := newFakeHub(t)
	cache := setup(t, h.srv.URL)
	h.corruptCDN.Store(true)
	_, err := Resolve("org/model", "model.safetensors", Options{})
	wantContains(t, err, "model.safetensors of org/model", "is corrupt: sha256", "nothing was kept")
	repo := filepath.Join(cache, "models--org--model")
	if left, _ := filepath.Glob(filepath.Join(repo, "blobs", "*")); len(left) != 0 {
		t.Errorf("blobs left: %v", left)
	}
	if _, err := os.Stat(filepath.Join(repo, "snapshots", commitA, "model.safetensors")); err == nil {
		t.Error("a snapshot link to a corrupt blob exists")
	}
	p, err := Resolve("org/model", "model.safetensors", Options{})
	if err != nil || mustRead(t, p) != h.repos["org/model"].files["model.safetensors"] {
		t.Fatalf("retry: %q, %v", p, err)
	}
}

func TestNotFound(t *testing.T) {
	h := newFakeHub(t)
	cache := setup(t, h.srv.URL)
	_, err := Resolve("org/model", "pytorch_model.bin", Options{})
	wantContains(t, err, "pytorch_model.bin not found in org/model at revision main (HTTP 404 from "+h.srv.URL+"/org/model/resolve/main/pytorch_model.bin)")
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("want ErrNotFound: %v", err)
	}
	_, err = Resolve("org/nothere", "config.json", Options{})
	wantContains(t, err, "repository org/nothere not found")
	_, err = Resolve("org/model", "config.json", Options{Revision: "v9"})
	wantContains(t, err, "revision v9 not found in org/model")
	if _, ok, err := ResolveOptional("org/model", "config.json", Options{Revision: "v9"}); ok || err == nil {
		t.Errorf("missing revision must be an error: ok=%v err=%v", ok, err)
	}

	// ResolveOptional: ok=false, a .no_exist marker is written and then
	// trusted without a request, online and offline.
	repo := filepath.Join(cache, "models--org--model")
	if _, ok, err := ResolveOptional("org/model", "tokenizer.json", Options{}); ok || err != nil {
		t.Fatalf("ok=%v err=%v", ok, err)
	}
	marker := filepath.Join(repo, ".no_exist", commitA, "tokenizer.json")
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("no marker: %v", err)
	}
	if got := mustRead(t, filepath.Join(repo, "refs", "main")); got != commitA {
		t.Errorf("refs/main = %q", got)
	}
	n := h.requests.Load()
	if _, ok, err := ResolveOptional("org/model", "tokenizer.json", Options{}); ok || err != nil {
		t.Errorf("ok=%v err=%v", ok, err)
	}
	if _, ok, err := ResolveOptional("org/model", "tokenizer.json", Options{Offline: true}); ok || err != nil {
		t.Errorf("offline: ok=%v err=%v", ok, err)
	}
	if h.requests.Load() != n {
		t.Error("marker did not prevent a request")
	}
	if p, ok, err := ResolveOptional("org/model", "config.json", Options{}); !ok || err != nil || p == "" {
		t.Errorf("present file: %q ok=%v err=%v", p, ok, err)
	}

	// A file that appears later replaces its marker once downloaded.
	h.mu.Lock()
	h.repos["org/model"].files["tokenizer.json"] = "{}"
	h.mu.Unlock()
	if _, err := Resolve("org/model", "tokenizer.json", Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("marker kept: %v", err)
	}
}

func TestInterruptedDownload(t *testing.T) {
	h := newFakeHub(t)
	cache := setup(t, h.srv.URL)
	repo := filepath.Join(cache, "models--org--model")

	h.breakNext.Store(true)
	_, err := Resolve("org/model", "big.bin", Options{})
	wantContains(t, err, "big.bin", "interrupted after 100 of 1000 bytes")
	if got := entries(t, filepath.Join(repo, "blobs")); len(got) != 0 {
		t.Errorf("blobs left: %v", got)
	}
	if got := entries(t, filepath.Join(repo, "snapshots")); len(got) != 0 {
		t.Errorf("snapshots left: %v", got)
	}
	if _, err := os.Stat(filepath.Join(repo, "refs", "main")); err == nil {
		t.Error("refs/main written for a failed download")
	}

	p, err := Resolve("org/model", "big.bin", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, p); got != strings.Repeat("B", 1000) {
		t.Errorf("content length %d", len(got))
	}
	if got := entries(t, filepath.Join(repo, "blobs")); len(got) != 1 {
		t.Errorf("blobs: %v", got)
	}
}

func TestTimeouts(t *testing.T) {
	h := newFakeHub(t)
	cache := setup(t, h.srv.URL)
	blobs := filepath.Join(cache, "models--org--model", "blobs")

	h.stallNext.Store(true)
	_, err := Resolve("org/model", "big.bin", Options{Timeout: 200 * time.Millisecond})
	wantContains(t, err, "interrupted after 10 of 1000 bytes", "timed out")
	if got := entries(t, blobs); len(got) != 0 {
		t.Errorf("blobs left: %v", got)
	}

	defer func(d time.Duration) { idleTimeout = d }(idleTimeout)
	idleTimeout = 100 * time.Millisecond
	h.stallNext.Store(true)
	_, err = Resolve("org/model", "big.bin", Options{})
	wantContains(t, err, "no data for 100ms")
	if got := entries(t, blobs); len(got) != 0 {
		t.Errorf("blobs left: %v", got)
	}
}

func TestOfflineNeverTouchesNetwork(t *testing.T) {
	h := newFakeHub(t)
	cache := setup(t, h.srv.URL)
	for _, env := range []string{"HF_HUB_OFFLINE", "GOMASE_OFFLINE"} {
		for _, v := range []string{"1", "true", "YES", "on"} {
			t.Setenv(env, v)
			_, err := Resolve("org/model", "config.json", Options{})
			wantContains(t, err, "not in folder org/model", "not in the HF cache at "+filepath.Join(cache, "models--org--model"),
				env+" forbids downloading", "fix:")
			if !errors.Is(err, ErrOffline) {
				t.Errorf("want ErrOffline: %v", err)
			}
			if _, ok, err := ResolveOptional("org/model", "config.json", Options{}); ok || err == nil {
				t.Errorf("optional offline without cache: ok=%v err=%v", ok, err)
			}
			t.Setenv(env, "")
		}
	}
	_, err := Resolve("org/model", "config.json", Options{Offline: true})
	wantContains(t, err, "Options.Offline")
	if n := h.requests.Load(); n != 0 {
		t.Errorf("%d requests while offline", n)
	}
}

func TestInvalidIDs(t *testing.T) {
	setup(t, "http://127.0.0.1:1")
	t.Chdir(t.TempDir())
	for _, id := range []string{
		"", "a/b/c", "org/", "/", "-model", "model-", ".model", "org/model.", "a..b",
		"org--x/model", "bad name", "org/mod@l", strings.Repeat("x", 97), "org/\nx",
	} {
		_, err := Resolve(id, "config.json", Options{Offline: true})
		checkOneLine(t, err)
		if id != "/" && !strings.Contains(err.Error(), "repo id") {
			t.Errorf("%q: %v", id, err)
		}
	}
	for _, ok := range []string{"gpt2", "org/model", "Org_1/model-v1.5", strings.Repeat("x", 96)} {
		if err := CheckRepoID(ok); err != nil {
			t.Errorf("%q rejected: %v", ok, err)
		}
	}
	for _, f := range []string{"", "/etc/passwd", "../x", "a/../b", "a//b", `a\b`} {
		_, err := Resolve("org/model", f, Options{Offline: true})
		wantContains(t, err, "invalid file name")
	}
}

func TestDefaultCacheDir(t *testing.T) {
	setup(t, "")
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_HOME", "/h")
	if d, _ := DefaultCacheDir(); d != filepath.FromSlash("/h/hub") {
		t.Errorf("HF_HOME: %s", d)
	}
	t.Setenv("HF_HUB_CACHE", "/c")
	if d, _ := DefaultCacheDir(); d != filepath.FromSlash("/c") {
		t.Errorf("HF_HUB_CACHE: %s", d)
	}
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_HOME", "")
	t.Setenv("HOME", "/home/u")
	if d, _ := DefaultCacheDir(); d != filepath.FromSlash("/home/u/.cache/huggingface/hub") {
		t.Errorf("default: %s", d)
	}
}
