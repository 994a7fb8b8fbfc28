// Package mixedprecision is Lab 3 of the ADLS labs (Tutorial 6,
// "mixed-precision search"): a search over which number format each Linear
// layer of a model uses, run as a study of package search.
//
// How Tutorial 6 maps onto this package:
//
//	search_space = {"linear_layer_choices": [nn.Linear, LinearInteger]}
//	                                  → Space (Task1Space, FormatSpace, AllFormatsSpace)
//	construct_model(trial)            → Space.Apply(trial, graph)
//	    trial.suggest_categorical(f"{name}_type", ...)   → "<module path>_type"
//	    (Task 1) f"{name}_width", f"{name}_frac_width"   → Space.Widths, Space.FracWidths
//	    LinearInteger(config={...8/4...})                → FormatConfig(format, width, frac)
//	objective(trial): train 1 epoch, evaluate
//	                                  → Objective.Run (compress.Session.FineTune, Evaluate)
//	calculate_avg_bits_mg_analysis_pass, accuracy − λ·avg_bits (the cost search)
//	                                  → Objective.Lambda, Objective.Bits
//	print(f"Quantized layers: {k}/{N}")
//	                                  → the trial attribute "quantized_layers"
//	trial.set_user_attr("model", model)
//	                                  → Objective.OnModel
//	optuna.create_study(direction="maximize", sampler=RandomSampler())
//	                                  → search.NewStudy(search.Config{Direction: search.Maximize, ...})
//
// Each trial starts from a fresh copy of the base checkpoint
// (compress.Session.Load, MASE's deepcopy(base_model)); Apply asks the trial
// for every Linear-like layer's type (a plain Linear, or an already
// quantized Linear: MASE's isinstance(layer, nn.Linear) matches its
// quantized subclasses too), in graph order, and replaces the chosen layers
// in one passes.QuantizeTransform call. Training after quantization is
// quantization-aware: every quantizer's gradient is the straight-through
// estimator.
//
// Deliberate differences from MASE:
//
//   - The bias is copied into the quantized layer with the weight. MASE's
//     Tutorial 6 constructor copies only weight.data, so its quantized
//     layers start from a freshly initialised bias (pitfall 3).
//   - Two bit accountings are reported. MASE's calculate_avg_bits sums each
//     format's precision list, so integer 8/4 counts 12 "bits" (pitfall 5);
//     gomase reports that figure as "mase_w_avg_bits" and, beside it, the
//     real storage cost per element (integer 8/4 is 8 bits, block formats
//     add their shared exponent per block). The objective's cost uses the
//     storage figure unless Objective.Bits is "mase".
//   - Every format works. MASE's add_common_metadata looks up
//     data_in_frac_width for every quantized module, a KeyError for
//     minifloat, log, block and binary layers, so its cost search only ever
//     ran on LinearInteger; here the metadata and the bit count come from the
//     layers' own configs. MASE's precision sum is still unavailable for
//     formats whose precision list holds None (a default exponent bias) or a
//     block-size list, exactly as Python's sum() fails on them: with
//     Objective.Bits "mase" such a space is rejected with an error.
//   - Choices are format names ("linear", "integer", ...), not classes, so a
//     study persists in a journal (Optuna warns that class objects are not
//     persistable choices); FormatConfig and quant.LinearTypeName give the
//     MASE config and class behind each name.
//   - LinearTernary and gomase's LinearMXInt8 are searchable too (MASE's
//     ternary quantizer fails on 2-D Linear weights; gomase's works).
package mixedprecision
