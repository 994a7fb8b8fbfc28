package hub

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gomase/gomase/mase/download"
	"github.com/gomase/gomase/mase/limits"
)

// Size caps of downloaded files. The hub vouches for an LFS file's size
// (X-Linked-Size), which is that file's limit; text files are read whole
// into memory, so they have caps of their own whatever the hub says.
const (
	// MaxJSONBytes caps a .json file (config.json, tokenizer.json,
	// tokenizer_config.json, special_tokens_map.json, shard indexes). The
	// Hub keeps files above 10 MB in LFS; BERT tokenizer.json files are
	// under 3 MB.
	MaxJSONBytes = 16 << 20
	// MaxTextBytes caps a .txt file (vocab.txt, merges.txt): BERT's
	// vocab.txt is 226 KiB, the multilingual one 850 KiB.
	MaxTextBytes = 8 << 20
	// MaxUnsizedBytes caps any other file the server sends without a size
	// (no X-Linked-Size, no Content-Length): larger than every BERT
	// checkpoint (bert-large: 1.3 GB).
	MaxUnsizedBytes = 4 << 30
	// MaxFileBytes caps any file, whatever size the hub claims for it: a
	// weights file is loaded whole, within limits.MaxModelBytes.
	MaxFileBytes = limits.MaxModelBytes
)

// limit is what a download of one file may be.
type limit struct {
	bytes   int64
	why     string
	content download.Content
}

// limitFor returns the limit of file, given the X-Linked-Size header (""
// when absent) and the Content-Length (-1 when absent).
func limitFor(file, linkedSize string, contentLength int64) limit {
	switch strings.ToLower(filepath.Ext(file)) {
	case ".json":
		return limit{MaxJSONBytes, "the cap for JSON files", download.JSON}
	case ".txt":
		return limit{MaxTextBytes, "the cap for text files", download.Text}
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(linkedSize), 10, 64); err == nil && n >= 0 {
		return limit{n, "the size the hub gives for it (X-Linked-Size)", download.Binary}
	}
	if contentLength >= 0 {
		return limit{contentLength, "its Content-Length", download.Binary}
	}
	return limit{MaxUnsizedBytes, "the cap for files sent without a size", download.Binary}
}

// BadFile is the one-line error for a file Resolve returned that does not
// read as it must (err says why). For a file in the hub cache it says how
// to clear it so that the next load downloads it again: remove the file
// and the blob it links to, or the repository's models--org--name folder.
func BadFile(path string, err error) error {
	repo, ok := cacheRepo(path)
	if !ok {
		return fmt.Errorf("%s: %v", path, err)
	}
	blob := ""
	if target, lerr := filepath.EvalSymlinks(path); lerr == nil && target != path {
		blob = " and its blob " + target
	}
	return fmt.Errorf("%s: %v; it is a cached download: to fetch it again remove it%s, or the whole folder %s",
		path, oneLine(err.Error()), blob, repo)
}

// cacheRepo returns the models--org--name folder holding path when path
// is a file of one of its snapshots.
func cacheRepo(path string) (string, bool) {
	dir := filepath.Dir(filepath.Clean(path))
	for {
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		if filepath.Base(parent) == "snapshots" {
			repo := filepath.Dir(parent)
			if strings.HasPrefix(filepath.Base(repo), "models--") {
				if st, err := os.Stat(repo); err == nil && st.IsDir() {
					return repo, true
				}
			}
			return "", false
		}
		dir = parent
	}
}
