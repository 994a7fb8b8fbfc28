package labsetup

import (
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/data"
	"github.com/gomase/gomase/mase/models"
)

// TestPredictOnBatch packs a seeded bert-tiny and compares its logits on a
// hand-made batch: every sentence accounted for, the logits moved but
// within the tolerance, the report naming the packed modules.
func TestPredictOnBatch(t *testing.T) {
	m, err := models.NewBertTiny(1)
	if err != nil {
		t.Fatal(err)
	}
	b := &data.Batch{}
	var examples []data.Example
	for i := range 4 {
		row, mask := make([]int32, 12), make([]int32, 12)
		for j := range row {
			row[j], mask[j] = int32(1000+97*i+13*j), 1
		}
		b.InputIDs, b.AttentionMask = append(b.InputIDs, row), append(b.AttentionMask, mask)
		b.Labels, b.Lengths, b.Indices = append(b.Labels, int32(i%2)), append(b.Lengths, 12), append(b.Indices, i)
		examples = append(examples, data.Example{Text: "sentence | " + string(rune('a'+i)), Label: i % 2})
	}
	c, err := PredictOnBatch(m, "a seeded bert-tiny", b, examples, 32)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Texts) != 4 || c.Same+len(c.Flipped) != 4 || c.Packed != 13 {
		t.Fatalf("%d sentences, %d same, %v flipped, %d packed; want 4, 13 packed", len(c.Texts), c.Same, c.Flipped, c.Packed)
	}
	if c.MaxAbsDiff == 0 || c.Scale == 0 {
		t.Errorf("max |Δ| %v, scale %v: packing should move the logits a little", c.MaxAbsDiff, c.Scale)
	}
	if !c.Pass() {
		t.Errorf("the check fails: %s", c.Markdown(4))
	}
	md := c.Markdown(2)
	for _, want := range []string{`sentence \| a`, "13 Linear modules packed", "tolerance is 1.56%"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, `sentence \| c`) {
		t.Errorf("report shows more than 2 sentences:\n%s", md)
	}
}

// TestPredictionCheckPass: past the tolerance, or a class change with a
// margin wider than the change allows, fails the check.
func TestPredictionCheckPass(t *testing.T) {
	c := &PredictionCheck{FP32: [][]float32{{1, 0.999}, {2, -2}}, MaxAbsDiff: 0.01, Scale: 2, Flipped: []int{0}}
	if !c.Pass() {
		t.Error("a flip with a margin of 0.001 under a change of 0.01 should pass")
	}
	c.Flipped = []int{1}
	if c.Pass() {
		t.Error("a flip with a margin of 4 should fail")
	}
	c.Flipped, c.MaxAbsDiff = nil, 0.1
	if c.Pass() {
		t.Error("a change of 5% of the scale should fail")
	}
}

// TestMemoryTable: the lab's packing leaves the classifier FP32, and the
// saving is the theoretical one times the share packed.
func TestMemoryTable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 110 M-parameter BERT")
	}
	rows, err := MXINT8MemoryTable(32)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4", len(rows))
	}
	for _, r := range rows {
		if r.Left["classifier"] == 0 || r.Left["other"] != 0 {
			t.Errorf("%s: left FP32 %v", r.Model, r.Left)
		}
		if got, want := r.Report.Saving, r.Share()*r.Report.Theoretical; got < want-0.01 || got > want+0.01 {
			t.Errorf("%s (embeddings %v): saving %.4f, share × theory %.4f", r.Model, r.Embeddings, got, want)
		}
	}
	if md := MemoryMarkdown(rows); !strings.Contains(md, "BERT 12×768") || !strings.Contains(md, "66.4%") {
		t.Errorf("memory table:\n%s", md)
	}
}
