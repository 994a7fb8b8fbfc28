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
