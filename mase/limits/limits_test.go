package limits

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIntCheck(t *testing.T) {
	for _, c := range []struct {
		v    int
		want string
	}{
		{1, ""}, {HiddenSize.Max, ""},
		{0, "hidden_size 0 is out of range (allowed: 1 to 65536)"},
		{-3, "hidden_size -3 is out of range"},
		{HiddenSize.Max + 1, "hidden_size 65537 is out of range"},
		{1e12, "hidden_size 1000000000000 is out of range (allowed: 1 to 65536)"},
	} {
		err := HiddenSize.Check(c.v)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Check(%d) = %v, want %q", c.v, err, c.want)
		}
	}
	if err := ResNetBlocks.CheckAs("layers[2]", 65); err == nil || !strings.Contains(err.Error(), "layers[2] 65 is out of range (allowed: 1 to 64)") {
		t.Errorf("CheckAs: %v", err)
	}
}

func TestFloatFields(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		name string
		fn   func(string, float64) error
		v    float64
		ok   bool
	}{
		{"p", Probability, 0, true}, {"p", Probability, 0.1, true}, {"p", Probability, 0.999, true},
		{"p", Probability, 1, false}, {"p", Probability, 5, false}, {"p", Probability, -1, false},
		{"p", Probability, nan, false}, {"p", Probability, inf, false},
		{"eps", PositiveFinite, 1e-12, true}, {"eps", PositiveFinite, 0, false}, {"eps", PositiveFinite, -1e-5, false},
		{"eps", PositiveFinite, nan, false}, {"eps", PositiveFinite, inf, false},
		{"r", NonNegativeFinite, 0, true}, {"r", NonNegativeFinite, 0.02, true}, {"r", NonNegativeFinite, -0.02, false},
		{"r", NonNegativeFinite, nan, false}, {"r", NonNegativeFinite, -inf, false},
	} {
		err := c.fn(c.name, c.v)
		if (err == nil) != c.ok {
			t.Errorf("%s %v: error %v, want ok=%v", c.name, c.v, err, c.ok)
		}
		if err != nil && !strings.HasPrefix(err.Error(), c.name+" ") {
			t.Errorf("%s %v: error %q does not start with the field's name", c.name, c.v, err)
		}
	}
}

func TestMulAdd(t *testing.T) {
	const max, min = math.MaxInt64, math.MinInt64
	for _, c := range []struct {
		a, b, want int64
		ok         bool
	}{
		{0, max, 0, true}, {3, 4, 12, true}, {-3, 4, -12, true}, {-3, -4, 12, true},
		{1 << 31, 1 << 31, 1 << 62, true}, {1 << 32, 1 << 31, 0, false},
		{max, 2, 0, false}, {max, -1, -max, true}, {min, 1, min, true}, {min, -1, 0, false},
		{-(1 << 31), 1 << 32, min, true}, {1 << 62, -3, 0, false},
		{1 << 40, 1 << 40, 0, false}, {3037000500, 3037000500, 0, false}, {3037000499, 3037000499, 9223372030926249001, true},
	} {
		got, ok := Mul(c.a, c.b)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("Mul(%d, %d) = %d, %v; want %d, %v", c.a, c.b, got, ok, c.want, c.ok)
		}
	}
	for _, c := range []struct {
		a, b, want int64
		ok         bool
	}{
		{1, 2, 3, true}, {max, 1, 0, false}, {max, -1, max - 1, true}, {min, -1, 0, false}, {min, max, -1, true}, {-1, -1, -2, true},
	} {
		got, ok := Add(c.a, c.b)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("Add(%d, %d) = %d, %v; want %d, %v", c.a, c.b, got, ok, c.want, c.ok)
		}
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1023: "1023 bytes", 1024: "1 KiB", 1536: "1.5 KiB", 8 << 30: "8 GiB", math.MaxInt64: "8 EiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestMemInfo(t *testing.T) {
	for _, c := range []struct {
		text string
		want int64
		ok   bool
	}{
		{"MemTotal:       32768 kB\nMemFree:         1024 kB\nMemAvailable:    2048 kB\n", 2048 << 10, true},
		{"MemTotal:       32768 kB\n", 0, false},
		{"MemAvailable:    2048 MB\n", 0, false},
		{"MemAvailable:    -5 kB\n", 0, false},
		{"MemAvailable:    99999999999999999999 kB\n", 0, false},
	} {
		got, ok := parseMemInfo(strings.NewReader(c.text))
		if got != c.want || ok != c.ok {
			t.Errorf("%q: %d, %v; want %d, %v", c.text, got, ok, c.want, c.ok)
		}
	}
}

func TestModelBytes(t *testing.T) {
	for _, c := range []struct {
		n, avail int64
		known    bool
		want     string
	}{
		{1 << 20, 1 << 30, true, ""},
		{MaxModelBytes, 0, false, ""},
		{MaxModelBytes + 1, 1 << 40, true, "needs 8.0 GiB, more than the 8 GiB a model may take (limits.MaxModelBytes)"},
		{3 * MaxModelBytes / 2, 0, false, "needs 12 GiB, more than the 8 GiB"},
		{2 << 30, 1 << 30, true, "needs 2 GiB, more than the 1 GiB of memory available"},
		{2 << 30, 1 << 30, false, ""},
	} {
		err := modelBytes("bert config", c.n, Memory{c.avail, SourceMemAvailable}, c.known)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("modelBytes(%d, %d, %v) = %v, want %q", c.n, c.avail, c.known, err, c.want)
		}
	}
}

func TestBudget(t *testing.T) {
	b := &Budget{what: "the tensors", max: 100}
	if err := b.Take(60); err != nil {
		t.Fatal(err)
	}
	if err := b.Take(41); err == nil || !strings.Contains(err.Error(), "the tensors need 101 bytes, more than the 100 bytes allowed") {
		t.Errorf("over the maximum: %v", err)
	}
	if err := b.Take(math.MaxInt64); err == nil || !strings.Contains(err.Error(), "need more than 100 bytes") {
		t.Errorf("overflow: %v", err)
	}
	if err := b.Take(-1); err == nil {
		t.Error("a negative size was taken")
	}
	if err := b.Take(40); err != nil {
		t.Errorf("the refused takes were counted: %v", err)
	}
	m := &Budget{what: "the tensors", max: 1000, avail: Memory{50, SourceCgroup}, knownMemory: true}
	if err := m.Take(51); err == nil || !strings.Contains(err.Error(), "more than the 50 bytes of memory available (cgroup limit)") {
		t.Errorf("over memory: %v", err)
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(reg, []byte(`{"a": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(reg, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{reg, link} {
		if b, err := ReadFile(p, JSONConfig); err != nil || string(b) != `{"a": 1}` {
			t.Errorf("%s: %q, %v", p, b, err)
		}
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path  string
		limit File
		want  string
	}{
		{dir, JSONConfig, "is a directory, not a regular file"},
		{big, File{"a test file", 99}, "big.json is 100 bytes, more than the 99 bytes allowed for a test file"},
		{filepath.Join(dir, "absent"), JSONConfig, "no such file"},
	} {
		if _, err := ReadFile(c.path, c.limit); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.path, err, c.want)
		}
		if _, _, err := Open(c.path, c.limit); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open %s: %v, want %q", c.path, err, c.want)
		}
	}
	if _, err := ReadFile(big, File{"a test file", 100}); err != nil {
		t.Errorf("a file of exactly the limit: %v", err)
	}
}

// TestWorkAndProduct: a computation's estimate is refused above the cap or
// when it overflowed, accepted below; Product reports overflow and
// negative factors.
func TestWorkAndProduct(t *testing.T) {
	if p, ok := Product(32, 8, 128, 64); !ok || p != 2097152 {
		t.Errorf("Product: %d, %v", p, ok)
	}
	for _, dims := range [][]int64{{1 << 40, 1 << 30}, {4, -1}} {
		if _, ok := Product(dims...); ok {
			t.Errorf("Product(%v) ok", dims)
		}
	}
	if err := Work("a small one", 1<<20, true); err != nil {
		t.Errorf("1 MiB: %v", err)
	}
	for _, c := range []struct {
		n    int64
		ok   bool
		want string
	}{
		{MaxModelBytes + 1, true, "more than the 8 GiB one computation may take"},
		{0, false, "needs more than the 8 GiB one computation may take"},
		{-1, true, "needs more than the 8 GiB"},
	} {
		if err := Work("--shape x", c.n, c.ok); err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "--shape x ") {
			t.Errorf("Work(%d, %v): %v, want %q", c.n, c.ok, err, c.want)
		}
	}
}

// TestModuleDimCoversConfigs: a module a config builds must also pass as a
// replaced module, so ModuleDim is at least every config size bound.
func TestModuleDimCoversConfigs(t *testing.T) {
	for _, b := range []Int{HiddenSize, IntermediateSize, VocabSize, MaxPositionEmbeddings, TypeVocabSize, NumLabels} {
		if ModuleDim.Max < b.Max {
			t.Errorf("ModuleDim %d is below %s's bound %d", ModuleDim.Max, b.Name, b.Max)
		}
	}
}
