package rtlview

import (
	"fmt"
	"strings"

	"github.com/gomase/gomase/rtl/vcd"
)

// WaveSignals are the signals of an emitted top module (scope, e.g.
// "TOP.top_tb.dut.") that a waveform of the lab's MLP shows: clock, reset,
// the input stream with its lanes, the weight source's valid, the output
// stream with its lanes. Verilator names each element of an unpacked array
// port "name[i]".
func WaveSignals(scope string, inLanes, outLanes int) []string {
	s := []string{scope + "clk", scope + "rst", scope + "data_in_0_valid", scope + "data_in_0_ready"}
	for i := range inLanes {
		s = append(s, fmt.Sprintf("%sdata_in_0[%d]", scope, i))
	}
	s = append(s, scope+"fc1_weight_valid", scope+"data_out_0_valid", scope+"data_out_0_ready")
	for i := range outLanes {
		s = append(s, fmt.Sprintf("%sdata_out_0[%d]", scope, i))
	}
	return s
}

// Timing is what a waveform of a design streaming at full rate shows: the
// clock, the cycles (rising edges, from 0) at which input and output beats
// were taken, and from them the latency and the initiation interval.
type Timing struct {
	Period    uint64 // clock period in the dump's time unit
	Unit      string // the dump's timescale
	InAt      []int  // cycles at which an input beat was taken
	OutAt     []int  // cycles at which an output beat was taken
	OutTimes  []uint64
	Latency   int // cycles from the first input beat to the first output beat
	Interval  int // cycles between the first two input beats (0 with one)
	Start     uint64
	End       uint64 // a window around the beats, for the picture
	BeatsPerV int    // output beats per input vector
}

// MeasureTiming reads the handshakes of the top module in scope from d;
// outBeatsPerVector is how many output beats one input vector gives.
func MeasureTiming(d *vcd.Dump, scope string, outBeatsPerVector int) (*Timing, error) {
	clk := d.Signal(scope + "clk")
	if clk == nil {
		return nil, fmt.Errorf("rtlview: no clock %sclk in the dump", scope)
	}
	edges := clk.RisingEdges()
	if len(edges) < 2 {
		return nil, fmt.Errorf("rtlview: the clock has %d rising edges", len(edges))
	}
	in, err := d.Handshakes(scope+"clk", scope+"data_in_0_valid", scope+"data_in_0_ready")
	if err != nil {
		return nil, err
	}
	out, err := d.Handshakes(scope+"clk", scope+"data_out_0_valid", scope+"data_out_0_ready")
	if err != nil {
		return nil, err
	}
	if len(in) == 0 || len(out) == 0 {
		return nil, fmt.Errorf("rtlview: %d input and %d output beats in the dump", len(in), len(out))
	}
	t := &Timing{Period: edges[1] - edges[0], Unit: d.Timescale, InAt: in, OutAt: out, Latency: out[0] - in[0], BeatsPerV: outBeatsPerVector}
	if len(in) > 1 {
		t.Interval = in[1] - in[0]
	}
	for _, c := range out {
		t.OutTimes = append(t.OutTimes, edges[c])
	}
	if in[0] > 3 {
		t.Start = edges[in[0]-3]
	}
	t.End = edges[min(len(edges)-1, out[len(out)-1]+3)]
	return t, nil
}

// Nanoseconds converts a time of the dump to nanoseconds (timescales 1ps,
// 1ns, 1us; else it returns the time unchanged and false).
func (t *Timing) Nanoseconds(v uint64) (float64, bool) {
	switch strings.ReplaceAll(t.Unit, " ", "") {
	case "1ps":
		return float64(v) / 1000, true
	case "1ns":
		return float64(v), true
	case "1us":
		return float64(v) * 1000, true
	}
	return float64(v), false
}

// Duration writes a time of the dump in ns when the unit allows.
func (t *Timing) Duration(v uint64) string {
	if ns, ok := t.Nanoseconds(v); ok {
		return fmt.Sprintf("%g ns", ns)
	}
	return fmt.Sprintf("%d × %s", v, t.Unit)
}

// String says what the handshakes show.
func (t *Timing) String() string {
	s := fmt.Sprintf("Clock period %s; input beats taken at cycles %v, output beats at %v: the first output beat comes **%d cycles** after its input beat was taken",
		t.Duration(t.Period), t.InAt, t.OutAt, t.Latency)
	if t.Interval > 0 {
		s += fmt.Sprintf(", and a new input vector is taken every **%d cycles**", t.Interval)
	}
	return s + fmt.Sprintf(" (%d output beats per vector).", t.BeatsPerV)
}
