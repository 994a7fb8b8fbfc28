package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/gomase/gomase/mase/datadir"
)

// VocabURL is where BertBaseUncased downloads vocab.txt when the data
// directory and the cache lack it (HuggingFace's bert-base-uncased).
var VocabURL = "https://huggingface.co/bert-base-uncased/resolve/main/vocab.txt"

// VocabSHA256 is the checksum of bert-base-uncased's vocab.txt.
const VocabSHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"

// vocabRel is the vocabulary's path inside the data and cache directories.
const vocabRel = "bert-base-uncased/vocab.txt"

// BertBaseUncased returns the bert-base-uncased tokenizer. It reads
// vocab.txt from the data directory (see package datadir), else from the
// cache directory, else downloads it into the cache (checksum verified).
// The error lists every place it looked.
func BertBaseUncased() (*Tokenizer, error) {
	path, err := FindVocab()
	if err != nil {
		return nil, err
	}
	v, err := LoadVocab(path)
	if err != nil {
		return nil, err
	}
	return New(v), nil
}

// FindVocab returns the path of bert-base-uncased's vocab.txt, downloading
// it into the cache when neither the data directory nor the cache has it.
func FindVocab() (string, error) {
	var tried []string
	if p, err := datadir.Find(vocabRel); err == nil {
		return p, nil
	} else {
		tried = append(tried, err.Error())
	}
	cache, err := datadir.CacheDir()
	if err != nil {
		return "", fmt.Errorf("bert-base-uncased vocabulary not found (%s) and no cache: %w", tried[0], err)
	}
	cached := filepath.Join(cache, filepath.FromSlash(vocabRel))
	if _, err := os.Stat(cached); err == nil {
		return cached, nil
	}
	tried = append(tried, "not in the cache ("+cached+")")
	if err := download(VocabURL, cached, VocabSHA256); err != nil {
		tried = append(tried, err.Error())
		return "", fmt.Errorf("bert-base-uncased vocabulary not found: %s", joinSemi(tried))
	}
	return cached, nil
}

func joinSemi(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += "; "
		}
		out += x
	}
	return out
}

// download fetches url into path atomically (a temporary file renamed into
// place) after checking its sha256; nothing is left behind on failure.
func download(url, path, wantSHA string) error {
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return fmt.Errorf("download from %s failed: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("download from %s failed: HTTP %s", url, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".download-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), resp.Body); err != nil {
		tmp.Close()
		return fmt.Errorf("download from %s failed: %w", url, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != wantSHA {
		return fmt.Errorf("download from %s has sha256 %s, want %s", url, got, wantSHA)
	}
	return os.Rename(tmp.Name(), path)
}
