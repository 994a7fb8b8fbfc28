package mase

import (
	"bytes"
	"strings"
	"testing"
)

func TestFromPretrainedFolder(t *testing.T) {
	t.Setenv("GOMASE_OFFLINE", "1")
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	var warn bytes.Buffer
	model, err := FromPretrained("pretrained/testdata/base", &warn)
	if err != nil {
		t.Fatal(err)
	}
	// A BertModel checkpoint has no classifier: transformers warns that it
	// was newly initialised.
	if !strings.Contains(warn.String(), "newly initialized") || !strings.Contains(warn.String(), "classifier.weight") {
		t.Errorf("warnings: %q", warn.String())
	}
	mg, err := NewMaseGraph(model, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(mg.Nodes()) < 10 {
		t.Errorf("traced %d nodes", len(mg.Nodes()))
	}
	if _, err := FromPretrained("./no-such-folder", nil); err == nil || !strings.Contains(err.Error(), "no-such-folder") {
		t.Errorf("missing folder: %v", err)
	}
}
