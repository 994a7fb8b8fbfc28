//go:build unix

package data

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gomase/gomase/internal/hostilefile"
)

// sst2Folder writes a valid SST-2 folder whose train.tsv is train.
func sst2Folder(t *testing.T, train []byte) string {
	t.Helper()
	dir := t.TempDir()
	good := []byte("sentence\tlabel\na fine film \t1\n")
	writeFile(t, dir, "train.tsv", train)
	writeFile(t, dir, "dev.tsv", good)
	writeFile(t, dir, "test.tsv", good)
	return dir
}

// TestSST2LongLines: a line past MaxSST2Line is refused with the file and
// line, not read whole; a 3 GB train.tsv (sparse, nothing written) is
// refused by its size before a byte is read.
func TestSST2LongLines(t *testing.T) {
	long := "sentence\tlabel\nok \t1\n" + strings.Repeat("a", MaxSST2Line+1) + "\t0\n"
	_, err := ReadSST2(sst2Folder(t, []byte(long)))
	wantErr(t, "a long line", err, "train.tsv line 3 is longer than 1 MiB (allowed: lines of at most 1 MiB)")
	// A line of exactly the bound is fine.
	edge := "sentence\tlabel\n" + strings.Repeat("b", MaxSST2Line-2) + "\t1\r\n"
	if _, err := ReadSST2(sst2Folder(t, []byte(edge))); err != nil {
		t.Errorf("a line of %d bytes: %v", MaxSST2Line, err)
	}
	dir := sst2Folder(t, nil)
	if err := os.Truncate(filepath.Join(dir, "train.tsv"), 3<<30); err != nil {
		t.Fatal(err)
	}
	hostilefile.Refused(t, "a 3 GiB train.tsv", func() error { _, err := ReadSST2(dir); return err },
		"train.tsv is 3 GiB, more than the 64 MiB allowed for an SST-2 .tsv file", 10*time.Second)
	// The header line of test.tsv is bounded too.
	dir = sst2Folder(t, []byte("sentence\tlabel\nok \t1\n"))
	writeFile(t, dir, "test.tsv", []byte(strings.Repeat("c", MaxSST2Line+1)))
	_, err = ReadSST2(dir)
	wantErr(t, "a long header", err, "test.tsv line 1 is longer than 1 MiB")
}

// TestSST2NotRegular: a FIFO where train.tsv or SST-2.zip should be is
// refused at once (it used to block until a writer came).
func TestSST2NotRegular(t *testing.T) {
	dir := sst2Folder(t, nil)
	train := filepath.Join(dir, "train.tsv")
	os.Remove(train)
	hostilefile.FIFO(t, train)
	hostilefile.Refused(t, "a FIFO train.tsv", func() error { _, err := ReadSST2(dir); return err }, "named pipe (FIFO), not a regular file", 10*time.Second)
	zipPath := filepath.Join(t.TempDir(), "SST-2.zip")
	hostilefile.FIFO(t, zipPath)
	hostilefile.Refused(t, "a FIFO SST-2.zip", func() error { _, err := ReadSST2(zipPath); return err }, "named pipe (FIFO), not a regular file", 10*time.Second)
}

// manyRows is an SST-2 train.tsv of at least size bytes of short valid
// rows, which deflate to almost nothing.
func manyRows(size int) []byte {
	var b bytes.Buffer
	b.WriteString("sentence\tlabel\n")
	for b.Len() < size {
		b.WriteString("a fine film \t1\n")
	}
	return b.Bytes()
}

// TestSST2ZipBombs: a zip whose train.tsv inflates past SST2File from a
// small compressed size is refused by its header; one whose header lies
// is stopped while it inflates.
func TestSST2ZipBombs(t *testing.T) {
	files := glueSST2()
	files["SST-2/train.tsv"] = string(manyRows(int(SST2File.Max) + 1))
	bomb := zipOf(t, files)
	if len(bomb) > 2<<20 {
		t.Fatalf("the bomb is %d bytes compressed", len(bomb))
	}
	p := writeFile(t, t.TempDir(), "SST-2.zip", bomb)
	_, err := ReadSST2(p)
	wantErr(t, "a zip bomb", err, "SST-2.zip:SST-2/train.tsv says it inflates to 64.0 MiB, more than the 64 MiB allowed for an SST-2 .tsv file")

	// The same entry with a header that says 1 KiB: deflated by hand and
	// stored raw.
	var raw bytes.Buffer
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	for name, body := range glueSST2() {
		if name == "SST-2/train.tsv" {
			continue
		}
		w, _ := zw.Create(name)
		w.Write([]byte(body))
	}
	fw, err := newFlateWriter(&raw)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(manyRows(int(SST2File.Max) + 1))
	fw.Close()
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "SST-2/train.tsv", Method: zip.Deflate, CompressedSize64: uint64(raw.Len()), UncompressedSize64: 1024})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(raw.Bytes())
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	liar := writeFile(t, t.TempDir(), "SST-2.zip", zbuf.Bytes())
	hostilefile.Refused(t, "a zip whose header lies", func() error { _, err := ReadSST2(liar); return err }, "SST-2.zip:SST-2/train.tsv line ", 20*time.Second)
}

// imdbTar writes a gzip-compressed tar whose members are written by add.
func imdbTar(t *testing.T, add func(tw *tar.Writer)) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	add(tw)
	tw.Flush()
	gz.Close()
	return buf.Bytes()
}

// TestIMDbTarBombs: member sizes are checked from the headers before a
// byte is inflated (a review past IMDbReview, a member past
// MaxIMDbMember), and the bytes inflated are counted while reading.
func TestIMDbTarBombs(t *testing.T) {
	dir := t.TempDir()
	review := imdbTar(t, func(tw *tar.Writer) {
		tw.WriteHeader(&tar.Header{Name: "aclImdb/train/pos/1_9.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: 2 << 20})
		tw.Write(bytes.Repeat([]byte("great "), (2<<20)/6))
	})
	_, err := ReadIMDb(writeFile(t, dir, "review.tar.gz", review))
	wantErr(t, "a 2 MiB review", err, "review aclImdb/train/pos/1_9.txt is 2 MiB, more than the 1 MiB allowed for an IMDb review")

	// A member that says it is 300 GiB: refused by its header, nothing of
	// it written or inflated.
	huge := imdbTar(t, func(tw *tar.Writer) {
		tw.WriteHeader(&tar.Header{Name: "aclImdb/train/unsupBow.feat", Typeflag: tar.TypeReg, Mode: 0o644, Size: 300 << 30})
		tw.Write(make([]byte, 4096))
	})
	hostilefile.Refused(t, "a 300 GiB member", func() error { _, err := ReadIMDb(writeFile(t, dir, "huge.tar.gz", huge)); return err },
		"member aclImdb/train/unsupBow.feat says it is 300 GiB, more than the 256 MiB a member may be", 10*time.Second)

	// Members whose declared sizes add up past the bound.
	many := imdbTar(t, func(tw *tar.Writer) {
		for i := range 5 {
			tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("aclImdb/train/feat%d", i), Typeflag: tar.TypeReg, Mode: 0o644, Size: 200 << 10})
			tw.Write(make([]byte, 200<<10))
		}
	})
	_, err = readIMDbTarWithin(bytes.NewReader(many), "many.tar.gz", 512<<10)
	wantErr(t, "declared sizes", err, "IMDb many.tar.gz: its members say they hold more than 512 KiB (allowed: at most 512 KiB inflated)")

	// Headers alone (empty members) count as they inflate.
	headers := imdbTar(t, func(tw *tar.Writer) {
		for i := range 3000 {
			tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("aclImdb/train/empty%d", i), Typeflag: tar.TypeReg, Mode: 0o644})
		}
	})
	if len(headers) > 256<<10 {
		t.Fatalf("%d bytes compressed", len(headers))
	}
	_, err = readIMDbTarWithin(bytes.NewReader(headers), "headers.tar.gz", 1<<20)
	wantErr(t, "headers past the bound", err, "IMDb headers.tar.gz inflates past 1 MiB (allowed: at most 1 MiB; a zip or tar bomb?)")

	// The shared archive is well within every bound.
	if _, err := ReadIMDb(shared(t, "imdb/aclImdb_labelled.tar.gz")); err != nil {
		t.Errorf("the shared archive: %v", err)
	}
}

// TestIMDbNotRegular: a FIFO archive and a review that is too large are
// refused, and a long line of the sample is named.
func TestIMDbNotRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "aclImdb_v1.tar.gz")
	hostilefile.FIFO(t, fifo)
	hostilefile.Refused(t, "a FIFO archive", func() error { _, err := ReadIMDb(fifo); return err }, "named pipe (FIFO), not a regular file", 10*time.Second)

	root := t.TempDir()
	writeTree(t, root, tinyIMDb())
	writeFile(t, root, "aclImdb/train/pos/11_9.txt", bytes.Repeat([]byte("x"), int(IMDbReview.Max)+1))
	_, err := ReadIMDb(root)
	wantErr(t, "a large review file", err, "11_9.txt is 1.0 MiB, more than the 1 MiB allowed for an IMDb review")

	sample := t.TempDir()
	writeFile(t, sample, "train.jsonl", []byte(`{"id": "train/neg/1_1", "label": 0, "text": "`+strings.Repeat("y", MaxJSONLLine)+`"}`+"\n"))
	writeFile(t, sample, "test.jsonl", []byte(`{"label": 1, "text": "fine"}`+"\n"))
	_, err = LoadIMDbSample(IMDbOptions{Path: sample})
	wantErr(t, "a long sample line", err, "train.jsonl line 1 is longer than 4 MiB")
}

// newFlateWriter deflates into w as a zip's Deflate method stores it.
func newFlateWriter(w *bytes.Buffer) (*flate.Writer, error) {
	return flate.NewWriter(w, flate.BestSpeed)
}
