package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/gomase/gomase/mase/tokenizer"
)

const tokenizeUsage = "[--max-len N] [--data-dir DIR] TEXT..."

func init() {
	register(command{
		name:  "tokenize",
		usage: tokenizeUsage,
		short: "print each text's bert-base-uncased token ids as a JSON array, one per line",
		run:   runTokenize,
	})
}

// runTokenize is `mase tokenize`: it encodes each TEXT as [CLS] … [SEP]
// with the bert-base-uncased vocabulary and prints the ids.
func runTokenize(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: mase tokenize %s\n(flags come before the texts; use -- before a text that starts with -)\n", tokenizeUsage)
		fs.PrintDefaults()
	}
	maxLen := fs.Int("max-len", 0, "truncate each text to `N` ids, [CLS] and [SEP] included (at least 2; 0: the model's 512)")
	dataDir := fs.String("data-dir", "", "data `DIR` holding bert-base-uncased/vocab.txt (default: $GOMASE_DATA_DIR, else ../shared/data beside the gomase checkout)")
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("no TEXT given: usage: mase tokenize %s", tokenizeUsage)
	}
	if *maxLen < 0 || *maxLen == 1 {
		return fmt.Errorf("--max-len %d: want 0 (the model's %d) or at least 2 (room for [CLS] and [SEP])", *maxLen, tokenizer.ModelMaxLength)
	}
	defer useDataDir(*dataDir)()
	ctx, release := interruptible()
	defer release()
	tok, err := tokenizer.BertBaseUncasedContext(ctx)
	release()
	if err != nil {
		return err
	}
	batch, err := tok.EncodeBatch(fs.Args(), tokenizer.EncodeOptions{MaxLength: *maxLen, Truncation: true})
	if err != nil {
		return err
	}
	w := bufio.NewWriter(stdout)
	for _, ids := range batch.InputIDs {
		b, err := json.Marshal(ids)
		if err != nil {
			return err
		}
		w.Write(b)
		w.WriteByte('\n')
	}
	return w.Flush()
}
