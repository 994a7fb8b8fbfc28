package data

import (
	"errors"
	"fmt"
	"io"

	"github.com/gomase/gomase/mase/limits"
)

// The bounds of the dataset readers: every file is a regular file within
// its limit before it is read, every line and archive member within its
// own, and an archive's inflated bytes are counted while it is read, so a
// zip or tar bomb stops at the bound, not when memory runs out. Each is far
// above the real datasets.
var (
	// SST2File bounds one SST-2 .tsv, on disk or inflated from the zip
	// (GLUE's train.tsv is 4.2 MiB).
	SST2File = limits.File{What: "an SST-2 .tsv file", Max: 64 << 20}
	// SST2Zip bounds SST-2.zip on disk (GLUE's is 7.1 MiB): the download cap.
	SST2Zip = limits.File{What: "an SST-2 zip", Max: SST2MaxBytes}
	// IMDbArchive bounds an IMDb .tar.gz or .tar on disk (aclImdb_v1.tar.gz
	// is 80 MiB; the tar inside about 300 MB).
	IMDbArchive = limits.File{What: "an IMDb archive", Max: MaxIMDbInflated}
	// IMDbReview bounds one review file (the longest of the 50,000
	// labelled ones is 13,704 bytes).
	IMDbReview = limits.File{What: "an IMDb review", Max: 1 << 20}
	// IMDbSampleFile bounds imdb/sample's train.jsonl and test.jsonl
	// (about 700 KiB each).
	IMDbSampleFile = limits.File{What: "an IMDb sample file", Max: 256 << 20}
)

const (
	// MaxSST2Line bounds one line of an SST-2 .tsv (the longest sentence
	// is 270 bytes).
	MaxSST2Line = 1 << 20
	// MaxJSONLLine bounds one line of the IMDb sample: a review and its
	// fields.
	MaxJSONLLine = 4 << 20
	// MaxIMDbInflated bounds what an IMDb archive inflates to, tar headers
	// and skipped members included, and the reviews of an extracted folder
	// together.
	MaxIMDbInflated = 1 << 30
	// MaxIMDbMember bounds any one member of an IMDb archive, read or
	// skipped (the largest of aclImdb_v1, train/unsupBow.feat, is about 40
	// MB).
	MaxIMDbMember = 256 << 20
)

// errInflated is what a boundedReader returns past its bound.
type errInflated struct {
	what string
	max  int64
}

func (e *errInflated) Error() string {
	return fmt.Sprintf("%s inflates past %s (allowed: at most %s; a zip or tar bomb?)", e.what, limits.Bytes(e.max), limits.Bytes(e.max))
}

// boundedReader reads r and fails with *errInflated once more than max
// bytes have come out of it: the counter of an archive's inflated bytes.
type boundedReader struct {
	r    io.Reader
	left int64
	err  *errInflated
}

func newBoundedReader(r io.Reader, what string, max int64) *boundedReader {
	return &boundedReader{r: r, left: max, err: &errInflated{what: what, max: max}}
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.err
	}
	// Ask for one byte more than is left, to see whether there is more.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n + int(b.left), b.err
	}
	return n, err
}

// inflatedError returns the bound err crossed, if it did.
func inflatedError(err error) (*errInflated, bool) {
	var e *errInflated
	ok := errors.As(err, &e)
	return e, ok
}
