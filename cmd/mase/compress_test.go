package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCompressSparsitySweep(t *testing.T) {
	plotPath := filepath.Join(t.TempDir(), "sweep.svg")
	code, stdout, stderr := runCLI("compress", "sparsity", "--limit", "64", "--eval-limit", "32", "--max-len", "32",
		"--sparsities", "0.5", "--plot", plotPath, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 2 points and a summary, got %d lines:\n%s", len(lines), stdout)
	}
	var p struct {
		Sparsity  float64 `json:"sparsity"`
		Method    string  `json:"method"`
		FineTuned float64 `json:"fine_tuned_accuracy"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &p); err != nil || p.Sparsity != 0.5 || p.Method != "l1-norm" {
		t.Errorf("second point %q: %+v %v", lines[1], p, err)
	}
	svg, err := os.ReadFile(plotPath)
	if err != nil || !strings.Contains(string(svg), "<svg") {
		t.Errorf("plot: %v", err)
	}
}

func TestCompressBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"compress"}, "want a sweep, width or sparsity"},
		{[]string{"compress", "depth"}, "want a sweep, width or sparsity"},
		{[]string{"compress", "width", "--widths", "4,x"}, `--widths: "x" is not an integer`},
		{[]string{"compress", "sparsity", "--sparsities", "1.5"}, `--sparsities: "1.5" is not a number in [0, 1]`},
		{[]string{"compress", "sparsity", "--methods", "l1"}, `--methods: "l1" is not a pruning method (allowed: random, l1-norm)`},
		{[]string{"compress", "width", "--widths", "40", "--limit", "8", "--eval-limit", "8"}, "--widths: width 40 out of range (allowed: 2..32)"},
		{[]string{"compress", "width", "--checkpoint", "x", "--pretrained", "auto"}, "give one of them"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestCompressPretrainedVocabulary: a pretrained start whose vocabulary is
// not bert-base-uncased's (the small fixture has 40 tokens) is refused in
// one line, since the sweep's data are tokenised with bert-base-uncased.
func TestCompressPretrainedVocabulary(t *testing.T) {
	folder := filepath.Join("..", "..", "mase", "pretrained", "testdata", "base")
	code, _, stderr := runCLI("compress", "width", "--pretrained", folder, "--limit", "16", "--eval-limit", "16", "--max-len", "32",
		"--widths", "8", "--json")
	if code == 0 || !strings.Contains(stderr, "has a vocabulary of 40 tokens, but compress and search tokenise their data with bert-base-uncased's 30522") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
