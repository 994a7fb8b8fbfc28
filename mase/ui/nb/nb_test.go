package nb

import (
	"errors"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/ui/plot"
)

// panicked runs f and returns the error it panicked with (nil when it
// returned normally); a panic with a value that is not an error fails.
func panicked(t *testing.T, f func()) (err error) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		e, ok := r.(error)
		if !ok {
			t.Fatalf("panicked with %T %v, want an error", r, r)
		}
		err = e
	}()
	f()
	return nil
}

func TestShowLine(t *testing.T) {
	good := plot.Chart{Title: "loss", Series: []plot.Series{{Name: "train", X: []float64{1, 2, 3}, Y: []float64{3, 2, 1}}}}
	if err := panicked(t, func() { ShowLine(good) }); err != nil {
		t.Fatalf("ShowLine of a valid chart: %v", err)
	}
	bad := plot.Chart{Title: "loss", Series: []plot.Series{{Name: "train", X: []float64{1, 2}, Y: []float64{1}}}}
	err := panicked(t, func() { ShowLine(bad) })
	if err == nil {
		t.Fatal("ShowLine of a series with 2 x values and 1 y value did not stop the cell")
	}
	for _, want := range []string{`nb: cannot draw the line chart "loss"`, `series "train" has 2 x values and 1 y values`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("ShowLine's error %q does not say %q", err, want)
		}
	}
	if errors.Unwrap(err) == nil {
		t.Errorf("ShowLine's error %q does not wrap the plot error", err)
	}
}

func TestShowBars(t *testing.T) {
	good := plot.BarChart{Title: "cost", Categories: []string{"a", "b"}, Groups: []plot.BarGroup{{Name: "LUT", Values: []float64{1, 2}}}}
	if err := panicked(t, func() { ShowBars(good) }); err != nil {
		t.Fatalf("ShowBars of a valid chart: %v", err)
	}
	err := panicked(t, func() { ShowBars(plot.BarChart{Title: "cost"}) })
	if err == nil {
		t.Fatal("ShowBars of a chart without categories did not stop the cell")
	}
	for _, want := range []string{`nb: cannot draw the bar chart "cost"`, "has no categories"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("ShowBars's error %q does not say %q", err, want)
		}
	}
}

func TestChartError(t *testing.T) {
	if err := chartError("line chart", "x", nil); err != nil {
		t.Errorf("chartError of no error = %v, want nil", err)
	}
}
