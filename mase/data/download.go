package data

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gomase/gomase/mase/datadir"
)

// downloadStall is how long a download may go without receiving a byte
// before it is abandoned. The archives are large (IMDb: 84 MB), so there is
// no limit on the whole transfer.
var downloadStall = 60 * time.Second

var httpClient = &http.Client{Transport: &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DialContext:           (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
	TLSHandshakeTimeout:   30 * time.Second,
	ResponseHeaderTimeout: 60 * time.Second,
}}

// download fetches url into dest atomically: the body goes to a temporary
// file beside dest, verify checks that file, and only then is it renamed
// into place. Nothing is left behind on failure.
func download(url, dest string, verify func(tmpPath string) error) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stall := time.AfterFunc(downloadStall, cancel)
	defer stall.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("download from %s failed: %w", url, err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return fmt.Errorf("download from %s failed: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("download from %s failed: HTTP %s", url, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return fmt.Errorf("download from %s: %w", url, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".download-*")
	if err != nil {
		return fmt.Errorf("download from %s: %w", url, err)
	}
	defer os.Remove(tmp.Name())
	body := &activityReader{r: resp.Body, onRead: func() { stall.Reset(downloadStall) }}
	if _, err := io.Copy(tmp, body); err != nil {
		tmp.Close()
		if ctx.Err() != nil {
			return fmt.Errorf("download from %s failed: no data for %s", url, downloadStall)
		}
		return fmt.Errorf("download from %s failed: %w", url, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("download from %s: %w", url, err)
	}
	if err := verify(tmp.Name()); err != nil {
		return fmt.Errorf("download from %s is not usable: %w", url, err)
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return fmt.Errorf("download from %s: %w", url, err)
	}
	return nil
}

// activityReader calls onRead whenever bytes arrive.
type activityReader struct {
	r      io.Reader
	onRead func()
}

func (a *activityReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		a.onRead()
	}
	return n, err
}

// lookedIn formats the list of places a loader tried.
func lookedIn(what string, tried []string) error {
	return fmt.Errorf("%s not found; looked in: %s", what, strings.Join(tried, "; "))
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// fromCache is the end of every loader's search: the dataset's file in the
// cache directory (cacheRel), else a download of url into that place,
// checked by reading it with read before it is kept. tried lists the
// places already looked in, for the error when nothing is found.
func fromCache(what, cacheRel, url string, read func(path string) (*Dataset, error), noDownload bool, tried []string) (*Dataset, error) {
	cache, err := datadir.CacheDir()
	if err != nil {
		tried = append(tried, err.Error())
		return nil, lookedIn(what, tried)
	}
	cached := filepath.Join(cache, filepath.FromSlash(cacheRel))
	if isFile(cached) {
		return read(cached)
	}
	tried = append(tried, cached+" (cache)")
	if noDownload {
		tried = append(tried, "download disabled (NoDownload)")
		return nil, lookedIn(what, tried)
	}
	var ds *Dataset
	err = download(url, cached, func(tmp string) error {
		var err error
		ds, err = read(tmp)
		return err
	})
	if err != nil {
		tried = append(tried, err.Error())
		return nil, lookedIn(what, tried)
	}
	ds.Source = cached
	return ds, nil
}
