package plot

import (
	"strings"
	"testing"
)

func TestLineSVG(t *testing.T) {
	svg, err := LineSVG(Chart{Title: "training loss", XLabel: "step", YLabel: "loss",
		Series: []Series{{Name: "train", X: []float64{1, 2, 3}, Y: []float64{0.7, 0.5, 0.3}}}})
	if err != nil {
		t.Fatal(err)
	}
	s := string(svg)
	if !strings.Contains(s, "<svg") || !strings.Contains(s, "training loss") || !strings.Contains(s, "#1F77B4") {
		t.Errorf("SVG lacks title or line:\n%.400s", s)
	}
	if _, err := LineSVG(Chart{Series: []Series{{Name: "bad", X: []float64{1}, Y: nil}}}); err == nil {
		t.Error("mismatched series accepted")
	}
}
