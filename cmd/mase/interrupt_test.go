package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptRemovesDownload runs `mase train` (this test binary as
// mase) against a local hub whose config.json stalls half-way, sends it
// SIGINT or SIGTERM while the download is in progress, and checks that
// the command ends saying it was interrupted and leaves no temporary
// file in the cache.
func TestInterruptRemovesDownload(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Repo-Commit", "0123456789abcdef0123456789abcdef01234567")
				w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef01234567"`)
				w.Header().Set("Content-Length", "1000")
				w.WriteHeader(http.StatusOK)
				w.Write([]byte(`{"model_type": "bert", `))
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
				case <-time.After(time.Minute):
				}
			}))
			defer srv.Close()
			defer srv.CloseClientConnections()
			cache := t.TempDir()
			cmd := exec.Command(os.Args[0], "train", "--pretrained", "org/model", "--dataset", "imdb-sample", "--limit", "8", "--quiet")
			cmd.Env = append(os.Environ(), "GOMASE_RUN_AS_MASE=1", "GOMASE_OFFLINE=", "HF_HUB_OFFLINE=",
				"HF_ENDPOINT="+srv.URL, "HF_HUB_CACHE="+cache, "HF_TOKEN=", "HF_TOKEN_PATH="+filepath.Join(cache, "no-token"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			blobs := filepath.Join(cache, "models--org--model", "blobs")
			temps := func() []string {
				m, _ := filepath.Glob(filepath.Join(blobs, ".*.incomplete"))
				return m
			}
			deadline := time.Now().Add(time.Minute)
			for len(temps()) == 0 {
				select {
				case err := <-done:
					t.Fatalf("mase train ended before its download started: %v: %s", err, stderr.String())
				case <-time.After(20 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("no download started in a minute: %s", stderr.String())
				}
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err == nil {
					t.Errorf("mase train succeeded after %v", sig)
				}
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("mase train still runs 30 s after %v", sig)
			}
			if left := temps(); len(left) != 0 {
				t.Errorf("%v left %v", sig, left)
			}
			if !strings.Contains(stderr.String(), "interrupted") || !strings.Contains(stderr.String(), "config.json") {
				t.Errorf("stderr does not say the download of config.json was interrupted: %q", stderr.String())
			}
		})
	}
}

// interruptible cancels its context on a signal and, unless released in
// time, hands the signal back to its default action after signalGrace, or
// at once on a second signal.
func TestInterruptibleHandsTheSignalBack(t *testing.T) {
	defer func(g time.Duration, r func(os.Signal)) { signalGrace, resend = g, r }(signalGrace, resend)
	signalGrace = 300 * time.Millisecond
	resent := make(chan os.Signal, 1)
	resend = func(sig os.Signal) { resent <- sig }
	for _, c := range []struct {
		name    string
		signals []syscall.Signal
		release bool          // the command returns right after the signal
		want    os.Signal     // handed back, nil for none
		within  time.Duration // how soon it is handed back
	}{
		{"returned in time", []syscall.Signal{syscall.SIGINT}, true, nil, 0},
		{"still working", []syscall.Signal{syscall.SIGTERM}, false, syscall.SIGTERM, time.Second},
		{"a second signal", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, false, syscall.SIGINT, 200 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, release := interruptible()
			defer release()
			start := time.Now()
			for i, sig := range c.signals {
				if err := syscall.Kill(os.Getpid(), sig); err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					select {
					case <-ctx.Done():
					case <-time.After(5 * time.Second):
						t.Fatal("the context was not cancelled by the signal")
					}
					if cause := context.Cause(ctx); cause == nil || cause.Error() != signalName(sig)+" received" {
						t.Errorf("cause %v", cause)
					}
				}
			}
			if c.release {
				release()
			}
			select {
			case sig := <-resent:
				if sig != c.want {
					t.Errorf("handed back %v, want %v", sig, c.want)
				}
				if took := time.Since(start); took > c.within {
					t.Errorf("handed back after %v, want within %v", took, c.within)
				}
			case <-time.After(signalGrace + time.Second):
				if c.want != nil {
					t.Errorf("%v was not handed back", c.want)
				}
			}
		})
	}
	// Released before any signal: nothing is cancelled.
	ctx, release := interruptible()
	release()
	if ctx.Err() != nil {
		t.Errorf("released context: %v", ctx.Err())
	}
}
