package vcd

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
)

// svgRow is what the tests read back from SVG's output.
type svgRow struct {
	signal string
	labels map[uint64]string // data-t0 -> value text written inside
	segs   int
}

// readSVG checks that the SVG is well-formed XML without scripts or
// external references and returns its rows.
func readSVG(t *testing.T, svg []byte) []svgRow {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var rows []svgRow
	var seg uint64
	inValue := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, svg)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if e.Name.Local == "script" || e.Name.Local == "image" || e.Name.Local == "style" || e.Name.Local == "foreignObject" {
				t.Errorf("SVG has a <%s>", e.Name.Local)
			}
			attr := map[string]string{}
			for _, a := range e.Attr {
				attr[a.Name.Local] = a.Value
				if a.Name.Local == "href" || strings.HasPrefix(a.Name.Local, "on") {
					t.Errorf("SVG has attribute %s", a.Name.Local)
				}
			}
			switch {
			case e.Name.Local == "g" && attr["class"] == "row":
				rows = append(rows, svgRow{signal: attr["data-signal"], labels: map[uint64]string{}})
			case e.Name.Local == "g" && attr["class"] == "seg":
				seg, err = strconv.ParseUint(attr["data-t0"], 10, 64)
				if err != nil {
					t.Fatalf("segment data-t0 %q", attr["data-t0"])
				}
				rows[len(rows)-1].segs++
			case e.Name.Local == "text" && attr["class"] == "value":
				inValue = true
			}
		case xml.CharData:
			if inValue {
				rows[len(rows)-1].labels[seg] = string(e)
			}
		case xml.EndElement:
			inValue = false
		}
	}
	return rows
}

func TestSVGSample(t *testing.T) {
	d, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	svg, err := SVG(d, Options{Signals: []string{"top.clk", "valid", "data", "top.dut.q"}, Width: 800, Radix: Signed})
	if err != nil {
		t.Fatal(err)
	}
	rows := readSVG(t, svg)
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4", len(rows))
	}
	want := map[string]map[uint64]string{
		"top.data":  {0: "x", 5: "-6", 15: "z"},
		"top.dut.q": {0: "0", 5: "1", 10: "-1"},
	}
	for _, r := range rows[2:] {
		for t0, lab := range want[r.signal] {
			if r.labels[t0] != lab {
				t.Errorf("%s at %d: label %q, want %q (all: %v)", r.signal, t0, r.labels[t0], lab, r.labels)
			}
		}
	}
	// a window cuts the segments; a prefix selects a scope
	svg, err = SVG(d, Options{Signals: []string{"top.dut."}, Start: 6, End: 12})
	if err != nil {
		t.Fatal(err)
	}
	rows = readSVG(t, svg)
	if len(rows) != 3 || rows[0].signal != "top.dut.clk" {
		t.Fatalf("rows %+v", rows)
	}
	if rows[1].labels[6] != "1" || rows[1].labels[10] != "ff" || rows[1].segs != 2 {
		t.Errorf("q in [6,12]: %+v", rows[1])
	}
	for _, bad := range []Options{{Signals: []string{"nope"}}, {Start: 9, End: 9}, {Width: 40}} {
		if _, err := SVG(d, bad); err == nil {
			t.Errorf("options %+v should fail", bad)
		}
	}
}

func TestSVGVerilatorTrace(t *testing.T) {
	d := skidTrace(t)
	const dut = "tb_skid_buffer.dut."
	names := []string{dut + "clk", dut + "rst", dut + "data_in_valid", dut + "data_in_ready", dut + "data_in",
		dut + "data_out_valid", dut + "data_out_ready", dut + "data_out"}
	clk := d.Signal(dut + "clk").RisingEdges()
	start, end := clk[10], clk[40]
	svg, err := SVG(d, Options{Signals: names, Start: start, End: end, Width: 1400})
	if err != nil {
		t.Fatal(err)
	}
	rows := readSVG(t, svg)
	if len(rows) != len(names) {
		t.Fatalf("%d rows, want %d", len(rows), len(names))
	}
	checked := 0
	for _, r := range rows {
		s := d.Signal(r.signal)
		if s == nil {
			t.Fatalf("row for unknown signal %q", r.signal)
		}
		if s.Width == 1 {
			continue
		}
		if r.segs == 0 {
			t.Errorf("%s: no segments", r.signal)
		}
		for t0, lab := range r.labels {
			if want := BitsHex(s.At(t0)); lab != want {
				t.Errorf("%s at %d: label %q, dump says %q", r.signal, t0, lab, want)
			}
			checked++
		}
	}
	if checked < 10 {
		t.Errorf("only %d bus labels drawn", checked)
	}
	if testing.Verbose() {
		t.Logf("%d bytes of SVG, %d labels checked", len(svg), checked)
	}
}

func TestAxisUnit(t *testing.T) {
	for _, c := range []struct {
		ts   string
		step uint64
		f    float64
		unit string
	}{
		{"1ps", 20000, 1e-3, "ns"},
		{"1 ps", 500, 1, "ps"},
		{"10ns", 100000, 1e-5, "ms"},
		{"1ns", 5, 1, "ns"},
		{"1us", 2, 1, "µs"},
		{"", 10, 1, "?"},
		{"1 furlong", 10, 1, "1 furlong"},
	} {
		f, unit := axisUnit(c.ts, c.step)
		if math.Abs(f-c.f) > 1e-12*c.f || unit != c.unit {
			t.Errorf("axisUnit(%q, %d) = %v %q, want %v %q", c.ts, c.step, f, unit, c.f, c.unit)
		}
	}
}
