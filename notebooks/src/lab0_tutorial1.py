from nbgen import code, md, write

md("""
# Lab 0 · Tutorial 1 — MaseGraph, metadata passes, dropout analysis and transform

This is MASE's Tutorial 1 (`tutorial_1_introduction_to_mase`) in Go. It runs on the **gomase** kernel ("Go (gomase)"):
every cell is Go, compiled by GoNB against this repository's packages, executed on GoMLX's pure-Go backend.

| MASE (Python) | gomase (Go) |
|---|---|
| `AutoModelForSequenceClassification.from_pretrained("prajjwal1/bert-tiny")` | `models.NewBertTiny(seed)` |
| `MaseGraph(model)` | `mase.NewMaseGraph(model, nil)` |
| `mg.draw("graph.svg")` | `draw.Graph(mg, "")` (inline) or `draw.Graph(mg, "graph.svg")` |
| `passes.init_metadata_analysis_pass(mg)` | `passes.InitMetadata(mg)` |
| `passes.add_common_metadata_analysis_pass(mg, {"dummy_in": ...})` | `passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{DummyIn: ...})` |
| `node.replace_all_uses_with(parent)` / `mg.fx_graph.erase_node(node)` | `node.ReplaceAllUsesWith(parent)` / `mg.Graph.EraseNode(node)` |

**GoNB cells**: each cell is compiled and run as its own program. Functions, types and imports declared in one cell are
available in later cells, but variables are not. So the cell below declares a helper, `tracedBert`, and every later cell
starts from it. The model is built from a fixed seed, so every cell sees exactly the same weights.
""")

code("""
import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/checkpoint"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/tokenizer"
	"github.com/gomase/gomase/mase/ui/draw"
)

// seed fixes the random initialisation: every cell rebuilds the same model.
const seed = 42

// must stops the cell with the error, if any.
func must(err error) {
	if err != nil {
		panic(err)
	}
}

// tracedBert builds bert-tiny and traces it with input_ids only (MASE's default).
func tracedBert() *mase.MaseGraph {
	model, err := models.NewBertTiny(seed)
	must(err)
	mg, err := mase.NewMaseGraph(model, nil)
	must(err)
	return mg
}

// dummyInput tokenises the tutorial's two sentences, as MASE's get_hf_dummy_in.
func dummyInput() map[string]*tensors.Tensor {
	tok, err := tokenizer.BertBaseUncased()
	must(err)
	in, err := models.HFDummyInput(tok, []string{"input_ids"})
	must(err)
	return in
}

// withMetadata runs the two metadata passes on the dummy input.
func withMetadata(mg *mase.MaseGraph) *mase.MaseGraph {
	mg, _, err := passes.InitMetadata(mg)
	must(err)
	mg, _, err = passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{DummyIn: dummyInput()})
	must(err)
	return mg
}
""")

md("""
## 1. The model

MASE loads `prajjwal1/bert-tiny` from the HuggingFace hub. Our machines cannot download weights, so gomase builds the same
architecture (2 layers, hidden size 128, 2 heads, intermediate 512, a 2-label classifier) with HuggingFace's random
initialisation. The module tree and every parameter name are HuggingFace's, so a real checkpoint maps onto it one to one.
Printing the model prints the same tree as `print(model)` in PyTorch.
""")

code("""
%%
model, err := models.NewBertTiny(seed)
must(err)
fmt.Println(model)
fmt.Printf("parameters: %d (bert: %d, classifier: %d)\\n", model.NumParameters(""), model.NumParameters("bert"), model.NumParameters("classifier"))
""")

md("""
## 2. Tracing into a MaseGraph and drawing it

`mase.NewMaseGraph(model, nil)` records the forward pass node by node, like `torch.fx` symbolic tracing with HuggingFace's
tracer: leaf modules (Linear, LayerNorm, Dropout, ...) become `call_module` nodes named after their path
(`bert.embeddings.dropout` → `bert_embeddings_dropout`), functions become `call_function` nodes (`add`, `add_1`, ...), and
tensor methods become `call_method` nodes (`view`, `permute`, `size`). With only `input_ids` traced (MASE's default), the
attention mask is built from a `ones` node of the input's size.

`draw.Graph(mg, "")` shows the graph inline (blue: modules, yellow: functions, purple: methods, green: inputs).
""")

code("""
%%
mg := tracedBert()
fmt.Println(mg.Summary())
must(draw.Graph(mg, ""))
""")

md("""
The same operation can appear three ways in a traced graph — `torch.relu(t)` (call_function), `t.relu()` (call_method),
`nn.ReLU()(t)` (call_module) — and a pass must recognise all three. The cell below builds a small graph by hand that
applies ReLU all three ways to the same tensor: the three results are equal, and operator inference gives each node the
same `mase_op`.
""")

code("""
%%
// A model with one ReLU module, and a graph that applies ReLU three ways.
root := &nn.Container{Type: "ReLUDemo", Kids: []nn.Named{{Name: "act", Module: nn.NewReLU()}}}
model, err := nn.NewModel(root, seed)
must(err)
g := ir.New()
t := g.MustAddNode(ir.Placeholder, "t", "t", nil, nil)
asFunction := g.MustAddNode(ir.CallFunction, "", "relu", []any{t}, nil) // torch.relu(t)
asMethod := g.MustAddNode(ir.CallMethod, "", "relu", []any{t}, nil)     // t.relu()
asModule := g.MustAddNode(ir.CallModule, "", "act", []any{t}, nil)      // nn.ReLU()(t)
g.MustAddNode(ir.Output, "output", "output", []any{[]any{asFunction, asMethod, asModule}}, nil)
mg := &mase.MaseGraph{Graph: g, Model: model, InputNames: []string{"t"}}

in := map[string]*tensors.Tensor{"t": tensors.FromValue([]float32{-2, -0.5, 0, 1.5})}
out, err := execute.Run(mg, in)
must(err)
mg, _, err = passes.InitMetadata(mg)
must(err)
mg, _, err = passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{DummyIn: in})
must(err)
for i, n := range []*ir.Node{asFunction, asMethod, asModule} {
	fmt.Printf("%-13s %-6s mase_op=%s  →  %v\\n", n.Op, n.Name, n.Meta.Common.MaseOp, out[i])
}
""")

md("""
The listing of bert-tiny's graph shows each node's kind, target and arguments (the first 24 nodes):
""")

code("""
%%
mg := tracedBert()
for _, n := range mg.Nodes()[:24] {
	fmt.Println(n)
}
fmt.Println("...")
""")

md("""
## 3. Metadata passes on a dummy input

The dummy input is the tutorial's two sentences, tokenised with the bert-base-uncased WordPiece vocabulary
(`AutoTokenizer.from_pretrained("bert-base-uncased")` in MASE). `InitMetadata` attaches empty `common`/`hardware`/`software`
sections to every node; `AddCommonMetadata` infers each node's operator (`mase_type`, `mase_op`) and runs the graph on the
dummy input to record the type, precision and shape of every argument and result. Parameters of modules are listed after
the data inputs; 1-D parameters such as a bias of 512 are reported as `[1, 512]`, as MASE does.
""")

code("""
%%
in := dummyInput()
fmt.Println("input_ids:", in["input_ids"])
mg := withMetadata(tracedBert())
n := mg.Graph.Node("bert_encoder_layer_0_intermediate_dense")
b, err := json.MarshalIndent(n.Meta.Common, "", "  ")
must(err)
fmt.Println(n.Name)
fmt.Println(string(b))
""")

md("""
With metadata, the drawing shows each node's `mase_op` and the shapes flowing through it:
""")

code("""
%%
must(draw.Graph(withMetadata(tracedBert()), ""))
""")

md("""
## 4. An analysis pass: counting dropout

Tutorial 1 writes `count_dropout_analysis_pass`: walk the nodes, log every `call_module` whose target contains `dropout`.
bert-tiny under SDPA attention calls **6** dropout modules (the attention-probability dropout is an argument of
`scaled_dot_product_attention`, not a module call).
""")

code("""
%%
// The pass logs one "Found dropout module" line per dropout (MASE's logger.info).
_, info, err := passes.CountDropout(tracedBert())
must(err)
fmt.Println("Dropout count is:", info["dropout_count"])
""")

md("""
## 5. Task: erase a node without rewiring it

Deleting the `replace_all_uses_with` line of the transform pass makes `erase_node` fail: the first dropout still feeds the
query, key and value projections of layer 0, the residual `add` and a `size` query. gomase refuses the same way and names
every user:
""")

code("""
%%
mg := tracedBert()
err := mg.Graph.EraseNode(mg.Graph.Node("bert_embeddings_dropout"))
fmt.Println("error:", err)
""")

md("""
## 6. A transform pass: removing dropout

`RemoveDropout` rewires every user of each dropout to the dropout's input, then erases it (MASE's
`remove_dropout_transform_pass`). The count drops to 0, `Lint` finds the graph consistent, and since dropout is the identity
in eval mode, the logits on the dummy input are unchanged.
""")

code("""
%%
mg := tracedBert()
before, err := execute.Run(mg, dummyInput())
must(err)
mg, info, err := passes.RemoveDropout(mg)
must(err)
fmt.Println("removed:", info["removed"])
_, info, err = passes.CountDropout(mg)
must(err)
fmt.Println("dropout count after the transform:", info["dropout_count"])
must(mg.Graph.Lint())
after, err := execute.Run(mg, dummyInput())
must(err)
fmt.Println("logits before:", before[0])
fmt.Println("logits after: ", after[0])
fmt.Println("unchanged:", fmt.Sprint(before[0]) == fmt.Sprint(after[0]))
must(draw.Graph(mg, ""))
""")

md("""
## 7. Export and reload

MASE ends the tutorial with `mg.export("~/tutorial_1")` and `MaseGraph.from_checkpoint(...)`. gomase writes the parameters as
safetensors (HuggingFace tensor names) and the graph with its metadata as JSON, atomically; `checkpoint.Import` rebuilds the
model, the graph and the metadata, and the reloaded graph gives the same logits bit for bit.
""")

code("""
%%
mg := withMetadata(tracedBert())
mg, _, err := passes.RemoveDropout(mg)
must(err)
dir := filepath.Join(os.TempDir(), "gomase-labs")
must(os.MkdirAll(dir, 0o755))
path := filepath.Join(dir, "tutorial_1")
must(checkpoint.Export(path, mg, checkpoint.Spec{Model: "bert-tiny", Seed: seed}))
back, err := checkpoint.Import(path)
must(err)
a, err := execute.Run(mg, dummyInput())
must(err)
b, err := execute.Run(back, dummyInput())
must(err)
fmt.Println("exported to", path+".safetensors", "and", path+".json")
fmt.Println("reloaded:", back.Summary())
fmt.Println("same logits:", fmt.Sprint(a[0]) == fmt.Sprint(b[0]))
fmt.Println("metadata kept:", back.Graph.Node("bert_encoder_layer_0_intermediate_dense").Meta.Common.MaseOp)
""")

write()
