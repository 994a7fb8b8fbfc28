package tokenizer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gomase/gomase/mase/datadir"
	"github.com/gomase/gomase/mase/hub"
	"github.com/gomase/gomase/mase/limits"
)

// VocabURL is where BertBaseUncased downloads vocab.txt when neither the
// data directory nor the cache has it. Tests point it at a local server.
var VocabURL = "https://huggingface.co/bert-base-uncased/resolve/main/vocab.txt"

// VocabSHA256 is the sha256 of bert-base-uncased's vocab.txt; a download
// with another checksum is rejected.
const VocabSHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"

// VocabRel is the vocabulary's path inside the data and cache directories.
const VocabRel = "bert-base-uncased/vocab.txt"

// downloadTimeout bounds the whole download.
const downloadTimeout = 30 * time.Second

// maxVocabBytes bounds what a download may write (the file is 231,508
// bytes).
const maxVocabBytes = 4 << 20

// BertBaseUncased returns the bert-base-uncased tokenizer, reading
// vocab.txt through FindVocab.
func BertBaseUncased() (*Tokenizer, error) {
	path, err := FindVocab()
	if err != nil {
		return nil, err
	}
	v, err := LoadVocab(path)
	if err != nil {
		return nil, err
	}
	return New(v)
}

// FindVocab returns the path of bert-base-uncased's vocab.txt: the data
// directory's (see package datadir), else the cache directory's, else the
// Hugging Face cache's (package hub; checksum verified), else a copy it
// downloads from VocabURL into the cache (checksum verified,
// written atomically). An explicitly configured data directory that does
// not exist (--data-dir, $GOMASE_DATA_DIR) is an error, not a reason to
// download. When everything fails, the error lists every place it looked
// and why the download failed.
func FindVocab() (string, error) {
	p, err := datadir.Find(VocabRel)
	if err == nil {
		return p, nil
	}
	if !errors.Is(err, datadir.ErrNotFound) {
		return "", fmt.Errorf("bert-base-uncased vocabulary: %w", err)
	}
	tried := []string{err.Error()}
	fix := "set " + datadir.EnvDataDir + " to a directory holding " + VocabRel
	fail := func(why string) (string, error) {
		tried = append(tried, why)
		return "", fmt.Errorf("bert-base-uncased vocabulary not found: %s; fix: %s", strings.Join(tried, "; "), fix)
	}
	cache, err := datadir.CacheDir()
	if err != nil {
		return fail(err.Error())
	}
	cached := filepath.Join(cache, filepath.FromSlash(VocabRel))
	fix += ", or copy that file (sha256 " + VocabSHA256 + ") to " + cached
	if _, err := os.Stat(cached); err == nil {
		return cached, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fail(fmt.Sprintf("cache file %s: %v", cached, err))
	}
	tried = append(tried, "cache file "+cached+" does not exist")
	p, why := fromHubCache()
	if p != "" {
		return p, nil
	}
	tried = append(tried, why)
	if err := download(VocabURL, cached, VocabSHA256); err != nil {
		return fail(err.Error())
	}
	return cached, nil
}

// VocabRepo is the Hugging Face repository whose vocab.txt FindVocab looks
// for in the hub cache that transformers fills.
const VocabRepo = "bert-base-uncased"

// fromHubCache returns bert-base-uncased's vocab.txt from the Hugging Face
// cache, without network access, when it is there with the right checksum;
// otherwise "" and why not.
func fromHubCache() (path, why string) {
	p, err := hub.Resolve(VocabRepo, "vocab.txt", hub.Options{Offline: true})
	if err != nil {
		return "", "Hugging Face cache: " + err.Error()
	}
	b, err := limits.ReadFile(p, limits.Tokenizer)
	if err != nil {
		return "", "Hugging Face cache: " + err.Error()
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != VocabSHA256 {
		return "", "Hugging Face cache file " + p + " is not bert-base-uncased's vocabulary (sha256 differs)"
	}
	return p, ""
}

// download fetches url into path atomically (a temporary file in the same
// directory, renamed into place) after checking its sha256; nothing is left
// behind on failure.
func download(url, path, wantSHA string) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("download from %s failed: %w", url, err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), downloadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP status %s, want 200 OK", resp.Status)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating the cache directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".download-*.tmp")
	if err != nil {
		return fmt.Errorf("creating a temporary file in the cache: %w", err)
	}
	defer func() {
		os.Remove(tmp.Name()) // a no-op once renamed
		if err != nil {
			os.Remove(dir) // only if empty: a directory this call may have made
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(resp.Body, maxVocabBytes+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if n > maxVocabBytes {
		return fmt.Errorf("the file is larger than %d bytes", maxVocabBytes)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != wantSHA {
		return fmt.Errorf("sha256 of the %d bytes received is %s, want %s", n, got, wantSHA)
	}
	return os.Rename(tmp.Name(), path)
}
