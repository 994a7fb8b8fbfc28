package download

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func sha(s string) string { b := sha256.Sum256([]byte(s)); return hex.EncodeToString(b[:]) }

// server serves handler on 127.0.0.1; blocked handlers end with the test.
func server(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) *httptest.Server {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		default:
			handler(w, r)
		}
	}))
	t.Cleanup(func() { close(stop); srv.CloseClientConnections(); srv.Close() })
	return srv
}

// names lists the entries of dir.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// wait blocks until the client has gone or the test ends.
func wait(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

func TestSave(t *testing.T) {
	const body = `{"hidden_size": 8}`
	html := "<!DOCTYPE html><html><body>captive portal</body></html>"
	plain := func(ct, b string) func(w http.ResponseWriter, r *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			if ct != "" {
				w.Header().Set("Content-Type", ct)
			}
			w.Write([]byte(b))
		}
	}
	endless := func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("z", 32<<10))
		for i := 0; i < 256 && r.Context().Err() == nil; i++ { // at most 8 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
	for _, c := range []struct {
		name    string
		serve   func(w http.ResponseWriter, r *http.Request)
		file    File // Path is made relative to a fresh folder
		opts    Options
		want    string // "" for success; else in the one-line error
		is      error  // wrapped by the error, when set
		maxSeen int64  // the most bytes Progress may report (0: no check)
		read    bool   // whether any body byte may have been read
	}{
		{"binary with its sha256", plain("", body), File{Path: "blobs/x", SHA256: sha(body), Limit: 100}, Options{}, "", nil, 0, true},
		{"JSON", plain("application/json", body), File{Path: "config.json", Content: JSON, Limit: 100}, Options{}, "", nil, 0, true},
		{"named by its sha256", plain("", body), File{Path: "blobs", NameBySHA256: true, Limit: 100}, Options{}, "", nil, 0, true},
		{"limit equal to the size", plain("", body), File{Path: "f", Limit: int64(len(body))}, Options{}, "", nil, 0, true},
		{"endless body", endless, File{Path: "f", Limit: 1 << 20, LimitWhy: "the cap for tests"}, Options{},
			"f from HOST is larger than the limit of 1048576 bytes (the cap for tests): stopped after 1048577 bytes; nothing was kept", ErrTooLarge, 1<<20 + 1, true},
		{"Content-Length above the limit", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "5000000")
			w.WriteHeader(http.StatusOK)
			w.Write([]byte("abc"))
			w.(http.Flusher).Flush()
			wait(r)
		}, File{Path: "f", Name: "weights.bin", Limit: 1000}, Options{},
			"weights.bin from HOST is 5000000 bytes (Content-Length), above the limit of 1000 bytes; refused before reading", ErrTooLarge, 0, false},
		{"sha256 mismatch", plain("", body), File{Path: "blobs/x", SHA256: sha("other"), Limit: 100}, Options{},
			"x from URL is corrupt: sha256 " + sha(body) + ", expected " + sha("other"), ErrContent, 0, true},
		{"short body", func(w http.ResponseWriter, r *http.Request) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n%s", strings.Repeat("s", 50))
			conn.Close()
		}, File{Path: "f", Limit: 1000}, Options{}, "download of f from HOST interrupted after 50 of 100 bytes: unexpected EOF; nothing was kept", nil, 0, true},
		{"stall", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(http.StatusOK)
			w.Write([]byte("0123456789"))
			w.(http.Flusher).Flush()
			wait(r)
		}, File{Path: "f", Limit: 1000}, Options{Stall: 100 * time.Millisecond},
			"download of f from HOST interrupted after 10 of 1000 bytes: no data for 100ms; nothing was kept", nil, 0, true},
		{"stall before the response", func(w http.ResponseWriter, r *http.Request) { wait(r) },
			File{Path: "f", Limit: 1000}, Options{Stall: 100 * time.Millisecond}, "download from URL failed: no data for 100ms", nil, 0, false},
		{"whole-transfer timeout", func(w http.ResponseWriter, r *http.Request) {
			for r.Context().Err() == nil {
				w.Write([]byte("t"))
				w.(http.Flusher).Flush()
				time.Sleep(10 * time.Millisecond)
			}
		}, File{Path: "f", Limit: 1000}, Options{Timeout: 300 * time.Millisecond}, "timed out after 300ms; nothing was kept", nil, 0, true},
		{"HTML page served as text/html", plain("text/html; charset=utf-8", html), File{Path: "config.json", Content: JSON, Limit: 1000}, Options{},
			"config.json from URL is an HTML page (Content-Type text/html; charset=utf-8), not JSON", ErrContent, 0, false},
		{"HTML page served as JSON", plain("application/json", html), File{Path: "config.json", Content: JSON, Limit: 1000}, Options{},
			`config.json from URL is not JSON but an HTML page (it starts with "<!DOCTYPE html><html><bo"); nothing was kept`, ErrContent, 0, true},
		{"XML served as JSON", plain("application/json", "<?xml version='1.0'?><Error/>"), File{Path: "config.json", Content: JSON, Limit: 1000}, Options{},
			"not JSON but an HTML or XML page", ErrContent, 0, true},
		{"truncated JSON", plain("", `{"a": [1, 2`), File{Path: "config.json", Content: JSON, Limit: 1000}, Options{},
			"config.json from URL is not JSON: unexpected end of JSON input", ErrContent, 0, true},
		{"HTML page as text", plain("text/plain", html), File{Path: "vocab.txt", Content: Text, Limit: 1000}, Options{},
			"vocab.txt from URL is an HTML page, not text", ErrContent, 0, true},
		{"binary as text", plain("", "[PAD]\n\x00\x01"), File{Path: "vocab.txt", Content: Text, Limit: 1000}, Options{},
			"vocab.txt from URL is not text: a NUL byte at offset 6", ErrContent, 0, true},
		{"HTML page as binary is the caller's business", plain("text/html", html), File{Path: "f", Limit: 1000}, Options{}, "", nil, 0, true},
		{"Verify refuses", plain("", body), File{Path: "data.tar.gz", Limit: 1000, Verify: func(tmp string) error {
			b, err := os.ReadFile(tmp)
			if err != nil || string(b) != body {
				return fmt.Errorf("verify saw %q, %v", b, err)
			}
			return errors.New("not a readable tar archive")
		}}, Options{}, "download of data.tar.gz from URL is not usable: not a readable tar archive; nothing was kept", ErrContent, 0, true},
		{"HTTP 404", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, File{Path: "f", Limit: 1000}, Options{},
			"download from URL failed: HTTP status 404 Not Found, want 200 OK", nil, 0, false},
		{"no limit", plain("", body), File{Path: "f"}, Options{}, "no byte limit given", nil, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := server(t, c.serve)
			dir := t.TempDir()
			f := c.file
			f.Path = filepath.Join(dir, f.Path)
			var seen atomic.Int64
			var calls atomic.Int32
			o := c.opts
			o.Progress = func(done, total int64) {
				calls.Add(1)
				seen.Store(max(seen.Load(), done))
			}
			u := srv.URL + "/files/" + filepath.Base(c.file.Path)
			start := time.Now()
			res, err := Get(context.Background(), nil, u, f, o)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %v", took)
			}
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				b, rerr := os.ReadFile(res.Path)
				if rerr != nil || res.Size != int64(len(b)) || res.SHA256 != sha(string(b)) {
					t.Fatalf("result %+v: %q, %v", res, b, rerr)
				}
				if want := f.Path; f.NameBySHA256 {
					want = filepath.Join(f.Path, res.SHA256)
					if res.Path != want {
						t.Errorf("saved at %s, want %s", res.Path, want)
					}
				} else if res.Path != want {
					t.Errorf("saved at %s, want %s", res.Path, want)
				}
				if left := names(t, filepath.Dir(res.Path)); len(left) != 1 {
					t.Errorf("the folder holds %v, want only %s", left, filepath.Base(res.Path))
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; want %q", c.want)
			}
			want := strings.ReplaceAll(c.want, "HOST", strings.TrimPrefix(srv.URL, "http://"))
			want = strings.ReplaceAll(want, "URL", u)
			if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q\nwant one line containing %q", err, want)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %v does not wrap %v", err, c.is)
			}
			if c.maxSeen > 0 && seen.Load() > c.maxSeen {
				t.Errorf("read %d bytes, want at most %d", seen.Load(), c.maxSeen)
			}
			if !c.read && seen.Load() > 0 {
				t.Errorf("read %d bytes of a response refused before reading", seen.Load())
			}
			var left []string
			filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
				if err == nil && !info.IsDir() {
					left = append(left, p)
				}
				return nil
			})
			if len(left) != 0 {
				t.Errorf("a failed download left %v", left)
			}
		})
	}
}

func TestProgress(t *testing.T) {
	body := strings.Repeat("p", 600<<10)
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.Write([]byte(body))
	})
	var got [][2]int64
	_, err := Get(context.Background(), nil, srv.URL, File{Path: filepath.Join(t.TempDir(), "f"), Limit: 1 << 20},
		Options{Progress: func(done, total int64) { got = append(got, [2]int64{done, total}) }})
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(body))
	if len(got) < 3 || got[0] != [2]int64{0, n} || got[len(got)-1] != [2]int64{n, n} {
		t.Errorf("progress %v", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i][0] < got[i-1][0] {
			t.Errorf("progress went back: %v", got)
		}
	}
}

// A cancelled context stops the download and removes its temporary file;
// the error carries the cancellation's cause.
func TestCancelRemovesTemporaryFile(t *testing.T) {
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100000")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(strings.Repeat("c", 1000)))
		w.(http.Flusher).Flush()
		wait(r)
	})
	dir := t.TempDir()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	errc := make(chan error, 1)
	go func() {
		_, err := Get(ctx, nil, srv.URL, File{Path: filepath.Join(dir, "model.bin"), Limit: 100000}, Options{})
		errc <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if left := names(t, dir); len(left) == 1 && IsTemp(left[0]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no temporary file appeared: %v", names(t, dir))
		}
	}
	cancel(errors.New("interrupted by SIGINT"))
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "model.bin") || !strings.Contains(err.Error(), "interrupted by SIGINT") {
			t.Errorf("error %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the download did not stop within 5 s of the cancellation")
	}
	if left := names(t, dir); len(left) != 0 {
		t.Errorf("a cancelled download left %v", left)
	}
	// Cancelled before the request: nothing is written either.
	_, err := Get(ctx, nil, srv.URL, File{Path: filepath.Join(dir, "model.bin"), Limit: 100000}, Options{})
	if err == nil || !strings.Contains(err.Error(), "interrupted by SIGINT") {
		t.Errorf("error %v", err)
	}
	if left := names(t, dir); len(left) != 0 {
		t.Errorf("left %v", left)
	}
}

// Sweep removes only stale temporary files: those of a killed download.
func TestSweep(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	files := []struct {
		name  string
		stale bool
		swept bool
	}{
		{".model.bin.123.incomplete", true, true},                                // ours, abandoned
		{".download.9.incomplete", true, true},                                   // ours, abandoned
		{".config.json.456.incomplete", false, false},                            // ours, live (written just now)
		{".vocab.txt.2147483646-77.incomplete", false, true},                     // ours, of a process no longer alive
		{fmt.Sprintf(".vocab.txt.%d-78.incomplete", os.Getppid()), false, false}, // ours, of a live process
		{"0a1b2c.incomplete", true, false},                                       // huggingface_hub's resumable partial blob
		{"model.bin", true, false},                                               // a finished file
		{".model.bin.123.incomplete.keep", true, false},                          // not a temporary name
		{".incomplete", true, false},                                             // no name before the suffix
		{"sub.incomplete-dir/.x.1.incomplete", true, false},                      // not directly in dir
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if f.stale {
			os.Chtimes(p, old, old)
		}
	}
	removed, err := Sweep(dir, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.name))
		_, err := os.Stat(p)
		if f.swept {
			want = append(want, p)
			if err == nil {
				t.Errorf("%s was kept", f.name)
			}
		} else if err != nil {
			t.Errorf("%s was removed", f.name)
		}
	}
	slices.Sort(removed)
	slices.Sort(want)
	if !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	if r, err := Sweep(filepath.Join(dir, "missing"), time.Minute); r != nil || err != nil {
		t.Errorf("a missing folder: %v, %v", r, err)
	}

	// Save sweeps the folder it writes into.
	stale := filepath.Join(dir, ".other.bin.7.incomplete")
	os.WriteFile(stale, []byte("x"), 0o644)
	os.Chtimes(stale, old, old)
	srv := server(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	if _, err := Get(context.Background(), nil, srv.URL, File{Path: filepath.Join(dir, "new.bin"), Limit: 10}, Options{Stall: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("Save did not sweep its folder")
	}
}

func TestCheckBytes(t *testing.T) {
	for _, c := range []struct {
		content Content
		body    string
		want    string // "" for accepted
	}{
		{JSON, `{"a": 1}`, ""},
		{JSON, " \n[1, 2]\n", ""},
		{JSON, `"just a string"`, ""},
		{JSON, "", "not JSON: unexpected end of JSON input"},
		{JSON, `{"a": 1} trailing`, "not JSON: invalid character 't' after top-level value"},
		{JSON, "\n  <html><body>", "not JSON but an HTML page"},
		{JSON, "<Error><Code>AccessDenied</Code></Error>", "not JSON but an HTML or XML page"},
		{JSON, "\xef\xbb\xbf{}", "not JSON"},
		{Text, "[PAD]\n[UNK]\n", ""},
		{Text, "<s>\n</s>\n", ""}, // tokens in angle brackets are text
		{Text, "<!doctype HTML>\n<html>", "an HTML page, not text"},
		{Text, "\xff\xfe", "not text: invalid UTF-8"},
		{Text, "a\x00b", "not text: a NUL byte at offset 1"},
		{Binary, "<html>\x00\xff", ""},
	} {
		err := CheckBytes([]byte(c.body), c.content)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v %q: %v", c.content, c.body, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v %q: %v, want %q", c.content, c.body, err, c.want)
		}
	}
}

// TestRemoveTemporaries: a signal handler about to end the process removes
// the temporary file of a download still under way (its own clean-up
// would not run).
func TestRemoveTemporaries(t *testing.T) {
	dir := t.TempDir()
	release := make(chan struct{})
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "8")
		w.Write([]byte("half"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Get(ctx, nil, srv.URL, File{Path: filepath.Join(dir, "model.bin"), Limit: 8}, Options{Stall: time.Minute})
		done <- err
	}()
	temps := func() []string {
		es, _ := os.ReadDir(dir)
		var out []string
		for _, e := range es {
			if IsTemp(e.Name()) {
				out = append(out, e.Name())
			}
		}
		return out
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(temps()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the download made no temporary file")
		}
		time.Sleep(10 * time.Millisecond)
	}
	RemoveTemporaries()
	if left := temps(); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	cancel()
	close(release)
	if err := <-done; err == nil {
		t.Error("the cancelled download succeeded")
	}
}
