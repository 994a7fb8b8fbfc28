package data

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
)

func TestLimitBalanced(t *testing.T) {
	// 30 negatives, 10 positives, 5 of label 2.
	var ex []Example
	for i := range 45 {
		l := 0
		switch {
		case i%3 == 1 && i < 30:
			l = 1
		case i >= 40:
			l = 2
		}
		ex = append(ex, Example{Text: fmt.Sprint(i), Label: l, ID: fmt.Sprint(i)})
	}
	s := &Split{Name: "train", Examples: ex}
	counts := s.LabelCounts()
	if counts[0] != 30 || counts[1] != 10 || counts[2] != 5 {
		t.Fatalf("fixture counts %v", counts)
	}
	for _, c := range []struct {
		n    int
		want map[int]int
	}{
		{9, map[int]int{0: 3, 1: 3, 2: 3}},
		{10, map[int]int{0: 4, 1: 3, 2: 3}},   // remainder to the lowest label
		{24, map[int]int{0: 10, 1: 9, 2: 5}},  // label 2's spare places go round robin
		{40, map[int]int{0: 25, 1: 10, 2: 5}}, // only label 0 can take more
	} {
		got, err := s.Limit(c.n, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.LabelCounts(), c.want) || got.Len() != c.n {
			t.Errorf("Limit(%d): counts %v, want %v", c.n, got.LabelCounts(), c.want)
		}
		pos := make([]int, got.Len())
		for i, e := range got.Examples {
			fmt.Sscan(e.Text, &pos[i])
		}
		if !slices.IsSorted(pos) {
			t.Errorf("Limit(%d) does not keep the split's order: %v", c.n, pos)
		}
	}
	a, _ := s.Limit(12, 5)
	b, _ := s.Limit(12, 5)
	c, _ := s.Limit(12, 6)
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed, different subsets")
	}
	if reflect.DeepEqual(ids(a.Examples), ids(c.Examples)) {
		t.Error("seeds 5 and 6 chose the same subset")
	}
	all, _ := s.Limit(0, 1)
	more, _ := s.Limit(100, 1)
	if !reflect.DeepEqual(all.Examples, ex) || !reflect.DeepEqual(more.Examples, ex) {
		t.Error("Limit(0) and Limit(n ≥ len) must keep everything")
	}
	all.Examples[0].Text = "changed"
	if ex[0].Text == "changed" {
		t.Error("Limit shares its result with the split")
	}
	_, err := s.Limit(-1, 1)
	wantErr(t, "negative", err, `limit -1 for split "train" is negative`)
}

func TestDatasetSplit(t *testing.T) {
	ds := &Dataset{Name: "sst2", Splits: []*Split{{Name: "train"}, {Name: "dev"}}}
	if s, err := ds.Split("dev"); err != nil || s != ds.Splits[1] {
		t.Errorf("Split(dev): %v", err)
	}
	_, err := ds.Split("validation")
	wantErr(t, "unknown split", err, `no split "validation"`, "train, dev")
}

// The generator is pinned: changing it would silently change every seeded
// order in the labs.
func TestRNGPinned(t *testing.T) {
	r := newRNG(0)
	if got := []uint64{r.next(), r.next()}; got[0] != 0xe220a8397b1dcdaf || got[1] != 0x6e789e6aa1b965f4 {
		t.Errorf("SplitMix64(0) = %#x", got)
	}
	r = newRNG(7)
	hist := make([]int, 3)
	for range 30000 {
		hist[r.intn(3)]++
	}
	for i, h := range hist {
		if h < 9500 || h > 10500 {
			t.Errorf("intn(3) gives %d %d times in 30,000", i, h)
		}
	}
}
