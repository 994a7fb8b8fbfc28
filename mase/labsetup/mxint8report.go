package labsetup

import (
	"fmt"
	"strings"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/passes"
)

// LargeBertConfig is a BERT-base-sized configuration (12 layers, hidden
// 768, 12 heads, intermediate 3072) with bert-tiny's vocabulary, position
// and label settings: the "larger BERT" of the memory report.
func LargeBertConfig() models.BertConfig {
	c := models.BertTinyConfig()
	c.HiddenSize, c.NumHiddenLayers, c.NumAttentionHeads, c.IntermediateSize = 768, 12, 12, 3072
	return c
}

// MemoryFigures is the memory report of one BERT configuration, packed
// without and with its embeddings.
type MemoryFigures struct {
	Name       string            `json:"name"`
	Config     models.BertConfig `json:"config"`
	GroupSize  int               `json:"group_size"`
	Parameters int               `json:"parameters"` // scalar parameters of the FP32 model
	// LinearsOnly packs the Linear layers (MASE's experiment);
	// WithEmbeddings packs the embedding tables too.
	LinearsOnly    passes.PackReport `json:"linears_only"`
	WithEmbeddings passes.PackReport `json:"with_embeddings"`
}

// MXINT8MemoryReport builds the BERT of cfg with random weights (seed), traces
// it, and runs passes.PackLinears on it twice — Linear layers only, then on a
// fresh copy Linear layers and embeddings — returning both reports.
func MXINT8MemoryReport(name string, cfg models.BertConfig, seed uint64, groupSize int) (*MemoryFigures, error) {
	f := &MemoryFigures{Name: name, Config: cfg, GroupSize: groupSize}
	for _, emb := range []bool{false, true} {
		m, err := models.NewBertForSequenceClassification(cfg, seed)
		if err != nil {
			return nil, fmt.Errorf("mxint8 memory report %s: %w", name, err)
		}
		f.Parameters = m.NumParameters("")
		mg, err := mase.NewMaseGraph(m, nil)
		if err != nil {
			return nil, fmt.Errorf("mxint8 memory report %s: %w", name, err)
		}
		_, r, err := passes.PackLinears(mg, passes.PackOptions{GroupSize: groupSize, Embeddings: emb})
		if err != nil {
			return nil, fmt.Errorf("mxint8 memory report %s: %w", name, err)
		}
		if emb {
			f.WithEmbeddings = r
		} else {
			f.LinearsOnly = r
		}
	}
	return f, nil
}

// String formats the two reports' totals.
func (f *MemoryFigures) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%d layers × %d hidden, %d parameters), MXINT8 group size %d:\n", f.Name, f.Config.NumHiddenLayers, f.Config.HiddenSize, f.Parameters, f.GroupSize)
	for _, r := range []struct {
		what string
		r    passes.PackReport
	}{{"Linear layers packed", f.LinearsOnly}, {"Linear layers + embeddings packed", f.WithEmbeddings}} {
		fmt.Fprintf(&b, "  %-34s FP32 %11d B → %11d B (%d modules): saving %.2f%% (theoretical %.5f%%)\n",
			r.what, r.r.BytesBefore, r.r.BytesAfter, len(r.r.Layers), 100*r.r.Saving, 100*r.r.Theoretical)
	}
	return b.String()
}
