package data

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzReadSST2TSV: any bytes read as an SST-2 file give rows or an error
// naming the file, never a panic, and no sentence longer than MaxSST2Line.
func FuzzReadSST2TSV(f *testing.F) {
	f.Add([]byte("sentence\tlabel\na fine film \t1\n"))
	f.Add([]byte("sentence\tlabel\r\nfirst \t0\r\nlast\t1"))
	f.Add([]byte("sentence\tlabel\n\t\t1\n\n"))
	f.Add([]byte{0xff, '\n', '\t', '1'})
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := readSST2TSV(bytes.NewReader(raw), "train", "train.tsv", "x/train.tsv")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "x/train.tsv") {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		for _, e := range s.Examples {
			if len(e.Text) > MaxSST2Line || (e.Label != 0 && e.Label != 1) {
				t.Fatalf("row %+v", e)
			}
		}
	})
}

// FuzzReadIMDbTar: any bytes read as an IMDb archive give a dataset or
// an error, never a panic, and never more text than the bound inflates.
func FuzzReadIMDbTar(f *testing.F) {
	f.Add(tarGz(f, tinyIMDb()))
	f.Add([]byte{0x1f, 0x8b, 0, 0})
	f.Add(make([]byte, 1024))
	f.Fuzz(func(t *testing.T, raw []byte) {
		const bound = 1 << 20
		ds, err := readIMDbTarWithin(bytes.NewReader(raw), "fuzz.tar.gz", bound)
		if err != nil {
			return
		}
		total := 0
		for _, s := range ds.Splits {
			for _, e := range s.Examples {
				total += len(e.Text)
			}
		}
		if total > bound {
			t.Fatalf("%d bytes of reviews from a bound of %d", total, bound)
		}
	})
}
