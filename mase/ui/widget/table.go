package widget

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// Table is an HTML table whose columns sort on a click of their header
// (numbers by value, text naturally; a second click reverses).
type Table struct {
	// Caption heads the table.
	Caption string
	// Columns are the header cells.
	Columns []string
	rows    [][]cell
}

type cell struct {
	text string
	// sort is the numeric value the column sorts by (NaN: sort as text).
	sort float64
	// float marks a floating-point value, whose decimals HTML aligns with
	// the column's.
	float bool
}

// NewTable returns an empty table with the given caption and columns.
func NewTable(caption string, columns ...string) *Table {
	return &Table{Caption: caption, Columns: columns}
}

// Rows returns how many rows the table has.
func (t *Table) Rows() int { return len(t.rows) }

// AddRow appends a row, one value per column. Floating-point values are
// shown with 4 significant digits, every one of a column with as many
// decimals as the one that needs the most (0.6140 beside 0.6617, 8.00
// beside 8.25), and sort by their exact value; integers as they are;
// anything else as fmt.Sprint writes it.
func (t *Table) AddRow(values ...any) error {
	if len(values) != len(t.Columns) {
		return fmt.Errorf("widget: table %q: row of %d values for %d columns (%s)", t.Caption, len(values), len(t.Columns), strings.Join(t.Columns, ", "))
	}
	row := make([]cell, len(values))
	for i, v := range values {
		row[i] = makeCell(v)
	}
	t.rows = append(t.rows, row)
	return nil
}

func makeCell(v any) cell {
	switch x := v.(type) {
	case float64:
		return cell{text: formatFloat(x), sort: x, float: true}
	case float32:
		return cell{text: formatFloat(float64(x)), sort: float64(x), float: true}
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		s := fmt.Sprint(x)
		f, _ := strconv.ParseFloat(s, 64)
		return cell{text: s, sort: f}
	default:
		return cell{text: fmt.Sprint(v), sort: math.NaN()}
	}
}

func formatFloat(x float64) string {
	switch {
	case math.IsNaN(x), math.IsInf(x, 0):
		return fmt.Sprint(x)
	case x == math.Trunc(x) && math.Abs(x) < 1e15:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

// HTML returns the table; numeric cells are right-aligned.
func (t *Table) HTML() string {
	var b strings.Builder
	b.WriteString(assets)
	b.WriteString(`<div class="gmw gmw-tablebox"><table class="gmw-table">`)
	if t.Caption != "" {
		fmt.Fprintf(&b, "<caption>%s</caption>", html.EscapeString(t.Caption))
	}
	b.WriteString("<thead><tr>")
	for _, c := range t.Columns {
		fmt.Fprintf(&b, `<th title="sort">%s</th>`, html.EscapeString(c))
	}
	b.WriteString("</tr></thead><tbody>")
	decimals := t.columnDecimals()
	for _, row := range t.rows {
		b.WriteString("<tr>")
		for i, c := range row {
			if c.float && decimals[i] >= 0 && !math.IsNaN(c.sort) && !math.IsInf(c.sort, 0) {
				c.text = strconv.FormatFloat(c.sort, 'f', decimals[i], 64)
			}
			if math.IsNaN(c.sort) {
				fmt.Fprintf(&b, "<td>%s</td>", html.EscapeString(c.text))
			} else {
				fmt.Fprintf(&b, `<td class="gmw-num" data-sort="%s">%s</td>`, strconv.FormatFloat(c.sort, 'g', -1, 64), html.EscapeString(c.text))
			}
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</tbody></table></div>")
	return b.String()
}

// columnDecimals is, for each column, the most decimals any of its
// floating-point values shows (formatFloat's), or −1 when one of them is
// written with an exponent (the column is then left as formatted).
func (t *Table) columnDecimals() []int {
	d := make([]int, len(t.Columns))
	for _, row := range t.rows {
		for i, c := range row {
			if !c.float || d[i] < 0 || math.IsNaN(c.sort) || math.IsInf(c.sort, 0) {
				continue
			}
			switch dot := strings.IndexByte(c.text, '.'); {
			case strings.ContainsAny(c.text, "eE"):
				d[i] = -1
			case dot >= 0:
				d[i] = max(d[i], len(c.text)-dot-1)
			}
		}
	}
	return d
}
