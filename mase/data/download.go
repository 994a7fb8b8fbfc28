package data

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gomase/gomase/mase/datadir"
	"github.com/gomase/gomase/mase/download"
)

// downloadStall is how long a download may go without receiving a byte
// before it is abandoned. The archives are large (IMDb: 84 MB), so there is
// no limit on the whole transfer.
var downloadStall = download.DefaultStall

// The size caps of the downloaded archives: well above their real size, so
// that a server sending something endless is stopped early.
const (
	// IMDbMaxBytes caps the IMDb archive (aclImdb_v1.tar.gz is 84,125,825
	// bytes).
	IMDbMaxBytes = 128 << 20
	// SST2MaxBytes caps GLUE's SST-2.zip (7,439,277 bytes).
	SST2MaxBytes = 32 << 20
)

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
func fromCache(ctx context.Context, what, cacheRel, url string, maxBytes int64, read func(path string) (*Dataset, error), noDownload bool, tried []string) (*Dataset, error) {
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
	f := download.File{Path: cached, Limit: maxBytes, LimitWhy: "the cap for the " + what, Verify: func(tmp string) error {
		var err error
		ds, err = read(tmp)
		return err
	}}
	_, err = download.Get(ctx, nil, url, f, download.Options{Stall: downloadStall})
	if err != nil && ctx.Err() != nil {
		return nil, err // stopped, not missing
	}
	if err != nil {
		tried = append(tried, err.Error())
		return nil, lookedIn(what, tried)
	}
	ds.Source = cached
	return ds, nil
}
