package labsetup

import (
	"sort"

	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/ui/widget"
)

// ArchitectureTable is Lab 2's table of a NAS study (nas.Objective): its
// complete trials, best first, with the value and the architecture the
// objective recorded (layers, heads, hidden and intermediate sizes, square
// Linears replaced by an Identity), then the user attributes attrs. A
// click on a header sorts by that column.
func ArchitectureTable(st *search.Study, attrs ...string) (*widget.Table, error) {
	ts, err := st.Trials()
	if err != nil {
		return nil, err
	}
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].Value > ts[j].Value })
	tbl := widget.NewTable(st.Name()+": completed trials",
		append([]string{"trial", "value", "layers", "heads", "hidden", "intermediate", "identities"}, attrs...)...)
	for _, t := range ts {
		if t.State != search.Complete {
			continue
		}
		u := t.UserAttrs
		row := []any{t.Number, t.Value, u["num_hidden_layers"], u["num_attention_heads"], u["hidden_size"], u["intermediate_size"], u["identities"]}
		for _, a := range attrs {
			row = append(row, u[a])
		}
		if err := tbl.AddRow(row...); err != nil {
			return nil, err
		}
	}
	return tbl, nil
}
