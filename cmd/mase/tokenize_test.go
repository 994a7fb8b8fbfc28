package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/datadir"
	"github.com/gomase/gomase/mase/tokenizer"
)

// tokenizeCLI runs `mase tokenize args...` with no way to reach the
// network: the cache is empty and the download URL a closed local port.
func tokenizeCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv(datadir.EnvCacheDir, filepath.Join(t.TempDir(), "cache"))
	old := tokenizer.VocabURL
	tokenizer.VocabURL = "http://127.0.0.1:1/vocab.txt"
	defer func() { tokenizer.VocabURL = old }()
	var out, errb bytes.Buffer
	code = run(append([]string{"tokenize"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func sharedDataDir(t *testing.T) string {
	t.Helper()
	d, err := datadir.Dir()
	if err != nil {
		t.Fatalf("the shared data must be beside the checkout (CI always has it): %v", err)
	}
	return d
}

func TestTokenizeCommandPrintsIDs(t *testing.T) {
	sharedDataDir(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"AI may take over the world one day", "This is why you should learn ADLS"},
			"[101,9932,2089,2202,2058,1996,2088,2028,2154,102]\n[101,2023,2003,2339,2017,2323,4553,4748,4877,102]\n"},
		{[]string{"--max-len", "4", "AI may take over the world", "hi"}, "[101,9932,2089,102]\n[101,7632,102]\n"},
		{[]string{"--max-len=2", "AI may"}, "[101,102]\n"},
		{[]string{"--max-len", "0", "hello,world!"}, "[101,7592,1010,2088,999,102]\n"},
		{[]string{""}, "[101,102]\n"},
		{[]string{"--", "-5"}, "[101,1011,1019,102]\n"},
	} {
		code, out, stderr := tokenizeCLI(t, tc.args...)
		if code != 0 || out != tc.want || stderr != "" {
			t.Errorf("mase tokenize %q: exit %d, stdout %q, stderr %q; want exit 0 and %q", tc.args, code, out, stderr, tc.want)
		}
	}
}

func TestTokenizeCommandTruncatesAt512ByDefault(t *testing.T) {
	sharedDataDir(t)
	code, out, stderr := tokenizeCLI(t, strings.Repeat("word ", 600))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := strings.Count(out, ",") + 1; n != 512 || !strings.HasPrefix(out, "[101,2773,") || !strings.HasSuffix(out, ",2773,102]\n") {
		t.Errorf("%d ids (want 512): %.40s…%s", n, out, out[len(out)-20:])
	}
}

func TestTokenizeCommandDataDir(t *testing.T) {
	shared := sharedDataDir(t)
	t.Setenv(datadir.EnvDataDir, filepath.Join(t.TempDir(), "elsewhere"))
	code, out, stderr := tokenizeCLI(t, "--data-dir", shared, "hi")
	if code != 0 || out != "[101,7632,102]\n" {
		t.Errorf("--data-dir %s: exit %d, stdout %q, stderr %q", shared, code, out, stderr)
	}
	t.Setenv(datadir.EnvDataDir, "")
	// The flag does not outlive the command.
	if d, err := datadir.Dir(); err != nil || d != shared {
		t.Errorf("after the command, Dir = %q, %v; want %s", d, err, shared)
	}
}

func TestTokenizeCommandErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	malformed := filepath.Join(dir, "data")
	vocab := filepath.Join(malformed, "bert-base-uncased", "vocab.txt")
	if err := os.MkdirAll(filepath.Dir(vocab), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(vocab, []byte("[PAD]\n[UNK]\nthe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"mase tokenize: no TEXT given", tokenizeUsage}},
		{[]string{"--max-len", "3"}, []string{"no TEXT given"}},
		{[]string{"--bogus", "x"}, []string{"flag provided but not defined: -bogus"}},
		{[]string{"--max-len", "abc", "x"}, []string{`invalid value "abc" for flag -max-len`}},
		{[]string{"--max-len", "1", "x"}, []string{"--max-len 1: want 0 (the model's 512) or at least 2"}},
		{[]string{"--max-len", "-3", "x"}, []string{"--max-len -3: want 0"}},
		{[]string{"--data-dir", missing, "x"}, []string{missing, "--data-dir", "does not exist"}},
		{[]string{"--data-dir", malformed, "x"}, []string{vocab, "lacks the special token(s) [CLS] [SEP]"}},
	} {
		code, out, stderr := tokenizeCLI(t, tc.args...)
		if code != 1 || out != "" {
			t.Errorf("mase tokenize %q: exit %d, stdout %q; want exit 1 and no output", tc.args, code, out)
		}
		// main's own message is the last line of stderr; the flag package
		// may have printed the usage before it.
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		last := lines[len(lines)-1]
		if !strings.HasPrefix(last, "mase tokenize: ") {
			t.Errorf("mase tokenize %q: last stderr line %q is not main's one-line error", tc.args, last)
		}
		for _, w := range tc.want {
			if !strings.Contains(last, w) {
				t.Errorf("mase tokenize %q: error %q lacks %q", tc.args, last, w)
			}
		}
	}
}

func TestTokenizeCommandHelp(t *testing.T) {
	code, out, stderr := tokenizeCLI(t, "-h")
	if code != 0 || out != "" || !strings.Contains(stderr, "usage: mase tokenize "+tokenizeUsage) || !strings.Contains(stderr, "-max-len N") {
		t.Errorf("-h: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
