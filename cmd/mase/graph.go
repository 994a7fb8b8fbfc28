package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/compileopt"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/ui/draw"
)

func init() {
	register(command{
		name:  "graph",
		usage: "--model bert-tiny|mlp [--inputs input_ids,attention_mask,labels] [--pass NAME ...] [--draw FILE.svg|.html|.dot] [--json] [--seed N] [--data-dir DIR]",
		short: "trace a model into a MaseGraph, run passes, print or draw it",
		run:   runGraph,
	})
}

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// jsonArg is one entry of a node's args or results in --json output.
type jsonNode struct {
	Name     string     `json:"name"`
	Op       ir.OpKind  `json:"op"`
	Target   string     `json:"target"`
	MaseType string     `json:"mase_type"`
	MaseOp   string     `json:"mase_op"`
	Args     *ir.ArgMap `json:"args"`
	Results  *ir.ArgMap `json:"results"`
	Users    []string   `json:"users"`
}

func runGraph(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("graph", flag.ContinueOnError)
	fs.SetOutput(stderr)
	modelName := fs.String("model", "", "model to trace: "+strings.Join(models.Names(), ", "))
	inputs := fs.String("inputs", "", "comma-separated inputs to trace (default: the model's, input_ids for BERT)")
	var passNames stringList
	registry := compileopt.Registry()
	fs.Var(&passNames, "pass", "pass to run with its default arguments, repeatable: "+strings.Join(registry.ShortNames(), ", "))
	drawPath := fs.String("draw", "", "write the graph drawing to this file: .svg, .html (a page with the zoomable graph and its legend) or .dot")
	asJSON := fs.Bool("json", false, "print the nodes with their common metadata as JSON")
	seed := fs.Uint64("seed", 0, "seed of the model's random initialisation")
	dataDir := dataDirFlag(fs)
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	defer useDataDir(*dataDir)()
	if *modelName == "" {
		return fmt.Errorf("--model is required (allowed: %s)", strings.Join(models.Names(), ", "))
	}
	if err := checkOutputPath("--draw", *drawPath, ".svg", ".html", ".dot"); err != nil {
		return err
	}
	pipeline, err := registry.Pipeline(passNames...)
	if err != nil {
		return err
	}
	model, err := models.New(*modelName, *seed)
	if err != nil {
		return err
	}
	var inputNames []string
	if *inputs != "" {
		inputNames = strings.Split(*inputs, ",")
	}
	mg, err := mase.NewMaseGraph(model, inputNames)
	if err != nil {
		return err
	}
	for i, p := range pipeline.Passes {
		var info passes.Info
		if mg, info, err = p.Run(mg, nil); err != nil {
			return fmt.Errorf("pass %s: %w", passNames[i], err)
		}
		if len(info) > 0 && !*asJSON {
			b, _ := json.Marshal(info)
			fmt.Fprintf(stdout, "%s: %s\n", passNames[i], b)
		}
	}
	if *asJSON || *drawPath != "" {
		dummy, err := models.DummyInput(model, mg.InputNames, *seed)
		if err != nil {
			return err
		}
		if mg, _, err = passes.InitMetadata(mg); err != nil {
			return err
		}
		if mg, _, err = passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{DummyIn: dummy}); err != nil {
			return err
		}
	}
	if *drawPath != "" {
		if err := draw.Graph(mg, *drawPath); err != nil {
			return err
		}
	}
	if !*asJSON {
		fmt.Fprint(stdout, mg.Graph.String())
		fmt.Fprintln(stdout, mg.Summary())
		if *drawPath != "" {
			fmt.Fprintf(stdout, "drawing written to %s\n", *drawPath)
		}
		return nil
	}
	var out []jsonNode
	for _, n := range mg.Graph.Nodes() {
		jn := jsonNode{Name: n.Name, Op: n.Op, Target: n.Target, MaseType: n.Meta.Common.MaseType, MaseOp: n.Meta.Common.MaseOp,
			Args: n.Meta.Common.Args, Results: n.Meta.Common.Results, Users: []string{}}
		for _, u := range n.Users() {
			jn.Users = append(jn.Users, u.Name)
		}
		out = append(out, jn)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
