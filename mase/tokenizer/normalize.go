package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalize applies BertNormalizer with clean_text, handle_chinese_chars,
// strip_accents and lowercase, in that order, as tokenizers does.
func normalize(s string) string {
	ascii := true
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		switch {
		// Invalid UTF-8 decodes to utf8.RuneError (U+FFFD), dropped too.
		case r == 0 || r == utf8.RuneError || isControl(r):
		case isWhitespace(r):
			b.WriteByte(' ')
		case isChineseChar(r):
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
			ascii = false
		default:
			b.WriteRune(r)
			if r >= utf8.RuneSelf {
				ascii = false
			}
		}
	}
	s = b.String()
	if ascii {
		return asciiLower(s)
	}
	// strip_accents: decompose, then drop nonspacing marks (Mn).
	s = norm.NFD.String(s)
	b.Reset()
	b.Grow(len(s))
	for _, r := range s {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// asciiLower lower-cases an ASCII string.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// preTokenize is BertPreTokenizer: it splits normalised text on whitespace
// (dropped) and around every punctuation character (kept as a word), and
// calls emit for each word.
func preTokenize(s string, emit func(word string)) {
	start := -1 // start of the current word, -1 between words
	for i, r := range s {
		switch {
		case isWhitespace(r):
			if start >= 0 {
				emit(s[start:i])
				start = -1
			}
		case isPunctuation(r):
			if start >= 0 {
				emit(s[start:i])
				start = -1
			}
			emit(s[i : i+utf8.RuneLen(r)])
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if start >= 0 {
		emit(s[start:])
	}
}

// isWhitespace is the White_Space property (which includes tab, newline and
// carriage return), as Rust's char::is_whitespace.
func isWhitespace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || ('\t' <= r && r <= '\r')
	}
	return unicode.Is(unicode.White_Space, r)
}

// isControl reports the "other" categories that clean_text drops: Cc, Cf,
// Co and Cs, except tab, newline and carriage return, which are
// whitespace. Unassigned code points (Cn) are kept, as tokenizers keeps
// them.
func isControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}

// isPunctuation is BERT's punctuation: every ASCII symbol that is not a
// letter, digit or space (33–47, 58–64, 91–96, 123–126) and the Unicode
// punctuation categories P*.
func isPunctuation(r rune) bool {
	if r < utf8.RuneSelf {
		return (33 <= r && r <= 47) || (58 <= r && r <= 64) || (91 <= r && r <= 96) || (123 <= r && r <= 126)
	}
	return unicode.IsPunct(r)
}

// isChineseChar reports the CJK ideograph blocks that handle_chinese_chars
// splits character by character. The ranges are those of tokenizers' Rust
// BertNormalizer; Python's BertTokenizer starts the sixth at U+2B820
// instead of U+2B920.
func isChineseChar(r rune) bool {
	switch {
	case 0x4E00 <= r && r <= 0x9FFF,
		0x3400 <= r && r <= 0x4DBF,
		0x20000 <= r && r <= 0x2A6DF,
		0x2A700 <= r && r <= 0x2B73F,
		0x2B740 <= r && r <= 0x2B81F,
		0x2B920 <= r && r <= 0x2CEAF,
		0xF900 <= r && r <= 0xFAFF,
		0x2F800 <= r && r <= 0x2FA1F:
		return true
	}
	return false
}
