package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// hostileHub serves every file of org/model at commitA through serve; an
// LFS file redirects to /cdn/ on the same server.
func hostileHub(t *testing.T, serve func(w http.ResponseWriter, r *http.Request, file string)) *httptest.Server {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		file, ok := strings.CutPrefix(r.URL.Path, "/org/model/resolve/main/")
		if !ok {
			file = r.URL.Path
		}
		w.Header().Set("X-Repo-Commit", commitA)
		select {
		case <-stop:
			return
		default:
		}
		serve(w, r, file)
	}))
	t.Cleanup(func() { close(stop); srv.CloseClientConnections(); srv.Close() })
	return srv
}

// endless writes prefix, then filler until the client goes away or max
// bytes are out (a bound so that a client without a limit ends too).
func endless(w http.ResponseWriter, r *http.Request, prefix string, max int) {
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(prefix))
	chunk := []byte(strings.Repeat("x", 64<<10))
	for sent := len(prefix); sent < max; sent += len(chunk) {
		if _, err := w.Write(chunk); err != nil || r.Context().Err() != nil {
			return
		}
	}
}

// holdOpen sends headers and a little body, then waits for the client to
// give up (or the test to end).
func holdOpen(w http.ResponseWriter, r *http.Request, body string) {
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(body))
	w.(http.Flusher).Flush()
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

// cacheFiles lists every file under repo, as paths relative to it.
func cacheFiles(t *testing.T, repo string) []string {
	t.Helper()
	var out []string
	filepath.Walk(repo, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			rel, _ := filepath.Rel(repo, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// TestHostileResponses: what a broken or hostile server sends is refused
// with a one-line error naming the file, the host and the limit, without
// writing more than the limit, and nothing is cached.
func TestHostileResponses(t *testing.T) {
	const linked = 1000 // the X-Linked-Size the LFS file is advertised with
	for _, c := range []struct {
		name, file string
		serve      func(w http.ResponseWriter, r *http.Request, file string)
		want       []string // in the error; HOST is the server's host:port, URL the file's URL
		maxBytes   int64    // the most bytes the client may have taken in
	}{
		{"endless config.json", "config.json", func(w http.ResponseWriter, r *http.Request, _ string) {
			endless(w, r, `{"hidden_size": "`, 48<<20)
		}, []string{"config.json of org/model", "HOST", "larger than", "limit of 16777216 bytes"}, 16<<20 + 1},
		{"config.json with a 1 GiB Content-Length", "config.json", func(w http.ResponseWriter, r *http.Request, _ string) {
			w.Header().Set("Content-Length", fmt.Sprint(1<<30))
			holdOpen(w, r, `{"a": 1`)
		}, []string{"config.json of org/model", "HOST", "1073741824 bytes", "limit of 16777216 bytes", "before reading"}, 0},
		{"endless vocab.txt", "vocab.txt", func(w http.ResponseWriter, r *http.Request, _ string) {
			endless(w, r, "[PAD]\n", 24<<20)
		}, []string{"vocab.txt of org/model", "HOST", "limit of 8388608 bytes"}, 8<<20 + 1},
		{"LFS file longer than its X-Linked-Size", "model.safetensors", func(w http.ResponseWriter, r *http.Request, file string) {
			if !strings.HasPrefix(r.URL.Path, "/cdn/") {
				w.Header().Set("X-Linked-Etag", `"`+sha256hex("W")+`"`)
				w.Header().Set("X-Linked-Size", fmt.Sprint(linked))
				http.Redirect(w, r, "/cdn/blob", http.StatusFound)
				return
			}
			endless(w, r, "", 8<<20)
		}, []string{"model.safetensors of org/model", "HOST", "limit of 1000 bytes", "X-Linked-Size"}, linked + 1},
		{"LFS file claimed to be 10^12 bytes", "model.safetensors", func(w http.ResponseWriter, r *http.Request, file string) {
			if !strings.HasPrefix(r.URL.Path, "/cdn/") {
				w.Header().Set("X-Linked-Etag", `"`+sha256hex("W")+`"`)
				w.Header().Set("X-Linked-Size", "1000000000000")
				http.Redirect(w, r, "/cdn/blob", http.StatusFound)
				return
			}
			endless(w, r, "", 8<<20)
		}, []string{"model.safetensors of org/model", "X-Linked-Size", "is 1000000000000 bytes, more than the 8589934592 one file may be", "refused before reading"}, 0},
		{"HTML page as config.json", "config.json", func(w http.ResponseWriter, r *http.Request, _ string) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte("<!DOCTYPE html><html><body>Please log in to the network</body></html>"))
		}, []string{"config.json of org/model", "URL", "HTML"}, -1},
		{"HTML page without its Content-Type", "tokenizer_config.json", func(w http.ResponseWriter, r *http.Request, _ string) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte("<html><body>maintenance</body></html>"))
		}, []string{"tokenizer_config.json of org/model", "URL", "not JSON"}, -1},
		{"truncated JSON", "config.json", func(w http.ResponseWriter, r *http.Request, _ string) {
			w.Write([]byte(`{"hidden_size": 8, "num_la`))
		}, []string{"config.json of org/model", "URL", "not JSON"}, -1},
		{"HTML page as vocab.txt", "vocab.txt", func(w http.ResponseWriter, r *http.Request, _ string) {
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html>nope</html>"))
		}, []string{"vocab.txt of org/model", "URL", "HTML"}, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := hostileHub(t, c.serve)
			cache := setup(t, srv.URL)
			var most atomic.Int64
			opts := Options{Timeout: 5 * time.Second, Progress: func(_ string, done, _ int64) {
				if done > most.Load() {
					most.Store(done)
				}
			}}
			start := time.Now()
			_, err := Resolve("org/model", c.file, opts)
			host := strings.TrimPrefix(srv.URL, "http://")
			for _, w := range c.want {
				w = strings.ReplaceAll(w, "HOST", host)
				w = strings.ReplaceAll(w, "URL", srv.URL+"/org/model/resolve/main/"+c.file)
				wantContains(t, err, w)
			}
			if c.maxBytes >= 0 && most.Load() > c.maxBytes {
				t.Errorf("took in %d bytes, want at most %d", most.Load(), c.maxBytes)
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("refusing took %v", d)
			}
			if left := cacheFiles(t, filepath.Join(cache, "models--org--model")); len(left) != 0 {
				t.Errorf("the cache holds %v after a refused download", left)
			}
		})
	}
}

// TestSweepStaleTemporaries: a temporary file left by a killed download
// (not written for longer than the stall timeout) is removed by the next
// download into the same folder; a fresh one (another live download) and
// huggingface_hub's resumable partial blobs are kept.
func TestSweepStaleTemporaries(t *testing.T) {
	h := newFakeHub(t)
	cache := setup(t, h.srv.URL)
	blobs := filepath.Join(cache, "models--org--model", "blobs")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	files := map[string]bool{ // name -> kept
		".download-1234.incomplete":            false, // a killed download of ours
		"." + sha256hex("x") + ".5.incomplete": false,
		".download-5678.incomplete.fresh":      true, // not a temporary name
		sha256hex("y") + ".incomplete":         true, // huggingface_hub's, resumable
	}
	for name := range files {
		p := filepath.Join(blobs, name)
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	live := filepath.Join(blobs, ".download-live.incomplete")
	if err := os.WriteFile(live, []byte("being written"), 0o644); err != nil {
		t.Fatal(err)
	}
	files[filepath.Base(live)] = true
	if _, err := Resolve("org/model", "model.safetensors", Options{}); err != nil {
		t.Fatal(err)
	}
	for name, kept := range files {
		_, err := os.Stat(filepath.Join(blobs, name))
		if kept && err != nil {
			t.Errorf("%s was removed: %v", name, err)
		}
		if !kept && err == nil {
			t.Errorf("the stale %s was not swept", name)
		}
	}
}

// TestCancelRemovesBlob: cancelling ResolveContext's context stops the
// download and leaves nothing in the cache.
func TestCancelRemovesBlob(t *testing.T) {
	started := make(chan struct{}, 1)
	srv := hostileHub(t, func(w http.ResponseWriter, r *http.Request, _ string) {
		w.Header().Set("ETag", `"`+sha1hex("x")+`"`)
		w.Header().Set("Content-Length", "100000")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(strings.Repeat("w", 5000)))
		w.(http.Flusher).Flush()
		started <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	cache := setup(t, srv.URL)
	blobs := filepath.Join(cache, "models--org--model", "blobs")
	ctx, cancel := context.WithCancelCause(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := ResolveContext(ctx, "org/model", "pytorch_model.bin", Options{})
		errc <- err
	}()
	<-started
	for deadline := time.Now().Add(5 * time.Second); len(entries(t, blobs)) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no temporary blob appeared")
		}
	}
	cancel(errors.New("interrupted by SIGINT"))
	select {
	case err := <-errc:
		wantContains(t, err, "pytorch_model.bin of org/model", "interrupted", "by SIGINT", "nothing was kept")
	case <-time.After(5 * time.Second):
		t.Fatal("the download went on after the cancellation")
	}
	if left := cacheFiles(t, filepath.Join(cache, "models--org--model")); len(left) != 0 {
		t.Errorf("a cancelled download left %v", left)
	}
	// A context cancelled before the request: an error, no request made.
	_, err := ResolveContext(ctx, "org/model", "config.json", Options{})
	wantContains(t, err, "config.json of org/model", "interrupted", "by SIGINT")
}

// TestBadBlobNotReused: a cached blob that is not what its file must be
// (an HTML page an older gomase cached as config.json) is downloaded
// again rather than linked, and BadFile names a bad cached file with how
// to clear it.
func TestBadBlobNotReused(t *testing.T) {
	h := newFakeHub(t)
	cache := setup(t, h.srv.URL)
	repo := filepath.Join(cache, "models--org--model")
	body := h.repos["org/model"].files["config.json"]
	blob := filepath.Join(repo, "blobs", sha1hex(body))
	os.MkdirAll(filepath.Dir(blob), 0o755)
	bad := "<html>" + strings.Repeat(" ", len(body)-13) + "</html>" // the same size
	if err := os.WriteFile(blob, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Resolve("org/model", "config.json", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, p); got != body {
		t.Errorf("the bad blob was reused: %q", got)
	}

	// BadFile on a cached file names it, its blob and the repository folder.
	e := BadFile(p, errors.New("not JSON:\ninvalid character '<'"))
	wantContains(t, e, p+": not JSON: invalid character '<'", "remove it and its blob "+blob, "or the whole folder "+repo)
	// On a file of a local folder it names the file only.
	local := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(local, []byte("x"), 0o644)
	e = BadFile(local, errors.New("not JSON"))
	if e.Error() != local+": not JSON" {
		t.Errorf("local: %v", e)
	}
}
