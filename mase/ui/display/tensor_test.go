package display

import (
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
)

func TestTensorText(t *testing.T) {
	for _, c := range []struct {
		t    *tensors.Tensor
		want string
	}{
		{tensors.FromFlatDataAndDimensions([]float32{1, 2.5, 3, 4}, 2, 2), "[2][2]float32{\n  {1, 2.5},\n  {3, 4}\n}"},
		{tensors.FromFlatDataAndDimensions([]int32{1, 2, 3, 4, 5, 6, 7, 8}, 8), "[8]int32{1, 2, 3, …, 6, 7, 8}"},
		{tensors.FromFlatDataAndDimensions([]float32{1, 2, 3, 4, 5, 6, 7, 8}, 2, 2, 2),
			"[2][2][2]float32{\n  {\n    {1, 2},\n    {3, 4}\n  },\n  {\n    {5, 6},\n    {7, 8}\n  }\n}"},
		{tensors.FromScalar(float32(0.5)), "0.5"},
		{nil, "<nil>"},
	} {
		if got := TensorText(c.t); got != c.want {
			t.Errorf("TensorText:\n%s\nwant:\n%s", got, c.want)
		}
	}
}
