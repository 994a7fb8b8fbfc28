// Package tokenizer is BERT's uncased WordPiece tokenizer, the tokenizer of
// bert-base-uncased and of the BERT miniatures (bert-tiny) the labs use.
//
// It reproduces HuggingFace's tokenizers (the "fast" tokenizer that
// tokenizer.json describes) step by step:
//
//   - the special tokens [PAD] [UNK] [CLS] [SEP] [MASK] written in the text
//     are kept whole, as added tokens are;
//   - BertNormalizer: control characters, U+0000 and U+FFFD are dropped and
//     whitespace becomes a space (clean_text); CJK ideographs get spaces
//     around them (handle_chinese_chars); the text is decomposed (NFD) and
//     nonspacing marks are dropped (strip_accents, implied by lowercase);
//     letters are lower-cased;
//   - BertPreTokenizer: words are split on whitespace, and every
//     punctuation character (Unicode P* and the ASCII symbols) is a word of
//     its own;
//   - WordPiece: greedy longest-match-first with the "##" continuation
//     prefix; a word with no complete split, or longer than 100 characters,
//     is [UNK];
//   - the template [CLS] text [SEP], then truncation and padding as
//     transformers' tokenizer(texts, truncation=..., padding=...) does.
package tokenizer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/gomase/gomase/mase/limits"
)

// The special tokens of BERT vocabularies.
const (
	PadToken  = "[PAD]"
	UnkToken  = "[UNK]"
	ClsToken  = "[CLS]"
	SepToken  = "[SEP]"
	MaskToken = "[MASK]"
)

// requiredSpecials are the special tokens ParseVocab insists on.
var requiredSpecials = []string{PadToken, UnkToken, ClsToken, SepToken}

// ContinuationPrefix marks a WordPiece that continues a word.
const ContinuationPrefix = "##"

// maxVocabLine bounds one line of a vocabulary file.
const maxVocabLine = 1 << 16

// Vocab is a WordPiece vocabulary: token i (from 0) is line i+1 of
// vocab.txt. Build one with LoadVocab or ParseVocab.
type Vocab struct {
	tokens []string
	ids    map[string]int32
	// cont maps a continuation piece without its "##" to its id, so that
	// WordPiece looks pieces up without building "##"+piece strings.
	cont map[string]int32
}

// LoadVocab reads a vocab.txt file (see ParseVocab).
func LoadVocab(path string) (*Vocab, error) {
	f, _, err := limits.Open(path, limits.Tokenizer)
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

// ParseVocab reads a vocabulary, one token per line, LF or CRLF endings,
// in UTF-8 (a leading byte-order mark is skipped). It rejects an empty
// vocabulary, blank lines, invalid UTF-8, duplicate tokens and a
// vocabulary without [PAD], [UNK], [CLS] or [SEP]; errors name the line.
func ParseVocab(r io.Reader) (*Vocab, error) {
	v := &Vocab{ids: map[string]int32{}, cont: map[string]int32{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxVocabLine)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if line == 1 {
			b = bytes.TrimPrefix(b, []byte("\uFEFF"))
		}
		b = bytes.TrimSuffix(b, []byte("\r"))
		if len(b) == 0 {
			return nil, fmt.Errorf("line %d is empty: every line must hold one token", line)
		}
		if !utf8.Valid(b) {
			return nil, fmt.Errorf("line %d is not valid UTF-8: %q", line, b)
		}
		tok := string(b)
		if prev, dup := v.ids[tok]; dup {
			return nil, fmt.Errorf("token %q appears twice, on lines %d and %d: every token must be unique", tok, prev+1, line)
		}
		id := int32(len(v.tokens))
		v.ids[tok] = id
		v.tokens = append(v.tokens, tok)
		if rest, ok := strings.CutPrefix(tok, ContinuationPrefix); ok && rest != "" {
			v.cont[rest] = id
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d is longer than %d bytes: is this a vocab.txt file?", line+1, maxVocabLine)
		}
		return nil, fmt.Errorf("reading line %d: %w", line+1, err)
	}
	if len(v.tokens) == 0 {
		return nil, errors.New("the vocabulary is empty: want one token per line, [PAD] [UNK] [CLS] [SEP] among them")
	}
	var missing []string
	for _, s := range requiredSpecials {
		if _, ok := v.ids[s]; !ok {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the vocabulary lacks the special token(s) %s (required: %s)", strings.Join(missing, " "), strings.Join(requiredSpecials, " "))
	}
	return v, nil
}

// Size returns the number of tokens.
func (v *Vocab) Size() int { return len(v.tokens) }

// ID returns a token's id and whether the vocabulary has it.
func (v *Vocab) ID(tok string) (int32, bool) {
	id, ok := v.ids[tok]
	return id, ok
}

// Token returns the token of id and whether id is in range.
func (v *Vocab) Token(id int32) (string, bool) {
	if id < 0 || int(id) >= len(v.tokens) {
		return "", false
	}
	return v.tokens[id], true
}
