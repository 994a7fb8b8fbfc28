package searchplot

import (
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/search"
)

func TestNASTable(t *testing.T) {
	arch := map[string]any{"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 128, "intermediate_size": 256, "identities": 3, "seconds": 1.5}
	ts := []search.FrozenTrial{
		{Number: 0, State: search.Complete, Value: 0.6, UserAttrs: arch},
		{Number: 1, State: search.Fail},
		{Number: 2, State: search.Complete, Value: 0.7, UserAttrs: arch},
	}
	tbl, err := NASTable("nas", ts, "seconds")
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Rows() != 2 || len(tbl.Columns) != 8 || tbl.Caption != "nas: completed trials" {
		t.Errorf("table: %d rows, columns %v, caption %q", tbl.Rows(), tbl.Columns, tbl.Caption)
	}
	// Best first: trial 2 (0.7) before trial 0 (0.6).
	html := tbl.HTML()
	if i, j := strings.Index(html, `data-sort="0.7"`), strings.Index(html, `data-sort="0.6"`); i < 0 || j < 0 || i > j {
		t.Errorf("rows not best first: %s", html)
	}
}
