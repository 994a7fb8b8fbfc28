package passes

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/nn"
)

// LoRAArgs configure InsertLoRA (MASE's insert_lora_adapter_transform_pass).
type LoRAArgs struct {
	// Rank r of the adapter (required, ≥ 1).
	Rank int `json:"rank"`
	// Alpha α: the adapter's output is scaled by α/r.
	Alpha float64 `json:"alpha"`
	// Dropout on the adapter's input during training.
	Dropout float64 `json:"dropout"`
	// Match, when set, is a regular expression a Linear's module path must
	// match to be adapted; empty adapts every Linear.
	Match string `json:"match,omitempty"`
	// Seed draws the A matrices.
	Seed uint64 `json:"seed"`
	// TrainOthers keeps the parameters outside the adapters (embeddings,
	// LayerNorms, ...) trainable. By default they are frozen, so only A and
	// B train, as in the LoRA paper and PEFT.
	TrainOthers bool `json:"train_others,omitempty"`
}

// InsertLoRA replaces every Linear called in the graph (or those whose
// path matches Match) by a LoRALinear holding the same weight and bias,
// frozen, with a trainable adapter: A random, B zero, so the graph's
// outputs are unchanged until training moves B. It returns
// {"replaced": [paths]} and logs each replacement as MASE does.
func InsertLoRA(mg *ir.MaseGraph, args LoRAArgs) (*ir.MaseGraph, Info, error) {
	var match *regexp.Regexp
	if args.Match != "" {
		var err error
		if match, err = regexp.Compile(args.Match); err != nil {
			return nil, nil, fmt.Errorf("insert_lora: match %q is not a valid regular expression: %w", args.Match, err)
		}
	}
	if err := limits.LoRARank.Check(args.Rank); err != nil {
		return nil, nil, fmt.Errorf("insert_lora: %w", err)
	}
	// target returns the Linear a node calls when it gets an adapter.
	target := func(n *ir.Node) (*nn.Linear, bool) {
		if n.Op != ir.CallModule {
			return nil, false
		}
		lin, ok := mustModule(mg, n).(*nn.Linear)
		return lin, ok && (match == nil || match.MatchString(n.Target))
	}
	// Every adapter's A and B (and their moments in training) must fit
	// before the first is made.
	var adapters int64
	var fits = true
	for _, n := range mg.Graph.Nodes() {
		if lin, ok := target(n); ok {
			p, ok1 := limits.Product(int64(args.Rank), int64(lin.InFeatures+lin.OutFeatures), 4*3)
			var ok2 bool
			adapters, ok2 = limits.Add(adapters, p)
			fits = fits && ok1 && ok2
		}
	}
	if err := limits.Work(fmt.Sprintf("insert_lora: rank %d adapters", args.Rank), adapters, fits); err != nil {
		return nil, nil, err
	}
	var replaced []string
	for i, n := range mg.Graph.Nodes() {
		lin, ok := target(n)
		if !ok {
			continue
		}
		lora, err := nn.NewLoRALinear(lin.InFeatures, lin.OutFeatures, lin.Bias, args.Rank, args.Alpha, args.Dropout)
		if err != nil {
			return nil, nil, fmt.Errorf("insert_lora at %s: %w", n.Target, err)
		}
		values, err := copyParams(mg.Model, n.Target, map[string]string{"weight": "linear.weight", "bias": "linear.bias"})
		if err != nil {
			return nil, nil, fmt.Errorf("insert_lora: %w", err)
		}
		if err := mg.Model.ReplaceModule(n.Target, lora, values, args.Seed+uint64(i)); err != nil {
			return nil, nil, fmt.Errorf("insert_lora: %w", err)
		}
		Logger.Info(fmt.Sprintf("Replaced node: %s, target: %s with LoRALinear module.", n.Name, n.Target))
		replaced = append(replaced, n.Target)
	}
	if len(replaced) == 0 {
		return nil, nil, fmt.Errorf("insert_lora: no Linear module matched (match %q)", args.Match)
	}
	if !args.TrainOthers {
		for _, p := range mg.Model.Parameters() {
			if !isAdapter(p.Name) {
				p.Variable.SetTrainable(false)
			}
		}
	}
	return mg, Info{"replaced": replaced}, nil
}

// FuseLoRA folds every LoRALinear back into a plain Linear with
// W' = W + (α/r)·B·A and the same bias (MASE's
// fuse_lora_weights_transform_pass, which also drops the bias; we keep it).
// Outputs are unchanged up to float rounding. It returns {"fused": [paths]}.
func FuseLoRA(mg *ir.MaseGraph) (*ir.MaseGraph, Info, error) {
	var fused []string
	for _, n := range mg.Graph.Nodes() {
		if n.Op != ir.CallModule {
			continue
		}
		lora, ok := mustModule(mg, n).(*nn.LoRALinear)
		if !ok {
			continue
		}
		w, _, err := mg.Model.ParamValues(nn.Join(n.Target, "linear.weight"))
		if err != nil {
			return nil, nil, fmt.Errorf("fuse_lora: %w", err)
		}
		a, _, err := mg.Model.ParamValues(nn.Join(n.Target, "lora_a.weight"))
		if err != nil {
			return nil, nil, fmt.Errorf("fuse_lora: %w", err)
		}
		b, _, err := mg.Model.ParamValues(nn.Join(n.Target, "lora_b.weight"))
		if err != nil {
			return nil, nil, fmt.Errorf("fuse_lora: %w", err)
		}
		in, out, r, scale := lora.InFeatures, lora.OutFeatures, lora.Rank, lora.Scale()
		for o := 0; o < out; o++ {
			for i := 0; i < in; i++ {
				acc := 0.0
				for k := 0; k < r; k++ {
					acc += float64(b[o*r+k]) * float64(a[k*in+i])
				}
				w[o*in+i] += float32(scale * acc)
			}
		}
		values := map[string]*tensors.Tensor{"weight": tensors.FromFlatDataAndDimensions(w, out, in)}
		if lora.Bias {
			bias, err := copyParams(mg.Model, n.Target, map[string]string{"linear.bias": "bias"})
			if err != nil {
				return nil, nil, fmt.Errorf("fuse_lora: %w", err)
			}
			values["bias"] = bias["bias"]
		}
		if err := mg.Model.ReplaceModule(n.Target, nn.NewLinear(in, out, lora.Bias), values, 0); err != nil {
			return nil, nil, fmt.Errorf("fuse_lora: %w", err)
		}
		Logger.Info("Fusing LoRALinear weights for " + n.Target + ".")
		fused = append(fused, n.Target)
	}
	return mg, Info{"fused": fused}, nil
}

// isAdapter reports whether a parameter name is a LoRA A or B matrix.
func isAdapter(name string) bool {
	return strings.HasSuffix(name, ".lora_a.weight") || strings.HasSuffix(name, ".lora_b.weight")
}

// mustModule returns the module a call_module node calls, or nil.
func mustModule(mg *ir.MaseGraph, n *ir.Node) nn.Module {
	m, _ := mg.Model.Module(n.Target)
	return m
}

// copyParams copies the module's parameters named in rename (old name →
// new name) into fresh tensors; absent parameters are skipped.
func copyParams(m *nn.Model, path string, rename map[string]string) (map[string]*tensors.Tensor, error) {
	out := map[string]*tensors.Tensor{}
	for from, to := range rename {
		name := nn.Join(path, from)
		if m.Store.GetVariable(nn.StorePath(name)) == nil {
			continue
		}
		vals, shape, err := m.ParamValues(name)
		if err != nil {
			return nil, err
		}
		out[to] = tensors.FromFlatDataAndDimensions(vals, shape...)
	}
	return out, nil
}

// TrainableRow is one line of the trainable-parameter report.
type TrainableRow struct {
	Module    string `json:"module"` // dotted path ("" = the whole model)
	Type      string `json:"type"`
	Trainable int    `json:"trainable"`
	Total     int    `json:"total"`
}

// ReportTrainableParameters counts, for every module, the trainable and
// total scalar parameters of its subtree (a parameter is trainable when
// its GoMLX variable is). The first row is the whole model; its counts are
// the real totals. (MASE's report_trainable_parameters_analysis_pass sums
// its rows instead, counting nested modules several times: it prints
// 14,480,258 for bert-tiny's 4,386,178 parameters.)
func ReportTrainableParameters(mg *ir.MaseGraph) ([]TrainableRow, Info) {
	params := mg.Model.Parameters()
	var rows []TrainableRow
	for _, nm := range mg.Model.Modules() {
		row := TrainableRow{Module: nm.Path, Type: nm.Module.TypeName()}
		for _, p := range params {
			if nm.Path == "" || strings.HasPrefix(p.Name, nm.Path+".") {
				size := p.Variable.Shape().Size()
				row.Total += size
				if p.Variable.Trainable {
					row.Trainable += size
				}
			}
		}
		rows = append(rows, row)
	}
	return rows, Info{"trainable": rows[0].Trainable, "total": rows[0].Total}
}
