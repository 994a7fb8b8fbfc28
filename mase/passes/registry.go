package passes

import (
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
)

// Names of passes, as MASE names them (the keys of a pipeline's pass_args).
const (
	InitMetadataPass      = "init_metadata_analysis_pass"
	AddCommonMetadataPass = "add_common_metadata_analysis_pass"
	QuantizeTransformPass = "quantize_transform_pass"
	PruneTransformPass    = "prune_transform_pass"
	// AddHardwareMetadataPass is AddHardwareMetadata.
	AddHardwareMetadataPass = "add_hardware_metadata_analysis_pass"
	CountDropoutPass        = "count_dropout_analysis_pass"
	RemoveDropoutPass       = "remove_dropout_transform_pass"
	DeadCodePass            = "dead_code_transform_pass"
	InsertLoRAPass          = "insert_lora_adapter_transform_pass"
	FuseLoRAPass            = "fuse_lora_weights_transform_pass"
	BakePruneMasksPass      = "bake_prune_masks_transform_pass"
	// AddCostMetadataPass is AddCostMetadata.
	AddCostMetadataPass = "add_cost_metadata_analysis_pass"
)

// All lists this package's passes as Pass values: the CLI's --pass, the
// pipelines and compiled mode's rewrites find them here (see Standard).
func All() []Pass {
	return []Pass{
		NoArgs(InitMetadataPass, "give every node empty MASE metadata", InitMetadata),
		WithArgs(AddCommonMetadataPass, "infer each node's operator, shapes and values on a dummy input", AddCommonMetadata, nil, dummyMetadataArgs),
		WithArgs(QuantizeTransformPass, "quantise the selected nodes' modules and functions", QuantizeTransform, ParseQuantizeArgs, nil),
		WithArgs(PruneTransformPass, "prune the Linear-like modules' weights and activations", PruneTransform, ParsePruneArgs, nil),
		WithArgs(AddHardwareMetadataPass, "record each node's hardware (RTL) parameters", AddHardwareMetadata, ParseHardwareArgs, defaultHardwareArgs),
		NoArgs(CountDropoutPass, "count the dropout nodes", CountDropout),
		NoArgs(RemoveDropoutPass, "bypass dropout (an identity at inference)", RemoveDropout),
		NoArgs(DeadCodePass, "erase nodes whose value nothing uses", EliminateDeadCode),
		WithArgs(InsertLoRAPass, "put a trainable LoRA adapter beside every Linear", InsertLoRA, nil, nil),
		NoArgs(FuseLoRAPass, "fold LoRA adapters back into plain Linears", FuseLoRA),
		NoArgs(BakePruneMasksPass, "write pruning masks into the weights", BakePruneMasks),
		WithArgs(AddCostMetadataPass, "record each node's FLOPs (FlopCounterMode's count; element-wise apart) and bytes, per module and in total", AddCostMetadata, ParseCostArgs,
			func(*ir.MaseGraph) (CostArgs, error) { return CostArgs{}, nil }),
	}
}

// Standard returns a registry of this package's passes (All). Compiled
// mode adds its kernel rewrites to it (compileopt.Registry).
func Standard() *Registry {
	r, err := NewRegistry(All()...)
	if err != nil {
		panic("passes: " + err.Error())
	}
	return r
}

// dummyMetadataArgs records values on the model's dummy input
// (models.DummyInput, MASE's HF dummy input with add_value), which the
// activation pruner needs.
func dummyMetadataArgs(mg *ir.MaseGraph) (CommonMetadataArgs, error) {
	dummy, err := models.DummyInput(mg.Model, mg.InputNames, 0)
	if err != nil {
		return CommonMetadataArgs{}, err
	}
	return CommonMetadataArgs{DummyIn: dummy, AddValue: true}, nil
}

// defaultHardwareArgs are the lab's (parallelism 4).
func defaultHardwareArgs(*ir.MaseGraph) (HardwareArgs, error) { return HardwareArgs{}, nil }
