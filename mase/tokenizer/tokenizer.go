package tokenizer

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxInputCharsPerWord is the longest word, in characters, that WordPiece
// splits; a longer word is [UNK].
const MaxInputCharsPerWord = 100

// ModelMaxLength is bert-base-uncased's model_max_length, the default
// MaxLength of EncodeBatch.
const ModelMaxLength = 512

// Tokenizer is an uncased BERT WordPiece tokenizer. It is safe for
// concurrent use.
type Tokenizer struct {
	vocab              *Vocab
	pad, unk, cls, sep int32
	// specials are the special tokens of the vocabulary that are kept whole
	// when they appear in the text, longest first.
	specials []string
}

// New returns a tokenizer over v, which must come from LoadVocab or
// ParseVocab.
func New(v *Vocab) (*Tokenizer, error) {
	if v == nil || len(v.tokens) == 0 {
		return nil, errors.New("tokenizer: empty vocabulary: build it with LoadVocab or ParseVocab")
	}
	t := &Tokenizer{vocab: v}
	for _, s := range []struct {
		tok string
		id  *int32
	}{{PadToken, &t.pad}, {UnkToken, &t.unk}, {ClsToken, &t.cls}, {SepToken, &t.sep}} {
		id, ok := v.ID(s.tok)
		if !ok {
			return nil, fmt.Errorf("tokenizer: the vocabulary lacks %s (required: %s)", s.tok, strings.Join(requiredSpecials, " "))
		}
		*s.id = id
	}
	// [MASK] (6 bytes) first, so that the longest match wins.
	for _, s := range []string{MaskToken, PadToken, UnkToken, ClsToken, SepToken} {
		if _, ok := v.ID(s); ok {
			t.specials = append(t.specials, s)
		}
	}
	return t, nil
}

// Vocab returns the tokenizer's vocabulary.
func (t *Tokenizer) Vocab() *Vocab { return t.vocab }

// Tokenize splits text into WordPiece tokens, without [CLS] and [SEP].
func (t *Tokenizer) Tokenize(text string) []string {
	var out []string
	t.encode(text, func(id int32) { out = append(out, t.vocab.tokens[id]) })
	return out
}

// Encode returns the ids of [CLS] text [SEP], untruncated.
func (t *Tokenizer) Encode(text string) []int32 {
	ids := make([]int32, 1, len(text)/4+2)
	ids[0] = t.cls
	t.encode(text, func(id int32) { ids = append(ids, id) })
	return append(ids, t.sep)
}

// encode calls emit with the id of every WordPiece token of text.
func (t *Tokenizer) encode(text string, emit func(int32)) {
	word := func(w string) { t.wordPiece(w, emit) }
	for text != "" {
		i, special := t.nextSpecial(text)
		preTokenize(normalize(text[:i]), word)
		if special == "" {
			return
		}
		emit(t.vocab.ids[special])
		text = text[i+len(special):]
	}
}

// nextSpecial returns the byte offset of the first special token written
// in s and that token (the longest one where several start there), or
// len(s) and "".
func (t *Tokenizer) nextSpecial(s string) (int, string) {
	for off := 0; ; {
		i := strings.IndexByte(s[off:], '[')
		if i < 0 {
			return len(s), ""
		}
		off += i
		for _, sp := range t.specials {
			if strings.HasPrefix(s[off:], sp) {
				return off, sp
			}
		}
		off++
	}
}

// wordPiece splits one pre-token greedily, longest match first, and emits
// its pieces, or [UNK] when it has no complete split or is too long.
func (t *Tokenizer) wordPiece(word string, emit func(int32)) {
	if utf8.RuneCountInString(word) > MaxInputCharsPerWord {
		emit(t.unk)
		return
	}
	var buf [16]int32
	pieces := buf[:0]
	for start := 0; start < len(word); {
		end := len(word)
		var id int32
		found := false
		for end > start {
			if start == 0 {
				id, found = t.vocab.ids[word[:end]]
			} else {
				id, found = t.vocab.cont[word[start:end]]
			}
			if found {
				break
			}
			_, size := utf8.DecodeLastRuneInString(word[start:end])
			end -= size
		}
		if !found {
			emit(t.unk)
			return
		}
		pieces = append(pieces, id)
		start = end
	}
	for _, id := range pieces {
		emit(id)
	}
}

// Decode turns ids back into text as transformers' decode does with
// clean_up_tokenization_spaces: WordPiece continuations are joined to the
// piece before them, other tokens are separated by a space, then spaces
// before punctuation and in English contractions are removed ("don ' t"
// becomes "don't"). With skipSpecial, [PAD] [UNK] [CLS] [SEP] and [MASK]
// are left out. Ids outside the vocabulary are skipped. Decoding is for
// display: the text comes back lower-cased and without accents.
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) string {
	var b strings.Builder
	first := true
	for _, id := range ids {
		tok, ok := t.vocab.Token(id)
		if !ok || (skipSpecial && t.isSpecial(tok)) {
			continue
		}
		if rest, ok := strings.CutPrefix(tok, ContinuationPrefix); ok && !first {
			tok = rest
		} else if !first {
			b.WriteByte(' ')
		}
		first = false
		b.WriteString(tok)
	}
	s := b.String()
	for _, r := range cleanups {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	return s
}

func (t *Tokenizer) isSpecial(tok string) bool {
	return slices.Contains(t.specials, tok)
}

// cleanups are the replacements of clean_up_tokenization, applied in order
// to the joined text. (The WordPiece decoder's own per-token cleanup is
// contained in them.)
var cleanups = [][2]string{
	{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
	{" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
}

// PaddingMode says how EncodeBatch pads.
type PaddingMode int

const (
	// PadNone leaves every sequence at its own length (padding=False).
	PadNone PaddingMode = iota
	// PadLongest pads to the longest sequence of the batch
	// (padding="longest", or True).
	PadLongest
	// PadMaxLength pads every sequence to MaxLength
	// (padding="max_length").
	PadMaxLength
)

// String returns the mode's name as transformers spells it.
func (p PaddingMode) String() string {
	switch p {
	case PadNone:
		return "do_not_pad"
	case PadLongest:
		return "longest"
	case PadMaxLength:
		return "max_length"
	}
	return fmt.Sprintf("PaddingMode(%d)", int(p))
}

// EncodeOptions configure EncodeBatch.
type EncodeOptions struct {
	// MaxLength is the length, [CLS] and [SEP] included, that Truncation
	// cuts to and PadMaxLength pads to; 0 means ModelMaxLength (512).
	MaxLength int
	// Truncation cuts longer sequences to MaxLength, keeping [CLS], the
	// first MaxLength−2 tokens and [SEP]. Without it, sequences keep their
	// length whatever MaxLength says.
	Truncation bool
	// Padding selects the padding mode; padding is [PAD] (id 0 in BERT
	// vocabularies) on the right, with attention mask 0.
	Padding PaddingMode
}

// Batch is a tokenised batch, one row per text: the ids, the attention
// mask (1 on tokens, 0 on padding) and the token type ids (all 0 for
// single sentences). Rows have the same length unless Padding is PadNone
// (or, with PadMaxLength and no Truncation, a row is longer than
// MaxLength).
type Batch struct {
	InputIDs      [][]int32
	AttentionMask [][]int32
	TokenTypeIDs  [][]int32
}

// EncodeBatch tokenises texts as transformers' tokenizer(texts,
// max_length=..., truncation=..., padding=...) does.
func (t *Tokenizer) EncodeBatch(texts []string, opts EncodeOptions) (*Batch, error) {
	maxLen := opts.MaxLength
	switch {
	case maxLen < 0:
		return nil, fmt.Errorf("max length %d is negative: want 0 (the model's %d) or at least 2", maxLen, ModelMaxLength)
	case maxLen == 0:
		maxLen = ModelMaxLength
	case maxLen < 2 && (opts.Truncation || opts.Padding == PadMaxLength):
		return nil, fmt.Errorf("max length %d leaves no room for [CLS] and [SEP]: want 0 (the model's %d) or at least 2", maxLen, ModelMaxLength)
	}
	if opts.Padding < PadNone || opts.Padding > PadMaxLength {
		return nil, fmt.Errorf("unknown padding mode %d: want PadNone, PadLongest or PadMaxLength", int(opts.Padding))
	}
	b := &Batch{
		InputIDs:      make([][]int32, len(texts)),
		AttentionMask: make([][]int32, len(texts)),
		TokenTypeIDs:  make([][]int32, len(texts)),
	}
	longest := 0
	for i, text := range texts {
		ids := t.Encode(text)
		if opts.Truncation && len(ids) > maxLen {
			ids = append(ids[:maxLen-1], t.sep)
		}
		longest = max(longest, len(ids))
		b.InputIDs[i] = ids
	}
	target := 0
	switch opts.Padding {
	case PadLongest:
		target = longest
	case PadMaxLength:
		target = maxLen
	}
	for i, ids := range b.InputIDs {
		n := len(ids)
		size := max(n, target)
		mask := make([]int32, size)
		for j := range n {
			mask[j] = 1
		}
		for len(ids) < size {
			ids = append(ids, t.pad)
		}
		b.InputIDs[i] = ids
		b.AttentionMask[i] = mask
		b.TokenTypeIDs[i] = make([]int32, size)
	}
	return b, nil
}
