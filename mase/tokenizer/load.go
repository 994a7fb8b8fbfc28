package tokenizer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gomase/gomase/mase/datadir"
	dl "github.com/gomase/gomase/mase/download"
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
// bytes); the hub's cap for text files.
const maxVocabBytes = hub.MaxTextBytes

// BertBaseUncased returns the bert-base-uncased tokenizer, reading
// vocab.txt through FindVocab.
func BertBaseUncased() (*Tokenizer, error) {
	return BertBaseUncasedContext(context.Background())
}

// BertBaseUncasedContext is BertBaseUncased with a context: cancelling it
// stops a download and removes what it had written.
func BertBaseUncasedContext(ctx context.Context) (*Tokenizer, error) {
	path, err := FindVocabContext(ctx)
	if err != nil {
		return nil, err
	}
	v, err := LoadVocab(path)
	if err != nil {
		if cache, cerr := datadir.CacheDir(); cerr == nil && path == filepath.Join(cache, filepath.FromSlash(VocabRel)) {
			return nil, fmt.Errorf("%w; it is a cached download: remove %s to fetch it again", err, path)
		}
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
	return FindVocabContext(context.Background())
}

// FindVocabContext is FindVocab with a context for the download.
func FindVocabContext(ctx context.Context) (string, error) {
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
	if err := download(ctx, VocabURL, cached, VocabSHA256); err != nil {
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

// download fetches url into path (package download: a temporary file
// beside it, renamed into place once its size and sha256 are right);
// nothing is left behind on failure, not even the folder it made.
func download(ctx context.Context, url, path, wantSHA string) error {
	f := dl.File{Path: path, Limit: maxVocabBytes, LimitWhy: "the cap for vocab.txt", SHA256: wantSHA, Content: dl.Text}
	_, err := dl.Get(ctx, nil, url, f, dl.Options{Timeout: downloadTimeout})
	if err != nil {
		os.Remove(filepath.Dir(path)) // only if empty: a folder this call may have made
	}
	return err
}
