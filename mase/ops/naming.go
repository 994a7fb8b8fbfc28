package ops

import (
	"fmt"
	"strings"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
)

// Operator families written into common.mase_type.
const (
	TypeModule            = "module"
	TypeModuleRelatedFunc = "module_related_func"
	TypeBuiltinFunc       = "builtin_func"
	TypeImplicitFunc      = "implicit_func"
	TypePlaceholder       = "placeholder"
	TypeGetAttr           = "get_attr"
	TypeOutput            = "output"
)

// moduleOps maps a module class (the table's call_module entries) to (mase_type, mase_op), as MASE's
// operator inference does for call_module nodes.
var moduleOps = map[string][2]string{
	"Linear":         {TypeModuleRelatedFunc, "linear"},
	"ReLU":           {TypeModuleRelatedFunc, "relu"},
	"Tanh":           {TypeModuleRelatedFunc, "tanh"},
	"GELU":           {TypeModuleRelatedFunc, "gelu"},
	"GELUActivation": {TypeModuleRelatedFunc, "gelu"},
	"Sigmoid":        {TypeModuleRelatedFunc, "sigmoid"},
	"Softmax":        {TypeModuleRelatedFunc, "softmax"},
	"SiLU":           {TypeModuleRelatedFunc, "silu"},
	"ELU":            {TypeModuleRelatedFunc, "elu"},
	"SELU":           {TypeModuleRelatedFunc, "selu"},
	"ReLU6":          {TypeModuleRelatedFunc, "relu6"},
	// LeakyReLU is not in MASE's table (its add_common_metadata rejects
	// nn.LeakyReLU); gomase names it as the Lab 4 extension task needs.
	"LeakyReLU":        {TypeModuleRelatedFunc, "leaky_relu"},
	"Hardtanh":         {TypeModuleRelatedFunc, "hardtanh"},
	"Hardswish":        {TypeModuleRelatedFunc, "hardswish"},
	"Hardsigmoid":      {TypeModuleRelatedFunc, "hardsigmoid"},
	"Softplus":         {TypeModuleRelatedFunc, "softplus"},
	"Softsign":         {TypeModuleRelatedFunc, "softsign"},
	"LayerNorm":        {TypeModuleRelatedFunc, "layer_norm"},
	"GroupNorm":        {TypeModuleRelatedFunc, "group_norm"},
	"InstanceNorm2d":   {TypeModuleRelatedFunc, "instance_norm2d"},
	"BatchNorm1d":      {TypeModule, "batch_norm1d"},
	"BatchNorm2d":      {TypeModule, "batch_norm2d"},
	"Conv1d":           {TypeModuleRelatedFunc, "conv1d"},
	"Conv2d":           {TypeModuleRelatedFunc, "conv2d"},
	"Embedding":        {TypeImplicitFunc, "embedding"},
	"Dropout":          {TypeModuleRelatedFunc, "dropout"},
	"CrossEntropyLoss": {TypeModuleRelatedFunc, "crossentropyloss"},
	"Flatten":          {TypeModuleRelatedFunc, "flatten"},
	"Identity":         {TypeModuleRelatedFunc, "identity"},

	// Pooling, named as MASE's add_common_metadata names it.
	"AdaptiveAvgPool1d": {TypeModuleRelatedFunc, "adaptive_avg_pool1d"},
	"AdaptiveAvgPool2d": {TypeModuleRelatedFunc, "adaptive_avg_pool2d"},
	"AdaptiveMaxPool1d": {TypeModuleRelatedFunc, "adaptive_max_pool1d"},
	"AdaptiveMaxPool2d": {TypeModuleRelatedFunc, "adaptive_max_pool2d"},
	"AvgPool1d":         {TypeModuleRelatedFunc, "avg_pool1d"},
	"AvgPool2d":         {TypeModuleRelatedFunc, "avg_pool2d"},
	"MaxPool1d":         {TypeModuleRelatedFunc, "max_pool1d"},
	"MaxPool2d":         {TypeModuleRelatedFunc, "max_pool2d"},
}

// OpTyper lets a module class that is not in the built-in table (a
// quantised or user-defined layer) declare its operator.
type OpTyper interface {
	MaseOp() (maseType, maseOp string)
}

// The three function lists of MASE, matched by longest substring.
// leaky_relu is gomase's addition (MASE rejects F.leaky_relu); without it
// the longest match would be "relu".
var (
	implicitFuncs = strings.Fields(`size view to bool int flatten squeeze unsqueeze transpose permute reshape
		contiguous dropout eq ne gemm ge where _assert getattr long type_as clamp abs stack cast shape gather
		slice cat split tile expand full ones dim finfo masked_fill masked_fill_ index_select detach tensor
		cumsum flip repeat`)
	moduleRelatedFuncs = strings.Fields(`adaptive_avg_pool1d adaptive_avg_pool2d adaptive_max_pool1d
		adaptive_max_pool2d avg_pool1d avg_pool2d batch_norm conv1d conv2d layer_norm linear max_pool1d
		max_pool2d relu leaky_relu identity hardshrink silu elu sigmoid softshrink logsigmoid softmax selu tanh gelu
		softplus softsign`)
	builtinFuncs = strings.Fields(`mul baddbmm addmm sub add matmul bmm mean pow sqrt div softmax max cumsum
		erf sin cos tan sinh cosh tanh greater gt less le lt sigmoid not min neg log arange range gelu
		scaled_dot_product_attention embedding df_split getitem zeros setitem invert`)
)

// Infer returns (mase_type, mase_op) for a node, as MASE's operator
// inference names it, or an error for an operator MASE does not know. mod
// is the module a call_module node calls (nil otherwise).
func Infer(n *ir.Node, mod nn.Module) (string, string, error) {
	switch n.Op {
	case ir.Placeholder:
		return TypePlaceholder, "placeholder", nil
	case ir.GetAttr:
		return TypeGetAttr, "constant", nil
	case ir.Output:
		return TypeOutput, "output", nil
	case ir.CallMethod:
		return TypeImplicitFunc, n.Target, nil
	case ir.CallModule:
		if mod == nil {
			return "", "", fmt.Errorf("node %s calls module %q, which the model does not have", n.Name, n.Target)
		}
		if t, ok := mod.(OpTyper); ok {
			typ, op := t.MaseOp()
			return typ, op, nil
		}
		if e, ok := Lookup(ir.CallModule, mod.TypeName()); ok {
			return e.MaseType, e.MaseOp, nil
		}
		return "", "", fmt.Errorf("unknown module %s (class %s) at node %s: MASE's operator inference accepts %s",
			n.Target, mod.TypeName(), n.Name, strings.Join(Names(ir.CallModule, false), ", "))
	case ir.CallFunction:
		if e, ok := Lookup(ir.CallFunction, n.Target); ok && e.MaseType != "" {
			return e.MaseType, e.MaseOp, nil
		}
		best, typ := "", ""
		for _, l := range []struct {
			typ   string
			names []string
		}{{TypeBuiltinFunc, builtinFuncs}, {TypeModuleRelatedFunc, moduleRelatedFuncs}, {TypeImplicitFunc, implicitFuncs}} {
			for _, p := range l.names {
				if strings.Contains(n.Target, p) && len(p) > len(best) {
					best, typ = p, l.typ
				}
			}
		}
		if best == "" {
			return "", "", fmt.Errorf("unknown call_function node %s (target %q): no MASE operator name matches it", n.Name, n.Target)
		}
		return typ, best, nil
	}
	return "", "", fmt.Errorf("node %s has unknown kind %q", n.Name, n.Op)
}
