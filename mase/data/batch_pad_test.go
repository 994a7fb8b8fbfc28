package data

import "testing"

type lenEncoder struct{}

// Encode returns [CLS] + one token per byte + [SEP].
func (lenEncoder) Encode(text string) []int32 {
	ids := []int32{101}
	for range len(text) {
		ids = append(ids, 1000)
	}
	return append(ids, 102)
}

func TestPadToMultipleOf(t *testing.T) {
	ex := []Example{{Text: "abc", Label: 1}, {Text: "abcdefghij", Label: 0}}
	for _, tc := range []struct{ multiple, maxLen, want int }{
		{0, 0, 12}, {1, 0, 12}, {8, 0, 16}, {4, 0, 12}, {16, 14, 14}, {8, 10, 10},
	} {
		for b, err := range Batches(ex, lenEncoder{}, BatchOptions{BatchSize: 2, MaxLength: tc.maxLen, PadToMultipleOf: tc.multiple}) {
			if err != nil {
				t.Fatal(err)
			}
			if b.SeqLen() != tc.want || len(b.AttentionMask[0]) != tc.want || b.AttentionMask[0][5] != 0 {
				t.Errorf("multiple %d, max %d: padded to %d, want %d", tc.multiple, tc.maxLen, b.SeqLen(), tc.want)
			}
		}
	}
	if err := (BatchOptions{BatchSize: 1, PadToMultipleOf: -8}).Validate(); err == nil {
		t.Error("negative multiple accepted")
	}
}

func TestPadBatch(t *testing.T) {
	ex := []Example{{Text: "abc", Label: 1}, {Text: "abcdefghij", Label: 0}, {Text: "ab", Label: 1}}
	var sizes, examples []int
	var last *Batch
	for b, err := range Batches(ex, lenEncoder{}, BatchOptions{BatchSize: 2, PadBatch: true, PadToMultipleOf: 4}) {
		if err != nil {
			t.Fatal(err)
		}
		sizes, examples = append(sizes, b.Size()), append(examples, b.Examples())
		last = b
	}
	if len(sizes) != 2 || sizes[0] != 2 || sizes[1] != 2 || examples[0] != 2 || examples[1] != 1 {
		t.Fatalf("sizes %v, examples %v; want [2 2] and [2 1]", sizes, examples)
	}
	if last.Labels[1] != IgnoreLabel || last.Indices[1] != -1 || last.Lengths[1] != 0 {
		t.Errorf("padding row: label %d, index %d, length %d", last.Labels[1], last.Indices[1], last.Lengths[1])
	}
	for j := range last.SeqLen() {
		if last.InputIDs[1][j] != PadID || last.AttentionMask[1][j] != 0 {
			t.Fatalf("padding row %v / mask %v", last.InputIDs[1], last.AttentionMask[1])
		}
	}
	ts := last.Tensors()
	if d := ts["input_ids"].Shape().Dimensions; d[0] != 2 || d[1] != last.SeqLen() {
		t.Errorf("input_ids %v", d)
	}
	// Without PadBatch the last batch stays short.
	n := 0
	for b, err := range Batches(ex, lenEncoder{}, BatchOptions{BatchSize: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		n += b.Size()
	}
	if n != 3 {
		t.Errorf("%d rows without PadBatch, want 3", n)
	}
}
