package tokenizer

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/datadir"
)

func bert(t *testing.T) *Tokenizer {
	t.Helper()
	p, err := datadir.Find("bert-base-uncased/vocab.txt")
	if err != nil {
		t.Fatalf("the shared data must be beside the checkout (CI has ../shared): %v", err)
	}
	v, err := LoadVocab(p)
	if err != nil {
		t.Fatal(err)
	}
	return New(v)
}

func TestDummySentences(t *testing.T) {
	tok := bert(t)
	want := map[string][]int32{
		"AI may take over the world one day": {101, 9932, 2089, 2202, 2058, 1996, 2088, 2028, 2154, 102},
		"This is why you should learn ADLS":  {101, 2023, 2003, 2339, 2017, 2323, 4553, 4748, 4877, 102},
	}
	for text, ids := range want {
		if got := tok.Encode(text); !slices.Equal(got, ids) {
			t.Errorf("%q → %v, want %v", text, got, ids)
		}
	}
	if tok.Vocab().Size() != 30522 {
		t.Errorf("vocab size %d", tok.Vocab().Size())
	}
}

func TestEdgeCases(t *testing.T) {
	tok := bert(t)
	same := func(a, b string) {
		t.Helper()
		if x, y := tok.Encode(a), tok.Encode(b); !slices.Equal(x, y) {
			t.Errorf("%q → %v but %q → %v", a, x, b, y)
		}
	}
	same("Héllo Naïve CAFÉ", "hello naive cafe")
	same("hello,world!", "hello , world !")
	same("a\u0000b\u200bc", "abc") // NUL dropped; ZERO WIDTH SPACE (Cf) dropped
	same("tab\there\nnewline", "tab here newline")
	if got := strings.Join(tok.Tokenize("don't"), " "); got != "don ' t" {
		t.Errorf("don't → %s", got)
	}
	if got := strings.Join(tok.Tokenize("unaffable"), " "); got != "una ##ffa ##ble" {
		t.Errorf("unaffable → %s", got)
	}
	if got := tok.Tokenize("中文"); !slices.Equal(got, []string{"中", "文"}) {
		t.Errorf("CJK → %v", got)
	}
	if got := tok.Encode("☃☃"); !slices.Equal(got, []int32{101, 100, 102}) {
		t.Errorf("unknown word → %v, want [CLS] [UNK] [SEP]", got)
	}
	if got := tok.Encode(strings.Repeat("a", 101)); !slices.Equal(got, []int32{101, 100, 102}) {
		t.Errorf("101-char word → %v", got)
	}
	if got := tok.Encode(""); !slices.Equal(got, []int32{101, 102}) {
		t.Errorf("empty → %v", got)
	}
	if got := tok.Decode(tok.Encode("unaffable day")); got != "[CLS] unaffable day [SEP]" {
		t.Errorf("decode → %q", got)
	}
}

func TestBatchTruncationAndPadding(t *testing.T) {
	tok := bert(t)
	texts := []string{"the quick brown fox jumps over the lazy dog", "hi"}
	b, err := tok.EncodeBatch(texts, EncodeOptions{MaxLength: 8, Truncation: true, Padding: PadLongest})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.InputIDs[0]) != 8 || b.InputIDs[0][0] != 101 || b.InputIDs[0][7] != 102 {
		t.Errorf("truncated: %v", b.InputIDs[0])
	}
	if !slices.Equal(b.InputIDs[0][1:7], tok.Encode(texts[0])[1:7]) {
		t.Errorf("truncation kept the wrong tokens: %v", b.InputIDs[0])
	}
	if !slices.Equal(b.InputIDs[1], []int32{101, 7632, 102, 0, 0, 0, 0, 0}) || !slices.Equal(b.AttentionMask[1], []int32{1, 1, 1, 0, 0, 0, 0, 0}) {
		t.Errorf("padding: %v mask %v", b.InputIDs[1], b.AttentionMask[1])
	}
	if len(b.TokenTypeIDs[1]) != 8 {
		t.Error("token types not padded")
	}
	nb, _ := tok.EncodeBatch(texts, EncodeOptions{})
	if len(nb.InputIDs[1]) != 3 || len(nb.InputIDs[0]) != 11 {
		t.Errorf("no padding: lengths %d %d", len(nb.InputIDs[0]), len(nb.InputIDs[1]))
	}
	mb, _ := tok.EncodeBatch([]string{"hi"}, EncodeOptions{MaxLength: 6, Padding: PadMaxLength})
	if len(mb.InputIDs[0]) != 6 {
		t.Errorf("max_length padding: %v", mb.InputIDs[0])
	}
	if _, err := tok.EncodeBatch(texts, EncodeOptions{MaxLength: 1, Truncation: true}); err == nil {
		t.Error("max length 1 accepted")
	}
}

func TestMalformedVocab(t *testing.T) {
	for name, tc := range map[string]struct{ text, want string }{
		"empty":     {"", "empty"},
		"duplicate": {"[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\nthe\n", `"the" appears twice, on lines 5 and 6`},
		"specials":  {"[PAD]\n[UNK]\nthe\n", "[CLS] [SEP]"},
		"blankline": {"[PAD]\n\n[UNK]\n", "line 2 is empty"},
	} {
		_, err := ParseVocab(strings.NewReader(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, tc.want)
		}
	}
	if _, err := LoadVocab(filepath.Join(t.TempDir(), "missing.txt")); err == nil {
		t.Error("missing file accepted")
	}
}

// The vocabulary of tokenizer.json (the HF tokenizers file) equals vocab.txt.
func TestVocabMatchesTokenizerJSON(t *testing.T) {
	tok := bert(t)
	p, err := datadir.Find("bert-base-uncased/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var tj struct {
		Model struct {
			Vocab map[string]int32 `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(raw, &tj); err != nil {
		t.Fatal(err)
	}
	if len(tj.Model.Vocab) != tok.Vocab().Size() {
		t.Fatalf("tokenizer.json has %d tokens, vocab.txt %d", len(tj.Model.Vocab), tok.Vocab().Size())
	}
	for s, id := range tj.Model.Vocab {
		if got, ok := tok.Vocab().ID(s); !ok || got != id {
			t.Fatalf("token %q: tokenizer.json id %d, vocab.txt %d (%v)", s, id, got, ok)
		}
	}
}

// The download path, against a local server: a good file is cached, a bad
// checksum is rejected and leaves nothing behind.
func TestDownloadIntoCache(t *testing.T) {
	src, err := datadir.Find("bert-base-uncased/vocab.txt")
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	body := good
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(body) }))
	defer srv.Close()
	old := VocabURL
	VocabURL = srv.URL + "/vocab.txt"
	defer func() { VocabURL = old }()
	cache := t.TempDir()
	t.Setenv("GOMASE_CACHE_DIR", cache)
	t.Setenv("GOMASE_DATA_DIR", t.TempDir()) // an empty data dir: the vocab must come from the download

	body = []byte("[PAD]\n[UNK]\n[CLS]\n[SEP]\n")
	if _, err := BertBaseUncased(); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("bad checksum: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(cache, "bert-base-uncased")); len(entries) != 0 {
		t.Fatalf("failed download left files: %v", entries)
	}
	body = good
	tok, err := BertBaseUncased()
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Encode("the"); !slices.Equal(got, []int32{101, 1996, 102}) {
		t.Errorf("downloaded vocab: %v", got)
	}
	srv.Close() // now served from the cache
	if _, err := BertBaseUncased(); err != nil {
		t.Fatalf("cached vocab not used: %v", err)
	}
}
