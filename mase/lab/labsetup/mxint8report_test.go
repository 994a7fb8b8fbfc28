package labsetup

import (
	"testing"

	"github.com/gomase/gomase/mase/models"
)

// BenchmarkMemoryReport prints the memory report (parameter bytes FP32 vs
// packed, with and without the embeddings) for bert-tiny and for a
// 12-layer × 768 BERT with random weights, group size 32. The figures do
// not depend on timing; the benchmark only hosts the (slow) large report.
func BenchmarkMemoryReport(b *testing.B) {
	for _, c := range []struct {
		name string
		cfg  models.BertConfig
	}{
		{"bert-tiny", models.BertTinyConfig()}, {"bert-12x768", LargeBertConfig()},
	} {
		b.Run(c.name, func(b *testing.B) {
			var f *MemoryFigures
			for b.Loop() {
				var err error
				if f, err = MXINT8MemoryReport(c.name, c.cfg, 1, 32); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(100*f.LinearsOnly.Saving, "%saving-linears")
			b.ReportMetric(100*f.WithEmbeddings.Saving, "%saving-all")
			b.Log("\n" + f.String())
		})
	}
}
