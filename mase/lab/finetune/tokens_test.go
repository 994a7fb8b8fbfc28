package finetune

import (
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/data"
	"github.com/gomase/gomase/mase/models"
)

// ids encodes a text as the given ids, whatever it says.
type ids []int32

func (e ids) Encode(string) []int32 { return e }

// TestCheckTokens: a max length past bert-tiny's 512 positions and an id
// past its 30,522-token vocabulary are refused by name; what fits passes.
func TestCheckTokens(t *testing.T) {
	m, err := models.NewBertTiny(1)
	if err != nil {
		t.Fatal(err)
	}
	ok := data.Pretokenize([]data.Example{{Text: "a"}}, ids{101, 30521, 102})
	past := data.Pretokenize([]data.Example{{Text: "a"}}, ids{101, 30522, 102})
	if err := CheckTokens(m, 512, ok); err != nil {
		t.Errorf("ids in range refused: %v", err)
	}
	if err := CheckTokens(m, 0, ok); err != nil {
		t.Errorf("the default max length refused: %v", err)
	}
	for _, c := range []struct {
		maxLen int
		set    *data.Pretokenized
		want   string
	}{
		{513, ok, "max length 513 is longer than the model's 512 position embeddings"},
		{100000, ok, "allowed: a max length of 2 to 512"},
		{128, past, "token id 30522 is past the model's vocabulary of 30522 tokens"},
	} {
		if err := CheckTokens(m, c.maxLen, c.set); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckTokens(%d) = %v, want %q", c.maxLen, err, c.want)
		}
	}
	mlp, err := models.NewMLP(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckTokens(mlp, 100000, past); err != nil {
		t.Errorf("a model without embeddings: %v", err)
	}
}
