package models_test

import (
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/checkpoint"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/models"
)

// A ResNet checkpoint keeps the BatchNorm running statistics (buffers its
// modules declare) and the config, and gives the same outputs back.
func TestResNetCheckpointRoundTrip(t *testing.T) {
	m, err := models.NewResNet(models.ResNetConfig{Layers: [4]int{1, 1, 1, 1}, NumClasses: 10}, 3)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := m.Buffer("layer3.0.bn1.running_var")
	vals := make([]float32, 256)
	for i := range vals {
		vals[i] = 1 + float32(i%9)/3
	}
	if err := v.SetValue(tensors.FromFlatDataAndDimensions(vals, 256)); err != nil {
		t.Fatal(err)
	}
	mg, err := mase.NewMaseGraph(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	x := map[string]*tensors.Tensor{"x": models.RandomImages(2, 1, 32, 32)}
	want, err := execute.Run(mg, x)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(t.TempDir(), "resnet")
	if err := checkpoint.Export(base, mg, checkpoint.Spec{Seed: 3}); err != nil {
		t.Fatal(err)
	}
	back, err := checkpoint.Import(base)
	if err != nil {
		t.Fatal(err)
	}
	bv, ok := back.Model.Buffer("layer3.0.bn1.running_var")
	if !ok {
		t.Fatal("imported model lacks the running_var buffer")
	}
	if got := tensors.MustCopyFlatData[float32](bv.MustValue()); got[4] != vals[4] {
		t.Errorf("running_var[4] = %v after the round trip, want %v", got[4], vals[4])
	}
	got, err := execute.Run(back, x)
	if err != nil {
		t.Fatal(err)
	}
	a, b := tensors.MustCopyFlatData[float32](want[0]), tensors.MustCopyFlatData[float32](got[0])
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("logit %d = %v after the round trip, want %v", i, b[i], a[i])
		}
	}
}
