package data

import (
	"archive/zip"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gomase/gomase/mase/datadir"
	"github.com/gomase/gomase/mase/limits"
)

// SST2URL is where LoadSST2 downloads GLUE's SST-2 when no copy is found.
var SST2URL = "https://dl.fbaipublicfiles.com/glue/data/SST-2.zip"

// SST2CacheFile is the downloaded archive's path inside the cache
// directory (datadir.CacheDir).
const SST2CacheFile = "sst2/SST-2.zip"

// SST2ResplitSeed is the seed of the 90 %/10 % division of GLUE's training
// set into "train" and "dev" when SST-2 comes in GLUE's own layout.
const SST2ResplitSeed = 2013

// sst2Header is the header row of every labelled SST-2 file.
const sst2Header = "sentence\tlabel"

// SST2Options configure LoadSST2.
type SST2Options struct {
	// Path is read ahead of every other place: a folder with train.tsv,
	// dev.tsv and test.tsv (this project's layout), GLUE's extracted SST-2
	// folder (or its parent), or GLUE's SST-2.zip.
	Path string
	// Limit keeps a class-balanced subset of at most Limit examples of
	// every split (see Split.Limit); 0 keeps everything.
	Limit int
	// Seed drives Limit's choice.
	Seed uint64
	// NoDownload forbids the download fallback.
	NoDownload bool
}

// LoadSST2 loads SST-2 as splits "train", "dev" and "test", each in file
// order. Labels are 0 = negative, 1 = positive; Rating is −1.
//
// In this project's layout (the data directory's sst2/ folder) the three
// files are read as they are: train 60,614 and dev 6,735 rows (GLUE's
// training set divided), test 872 rows (GLUE's dev set). GLUE's own layout
// (SST-2.zip or its extracted SST-2 folder: train.tsv 67,349 rows, dev.tsv
// 872, test.tsv unlabelled) is mapped to the same roles: GLUE's dev set
// becomes "test", and GLUE's training set is divided 90 %/10 % into
// "train" and "dev" by a shuffle with SST2ResplitSeed (same sizes as the
// shared copy, but not the same sentences); GLUE's unlabelled test set is
// not read.
//
// The dataset is looked for, in order: opts.Path; $GOMASE_SST2; the data
// directory's sst2/ folder; the cache's sst2/SST-2.zip; finally SST2URL is
// downloaded into the cache (unless opts.NoDownload), checked to be a zip
// with GLUE's SST-2 files before it is kept. An explicit path that cannot
// be read, or an explicitly configured data directory that does not
// exist, is an error, not a reason to look elsewhere. A malformed row is an error
// naming the file, the line and what was wrong.
func LoadSST2(opts SST2Options) (*Dataset, error) {
	return LoadSST2Context(context.Background(), opts)
}

// LoadSST2Context is LoadSST2 with a context: cancelling it stops a download and
// removes what it had written.
func LoadSST2Context(ctx context.Context, opts SST2Options) (*Dataset, error) {
	if opts.Limit < 0 {
		return nil, fmt.Errorf("SST-2: limit %d is negative (allowed: 0 for no limit, or a positive number of examples)", opts.Limit)
	}
	ds, err := findSST2(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := ds.Limit(opts.Limit, opts.Seed); err != nil {
		return nil, err
	}
	return ds, nil
}

func findSST2(ctx context.Context, opts SST2Options) (*Dataset, error) {
	for _, explicit := range []struct{ path, from string }{
		{opts.Path, "SST2Options.Path"},
		{os.Getenv("GOMASE_SST2"), "GOMASE_SST2"},
	} {
		if explicit.path == "" {
			continue
		}
		if _, err := os.Stat(explicit.path); err != nil {
			return nil, fmt.Errorf("SST-2 path %q (from %s) does not exist; want a folder with train.tsv, dev.tsv and test.tsv, or GLUE's SST-2.zip", explicit.path, explicit.from)
		}
		return ReadSST2(explicit.path)
	}
	var tried []string
	if dir, err := datadir.Dir(); err != nil {
		if !errors.Is(err, datadir.ErrNotFound) {
			return nil, fmt.Errorf("SST-2 dataset: %w", err)
		}
		tried = append(tried, err.Error())
	} else {
		p := filepath.Join(dir, "sst2")
		if isFile(filepath.Join(p, "train.tsv")) {
			return ReadSST2(p)
		}
		tried = append(tried, filepath.Join(p, "train.tsv"))
	}
	return fromCache(ctx, "SST-2 dataset", SST2CacheFile, SST2URL, SST2MaxBytes, ReadSST2, opts.NoDownload, tried)
}

// ReadSST2 reads SST-2 from p: a folder in this project's layout
// (train.tsv, dev.tsv and a labelled test.tsv), GLUE's extracted SST-2
// folder or its parent, or GLUE's SST-2.zip. See LoadSST2 for the splits.
func ReadSST2(p string) (*Dataset, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("SST-2: %w", err)
	}
	if !st.IsDir() {
		return readSST2Zip(p)
	}
	dir := p
	if !isFile(filepath.Join(dir, "train.tsv")) && isDir(filepath.Join(p, "SST-2")) {
		dir = filepath.Join(p, "SST-2")
	}
	open := func(name string) (io.ReadCloser, string, error) {
		full := filepath.Join(dir, name)
		f, _, err := limits.Open(full, SST2File)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, full, fmt.Errorf("SST-2 folder %s lacks %s (want train.tsv, dev.tsv and test.tsv with header %q): %w", dir, name, sst2Header, err)
		}
		if err != nil {
			return nil, full, fmt.Errorf("SST-2: %w", err)
		}
		return f, full, nil
	}
	return readSST2Files(dir, open)
}

func readSST2Zip(p string) (*Dataset, error) {
	file, size, err := limits.Open(p, SST2Zip)
	if err != nil {
		return nil, fmt.Errorf("SST-2: %w", err)
	}
	defer file.Close()
	zr, err := zip.NewReader(file, size)
	if err != nil {
		return nil, fmt.Errorf("SST-2 %s is not a readable zip archive (want GLUE's SST-2.zip or a folder of .tsv files): %w", p, err)
	}
	// The files may sit at the top or in one folder (GLUE: SST-2/), not
	// deeper (GLUE's SST-2/original/...).
	prefix := ""
	for _, f := range zr.File {
		if dir, base := path.Split(f.Name); base == "train.tsv" && strings.Count(dir, "/") <= 1 {
			prefix = dir
			break
		}
	}
	open := func(name string) (io.ReadCloser, string, error) {
		member := prefix + name
		full := p + ":" + member
		for _, f := range zr.File {
			if f.Name == member {
				// The header's size first, then the bytes as they inflate.
				if f.UncompressedSize64 > uint64(SST2File.Max) {
					return nil, full, fmt.Errorf("SST-2 %s says it inflates to %s, more than the %s allowed for %s", full, limits.Bytes(int64(min(f.UncompressedSize64, 1<<62))), limits.Bytes(SST2File.Max), SST2File.What)
				}
				rc, err := f.Open()
				if err != nil {
					return nil, full, fmt.Errorf("SST-2 %s: %w", full, err)
				}
				return readCloser{newBoundedReader(rc, "SST-2 "+full, SST2File.Max), rc}, full, nil
			}
		}
		return nil, full, fmt.Errorf("SST-2 zip %s lacks %s (want SST-2/train.tsv, SST-2/dev.tsv, SST-2/test.tsv)", p, member)
	}
	return readSST2Files(p, open)
}

// readSST2Files reads train/dev/test through open, deciding the layout by
// test.tsv's header.
func readSST2Files(source string, open func(name string) (io.ReadCloser, string, error)) (*Dataset, error) {
	read := func(name, split string) (*Split, error) {
		rc, full, err := open(name)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return readSST2TSV(rc, split, name, full)
	}
	train, err := read("train.tsv", "train")
	if err != nil {
		return nil, err
	}
	dev, err := read("dev.tsv", "dev")
	if err != nil {
		return nil, err
	}
	glue := false
	rc, full, err := open("test.tsv")
	if err != nil {
		return nil, err
	}
	header, err := firstLine(rc, full)
	rc.Close()
	if err != nil {
		return nil, err
	}
	switch header {
	case sst2Header:
	case "index\tsentence":
		glue = true
	default:
		return nil, fmt.Errorf("%s line 1: header is %q; want %q (labelled) or GLUE's %q", full, header, sst2Header, "index\tsentence")
	}
	ds := &Dataset{Name: "sst2", Source: source}
	if glue {
		tr, dv := resplit(train, SST2ResplitSeed)
		dev.Name = "test"
		ds.Splits = []*Split{tr, dv, dev}
		return ds, nil
	}
	test, err := read("test.tsv", "test")
	if err != nil {
		return nil, err
	}
	ds.Splits = []*Split{train, dev, test}
	return ds, nil
}

// resplit divides s into "train" (⌊0.9 n⌋ rows) and "dev" (the rest),
// chosen by a seeded shuffle, each kept in file order.
func resplit(s *Split, seed uint64) (*Split, *Split) {
	n := len(s.Examples)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	newRNG(seed).shuffle(idx)
	nTrain := n * 9 / 10
	trainIdx, devIdx := slices.Clone(idx[:nTrain]), slices.Clone(idx[nTrain:])
	slices.Sort(trainIdx)
	slices.Sort(devIdx)
	pick := func(name string, ix []int) *Split {
		out := &Split{Name: name, Examples: make([]Example, len(ix))}
		for j, i := range ix {
			out.Examples[j] = s.Examples[i]
		}
		return out
	}
	return pick("train", trainIdx), pick("dev", devIdx)
}

// readSST2TSV reads a "sentence<TAB>label" file. The sentence is
// everything before the last tab, kept as it is (GLUE's trailing space
// included).
func readSST2TSV(r io.Reader, split, file, source string) (*Split, error) {
	sc := newLineScanner(r, MaxSST2Line)
	s := &Split{Name: split}
	for line := 1; ; line++ {
		if !sc.Scan() {
			if err := sc.Err(); err != nil {
				return nil, lineError(source, line, MaxSST2Line, err)
			}
			if line == 1 {
				return nil, fmt.Errorf("%s is empty; want the header %q and one sentence<TAB>label row per line", source, sst2Header)
			}
			break
		}
		if len(sc.Bytes()) > MaxSST2Line {
			return nil, lineError(source, line, MaxSST2Line, bufio.ErrTooLong)
		}
		text := sc.Text()
		if line == 1 {
			if text != sst2Header {
				return nil, fmt.Errorf("%s line 1: header is %q; want %q", source, text, sst2Header)
			}
		} else {
			tab := strings.LastIndexByte(text, '\t')
			switch {
			case text == "":
				return nil, fmt.Errorf("%s line %d: empty row; want sentence<TAB>label", source, line)
			case tab < 0:
				return nil, fmt.Errorf("%s line %d: no tab; want sentence<TAB>label, got %q", source, line, clip(text))
			case strings.TrimSpace(text[:tab]) == "":
				return nil, fmt.Errorf("%s line %d: empty sentence", source, line)
			}
			var label int
			switch strings.TrimSpace(text[tab+1:]) {
			case "0":
				label = 0
			case "1":
				label = 1
			default:
				return nil, fmt.Errorf("%s line %d: label %q is not 0 (negative) or 1 (positive)", source, line, clip(text[tab+1:]))
			}
			s.Examples = append(s.Examples, Example{Text: text[:tab], Label: label, Rating: -1, ID: fmt.Sprintf("%s:%d", file, line)})
		}
	}
	if len(s.Examples) == 0 {
		return nil, fmt.Errorf("%s has a header but no rows", source)
	}
	return s, nil
}

// newLineScanner scans r's lines (without "\n" or "\r\n") of at most
// maxLine bytes.
func newLineScanner(r io.Reader, maxLine int) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine+2) // room for "\r\n"
	return sc
}

// lineError names the file and line a scan failed at: a line past maxLine,
// an archive that inflates past its bound, or a read error.
func lineError(source string, line, maxLine int, err error) error {
	if errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("%s line %d is longer than %s (allowed: lines of at most %s)", source, line, limits.Bytes(int64(maxLine)), limits.Bytes(int64(maxLine)))
	}
	if e, ok := inflatedError(err); ok {
		return e
	}
	return fmt.Errorf("%s line %d: %w", source, line, err)
}

// firstLine reads the header line of an SST-2 file.
func firstLine(r io.Reader, source string) (string, error) {
	sc := newLineScanner(r, MaxSST2Line)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return "", lineError(source, 1, MaxSST2Line, err)
		}
		return "", nil
	}
	if len(sc.Bytes()) > MaxSST2Line {
		return "", lineError(source, 1, MaxSST2Line, bufio.ErrTooLong)
	}
	return sc.Text(), nil
}

// readCloser reads through r and closes c.
type readCloser struct {
	io.Reader
	c io.Closer
}

func (rc readCloser) Close() error { return rc.c.Close() }

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
