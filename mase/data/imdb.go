package data

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gomase/gomase/mase/datadir"
	"github.com/gomase/gomase/mase/limits"
)

// IMDbURL is where LoadIMDb downloads the official Large Movie Review
// Dataset when no copy is found (84 MB; it also holds the unlabelled
// reviews, which are skipped).
var IMDbURL = "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"

// IMDbCacheFile is the downloaded archive's path inside the cache
// directory (datadir.CacheDir).
const IMDbCacheFile = "imdb/aclImdb_v1.tar.gz"

// IMDbOptions configure LoadIMDb and LoadIMDbSample.
type IMDbOptions struct {
	// Path is the dataset to read, ahead of every other place. For LoadIMDb:
	// a .tar.gz (or .tar) archive in the official aclImdb layout, or an
	// extracted folder (aclImdb itself or its parent). For LoadIMDbSample:
	// a folder with train.jsonl and test.jsonl.
	Path string
	// Limit keeps a class-balanced subset of at most Limit examples of
	// every split (see Split.Limit); 0 keeps everything.
	Limit int
	// Seed drives Limit's choice.
	Seed uint64
	// NoDownload forbids the download fallback.
	NoDownload bool
}

// LoadIMDb loads the labelled IMDb reviews, split "train" (25,000) then
// "test" (25,000), each sorted by label (neg = 0 first, then pos = 1),
// then by the numeric id of the file name. Labels come from the pos/neg
// folders, ratings from the <id>_<rating>.txt file names; train/unsup, the
// bag-of-words files and the README are skipped.
//
// The dataset is looked for, in order: opts.Path; $GOMASE_IMDB; in the
// data directory imdb/aclImdb_labelled.tar.gz, imdb/aclImdb_v1.tar.gz and
// an extracted imdb/aclImdb folder; the cache's imdb/aclImdb_v1.tar.gz;
// finally IMDbURL is downloaded into the cache (unless opts.NoDownload),
// checked to be a readable archive with the expected layout before it is
// kept. An explicit path that cannot be read, or an explicitly configured
// data directory that does not exist, is an error, not a reason to look
// elsewhere. The error for a dataset found nowhere lists every place
// tried.
func LoadIMDb(opts IMDbOptions) (*Dataset, error) {
	return LoadIMDbContext(context.Background(), opts)
}

// LoadIMDbContext is LoadIMDb with a context: cancelling it stops a download and
// removes what it had written.
func LoadIMDbContext(ctx context.Context, opts IMDbOptions) (*Dataset, error) {
	if opts.Limit < 0 {
		return nil, fmt.Errorf("IMDb: limit %d is negative (allowed: 0 for no limit, or a positive number of examples)", opts.Limit)
	}
	ds, err := findIMDb(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := ds.Limit(opts.Limit, opts.Seed); err != nil {
		return nil, err
	}
	return ds, nil
}

func findIMDb(ctx context.Context, opts IMDbOptions) (*Dataset, error) {
	if opts.Path != "" {
		return readIMDbFrom(opts.Path, "IMDbOptions.Path")
	}
	if env := os.Getenv("GOMASE_IMDB"); env != "" {
		return readIMDbFrom(env, "GOMASE_IMDB")
	}
	var tried []string
	if dir, err := datadir.Dir(); err != nil {
		if !errors.Is(err, datadir.ErrNotFound) {
			return nil, fmt.Errorf("IMDb dataset: %w", err)
		}
		tried = append(tried, err.Error())
	} else {
		for _, c := range []struct {
			rel    string
			folder bool
		}{
			{"imdb/aclImdb_labelled.tar.gz", false},
			{"imdb/aclImdb_v1.tar.gz", false},
			{"imdb/aclImdb", true},
		} {
			p := filepath.Join(dir, filepath.FromSlash(c.rel))
			if (c.folder && isDir(p)) || (!c.folder && isFile(p)) {
				return ReadIMDb(p)
			}
			tried = append(tried, p)
		}
	}
	return fromCache(ctx, "IMDb dataset", IMDbCacheFile, IMDbURL, IMDbMaxBytes, ReadIMDb, opts.NoDownload, tried)
}

func readIMDbFrom(p, from string) (*Dataset, error) {
	if _, err := os.Stat(p); err != nil {
		return nil, fmt.Errorf("IMDb path %q (from %s) does not exist; want an aclImdb .tar.gz or an extracted aclImdb folder", p, from)
	}
	return ReadIMDb(p)
}

// ReadIMDb reads the labelled IMDb reviews from p: a gzip-compressed (or
// plain) tar archive, or an extracted folder (aclImdb itself, or a folder
// holding aclImdb), in the official layout
// [aclImdb/]{train,test}/{pos,neg}/<id>_<rating>.txt. Order and labels are
// as for LoadIMDb.
func ReadIMDb(p string) (*Dataset, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("IMDb: %w", err)
	}
	if st.IsDir() {
		return readIMDbFolder(p)
	}
	f, _, err := limits.Open(p, IMDbArchive)
	if err != nil {
		return nil, fmt.Errorf("IMDb: %w", err)
	}
	defer f.Close()
	return readIMDbTar(f, p)
}

// imdbFile is what an aclImdb file name says.
type imdbFile struct {
	split  string // train or test
	label  int    // 1 = pos, 0 = neg
	num    int    // the numeric id
	rating int
	id     string // split/folder/stem
}

// parseIMDbName recognises .../{train,test}/{pos,neg}/<id>_<rating>.txt.
// ok is false for every other member (unsup, README, bag-of-words files);
// err reports a review file whose name is malformed.
func parseIMDbName(name string) (f imdbFile, ok bool, err error) {
	parts := strings.Split(path.Clean(filepath.ToSlash(name)), "/")
	if len(parts) < 3 {
		return f, false, nil
	}
	split, folder, file := parts[len(parts)-3], parts[len(parts)-2], parts[len(parts)-1]
	if split != "train" && split != "test" {
		return f, false, nil
	}
	switch folder {
	case "pos":
		f.label = 1
	case "neg":
		f.label = 0
	default:
		return f, false, nil
	}
	stem, isTxt := strings.CutSuffix(file, ".txt")
	if !isTxt || strings.HasPrefix(file, ".") {
		return f, false, nil
	}
	idStr, ratingStr, found := strings.Cut(stem, "_")
	num, err1 := strconv.Atoi(idStr)
	rating, err2 := strconv.Atoi(ratingStr)
	if !found || err1 != nil || err2 != nil || num < 0 || rating < 1 || rating > 10 {
		return f, false, fmt.Errorf("review file %s is not named <id>_<rating>.txt (id ≥ 0, rating 1–10)", name)
	}
	f.split, f.num, f.rating = split, num, rating
	f.id = split + "/" + folder + "/" + stem
	return f, true, nil
}

// imdbCollector gathers reviews and checks the layout.
type imdbCollector struct {
	source string
	seen   map[string]bool
	splits map[string][]Example
}

func newIMDbCollector(source string) *imdbCollector {
	return &imdbCollector{source: source, seen: map[string]bool{}, splits: map[string][]Example{}}
}

func (c *imdbCollector) add(f imdbFile, text string) error {
	key := fmt.Sprintf("%s/%d/%d", f.split, f.label, f.num)
	if c.seen[key] {
		return fmt.Errorf("IMDb %s: review %s occurs twice (each <id> may appear once per split and folder)", c.source, f.id)
	}
	c.seen[key] = true
	c.splits[f.split] = append(c.splits[f.split], Example{Text: text, Label: f.label, Rating: f.rating, ID: f.id})
	return nil
}

func (c *imdbCollector) finish() (*Dataset, error) {
	ds := &Dataset{Name: "imdb", Source: c.source}
	for _, name := range []string{"train", "test"} {
		ex := c.splits[name]
		var n [2]int
		for _, e := range ex {
			n[e.Label]++
		}
		for label, folder := range []string{"neg", "pos"} {
			if n[label] == 0 {
				return nil, fmt.Errorf("IMDb %s has no reviews in %s/%s; want the aclImdb layout {train,test}/{pos,neg}/<id>_<rating>.txt", c.source, name, folder)
			}
		}
		sortIMDb(ex)
		ds.Splits = append(ds.Splits, &Split{Name: name, Examples: ex})
	}
	return ds, nil
}

// sortIMDb orders reviews by label, then numeric id (ids that do not parse
// go last, by string).
func sortIMDb(ex []Example) {
	type key struct {
		label, num int
		id         string
	}
	keys := make([]key, len(ex))
	for i, e := range ex {
		keys[i] = key{e.Label, -1, e.ID}
		if f, ok, _ := parseIMDbName(e.ID + ".txt"); ok {
			keys[i].num = f.num
		}
	}
	idx := make([]int, len(ex))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		ka, kb := keys[a], keys[b]
		if c := cmp.Compare(ka.label, kb.label); c != 0 {
			return c
		}
		if (ka.num < 0) != (kb.num < 0) {
			return cmp.Compare(kb.num, ka.num) // parsed ids first
		}
		if c := cmp.Compare(ka.num, kb.num); c != 0 {
			return c
		}
		return cmp.Compare(ka.id, kb.id)
	})
	sorted := make([]Example, len(ex))
	for i, j := range idx {
		sorted[i] = ex[j]
	}
	copy(ex, sorted)
}

// readIMDbTar reads a (gzip-compressed) tar of the aclImdb layout. Each
// member's header size is checked first (MaxIMDbMember, IMDbReview for a
// review, MaxIMDbInflated for them all), and the inflated bytes are
// counted as they are read: past MaxIMDbInflated the read stops.
func readIMDbTar(r io.Reader, source string) (*Dataset, error) {
	return readIMDbTarWithin(r, source, MaxIMDbInflated)
}

// readIMDbTarWithin is readIMDbTar with the bound on the inflated bytes
// (and on the members' declared sizes together) given.
func readIMDbTarWithin(r io.Reader, source string, maxInflated int64) (*Dataset, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var inflated io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("IMDb %s is not a readable gzip file: %w", source, err)
		}
		defer gz.Close()
		inflated = gz
	}
	tr := tar.NewReader(newBoundedReader(inflated, "IMDb "+source, maxInflated))
	c := newIMDbCollector(source)
	members := 0
	var declared int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if e, ok := inflatedError(err); ok {
			return nil, e
		}
		if err != nil {
			return nil, fmt.Errorf("IMDb %s is not a readable tar archive (want aclImdb_v1.tar.gz or aclImdb_labelled.tar.gz) after %d members: %w", source, members, err)
		}
		members++
		if h.Size > MaxIMDbMember {
			return nil, fmt.Errorf("IMDb %s: member %s says it is %s, more than the %s a member may be", source, h.Name, limits.Bytes(h.Size), limits.Bytes(MaxIMDbMember))
		}
		if declared += h.Size; declared > maxInflated {
			return nil, fmt.Errorf("IMDb %s: its members say they hold more than %s (allowed: at most %s inflated)", source, limits.Bytes(maxInflated), limits.Bytes(maxInflated))
		}
		if !h.FileInfo().Mode().IsRegular() {
			continue
		}
		f, ok, err := parseIMDbName(h.Name)
		if err != nil {
			return nil, fmt.Errorf("IMDb %s: %w", source, err)
		}
		if !ok {
			continue
		}
		if h.Size > IMDbReview.Max {
			return nil, fmt.Errorf("IMDb %s: review %s is %s, more than the %s allowed for %s", source, h.Name, limits.Bytes(h.Size), limits.Bytes(IMDbReview.Max), IMDbReview.What)
		}
		text, err := io.ReadAll(tr)
		if e, ok := inflatedError(err); ok {
			return nil, e
		}
		if err != nil {
			return nil, fmt.Errorf("IMDb %s: reading %s: %w", source, h.Name, err)
		}
		if err := c.add(f, string(text)); err != nil {
			return nil, err
		}
	}
	return c.finish()
}

func readIMDbFolder(root string) (*Dataset, error) {
	base := root
	if !isDir(filepath.Join(base, "train")) && isDir(filepath.Join(root, "aclImdb")) {
		base = filepath.Join(root, "aclImdb")
	}
	c := newIMDbCollector(root)
	var total int64
	for _, split := range []string{"train", "test"} {
		for _, folder := range []string{"neg", "pos"} {
			dir := filepath.Join(base, split, folder)
			entries, err := os.ReadDir(dir)
			if err != nil {
				return nil, fmt.Errorf("IMDb folder %s lacks %s/%s (want aclImdb/{train,test}/{pos,neg}/<id>_<rating>.txt): %w", root, split, folder, err)
			}
			for _, e := range entries {
				if !e.Type().IsRegular() {
					continue
				}
				f, ok, err := parseIMDbName(split + "/" + folder + "/" + e.Name())
				if err != nil {
					return nil, fmt.Errorf("IMDb %s: %w", root, err)
				}
				if !ok {
					continue
				}
				text, err := limits.ReadFile(filepath.Join(dir, e.Name()), IMDbReview)
				if err != nil {
					return nil, fmt.Errorf("IMDb: %w", err)
				}
				if total += int64(len(text)); total > MaxIMDbInflated {
					return nil, fmt.Errorf("IMDb folder %s holds more than %s of reviews (allowed: at most %s)", root, limits.Bytes(MaxIMDbInflated), limits.Bytes(MaxIMDbInflated))
				}
				if err := c.add(f, string(text)); err != nil {
					return nil, err
				}
			}
		}
	}
	return c.finish()
}

// LoadIMDbSample loads the 1,000-review samples imdb/sample/train.jsonl and
// test.jsonl of the data directory (or of opts.Path): splits "train" and
// "test", 500 reviews per label each, sorted as LoadIMDb sorts. Each line
// is {"id": "train/neg/10000_4", "label": 0, "rating": 4, "text": "..."};
// rating may be missing (−1). It is for quick runs and fast tests; there is
// no download.
func LoadIMDbSample(opts IMDbOptions) (*Dataset, error) {
	if opts.Limit < 0 {
		return nil, fmt.Errorf("IMDb sample: limit %d is negative (allowed: 0 for no limit, or a positive number of examples)", opts.Limit)
	}
	dir := opts.Path
	if dir == "" {
		p, err := datadir.Find("imdb/sample")
		if err != nil {
			return nil, fmt.Errorf("IMDb sample not found: %w", err)
		}
		dir = p
	}
	ds := &Dataset{Name: "imdb-sample", Source: dir}
	for _, name := range []string{"train", "test"} {
		p := filepath.Join(dir, name+".jsonl")
		f, _, err := limits.Open(p, IMDbSampleFile)
		if err != nil {
			return nil, fmt.Errorf("IMDb sample: %w (want train.jsonl and test.jsonl in %s)", err, dir)
		}
		s, err := readJSONL(f, name, p)
		f.Close()
		if err != nil {
			return nil, err
		}
		ds.Splits = append(ds.Splits, s)
	}
	if err := ds.Limit(opts.Limit, opts.Seed); err != nil {
		return nil, err
	}
	return ds, nil
}

// readJSONL reads {"id","label","rating","text"} lines.
func readJSONL(r io.Reader, split, source string) (*Split, error) {
	sc := newLineScanner(r, MaxJSONLLine)
	s := &Split{Name: split}
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) > MaxJSONLLine {
			return nil, lineError(source, line, MaxJSONLLine, bufio.ErrTooLong)
		}
		if trimmed := bytes.TrimSpace(sc.Bytes()); len(trimmed) > 0 {
			var rec struct {
				ID     string  `json:"id"`
				Label  *int    `json:"label"`
				Rating *int    `json:"rating"`
				Text   *string `json:"text"`
			}
			if jerr := json.Unmarshal(trimmed, &rec); jerr != nil {
				return nil, fmt.Errorf("%s line %d: not a JSON object: %v", source, line, jerr)
			}
			switch {
			case rec.Text == nil:
				return nil, fmt.Errorf("%s line %d: no \"text\" field", source, line)
			case rec.Label == nil:
				return nil, fmt.Errorf("%s line %d: no \"label\" field", source, line)
			case *rec.Label != 0 && *rec.Label != 1:
				return nil, fmt.Errorf("%s line %d: label %d is not 0 (neg) or 1 (pos)", source, line, *rec.Label)
			}
			e := Example{Text: *rec.Text, Label: *rec.Label, Rating: -1, ID: rec.ID}
			if rec.Rating != nil {
				e.Rating = *rec.Rating
			}
			if e.ID == "" {
				e.ID = fmt.Sprintf("%s:%d", filepath.Base(source), line)
			} else if f, ok, _ := parseIMDbName(e.ID + ".txt"); ok && (f.split != split || f.label != e.Label) {
				return nil, fmt.Errorf("%s line %d: id %q does not match split %q and label %d", source, line, e.ID, split, e.Label)
			}
			s.Examples = append(s.Examples, e)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, lineError(source, line+1, MaxJSONLLine, err)
	}
	if len(s.Examples) == 0 {
		return nil, fmt.Errorf("%s has no examples", source)
	}
	sortIMDb(s.Examples)
	return s, nil
}
