package tokenizer

import (
	"fmt"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// MaxInputCharsPerWord is the longest word WordPiece splits; longer words
// become [UNK].
const MaxInputCharsPerWord = 100

// ModelMaxLength is bert-base-uncased's model_max_length.
const ModelMaxLength = 512

// Tokenizer is an uncased BERT WordPiece tokenizer.
type Tokenizer struct {
	vocab              *Vocab
	pad, unk, cls, sep int32
}

// New returns a tokenizer over v (which ParseVocab has validated).
func New(v *Vocab) *Tokenizer {
	t := &Tokenizer{vocab: v}
	t.pad, _ = v.ID(PadToken)
	t.unk, _ = v.ID(UnkToken)
	t.cls, _ = v.ID(ClsToken)
	t.sep, _ = v.ID(SepToken)
	return t
}

// Vocab returns the tokenizer's vocabulary.
func (t *Tokenizer) Vocab() *Vocab { return t.vocab }

// Tokenize splits text into WordPiece tokens (without [CLS]/[SEP]).
func (t *Tokenizer) Tokenize(text string) []string {
	var out []string
	for _, word := range basicTokens(text) {
		out = append(out, t.wordPiece(word)...)
	}
	return out
}

// Encode returns the ids of [CLS] text [SEP], untruncated.
func (t *Tokenizer) Encode(text string) []int32 {
	ids := []int32{t.cls}
	for _, tok := range t.Tokenize(text) {
		id, _ := t.vocab.ID(tok)
		ids = append(ids, id)
	}
	return append(ids, t.sep)
}

// Decode joins the tokens of ids, merging ## continuations and dropping
// [PAD]; it is for display, not an exact inverse.
func (t *Tokenizer) Decode(ids []int32) string {
	var b strings.Builder
	for _, id := range ids {
		tok := t.vocab.Token(id)
		if id == t.pad || tok == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(tok, "##"); ok {
			b.WriteString(rest)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(tok)
	}
	return b.String()
}

// Padding says how EncodeBatch pads.
type Padding int

const (
	// PadNone leaves every sequence at its own length.
	PadNone Padding = iota
	// PadLongest pads to the longest sequence of the batch (HF's
	// DataCollatorWithPadding and padding=True).
	PadLongest
	// PadMaxLength pads every sequence to MaxLength.
	PadMaxLength
)

// EncodeOptions configure EncodeBatch.
type EncodeOptions struct {
	// MaxLength bounds sequences when Truncation is set, and is the padded
	// length for PadMaxLength; 0 means ModelMaxLength (512).
	MaxLength int
	// Truncation cuts sequences to MaxLength, keeping [CLS] and [SEP].
	Truncation bool
	// Padding selects the padding mode.
	Padding Padding
}

// Batch is a tokenised batch: ids, attention mask (1 for tokens, 0 for
// padding) and token types (all 0 for single sentences).
type Batch struct {
	InputIDs      [][]int32
	AttentionMask [][]int32
	TokenTypeIDs  [][]int32
}

// EncodeBatch tokenises texts as HF's tokenizer(texts, truncation=...,
// padding=...) does.
func (t *Tokenizer) EncodeBatch(texts []string, opts EncodeOptions) (*Batch, error) {
	maxLen := opts.MaxLength
	if maxLen == 0 {
		maxLen = ModelMaxLength
	}
	if maxLen < 2 {
		return nil, fmt.Errorf("max length %d is too short: [CLS] and [SEP] need 2", maxLen)
	}
	if opts.Padding < PadNone || opts.Padding > PadMaxLength {
		return nil, fmt.Errorf("unknown padding mode %d (allowed: PadNone, PadLongest, PadMaxLength)", opts.Padding)
	}
	b := &Batch{}
	longest := 0
	for _, text := range texts {
		ids := t.Encode(text)
		if opts.Truncation && len(ids) > maxLen {
			ids = append(ids[:maxLen-1:maxLen-1], t.sep)
		}
		longest = max(longest, len(ids))
		b.InputIDs = append(b.InputIDs, ids)
	}
	target := 0
	switch opts.Padding {
	case PadLongest:
		target = longest
	case PadMaxLength:
		target = maxLen
	}
	for i, ids := range b.InputIDs {
		mask := make([]int32, len(ids), max(len(ids), target))
		for j := range mask {
			mask[j] = 1
		}
		for len(ids) < target {
			ids = append(ids, t.pad)
			mask = append(mask, 0)
		}
		b.InputIDs[i] = ids
		b.AttentionMask = append(b.AttentionMask, mask)
		b.TokenTypeIDs = append(b.TokenTypeIDs, make([]int32, len(ids)))
	}
	return b, nil
}

// wordPiece splits one basic token greedily, longest match first.
func (t *Tokenizer) wordPiece(word string) []string {
	runes := []rune(word)
	if len(runes) > MaxInputCharsPerWord {
		return []string{UnkToken}
	}
	var pieces []string
	for start := 0; start < len(runes); {
		end := len(runes)
		found := ""
		for ; end > start; end-- {
			sub := string(runes[start:end])
			if start > 0 {
				sub = "##" + sub
			}
			if _, ok := t.vocab.ID(sub); ok {
				found = sub
				break
			}
		}
		if found == "" {
			return []string{UnkToken}
		}
		pieces = append(pieces, found)
		start = end
	}
	return pieces
}

// basicTokens normalises text (clean, CJK spacing, lower case, accents
// stripped) and splits it on whitespace and punctuation.
func basicTokens(text string) []string {
	var cleaned strings.Builder
	for _, r := range text {
		switch {
		case r == 0 || r == 0xFFFD || isControl(r):
			continue
		case isWhitespace(r):
			cleaned.WriteByte(' ')
		case isCJK(r):
			cleaned.WriteByte(' ')
			cleaned.WriteRune(r)
			cleaned.WriteByte(' ')
		default:
			cleaned.WriteRune(r)
		}
	}
	var out []string
	for _, word := range strings.Fields(cleaned.String()) {
		word = stripAccents(strings.ToLower(word))
		var cur []rune
		for _, r := range word {
			if isPunctuation(r) {
				if len(cur) > 0 {
					out = append(out, string(cur))
					cur = cur[:0]
				}
				out = append(out, string(r))
				continue
			}
			cur = append(cur, r)
		}
		if len(cur) > 0 {
			out = append(out, string(cur))
		}
	}
	return out
}

// stripAccents decomposes (NFD) and drops combining marks (Mn).
func stripAccents(s string) string {
	var b strings.Builder
	for _, r := range norm.NFD.String(s) {
		if !unicode.Is(unicode.Mn, r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isWhitespace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || unicode.Is(unicode.Zs, r)
}

func isControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}

func isPunctuation(r rune) bool {
	if (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126) {
		return true
	}
	return unicode.IsPunct(r)
}

// isCJK reports whether r is a CJK Unified Ideograph (the blocks BERT
// splits character by character).
func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) || (r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) || (r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}
