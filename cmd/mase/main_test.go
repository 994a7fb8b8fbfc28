package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestUnknownCommand(t *testing.T) {
	code, _, stderr := runCLI("frob")
	if code == 0 || !strings.Contains(stderr, `unknown command "frob"`) || !strings.Contains(stderr, "graph") {
		t.Errorf("code %d stderr %q", code, stderr)
	}
}

type node struct {
	Name, Op, Target, MaseType, MaseOp string
	Users                              []string
	Args                               map[string]struct {
		Type      string
		Precision []int
		Shape     []int
	}
}

func graphJSON(t *testing.T, args ...string) []node {
	t.Helper()
	code, out, stderr := runCLI(append([]string{"graph", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var nodes []struct {
		node
		MaseType string `json:"mase_type"`
		MaseOp   string `json:"mase_op"`
	}
	if err := json.Unmarshal([]byte(out), &nodes); err != nil {
		t.Fatalf("bad JSON: %v\n%.300s", err, out)
	}
	res := make([]node, len(nodes))
	for i, n := range nodes {
		res[i] = n.node
		res[i].MaseType, res[i].MaseOp = n.MaseType, n.MaseOp
	}
	return res
}

func count(nodes []node, pred func(node) bool) int {
	c := 0
	for _, n := range nodes {
		if pred(n) {
			c++
		}
	}
	return c
}

func has(nodes []node, name string) bool {
	return count(nodes, func(n node) bool { return n.Name == name }) > 0
}

func TestGraphBertJSON(t *testing.T) {
	nodes := graphJSON(t, "--model", "bert-tiny")
	dropouts := count(nodes, func(n node) bool { return n.Op == "call_module" && n.MaseOp == "dropout" })
	linears := count(nodes, func(n node) bool { return n.MaseOp == "linear" })
	if dropouts != 6 || linears != 14 {
		t.Errorf("dropout %d, linear %d; want 6 and 14", dropouts, linears)
	}
	for _, n := range nodes {
		if n.Name == "bert_encoder_layer_0_intermediate_dense" {
			if s := n.Args["bias"].Shape; len(s) != 2 || s[0] != 1 || s[1] != 512 {
				t.Errorf("bias shape %v", s)
			}
		}
		if n.Name == "bert_embeddings_dropout" && len(n.Users) != 5 {
			t.Errorf("users of the embeddings dropout: %v", n.Users)
		}
	}
	if has(nodes, "labels") || has(nodes, "attention_mask") || has(nodes, "crossentropyloss_0") {
		t.Error("input_ids-only graph has mask/labels/loss nodes")
	}

	removed := graphJSON(t, "--model", "bert-tiny", "--pass", "remove_dropout")
	if c := count(removed, func(n node) bool { return n.MaseOp == "dropout" }); c != 0 {
		t.Errorf("%d dropouts after remove_dropout", c)
	}
	// Compiled mode's rewrites are passes of the same registry.
	if code, out, stderr := runCLI("graph", "--model", "bert-tiny", "--pass", "dead_code", "--pass", "sdpa_kernel_transform_pass"); code != 0 ||
		!strings.Contains(out, `sdpa_kernel_transform_pass: {"changed":2}`) || !strings.Contains(out, `dead_code: {"changed":`) {
		t.Errorf("--pass dead_code --pass sdpa_kernel_transform_pass: exit %d, %s%s", code, out, stderr)
	}
	if code, _, stderr := runCLI("graph", "--model", "bert-tiny", "--pass", "quantize"); code == 0 || !strings.Contains(stderr, "pass quantize: no arguments") {
		t.Errorf("--pass quantize without arguments: exit %d, %s", code, stderr)
	}

	full := graphJSON(t, "--model", "bert-tiny", "--inputs", "input_ids,attention_mask,labels")
	for _, name := range []string{"labels", "attention_mask", "crossentropyloss_0"} {
		if !has(full, name) {
			t.Errorf("full graph lacks %s", name)
		}
	}
	if c := count(full, func(n node) bool { return n.MaseOp == "crossentropyloss" }); c != 1 {
		t.Errorf("%d crossentropyloss nodes", c)
	}
}

func TestGraphMLPAndDraw(t *testing.T) {
	nodes := graphJSON(t, "--model", "mlp")
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name+"/"+n.MaseOp)
	}
	if got := strings.Join(names, " "); got != "x/placeholder flatten/flatten fc1/linear relu/relu output/output" {
		t.Errorf("mlp nodes: %s", got)
	}
	svg := filepath.Join(t.TempDir(), "g.svg")
	code, out, stderr := runCLI("graph", "--model", "bert-tiny", "--pass", "count_dropout", "--draw", svg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, `"dropout_count":6`) {
		t.Errorf("count_dropout info missing: %.300s", out)
	}
	b, err := os.ReadFile(svg)
	if err != nil || !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("bert_embeddings_dropout")) {
		t.Errorf("drawing: %v %.200s", err, b)
	}
}

func TestGraphBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"graph"}, "--model is required"},
		{[]string{"graph", "--model", "resnet"}, "unknown model \"resnet\" (allowed: bert-tiny, mlp, resnet18)"},
		{[]string{"graph", "--model", "bert-tiny", "--pass", "quantize_everything"}, "unknown pass \"quantize_everything\" (allowed:"},
		{[]string{"graph", "--model", "bert-tiny", "--inputs", "input_ids,pixels"}, "unknown input \"pixels\""},
		{[]string{"graph", "--model", "mlp", "--draw", "g.png"}, "allowed: .svg, .html, .dot"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d stderr %q, want one line containing %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestBenchCompileJSON(t *testing.T) {
	code, out, errOut := runCLI("bench", "compile", "--batch", "1", "--seq", "8", "--iters", "2,4", "--warmup", "1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var c struct {
		Modes []struct {
			Mode    string           `json:"mode"`
			LabMean map[string]int64 `json:"lab_mean_ns"`
		} `json:"modes"`
		Speedup float64  `json:"steady_speedup"`
		Notes   []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(c.Modes) != 2 || c.Modes[0].Mode != "compiled" || c.Modes[1].Mode != "eager" || len(c.Modes[1].LabMean) != 2 || c.Speedup <= 0 {
		t.Errorf("comparison %+v", c)
	}
	if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "sdpa_kernel 2, gelu_kernel 2") {
		t.Errorf("notes %q: want the rewrites applied to bert-tiny", c.Notes)
	}
	code, out, errOut = runCLI("bench", "compile", "--batch", "1", "--seq", "8", "--iters", "2", "--warmup", "1", "--rewrites", "none", "--eager-rewritten")
	if code != 0 || !strings.Contains(out, "compiled-mode rewrites: no rewrites") {
		t.Errorf("--rewrites none: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI("bench", "compile", "--rewrites", "fuse_all"); code == 0 || !strings.Contains(errOut, "gelu_kernel") {
		t.Errorf("--rewrites fuse_all: exit %d, stderr %q", code, errOut)
	}
	code, out, errOut = runCLI("bench", "compile", "--model", "resnet18", "--batch", "1", "--image", "32", "--iters", "2,3", "--warmup", "1")
	if code != 0 || !strings.Contains(out, "resnet18 forward, batch 1 × 3 × 32 × 32") || !strings.Contains(out, "lab n=3") {
		t.Errorf("resnet18: exit %d\n%s%s", code, out, errOut)
	}
	for _, bad := range [][]string{{"bench"}, {"bench", "compile", "--model", "resnet18", "--image", "8"}, {"bench", "compile", "--backend", "xla:/nonexistent/plugin.so"}, {"bench", "compile", "--model", "gpt2"}, {"bench", "compile", "--iters", "2", "--warmup", "2"}} {
		if code, _, _ := runCLI(bad...); code == 0 {
			t.Errorf("%v: exit 0", bad)
		}
	}
}

func TestBenchMXInt8JSON(t *testing.T) {
	code, out, errOut := runCLI("bench", "mxint8", "--values", "4096", "--reps", "3", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Throughput struct {
			Values    int     `json:"values"`
			KernelGBs float64 `json:"dequantize_gb_per_s"`
		} `json:"throughput"`
		Memory []struct {
			Name           string `json:"name"`
			WithEmbeddings struct {
				Before int `json:"bytes_before"`
				After  int `json:"bytes_after"`
			} `json:"with_embeddings"`
		} `json:"memory"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if r.Throughput.Values != 4096 || r.Throughput.KernelGBs <= 0 || len(r.Memory) != 1 || r.Memory[0].Name != "bert-tiny" {
		t.Errorf("report %+v\n%s", r, out)
	}
	if code, _, errOut := runCLI("bench", "mxint8", "--group-size", "24"); code == 0 || !strings.Contains(errOut, "24") {
		t.Errorf("bad group size: exit %d %s", code, errOut)
	}
}

func TestBenchSDPAJSON(t *testing.T) {
	for _, dt := range []string{"float32", "float16"} {
		code, out, errOut := runCLI("bench", "sdpa", "--shape", "2,2,16,8", "--dtype", dt, "--reps", "2", "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", dt, code, errOut)
		}
		var r struct {
			Speedup   float64 `json:"speedup"`
			MaxAbsErr float64 `json:"max_abs_error_vs_float64"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		if r.Speedup <= 0 || r.MaxAbsErr > 2e-3 {
			t.Errorf("%s: %+v", dt, r)
		}
	}
	for _, bad := range [][]string{{"bench", "sdpa", "--shape", "2,2,16"}, {"bench", "sdpa", "--dtype", "bfloat16"}} {
		if code, _, _ := runCLI(bad...); code == 0 {
			t.Errorf("%v: exit 0", bad)
		}
	}
}

func TestSIMDWarning(t *testing.T) {
	if w := simdWarning(true, "amd64"); w != "" {
		t.Errorf("a SIMD build warns: %q", w)
	}
	if w := simdWarning(false, "arm64"); w != "" {
		t.Errorf("arm64 (no SIMD kernels) warns: %q", w)
	}
	w := simdWarning(false, "amd64")
	for _, want := range []string{"GOEXPERIMENT=simd", "make build", "bin/mase"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
	for _, name := range []string{"train", "compress", "search", "bench"} {
		if !commands[name].heavy {
			t.Errorf("mase %s is not marked heavy: a binary without SIMD would not warn before it", name)
		}
	}
}

// TestCollectorSettingOnlyForForwardTimings: a higher GOGC speeds the
// timed forwards up but slows training down and doubles its memory
// (docs/BENCHMARKS.md), so only bench and profile set it.
func TestCollectorSettingOnlyForForwardTimings(t *testing.T) {
	for name, c := range commands {
		want := name == "bench" || name == "profile"
		if c.timesForwards != want {
			t.Errorf("mase %s: timesForwards %v, want %v", name, c.timesForwards, want)
		}
	}
}

func TestDownloadProgress(t *testing.T) {
	var b strings.Builder
	p := downloadProgress(&b)
	p("pytorch_model.bin", 0, 2e6)
	p("pytorch_model.bin", 1e6, 2e6) // within 250 ms of the last update: skipped
	p("pytorch_model.bin", 2e6, 2e6) // the last one is always shown
	if got := b.String(); got != "\rdownloading pytorch_model.bin: 0.0 of 2.0 MB\rdownloading pytorch_model.bin: 2.0 of 2.0 MB\n" {
		t.Errorf("progress %q", got)
	}
}
