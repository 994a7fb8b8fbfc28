package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/gomase/gomase/mase/datadir"
	"github.com/gomase/gomase/mase/tokenizer"
)

func init() {
	register(command{
		name:  "tokenize",
		usage: "[--max-len N] [--data-dir DIR] TEXT...",
		short: "print each text's bert-base-uncased token ids as a JSON array, one per line",
		run:   runTokenize,
	})
}

func runTokenize(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	maxLen := fs.Int("max-len", 0, "truncate to this many tokens, [CLS] and [SEP] included (0: no truncation below 512)")
	dataDir := fs.String("data-dir", "", "data directory holding bert-base-uncased/vocab.txt (default: ../shared/data beside the checkout, or $GOMASE_DATA_DIR)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("no TEXT given: usage: mase tokenize [--max-len N] TEXT...")
	}
	if *maxLen < 0 || *maxLen == 1 {
		return fmt.Errorf("--max-len %d: want 0 (model maximum, 512) or at least 2", *maxLen)
	}
	if *dataDir != "" {
		datadir.SetDir(*dataDir)
		defer datadir.SetDir("")
	}
	tok, err := tokenizer.BertBaseUncased()
	if err != nil {
		return err
	}
	batch, err := tok.EncodeBatch(fs.Args(), tokenizer.EncodeOptions{MaxLength: *maxLen, Truncation: true})
	if err != nil {
		return err
	}
	for _, ids := range batch.InputIDs {
		b, _ := json.Marshal(ids)
		fmt.Fprintln(stdout, string(b))
	}
	return nil
}
