package tokenizer

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gomase/gomase/mase/datadir"
)

// bert loads bert-base-uncased's vocabulary from the shared data directory;
// the test fails (it does not skip) without it, as CI always has it.
func bert(t testing.TB) *Tokenizer {
	t.Helper()
	p, err := datadir.Find(VocabRel)
	if err != nil {
		t.Fatalf("the shared data must be beside the checkout (../shared/data; CI always has it), or set GOMASE_DATA_DIR: %v", err)
	}
	v, err := LoadVocab(p)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// golden holds ids computed by HuggingFace tokenizers 0.23.2 (the Rust
// library, through its Node.js binding) from the shared data's
// tokenizer.json, with encode(text) and the default [CLS] … [SEP]
// template.
var golden = []struct {
	name string
	text string
	ids  []int32
}{
	{"dummy sentence 1", "AI may take over the world one day", []int32{101, 9932, 2089, 2202, 2058, 1996, 2088, 2028, 2154, 102}},
	{"dummy sentence 2", "This is why you should learn ADLS", []int32{101, 2023, 2003, 2339, 2017, 2323, 4553, 4748, 4877, 102}},
	{"accents", "Héllo Naïve CAFÉ", []int32{101, 7592, 15743, 7668, 102}},
	{"unaccented", "hello naive cafe", []int32{101, 7592, 15743, 7668, 102}},
	{"punctuation splits words", "hello,world!", []int32{101, 7592, 1010, 2088, 999, 102}},
	{"apostrophe", "don't", []int32{101, 2123, 1005, 1056, 102}},
	{"ASCII symbols are punctuation", "$5+3=8 | ^_^ `x` ~ a@b.c", []int32{101, 1002, 1019, 1009, 1017, 1027, 1022, 1064, 1034, 1035, 1034, 1036, 1060, 1036, 1066, 1037, 1030, 1038, 1012, 1039, 102}},
	{"Unicode punctuation", "«quoted» — ¿qué? ‘single’ “double” a·b", []int32{101, 1077, 9339, 1090, 1517, 1094, 10861, 1029, 1520, 2309, 1521, 1523, 3313, 1524, 1037, 1087, 1038, 102}},
	{"symbols that are not punctuation stay in the word", "a©b 5€ x²", []int32{101, 1037, 29652, 2497, 1019, 30102, 1060, 10701, 102}},
	{"word pieces", "unaffable tokenization", []int32{101, 14477, 20961, 3468, 19204, 3989, 102}},
	{"CJK ideographs split one by one", "中文字符test中", []int32{101, 1746, 1861, 100, 100, 3231, 1746, 102}},
	{"kana are not CJK ideographs", "日本語です", []int32{101, 1864, 1876, 1950, 1665, 30184, 102}},
	{"Hangul decomposes to jamo (NFD)", "한국어", []int32{101, 1469, 30006, 30021, 29991, 30014, 30020, 29999, 30008, 102}},
	{"CJK compatibility ideograph", "x豈y", []int32{101, 1060, 100, 1061, 102}},
	{"Extension B ideograph", "x𠀀y", []int32{101, 1060, 100, 1061, 102}},
	{"U+2B820 is not split by tokenizers (Python BertTokenizer splits it)", "x𫠠y", []int32{101, 100, 102}},
	{"U+2B920 is split", "x𫤠y", []int32{101, 1060, 100, 1061, 102}},
	{"control characters are dropped", "a\x00b\x07c\x1bd\x7fe\ufffdf", []int32{101, 5925, 3207, 2546, 102}},
	{"format characters (Cf) are dropped", "zero\u200bwidth\u00adsoft\ufeffbom\u2060wj", []int32{101, 5717, 9148, 11927, 7898, 15794, 5092, 2213, 2860, 3501, 102}},
	{"private use is dropped", "a\ue000b", []int32{101, 11113, 102}},
	{"unassigned code points are kept", "a\u0378b", []int32{101, 100, 102}},
	{"whitespace of every kind separates words", "tab\there\nnew\r\nline\u00a0nbsp\u2028ls\u3000ideo\u2003em", []int32{101, 21628, 2182, 2047, 2240, 1050, 5910, 2361, 1048, 2015, 8909, 8780, 7861, 102}},
	{"vertical tab and form feed are controls, dropped", "a\x0bb\x0cc\u0085d", []int32{101, 5925, 2094, 102}},
	{"special tokens in the text are kept whole", "[CLS]hi[SEP] a[MASK]b [PAD] [UNK]", []int32{101, 101, 7632, 102, 1037, 103, 1038, 0, 100, 102}},
	{"special tokens are case-sensitive and exact", "[cls] [[SEP]] [MASK [SEP", []int32{101, 1031, 18856, 2015, 1033, 1031, 102, 1033, 1031, 7308, 1031, 19802, 102}},
	{"dotted capital I", "İstanbul", []int32{101, 9960, 102}},
	{"Greek capital sigma, no final form", "ΣΑΣ", []int32{101, 1173, 14608, 29733, 102}},
	{"full-width letters are not folded (no NFKC)", "Ｆｕｌｌ", []int32{101, 100, 102}},
	{"ligature is not folded", "ﬁne", []int32{101, 1984, 2638, 102}},
	{"leading combining mark", "\u0301abc", []int32{101, 5925, 102}},
	{"emoji", "I ❤ 🤗 😀!", []int32{101, 1045, 100, 100, 100, 999, 102}},
	{"unknown word", "☃☃ snow", []int32{101, 100, 4586, 102}},
	{"Cyrillic and Arabic", "Привет мир مرحبا", []int32{101, 1194, 16856, 10325, 25529, 15290, 22919, 1191, 10325, 16856, 1295, 17149, 29820, 29816, 25573, 102}},
	{"empty", "", []int32{101, 102}},
	{"only whitespace", " \t\n ", []int32{101, 102}},
	{"only dropped characters", "\x00\u200b\ufffd", []int32{101, 102}},
	{"100 characters", strings.Repeat("a", 100), []int32{101, 13360, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 11057, 2050, 102}},
	{"101 characters is [UNK]", strings.Repeat("a", 101), []int32{101, 100, 102}},
	{"60 two-byte characters are 60, not 120", strings.Repeat("é", 60), []int32{101, 25212, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 4402, 102}},
	{"hash signs", "#hashtag ##x", []int32{101, 1001, 23325, 15900, 1001, 1001, 1060, 102}},
	{"numbers", "3.14159 1,000,000 2024-01-02", []int32{101, 1017, 1012, 15471, 28154, 1015, 1010, 2199, 1010, 2199, 16798, 2549, 1011, 5890, 1011, 6185, 102}},
	{"IMDb review train/neg/7243_2", "no comment - stupid movie, acting average or worse... screenplay - no sense at all... SKIP IT!", []int32{101, 2053, 7615, 1011, 5236, 3185, 1010, 3772, 2779, 2030, 4788, 1012, 1012, 1012, 9000, 1011, 2053, 3168, 2012, 2035, 1012, 1012, 1012, 13558, 2009, 999, 102}},
	{"IMDb review train/pos/8081_9", "Brilliant movie. The drawings were just amazing. Too bad it ended before it begun. I´ve waited 21 years for a sequel, but nooooo!!!", []int32{101, 8235, 3185, 1012, 1996, 9254, 2020, 2074, 6429, 1012, 2205, 2919, 2009, 3092, 2077, 2009, 5625, 1012, 1045, 29658, 3726, 4741, 2538, 2086, 2005, 1037, 8297, 1010, 2021, 2053, 9541, 9541, 999, 999, 999, 102}},
	{"HTML line breaks as in IMDb", "Great film.<br /><br />Loved it.", []int32{101, 2307, 2143, 1012, 1026, 7987, 1013, 1028, 1026, 7987, 1013, 1028, 3866, 2009, 1012, 102}},
}

func TestEncodeMatchesHuggingFace(t *testing.T) {
	tok := bert(t)
	for _, g := range golden {
		if got := tok.Encode(g.text); !slices.Equal(got, g.ids) {
			t.Errorf("%s: Encode(%q)\n got %v\nwant %v", g.name, g.text, got, g.ids)
		}
	}
}

func TestTokenize(t *testing.T) {
	tok := bert(t)
	for text, want := range map[string]string{
		"don't":                "don ' t",
		"hello,world!":         "hello , world !",
		"unaffable":            "una ##ffa ##ble",
		"中文":                   "中 文",
		"Héllo [MASK] [SEP]":   "hello [MASK] [SEP]",
		"☃☃ hel\u0000lo\u200b": "[UNK] hello",
		"":                     "",
	} {
		if got := strings.Join(tok.Tokenize(text), " "); got != want {
			t.Errorf("Tokenize(%q) = %q, want %q", text, got, want)
		}
	}
	// Tokenize and Encode agree.
	for _, g := range golden {
		toks := tok.Tokenize(g.text)
		ids := tok.Encode(g.text)
		if len(ids) != len(toks)+2 {
			t.Fatalf("%s: %d tokens but %d ids", g.name, len(toks), len(ids))
		}
		for i, s := range toks {
			if id, _ := tok.Vocab().ID(s); id != ids[i+1] {
				t.Errorf("%s: token %d is %q (id %d) but Encode gives %d", g.name, i, s, id, ids[i+1])
			}
		}
	}
}

// Invalid UTF-8 (which HuggingFace cannot be given) is dropped like U+FFFD.
func TestInvalidUTF8(t *testing.T) {
	tok := bert(t)
	if got, want := tok.Encode("ab\xffc\xc3"), tok.Encode("abc"); !slices.Equal(got, want) {
		t.Errorf("invalid UTF-8: got %v, want %v", got, want)
	}
}

func TestEncodeBatchTruncationAndPadding(t *testing.T) {
	tok := bert(t)
	long := "the quick brown fox jumps over the lazy dog"
	texts := []string{long, "hi", "AI may take"}
	b, err := tok.EncodeBatch(texts, EncodeOptions{MaxLength: 8, Truncation: true, Padding: PadLongest})
	if err != nil {
		t.Fatal(err)
	}
	// Expected values from HuggingFace tokenizers with truncation at 8.
	wantIDs := [][]int32{
		{101, 1996, 4248, 2829, 4419, 14523, 2058, 102},
		{101, 7632, 102, 0, 0, 0, 0, 0},
		{101, 9932, 2089, 2202, 102, 0, 0, 0},
	}
	wantMask := [][]int32{
		{1, 1, 1, 1, 1, 1, 1, 1},
		{1, 1, 1, 0, 0, 0, 0, 0},
		{1, 1, 1, 1, 1, 0, 0, 0},
	}
	for i := range texts {
		if !slices.Equal(b.InputIDs[i], wantIDs[i]) || !slices.Equal(b.AttentionMask[i], wantMask[i]) {
			t.Errorf("row %d: ids %v mask %v, want %v %v", i, b.InputIDs[i], b.AttentionMask[i], wantIDs[i], wantMask[i])
		}
		if !slices.Equal(b.TokenTypeIDs[i], make([]int32, 8)) {
			t.Errorf("row %d: token types %v, want eight zeros", i, b.TokenTypeIDs[i])
		}
	}

	// No padding and no truncation: every row keeps its own length.
	b, err = tok.EncodeBatch(texts, EncodeOptions{MaxLength: 8})
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		if want := tok.Encode(text); !slices.Equal(b.InputIDs[i], want) || len(b.AttentionMask[i]) != len(want) || slices.Contains(b.AttentionMask[i], 0) {
			t.Errorf("row %d without padding: %v mask %v, want %v", i, b.InputIDs[i], b.AttentionMask[i], want)
		}
	}

	// max_length padding; a longer row is left alone without truncation.
	b, err = tok.EncodeBatch([]string{"hi", long}, EncodeOptions{MaxLength: 6, Padding: PadMaxLength})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.InputIDs[0], []int32{101, 7632, 102, 0, 0, 0}) || len(b.InputIDs[1]) != 11 || len(b.AttentionMask[1]) != 11 {
		t.Errorf("max_length padding: %v, %v", b.InputIDs[0], b.InputIDs[1])
	}

	// The default maximum is 512.
	huge := strings.Repeat("word ", 600)
	b, err = tok.EncodeBatch([]string{huge}, EncodeOptions{Truncation: true})
	if err != nil {
		t.Fatal(err)
	}
	if row := b.InputIDs[0]; len(row) != ModelMaxLength || row[0] != 101 || row[511] != 102 || row[510] != 2773 {
		t.Errorf("default truncation: length %d, ends %v", len(row), row[len(row)-3:])
	}

	// Truncation to 2 leaves [CLS] [SEP].
	b, err = tok.EncodeBatch([]string{long}, EncodeOptions{MaxLength: 2, Truncation: true})
	if err != nil || !slices.Equal(b.InputIDs[0], []int32{101, 102}) {
		t.Errorf("max length 2: %v, %v", b, err)
	}

	// An empty batch is empty, not an error.
	if b, err := tok.EncodeBatch(nil, EncodeOptions{Padding: PadLongest}); err != nil || len(b.InputIDs) != 0 {
		t.Errorf("empty batch: %v, %v", b, err)
	}
}

func TestEncodeBatchErrors(t *testing.T) {
	tok := bert(t)
	for _, tc := range []struct {
		opts EncodeOptions
		want string
	}{
		{EncodeOptions{MaxLength: -1}, "max length -1 is negative"},
		{EncodeOptions{MaxLength: 1, Truncation: true}, "no room for [CLS] and [SEP]"},
		{EncodeOptions{MaxLength: 1, Padding: PadMaxLength}, "no room for [CLS] and [SEP]"},
		{EncodeOptions{Padding: PaddingMode(7)}, "unknown padding mode 7: want PadNone, PadLongest or PadMaxLength"},
	} {
		if _, err := tok.EncodeBatch([]string{"hi"}, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error containing %q", tc.opts, err, tc.want)
		}
	}
}

func TestDecode(t *testing.T) {
	tok := bert(t)
	for _, tc := range []struct {
		text        string
		skip        bool
		want        string
		wantSpecial string
	}{
		{"unaffable day", false, "", "[CLS] unaffable day [SEP]"},
		{"Don't do that, it's fine. I'm sure they've gone!", true, "don't do that, it's fine. i'm sure they've gone!", ""},
		{"Héllo [MASK] world?", true, "hello world?", ""},
	} {
		ids := tok.Encode(tc.text)
		if tc.wantSpecial != "" {
			if got := tok.Decode(ids, false); got != tc.wantSpecial {
				t.Errorf("Decode(Encode(%q), false) = %q, want %q", tc.text, got, tc.wantSpecial)
			}
		}
		if tc.want != "" {
			if got := tok.Decode(ids, true); got != tc.want {
				t.Errorf("Decode(Encode(%q), true) = %q, want %q", tc.text, got, tc.want)
			}
		}
	}
	// Padding is special; ids outside the vocabulary are skipped.
	if got := tok.Decode([]int32{101, 7632, 102, 0, 0, -1, 1 << 30}, true); got != "hi" {
		t.Errorf("padded decode = %q, want %q", got, "hi")
	}
	if got := tok.Decode(nil, false); got != "" {
		t.Errorf("Decode(nil) = %q", got)
	}
}

func TestConcurrentUse(t *testing.T) {
	tok := bert(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for _, g := range golden {
				if got := tok.Encode(g.text); !slices.Equal(got, g.ids) {
					t.Errorf("concurrent %s: %v", g.name, got)
				}
			}
		})
	}
	wg.Wait()
}

func TestPaddingModeString(t *testing.T) {
	for m, want := range map[PaddingMode]string{PadNone: "do_not_pad", PadLongest: "longest", PadMaxLength: "max_length", 9: "PaddingMode(9)"} {
		if got := m.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(m), got, want)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	tok := bert(b)
	text := golden[len(golden)-2].text
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Encode(text)
	}
}
