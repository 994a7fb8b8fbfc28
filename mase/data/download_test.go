package data

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomase/gomase/internal/offlinetest"
)

// The dataset downloads stop at their cap (refused before reading when the
// Content-Length says so), stop when their context is cancelled, and leave
// nothing in the cache either way.
func TestDownloadCapsAndCancel(t *testing.T) {
	var sent atomic.Int64 // bytes the endless server got out
	for _, c := range []struct {
		name  string
		serve func(w http.ResponseWriter, r *http.Request)
		ctx   func() context.Context
		want  []string
		most  int64 // the most bytes the server may have got out (-1: no check)
	}{
		{"Content-Length above the cap", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(SST2MaxBytes+1))
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, context.Background, []string{"SST-2.zip from 127.0.0.1", fmt.Sprintf("%d bytes (Content-Length), above the limit of %d bytes (the cap for the SST-2 dataset); refused before reading", SST2MaxBytes+1, SST2MaxBytes)}, -1},
		{"endless body", func(w http.ResponseWriter, r *http.Request) {
			chunk := []byte(strings.Repeat("PK", 32<<10))
			for sent.Store(0); sent.Load() < 3*SST2MaxBytes && r.Context().Err() == nil; sent.Add(int64(len(chunk))) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, context.Background, []string{fmt.Sprintf("larger than the limit of %d bytes (the cap for the SST-2 dataset): stopped after %d bytes", SST2MaxBytes, SST2MaxBytes+1)}, 2 * SST2MaxBytes},
		{"cancelled", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("PK"))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, func() context.Context {
			ctx, cancel := context.WithCancelCause(context.Background())
			time.AfterFunc(200*time.Millisecond, func() { cancel(errors.New("SIGINT received")) })
			return ctx
		}, []string{"SST-2.zip from 127.0.0.1", "interrupted after 2 of unknown bytes: SIGINT received; nothing was kept"}, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, cacheDir := isolate(t)
			srv := httptest.NewServer(http.HandlerFunc(c.serve))
			defer srv.Close()
			defer srv.CloseClientConnections()
			old := SST2URL
			SST2URL = srv.URL + "/SST-2.zip"
			defer func() { SST2URL = old }()
			_, err := LoadSST2Context(c.ctx(), SST2Options{})
			wantErr(t, c.name, err, c.want...)
			if c.most >= 0 && sent.Load() > c.most {
				t.Errorf("the server got %d bytes out, want the client to stop near %d", sent.Load(), SST2MaxBytes)
			}
			if left := filesIn(t, cacheDir); len(left) != 0 {
				t.Errorf("left %v in the cache", left)
			}
		})
	}
}

// TestOfflineMakesNoNetworkAccess: with GOMASE_OFFLINE on, a dataset that is
// not on disk is reported missing with the setting named, and no request
// is made: the download client's dialer, which fails the test, is never
// reached.
func TestOfflineMakesNoNetworkAccess(t *testing.T) {
	isolate(t)
	dials := offlinetest.Guard(t)
	_, err := LoadSST2(SST2Options{})
	wantErr(t, "SST-2 offline", err, "SST-2 dataset not found", "download: offline: GOMASE_OFFLINE forbids downloading")
	_, err = LoadIMDb(IMDbOptions{})
	wantErr(t, "IMDb offline", err, "GOMASE_OFFLINE forbids downloading")
	if n := dials.Load(); n != 0 {
		t.Errorf("%d dials in offline mode", n)
	}
}
