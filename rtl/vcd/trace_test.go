package vcd

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/gomase/gomase/rtl"
)

var (
	traceOnce sync.Once
	traceDump *Dump
	traceErr  error
)

// skidTrace builds tb_skid_buffer with tracing (once per test run), runs it
// with +trace and parses the VCD it writes. It fails (never skips) without
// Verilator: CI runs `make setup` first.
func skidTrace(t *testing.T) *Dump {
	t.Helper()
	traceOnce.Do(func() {
		sim, err := rtl.FindSimulator()
		if err != nil {
			traceErr = err
			return
		}
		dir, err := os.MkdirTemp("", "gomase-vcd-test-")
		if err != nil {
			traceErr = err
			return
		}
		defer os.RemoveAll(dir)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		b, err := sim.NewBuild(ctx, rtl.Testbench{Top: "tb_skid_buffer", Trace: true}, dir)
		if err != nil {
			traceErr = err
			return
		}
		res, err := b.Run(ctx, nil, 7)
		if err != nil {
			traceErr = err
			return
		}
		if !res.Passed {
			traceErr = fmt.Errorf("tb_skid_buffer failed:\n%s", res.Output)
			return
		}
		if res.VCD == "" {
			traceErr = fmt.Errorf("traced run wrote no %s:\n%s", rtl.TraceFile, res.Output)
			return
		}
		f, err := os.Open(res.VCD)
		if err != nil {
			traceErr = err
			return
		}
		defer f.Close()
		traceDump, traceErr = Parse(f)
	})
	if traceErr != nil {
		t.Fatal(traceErr)
	}
	return traceDump
}

// beats returns the values a stream moves: data at every rising clock edge
// where valid && ready, sampled just before the edge.
func beats(t *testing.T, d *Dump, clk, data, valid, ready string) []uint64 {
	t.Helper()
	sig := func(n string) *Signal {
		s := d.Signal(n)
		if s == nil {
			t.Fatalf("no signal %q in the dump", n)
		}
		return s
	}
	c, dt, v, r := sig(clk), sig(data), sig(valid), sig(ready)
	var out []uint64
	for _, e := range c.RisingEdges() {
		if e == 0 {
			continue
		}
		if v.At(e-1) == "1" && r.At(e-1) == "1" {
			x, ok := dt.Uint(e - 1)
			if !ok {
				t.Fatalf("%s is %q at the beat before %d", data, dt.At(e-1), e)
			}
			out = append(out, x)
		}
	}
	return out
}

// checkStream requires every beat taken at the skid buffer's input to come
// out, in order, unchanged, and nothing else.
func checkStream(in, out []uint64) error {
	if len(in) != len(out) {
		return fmt.Errorf("%d beats in, %d out", len(in), len(out))
	}
	for i := range in {
		if in[i] != out[i] {
			return fmt.Errorf("beat %d: in %#x, out %#x", i, in[i], out[i])
		}
	}
	return nil
}

func TestVerilatorTraceHandshake(t *testing.T) {
	d := skidTrace(t)
	t.Logf("%d signals, end %d %s", len(d.Signals), d.End, d.Timescale)
	const dut = "tb_skid_buffer.dut."
	in := beats(t, d, dut+"clk", dut+"data_in", dut+"data_in_valid", dut+"data_in_ready")
	out := beats(t, d, dut+"clk", dut+"data_out", dut+"data_out_valid", dut+"data_out_ready")
	if len(in) != 3000 {
		t.Errorf("%d input beats, the testbench sends 3000", len(in))
	}
	if err := checkStream(in, out); err != nil {
		t.Error(err)
	}
	// the testbench's own view of the stream agrees with the DUT's ports
	if tbIn := beats(t, d, "tb_skid_buffer.clk", "tb_skid_buffer.din", "tb_skid_buffer.din_valid", "tb_skid_buffer.din_ready"); checkStream(tbIn, in) != nil {
		t.Error("testbench and DUT disagree on the input beats")
	}
	// The check can fail: corrupt one output value in the dump.
	dout := d.Signal(dut + "data_out")
	bad := &Dump{Signals: d.Signals, byName: map[string]*Signal{}}
	for _, s := range d.Signals {
		bad.byName[s.Name] = s
	}
	cp := *dout
	cp.Changes = append([]Change(nil), dout.Changes...)
	// the change that holds the value of output beat 1500
	var taken []uint64
	ov, or := d.Signal(dut+"data_out_valid"), d.Signal(dut+"data_out_ready")
	for _, e := range d.Signal(dut + "clk").RisingEdges() {
		if e > 0 && ov.At(e-1) == "1" && or.At(e-1) == "1" {
			taken = append(taken, e-1)
		}
	}
	i := sort.Search(len(cp.Changes), func(i int) bool { return cp.Changes[i].Time > taken[1500] }) - 1
	v := []byte(cp.Changes[i].Value)
	v[0] ^= 1 // '0' <-> '1'
	cp.Changes[i].Value = string(v)
	bad.byName[dout.Name] = &cp
	bad.Signals = append([]*Signal(nil), d.Signals...)
	for j, s := range bad.Signals {
		if s == dout {
			bad.Signals[j] = &cp
		}
	}
	if checkStream(in, beats(t, bad, dut+"clk", dut+"data_out", dut+"data_out_valid", dut+"data_out_ready")) == nil {
		t.Error("a corrupted output value went unnoticed")
	}
}
