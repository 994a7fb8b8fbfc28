// Package tokenizer is BERT's uncased WordPiece tokenizer (the tokenizer of
// bert-base-uncased and bert-tiny): text normalisation, basic tokenisation
// and greedy longest-match-first WordPiece, with [CLS]/[SEP] framing,
// truncation and batch padding as HuggingFace's tokenizers do it.
package tokenizer

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// Special tokens every BERT vocabulary must have.
const (
	PadToken = "[PAD]"
	UnkToken = "[UNK]"
	ClsToken = "[CLS]"
	SepToken = "[SEP]"
)

// Vocab maps WordPiece tokens to ids (id = line number − 1 in vocab.txt).
type Vocab struct {
	tokens []string
	ids    map[string]int32
}

// LoadVocab reads a vocab.txt file.
func LoadVocab(path string) (*Vocab, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("vocabulary: %w", err)
	}
	defer f.Close()
	v, err := ParseVocab(f)
	if err != nil {
		return nil, fmt.Errorf("vocabulary %s: %w", path, err)
	}
	return v, nil
}

// ParseVocab reads a vocabulary, one token per line. It rejects an empty
// vocabulary, duplicate tokens and a vocabulary without [PAD], [UNK],
// [CLS] and [SEP].
func ParseVocab(r io.Reader) (*Vocab, error) {
	v := &Vocab{ids: map[string]int32{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		tok := strings.TrimRight(sc.Text(), "\r")
		if tok == "" {
			return nil, fmt.Errorf("line %d is empty (every line must hold one token)", line)
		}
		if prev, dup := v.ids[tok]; dup {
			return nil, fmt.Errorf("token %q appears twice, on lines %d and %d", tok, prev+1, line)
		}
		v.ids[tok] = int32(len(v.tokens))
		v.tokens = append(v.tokens, tok)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(v.tokens) == 0 {
		return nil, fmt.Errorf("the vocabulary is empty")
	}
	var missing []string
	for _, s := range []string{PadToken, UnkToken, ClsToken, SepToken} {
		if _, ok := v.ids[s]; !ok {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the vocabulary lacks the special tokens %s (required: [PAD] [UNK] [CLS] [SEP])", strings.Join(missing, " "))
	}
	return v, nil
}

// Size returns the number of tokens.
func (v *Vocab) Size() int { return len(v.tokens) }

// ID returns a token's id and whether it is in the vocabulary.
func (v *Vocab) ID(tok string) (int32, bool) {
	id, ok := v.ids[tok]
	return id, ok
}

// Token returns the token of an id, or "" when out of range.
func (v *Vocab) Token(id int32) string {
	if id < 0 || int(id) >= len(v.tokens) {
		return ""
	}
	return v.tokens[id]
}
