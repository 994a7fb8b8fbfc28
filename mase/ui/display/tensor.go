package display

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/gomlx/gomlx/core/tensors"
)

// tensorEdge is how many leading and trailing values of a long row
// TensorText keeps (PyTorch's print keeps 3 of each).
const tensorEdge = 3

// TensorText writes t as its shape and values, one innermost row a line,
// rows longer than 2·3 values elided to their first and last three, as
// PyTorch prints a tensor:
//
//	[2][3]float32{
//	  {1, 2, 3},
//	  {4, 5, 6}}
//
// A scalar is its value; a nil tensor is "<nil>".
func TensorText(t *tensors.Tensor) string {
	if t == nil {
		return "<nil>"
	}
	v := reflect.ValueOf(t.Value())
	if v.Kind() != reflect.Slice {
		return fmt.Sprint(v.Interface())
	}
	var b strings.Builder
	for _, d := range t.Shape().Dimensions {
		fmt.Fprintf(&b, "[%d]", d)
	}
	b.WriteString(t.DType().GoType().String())
	if v.Len() > 0 && v.Index(0).Kind() != reflect.Slice {
		b.WriteString(row(v))
		return b.String()
	}
	b.WriteString("{\n")
	writeRows(&b, v, "  ")
	b.WriteString("}")
	return b.String()
}

// writeRows writes the slices of v (a slice of slices), one innermost row a
// line, separated by commas.
func writeRows(b *strings.Builder, v reflect.Value, indent string) {
	for i := range v.Len() {
		e := v.Index(i)
		if e.Len() > 0 && e.Index(0).Kind() == reflect.Slice {
			b.WriteString(indent + "{\n")
			writeRows(b, e, indent+"  ")
			b.WriteString(indent + "}")
		} else {
			b.WriteString(indent + row(e))
		}
		if i < v.Len()-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
}

// row is one innermost slice as {a, b, c}, elided past 2·tensorEdge values.
func row(v reflect.Value) string {
	n := v.Len()
	var parts []string
	for i := range n {
		if n > 2*tensorEdge && i == tensorEdge {
			parts = append(parts, "…")
		}
		if n > 2*tensorEdge && i >= tensorEdge && i < n-tensorEdge {
			continue
		}
		parts = append(parts, value(v.Index(i)))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// value is one element: a float with four significant digits, anything else
// as fmt prints it.
func value(e reflect.Value) string {
	if k := e.Kind(); k == reflect.Float32 || k == reflect.Float64 {
		return fmt.Sprintf("%.4g", e.Float())
	}
	return fmt.Sprint(e.Interface())
}
