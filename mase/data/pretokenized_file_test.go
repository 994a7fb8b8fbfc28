package data

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomase/gomase/internal/hostilefile"
)

// words is an Encoder for the tests: one id per word, its length.
type words struct{}

func (words) Encode(s string) []int32 {
	var ids []int32
	for _, w := range strings.Fields(s) {
		ids = append(ids, int32(len(w)))
	}
	return ids
}

func TestPretokenizedFileRoundTrip(t *testing.T) {
	p := Pretokenize([]Example{{Text: "a bb ccc", Label: 1}, {Text: "", Label: 0}, {Text: "dddd", Label: 1}}, words{})
	path := filepath.Join(t.TempDir(), "tokens.bin")
	if err := p.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	q, err := ReadPretokenized(path)
	if err != nil {
		t.Fatal(err)
	}
	if q.Len() != p.Len() || !slices.Equal(q.labels, p.labels) {
		t.Fatalf("read %d examples, labels %v; wrote %d, %v", q.Len(), q.labels, p.Len(), p.labels)
	}
	for i := range p.Len() {
		if !slices.Equal(q.IDs(i), p.IDs(i)) {
			t.Errorf("example %d: ids %v, want %v", i, q.IDs(i), p.IDs(i))
		}
	}
}

func TestReadPretokenizedRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.bin")
	if err := Pretokenize([]Example{{Text: "a bb", Label: 1}}, words{}).WriteFile(good); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	huge := slices.Clone(data)
	copy(huge[len(pretokenizedMagic):], []byte{0xff, 0xff, 0xff, 0x7f}) // 2^31 examples in a few bytes
	for name, content := range map[string][]byte{
		"not ours":  []byte("sentence\tlabel\n"),
		"cut short": data[:len(data)-2],
		"trailing":  append(slices.Clone(data), 0),
		"huge":      huge,
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadPretokenized(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming the file", name, err)
		}
	}
	zero := filepath.Join(dir, "zero")
	hostilefile.DevZero(t, zero)
	hostilefile.Refused(t, "/dev/zero", func() error { _, err := ReadPretokenized(zero); return err }, "not a regular file", 5*time.Second)
}
