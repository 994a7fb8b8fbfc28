// Package mase is gomase's user-facing entry point: NewMaseGraph traces a
// model into a MaseGraph (ir.MaseGraph), the traced model that passes
// analyse and transform, package execute runs and package ui/draw draws —
// the Go counterpart of chop's MaseGraph.
//
//	model, _ := models.NewBertTiny(42)
//	mg, _ := mase.NewMaseGraph(model, nil)          // input_ids only, as MASE
//	mg, _, _ = passes.InitMetadata(mg)
//	draw.Graph(mg, "")                              // inline under GoNB
//	outs, _ := execute.Run(mg, inputs)
package mase

import (
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/trace"
)

// NewMaseGraph traces model with the given inputs (nil: the model's
// defaults; for HuggingFace models that is input_ids only, as in MASE).
func NewMaseGraph(model *nn.Model, inputNames []string) (*ir.MaseGraph, error) {
	return trace.NewMaseGraph(model, inputNames)
}
