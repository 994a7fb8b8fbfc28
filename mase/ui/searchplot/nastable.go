package searchplot

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/ui/widget"
)

// NASTable is Lab 2's table of a NAS study's trials (nas.Objective): the
// complete ones, best first, with the value and the architecture the
// objective recorded (layers, heads, hidden and intermediate sizes, square
// Linears replaced by an Identity), then the user attributes attrs. A
// click on a header sorts by that column.
func NASTable(name string, trials []search.FrozenTrial, attrs ...string) (*widget.Table, error) {
	ts := make([]search.FrozenTrial, 0, len(trials))
	for _, t := range trials {
		if t.State == search.Complete {
			ts = append(ts, t)
		}
	}
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].Value > ts[j].Value })
	tbl := widget.NewTable(name+": completed trials",
		append([]string{"trial", "value", "layers", "heads", "hidden", "intermediate", "identities"}, attrs...)...)
	for _, t := range ts {
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

// ParamsText writes a trial's parameters as "name = value" pairs sorted by
// name, one pair a line, for a cell's output (a Go map prints as
// map[k:v …] on one line).
func ParamsText(params map[string]any) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(params)) {
		fmt.Fprintf(&b, "  %s = %v\n", k, params[k])
	}
	return b.String()
}
