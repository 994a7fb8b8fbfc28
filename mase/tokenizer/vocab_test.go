package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/datadir"
)

func TestParseVocab(t *testing.T) {
	v, err := ParseVocab(strings.NewReader("\uFEFF[PAD]\r\n[UNK]\r\n[CLS]\n[SEP]\nthe\n##s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v.Size() != 6 {
		t.Errorf("Size = %d, want 6", v.Size())
	}
	for tok, want := range map[string]int32{"[PAD]": 0, "[UNK]": 1, "the": 4, "##s": 5} {
		if id, ok := v.ID(tok); !ok || id != want {
			t.Errorf("ID(%q) = %d, %v; want %d", tok, id, ok, want)
		}
	}
	if _, ok := v.ID("missing"); ok {
		t.Error("ID of a missing token reports ok")
	}
	if tok, ok := v.Token(5); !ok || tok != "##s" {
		t.Errorf("Token(5) = %q, %v", tok, ok)
	}
	for _, id := range []int32{-1, 6} {
		if tok, ok := v.Token(id); ok || tok != "" {
			t.Errorf("Token(%d) = %q, %v; want out of range", id, tok, ok)
		}
	}
	// The last line needs no newline.
	if v, err := ParseVocab(strings.NewReader("[PAD]\n[UNK]\n[CLS]\n[SEP]")); err != nil || v.Size() != 4 {
		t.Errorf("no final newline: %v, %v", v, err)
	}
}

func TestMalformedVocab(t *testing.T) {
	for name, tc := range map[string]struct{ text, want string }{
		"empty file":          {"", "the vocabulary is empty"},
		"duplicate token":     {"[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\nof\nthe\n", `token "the" appears twice, on lines 5 and 7`},
		"missing [CLS] [SEP]": {"[PAD]\n[UNK]\nthe\n", "lacks the special token(s) [CLS] [SEP] (required: [PAD] [UNK] [CLS] [SEP])"},
		"missing [PAD]":       {"[UNK]\n[CLS]\n[SEP]\n", "lacks the special token(s) [PAD] ("},
		"blank line":          {"[PAD]\n\n[UNK]\n", "line 2 is empty"},
		"invalid UTF-8":       {"[PAD]\n[UNK]\nab\xff\n", "line 3 is not valid UTF-8"},
		"line too long":       {"[PAD]\n" + strings.Repeat("x", maxVocabLine+1) + "\n", "line 2 is longer than"},
	} {
		_, err := ParseVocab(strings.NewReader(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, tc.want)
		}
	}
}

func TestLoadVocabErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.txt")
	if _, err := LoadVocab(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "vocab.txt")
	if err := os.WriteFile(bad, []byte("[PAD]\n[PAD]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadVocab(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "appears twice") {
		t.Errorf("malformed file: %v", err)
	}
}

func TestNewRejectsAnEmptyVocab(t *testing.T) {
	for _, v := range []*Vocab{nil, {}} {
		if _, err := New(v); err == nil || !strings.Contains(err.Error(), "LoadVocab or ParseVocab") {
			t.Errorf("New(%v): %v", v, err)
		}
	}
}

// The vocabulary inside tokenizer.json (HuggingFace's serialisation of the
// same tokenizer) equals vocab.txt, token for token and id for id.
func TestVocabMatchesTokenizerJSON(t *testing.T) {
	tok := bert(t)
	p, err := datadir.Find("bert-base-uncased/tokenizer.json")
	if err != nil {
		t.Fatalf("the shared data must be beside the checkout (CI always has it): %v", err)
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var tj struct {
		Model struct {
			UnkToken                string           `json:"unk_token"`
			ContinuingSubwordPrefix string           `json:"continuing_subword_prefix"`
			MaxInputCharsPerWord    int              `json:"max_input_chars_per_word"`
			Vocab                   map[string]int32 `json:"vocab"`
		} `json:"model"`
		Normalizer struct {
			Type               string `json:"type"`
			CleanText          bool   `json:"clean_text"`
			HandleChineseChars bool   `json:"handle_chinese_chars"`
			StripAccents       *bool  `json:"strip_accents"`
			Lowercase          bool   `json:"lowercase"`
		} `json:"normalizer"`
		PreTokenizer struct {
			Type string `json:"type"`
		} `json:"pre_tokenizer"`
	}
	if err := json.Unmarshal(raw, &tj); err != nil {
		t.Fatal(err)
	}
	m, n := tj.Model, tj.Normalizer
	if m.UnkToken != UnkToken || m.ContinuingSubwordPrefix != ContinuationPrefix || m.MaxInputCharsPerWord != MaxInputCharsPerWord {
		t.Errorf("tokenizer.json's model is not the one implemented here: unk %q prefix %q max %d", m.UnkToken, m.ContinuingSubwordPrefix, m.MaxInputCharsPerWord)
	}
	if n.Type != "BertNormalizer" || !n.CleanText || !n.HandleChineseChars || n.StripAccents != nil || !n.Lowercase || tj.PreTokenizer.Type != "BertPreTokenizer" {
		t.Errorf("tokenizer.json's normalizer or pre-tokenizer is not the one implemented here: %+v %+v", n, tj.PreTokenizer)
	}
	if len(m.Vocab) != tok.Vocab().Size() || len(m.Vocab) != 30522 {
		t.Fatalf("tokenizer.json has %d tokens, vocab.txt %d, want 30522", len(m.Vocab), tok.Vocab().Size())
	}
	for s, id := range m.Vocab {
		if got, ok := tok.Vocab().ID(s); !ok || got != id {
			t.Fatalf("token %q: tokenizer.json id %d, vocab.txt id %d (present: %v)", s, id, got, ok)
		}
	}
	for tok, want := range map[string]int32{PadToken: 0, UnkToken: 100, ClsToken: 101, SepToken: 102, MaskToken: 103, "!": 999, "the": 1996} {
		if m.Vocab[tok] != want {
			t.Errorf("%s has id %d, want %d", tok, m.Vocab[tok], want)
		}
	}
}
