// Package modeltest holds helpers for tests that run the library's models.
package modeltest

import (
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/trace"
)

// RandomLinearBiases gives every nn.Linear of m biases drawn from
// N(0, 0.05²) with rng (they start at zero, which would hide a dropped
// bias).
func RandomLinearBiases(t testing.TB, m *nn.Model, rng *rand.Rand) {
	t.Helper()
	for _, nm := range m.Modules() {
		if _, ok := nm.Module.(*nn.Linear); !ok {
			continue
		}
		name := nn.Join(nm.Path, "bias")
		vals, shape, err := m.ParamValues(name)
		if err != nil {
			t.Fatal(err)
		}
		for i := range vals {
			vals[i] = float32(rng.NormFloat64() * 0.05)
		}
		if err := m.Store.GetVariable(nn.StorePath(name)).SetValue(tensors.FromFlatDataAndDimensions(vals, shape...)); err != nil {
			t.Fatal(err)
		}
	}
}

// BertTiny returns bert-tiny (seed 1) traced on input_ids only, as MASE
// traces it, and a batch × seq batch of its input ids.
func BertTiny(tb testing.TB, batch, seq int) (*ir.MaseGraph, map[string]*tensors.Tensor) {
	tb.Helper()
	m, err := models.NewBertTiny(1)
	if err != nil {
		tb.Fatal(err)
	}
	g, err := trace.Trace(m, nil)
	if err != nil {
		tb.Fatal(err)
	}
	ids := make([]int32, batch*seq)
	for i := range ids {
		ids[i] = int32(1000 + i%20000)
	}
	return &ir.MaseGraph{Model: m, Graph: g}, map[string]*tensors.Tensor{"input_ids": tensors.FromFlatDataAndDimensions(ids, batch, seq)}
}

// BenchRuns times r.Run(in) after one untimed call (the compile), freeing
// every output, and closes r at the end.
func BenchRuns(b *testing.B, r execute.Runner, in map[string]*tensors.Tensor) {
	b.Helper()
	defer r.Close()
	run := func() {
		outs, err := r.Run(in)
		if err != nil {
			b.Fatal(err)
		}
		execute.Finalize(outs...)
	}
	run()
	b.ResetTimer()
	for b.Loop() {
		run()
	}
}

// RunOnce executes a graph built by fn on m's store, on the default
// backend, and returns its float32 values (an error is the graph's).
func RunOnce(tb testing.TB, m *nn.Model, fn func(g *graph.Graph) *graph.Node) ([]float32, error) {
	tb.Helper()
	out, err := model.CallOnce(Backend(tb), m.Store, func(_ *model.Scope, g *graph.Graph) *graph.Node { return fn(g) })
	if err != nil {
		return nil, err
	}
	defer execute.Finalize(out)
	return tensors.MustCopyFlatData[float32](out), nil
}

// Backend is the default backend (backend.Default), failing the test when
// it cannot be opened.
func Backend(tb testing.TB) compute.Backend {
	tb.Helper()
	be, err := backend.Default()
	if err != nil {
		tb.Fatal(err)
	}
	return be
}
