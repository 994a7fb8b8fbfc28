package data

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomase/gomase/mase/tokenizer"
)

// wordEncoder encodes one id per word: [CLS]=101, word i → 1000+len(word),
// [SEP]=102. Enough to check shapes without the real vocabulary.
type wordEncoder struct{}

func (wordEncoder) Encode(text string) []int32 {
	ids := []int32{101}
	for _, w := range strings.Fields(text) {
		ids = append(ids, 1000+int32(len(w)))
	}
	return append(ids, 102)
}

// synthetic returns n examples of 1..maxWords words, labels alternating.
func synthetic(n, maxWords int) []Example {
	ex := make([]Example, n)
	r := newRNG(99)
	for i := range ex {
		words := make([]string, 1+r.intn(maxWords))
		for j := range words {
			words[j] = strings.Repeat("x", 1+r.intn(5))
		}
		ex[i] = Example{Text: strings.Join(words, " "), Label: i % 2, Rating: -1, ID: fmt.Sprint(i)}
	}
	return ex
}

// collect runs an epoch, failing on an error.
func collect(t *testing.T, seq func(func(*Batch, error) bool)) []*Batch {
	t.Helper()
	var out []*Batch
	for b, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// order lists the example indices of an epoch.
func order(bs []*Batch) []int {
	var out []int
	for _, b := range bs {
		out = append(out, b.Indices...)
	}
	return out
}

// checkBatch checks padding, mask, labels and lengths of b against the
// encoder's untruncated output.
func checkBatch(t *testing.T, b *Batch, ex []Example, enc Encoder, maxLen int) {
	t.Helper()
	seq := b.SeqLen()
	longest := 0
	for i, idx := range b.Indices {
		want := enc.Encode(ex[idx].Text)
		if len(want) > maxLen {
			want = append(want[:maxLen-1:maxLen-1], want[len(want)-1])
		}
		longest = max(longest, len(want))
		row, mask := b.InputIDs[i], b.AttentionMask[i]
		if len(row) != seq || len(mask) != seq {
			t.Fatalf("row %d has %d ids and %d mask entries, batch seqLen %d", i, len(row), len(mask), seq)
		}
		if !slices.Equal(row[:len(want)], want) || b.Lengths[i] != len(want) {
			t.Fatalf("row %d = %v (length %d), want %v", i, row, b.Lengths[i], want)
		}
		for j := range row {
			real := j < len(want)
			if (mask[j] == 1) != real || (!real && (row[j] != PadID || mask[j] != 0)) {
				t.Fatalf("row %d position %d: id %d mask %d (length %d)", i, j, row[j], mask[j], len(want))
			}
		}
		if b.Labels[i] != int32(ex[idx].Label) {
			t.Fatalf("row %d label %d, want %d", i, b.Labels[i], ex[idx].Label)
		}
	}
	if seq != longest {
		t.Fatalf("batch padded to %d, longest row is %d (dynamic padding)", seq, longest)
	}
}

func TestBatchesPaddingAndMask(t *testing.T) {
	ex := synthetic(37, 20)
	bs := collect(t, Batches(ex, wordEncoder{}, BatchOptions{BatchSize: 8, MaxLength: 12}))
	if len(bs) != 5 || bs[4].Size() != 5 {
		t.Fatalf("%d batches, last of %d; want 5, last of 5", len(bs), bs[len(bs)-1].Size())
	}
	if got := order(bs); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36}) {
		t.Errorf("unshuffled order %v", got)
	}
	truncated := 0
	for _, b := range bs {
		checkBatch(t, b, ex, wordEncoder{}, 12)
		for _, l := range b.Lengths {
			if l == 12 {
				truncated++
			}
		}
	}
	if truncated == 0 {
		t.Error("no row reached MaxLength: the test does not exercise truncation")
	}
}

// The real tokenizer: batches equal HF-style tokenizer(..., truncation=True)
// padded to the longest (EncodeBatch with PadLongest), and truncation keeps
// [CLS] … [SEP].
func TestBatchesMatchTokenizer(t *testing.T) {
	tok := bert(t)
	ds, err := LoadIMDbSample(IMDbOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ex := ds.Splits[0].Examples[:16]
	for _, maxLen := range []int{0, 64} {
		bs := collect(t, Batches(ex, tok, BatchOptions{BatchSize: 8, MaxLength: maxLen}))
		for k, b := range bs {
			texts := make([]string, b.Size())
			for i, idx := range b.Indices {
				texts[i] = ex[idx].Text
			}
			want, err := tok.EncodeBatch(texts, tokenizer.EncodeOptions{MaxLength: maxLen, Truncation: true, Padding: tokenizer.PadLongest})
			if err != nil {
				t.Fatal(err)
			}
			for i := range texts {
				if !slices.Equal(b.InputIDs[i], want.InputIDs[i]) || !slices.Equal(b.AttentionMask[i], want.AttentionMask[i]) {
					t.Fatalf("max %d batch %d row %d differs from EncodeBatch", maxLen, k, i)
				}
			}
			effective := maxLen
			if effective == 0 {
				effective = tokenizer.ModelMaxLength
			}
			checkBatch(t, b, ex, tok, effective)
		}
	}
	long := strings.Repeat("a good film ", 300)
	b := collect(t, Batches([]Example{{Text: long, Label: 1}, {Text: "short", Label: 0}}, tok, BatchOptions{BatchSize: 2, MaxLength: 16}))[0]
	full := tok.Encode(long)
	if b.SeqLen() != 16 || b.InputIDs[0][0] != 101 || b.InputIDs[0][15] != 102 || !slices.Equal(b.InputIDs[0][1:15], full[1:15]) {
		t.Errorf("truncated row %v", b.InputIDs[0])
	}
	if got := b.InputIDs[1]; !slices.Equal(got[:3], tok.Encode("short")) || got[3] != 0 || b.AttentionMask[1][3] != 0 {
		t.Errorf("short row %v mask %v", got, b.AttentionMask[1])
	}
	b = collect(t, Batches([]Example{{Text: long}}, tok, BatchOptions{BatchSize: 1}))[0]
	if b.SeqLen() != tokenizer.ModelMaxLength || b.InputIDs[0][511] != 102 {
		t.Errorf("default max length: %d", b.SeqLen())
	}
}

func TestBatchesShuffleDeterminism(t *testing.T) {
	ex := synthetic(203, 30)
	for _, bucket := range []bool{false, true} {
		opts := BatchOptions{BatchSize: 8, Shuffle: true, Seed: 42, BucketByLength: bucket, BucketBatches: 5}
		a := collect(t, Batches(ex, wordEncoder{}, opts))
		b := collect(t, Batches(ex, wordEncoder{}, opts))
		if !slices.Equal(order(a), order(b)) {
			t.Errorf("bucket=%v: same seed, different orders", bucket)
		}
		opts.Seed = 43
		c := collect(t, Batches(ex, wordEncoder{}, opts))
		if slices.Equal(order(a), order(c)) {
			t.Errorf("bucket=%v: seeds 42 and 43 give the same order", bucket)
		}
		for _, run := range [][]*Batch{a, c} {
			got := slices.Sorted(slices.Values(order(run)))
			for i, x := range got {
				if x != i {
					t.Fatalf("bucket=%v: epoch does not visit every example once: %v", bucket, got)
				}
			}
			if len(run) != NumBatches(len(ex), 8, false) {
				t.Errorf("bucket=%v: %d batches, want %d", bucket, len(run), NumBatches(len(ex), 8, false))
			}
			for _, bt := range run {
				checkBatch(t, bt, ex, wordEncoder{}, 512)
			}
		}
		if slices.IsSorted(order(a)) {
			t.Errorf("bucket=%v: shuffled epoch is in order", bucket)
		}
	}
	// A fixed seed gives a fixed order, on every platform and Go version.
	first := order(collect(t, Batches(synthetic(10, 3), wordEncoder{}, BatchOptions{BatchSize: 4, Shuffle: true, Seed: 42})))
	if want := []int{8, 3, 6, 5, 4, 0, 9, 2, 1, 7}; !slices.Equal(first, want) {
		t.Errorf("seed 42 order %v, want %v", first, want)
	}
}

func TestBatchesDropLastAndNumBatches(t *testing.T) {
	for _, c := range []struct {
		n, bs    int
		drop     bool
		want     int
		lastSize int
	}{
		{25000, 8, false, 3125, 8}, // spec acceptance case 8
		{25000, 8, true, 3125, 8},
		{21, 8, false, 3, 5},
		{21, 8, true, 2, 8},
		{5, 8, true, 0, 0},
		{0, 8, false, 0, 0},
	} {
		if got := NumBatches(c.n, c.bs, c.drop); got != c.want {
			t.Errorf("NumBatches(%d, %d, %v) = %d, want %d", c.n, c.bs, c.drop, got, c.want)
		}
		if c.n > 1000 {
			continue
		}
		for _, bucket := range []bool{false, true} {
			bs := collect(t, Batches(synthetic(c.n, 5), wordEncoder{}, BatchOptions{BatchSize: c.bs, DropLast: c.drop, Shuffle: true, BucketByLength: bucket}))
			if len(bs) != c.want || (len(bs) > 0 && bs[len(bs)-1].Size() != c.lastSize) {
				t.Errorf("n=%d drop=%v bucket=%v: %d batches", c.n, c.drop, bucket, len(bs))
			}
		}
	}
	if NumBatches(10, 0, false) != 0 || NumBatches(-1, 8, false) != 0 {
		t.Error("NumBatches of a non-positive size must be 0")
	}
}

// Bucketing cuts padding on real reviews; Pretokenized gives the same
// batches as lazy tokenisation.
func TestBucketingAndPretokenize(t *testing.T) {
	tok := bert(t)
	ds, err := LoadIMDbSample(IMDbOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ex := ds.Splits[0].Examples[:480]
	start := time.Now()
	pre := Pretokenize(ex, tok)
	t.Logf("pretokenized %d reviews in %v", pre.Len(), time.Since(start))
	padding := func(opts BatchOptions) (pad int, bs []*Batch) {
		bs = collect(t, pre.Batches(opts))
		for _, b := range bs {
			pad += b.Padding()
		}
		return pad, bs
	}
	opts := BatchOptions{BatchSize: 8, Shuffle: true, Seed: 1}
	plain, _ := padding(opts)
	opts.BucketByLength = true
	bucketed, bs := padding(opts)
	t.Logf("padding tokens: %d plain, %d bucketed", plain, bucketed)
	if bucketed*3 > plain {
		t.Errorf("bucketing left %d padding tokens of %d; want at most a third", bucketed, plain)
	}
	for _, b := range bs {
		checkBatch(t, b, ex, tok, 512)
	}
	// Without Shuffle, bucketed batches are shortest first within the chunk.
	opts.Shuffle = false
	_, sorted := padding(opts)
	for i := 1; i < len(sorted); i++ {
		if i%DefaultBucketBatches != 0 && sorted[i].Lengths[0] < sorted[i-1].Lengths[len(sorted[i-1].Lengths)-1] {
			t.Fatalf("unshuffled buckets not sorted by length at batch %d", i)
		}
	}
	if len(sorted) <= DefaultBucketBatches {
		t.Fatalf("%d batches: the test needs more than one chunk", len(sorted))
	}
	// Lazy and cached tokenisation agree batch for batch.
	opts = BatchOptions{BatchSize: 8, Shuffle: true, Seed: 5, BucketByLength: true, BucketBatches: 10, MaxLength: 128}
	lazy := collect(t, Batches(ex[:160], tok, opts))
	cached := collect(t, Pretokenize(ex[:160], tok).Batches(opts))
	if len(lazy) != len(cached) {
		t.Fatalf("%d lazy vs %d cached batches", len(lazy), len(cached))
	}
	for i := range lazy {
		if !slices.Equal(lazy[i].Indices, cached[i].Indices) || !slices.EqualFunc(lazy[i].InputIDs, cached[i].InputIDs, slices.Equal) {
			t.Fatalf("batch %d differs between Batches and Pretokenized.Batches", i)
		}
	}
	if !slices.Equal(pre.IDs(0), tok.Encode(ex[0].Text)) {
		t.Error("Pretokenized.IDs(0) is not the untruncated encoding")
	}
}

func TestBatchOptionErrors(t *testing.T) {
	ex := synthetic(4, 3)
	for _, c := range []struct {
		opts BatchOptions
		want string
	}{
		{BatchOptions{}, "batch size 0 is not positive"},
		{BatchOptions{BatchSize: 2, MaxLength: 1}, "max length 1 is too short"},
		{BatchOptions{BatchSize: 2, MaxLength: -5}, "max length -5"},
		{BatchOptions{BatchSize: 2, BucketBatches: -1}, "bucket size -1"},
	} {
		n := 0
		var got error
		for b, err := range Batches(ex, wordEncoder{}, c.opts) {
			n++
			if b != nil {
				t.Errorf("%+v: got a batch", c.opts)
			}
			got = err
		}
		if n != 1 {
			t.Errorf("%+v: %d items, want one error", c.opts, n)
		}
		wantErr(t, fmt.Sprintf("%+v", c.opts), got, c.want)
		wantErr(t, "Validate", c.opts.Validate(), c.want)
	}
	n := 0
	for _, err := range Batches(ex, emptyEncoder{}, BatchOptions{BatchSize: 2}) {
		n++
		wantErr(t, "empty encoding", err, "example 0 encoded to no tokens")
	}
	if n != 1 {
		t.Errorf("empty encoding: %d items, want one error", n)
	}
}

type emptyEncoder struct{}

func (emptyEncoder) Encode(string) []int32 { return nil }

// Stopping an epoch early releases the producer goroutine.
func TestBatchesEarlyStop(t *testing.T) {
	ex := synthetic(2000, 10)
	before := runtime.NumGoroutine()
	for range 20 {
		for b, err := range Batches(ex, wordEncoder{}, BatchOptions{BatchSize: 4, Shuffle: true}) {
			if err != nil || b == nil {
				t.Fatal(err)
			}
			break
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after 20 early stops, %d before", n, before)
	}
}

func TestFlatAndTensors(t *testing.T) {
	ex := []Example{{Text: "a b c", Label: 1}, {Text: "d", Label: 0}}
	b := collect(t, Batches(ex, wordEncoder{}, BatchOptions{BatchSize: 2}))[0]
	ids, dims := b.FlatInputIDs()
	if want := []int32{101, 1001, 1001, 1001, 102, 101, 1001, 102, 0, 0}; !slices.Equal(ids, want) || !slices.Equal(dims, []int{2, 5}) {
		t.Errorf("flat ids %v dims %v", ids, dims)
	}
	mask, dims := b.FlatAttentionMask()
	if want := []int32{1, 1, 1, 1, 1, 1, 1, 1, 0, 0}; !slices.Equal(mask, want) || !slices.Equal(dims, []int{2, 5}) {
		t.Errorf("flat mask %v dims %v", mask, dims)
	}
	if b.Padding() != 2 {
		t.Errorf("padding %d, want 2", b.Padding())
	}
	ts := b.Tensors()
	for name, want := range map[string][]int{"input_ids": {2, 5}, "attention_mask": {2, 5}, "labels": {2}} {
		tt, ok := ts[name]
		if !ok {
			t.Fatalf("no %s tensor", name)
		}
		if got := tt.Shape().Dimensions; !slices.Equal(got, want) || tt.DType().String() != "Int32" {
			t.Errorf("%s: shape %v dtype %s, want %v Int32", name, got, tt.DType(), want)
		}
	}
}
