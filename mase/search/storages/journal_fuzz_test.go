package storages

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/search/studydata"
)

// fuzzJournalPath is the file name a fuzzed journal reader names.
const fuzzJournalPath = "fuzz.jsonl"

// readJournalBytes runs the journal reader on data as if it were the whole
// file, as opening a journal does.
func readJournalBytes(data []byte) (*JournalStorage, error) {
	j := &JournalStorage{path: fuzzJournalPath, logger: slog.New(slog.NewTextHandler(io.Discard, nil)), state: newMemState(), warned: -1}
	return j, j.catchUpFrom(bytes.NewReader(data), int64(len(data)))
}

// stateSummary is the state a reader built, as text to compare.
func stateSummary(m *memState) string {
	var b strings.Builder
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range m.studies {
			if !yield(n) {
				return
			}
		}
	}) {
		s := m.studies[name]
		fmt.Fprintf(&b, "%q %v:", name, s.dir)
		for _, t := range s.trials {
			fmt.Fprintf(&b, " %d %v %v %v %v %v;", t.ft.Number, t.ft.State, t.ft.Value, t.ft.InternalParams, t.ft.UserAttrs, t.ft.SystemAttrs)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// seedJournal returns a journal as a study writes it: complete, pruned and
// failed trials with a grid point's system attributes, the failed trial's
// retry waiting, and an enqueued trial.
func seedJournal(f testing.TB) []byte {
	f.Helper()
	path := filepath.Join(f.TempDir(), "seed.jsonl")
	j, err := OpenJournal(path, slog.New(slog.DiscardHandler))
	if err != nil {
		f.Fatal(err)
	}
	defer j.Close()
	must := func(err error) {
		if err != nil {
			f.Helper()
			f.Fatal(err)
		}
	}
	_, _, err = j.CreateStudy("seed", studydata.Minimize)
	must(err)
	x := studydata.IntDistribution{Low: 1, High: 3, Step: 1}
	act := studydata.CategoricalDistribution{Choices: []any{"relu", "gelu"}}
	ends := []studydata.TrialState{studydata.Complete, studydata.Pruned, studydata.Fail, studydata.Complete}
	for i, end := range ends {
		point := func([]studydata.FrozenTrial, *studydata.FrozenTrial) (map[string]string, error) {
			return map[string]string{"grid": "0123abcd", "grid_id": fmt.Sprint(i)}, nil
		}
		ft, err := j.StartTrial("seed", point)
		must(err)
		must(j.SetParam("seed", ft.Number, "x", float64(i%3+1), x))
		must(j.SetParam("seed", ft.Number, "act", float64(i%2), act))
		must(j.SetUserAttr("seed", ft.Number, "note", "seed"))
		value, msg := float64(i%3+1), ""
		if end != studydata.Complete {
			value, msg = math.NaN(), end.String()+" on purpose"
		}
		_, _, err = j.FinishTrial("seed", ft.Number, end, value, msg, 1)
		must(err)
	}
	_, err = j.EnqueueTrial("seed", studydata.FrozenTrial{State: studydata.Waiting,
		Distributions:  map[string]studydata.Distribution{"x": x, "act": act},
		InternalParams: map[string]float64{"x": 2, "act": 1},
		SystemAttrs:    map[string]string{studydata.FixedParamsAttr: `{"act":"gelu","x":2}`}})
	must(err)
	b, err := os.ReadFile(path)
	must(err)
	return b
}

// FuzzJournalRead: whatever a file holds, the journal reader either refuses
// it in one line naming it, or reads it without a panic, stopping just after
// a newline with the rest as its tail — or, when the rest is a complete
// record that lacks its newline, at the end, having read it. Reading it in
// two steps (another process appended meanwhile) builds the same state. A
// tail taken as a cut-short record is removable: the file without it reads
// the same, and a record appended after it is read. A complete last record
// reads the same once its newline is added.
func FuzzJournalRead(f *testing.F) {
	journal := seedJournal(f)
	legacy := bytes.TrimPrefix(journal, []byte(JournalHeaderLine))
	f.Add(journal)
	f.Add(legacy)
	for _, cut := range []int{1, 10, len(JournalHeaderLine) + 30, len(journal) / 2, len(journal) - 1} {
		f.Add(journal[:cut])
		f.Add(legacy[:min(cut, len(legacy))])
	}
	f.Add(append(slices.Clone(journal), "garbage\n{\"op\":\"set_param\",\"study\":\"seed\",\"trial\":99}\n\x00\x01"...))
	f.Add([]byte{})
	for _, c := range ForeignFiles {
		f.Add([]byte(c.Content))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := readJournalBytes(data)
		if err != nil {
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, fuzzJournalPath) {
				t.Fatalf("refusal %q: want one line naming the file", msg)
			}
			return
		}
		if j.offset+j.tail != int64(len(data)) || bytes.IndexByte(data[j.offset:], '\n') >= 0 ||
			j.offset > 0 && data[j.offset-1] != '\n' && !j.unterminated || j.unterminated && (j.tail != 0 || data[j.offset-1] == '\n') {
			t.Fatalf("read up to %d with a tail of %d bytes (unterminated %v), in %d bytes", j.offset, j.tail, j.unterminated, len(data))
		}
		want := stateSummary(j.state)
		if j.unterminated {
			fixed := append(slices.Clone(data), '\n')
			jf, err := readJournalBytes(fixed)
			if err != nil || jf.unterminated || jf.tail != 0 || stateSummary(jf.state) != want {
				t.Fatalf("with the newline added: %v, tail %d, state\n%s\nwant\n%s", err, jf.tail, stateSummary(jf.state), want)
			}
		}

		// In two steps, split at a newline in the middle.
		if i := bytes.IndexByte(data[len(data)/2:], '\n'); i >= 0 {
			k := len(data)/2 + i + 1
			j2, err := readJournalBytes(data[:k])
			if err != nil {
				t.Fatalf("the first %d bytes: %v", k, err)
			}
			if err := j2.catchUpFrom(bytes.NewReader(data), int64(len(data))); err != nil {
				t.Fatalf("the rest after %d bytes: %v", k, err)
			}
			if got := stateSummary(j2.state); got != want {
				t.Fatalf("read in two steps:\n%s\nin one:\n%s", got, want)
			}
		}

		if j.tail == 0 || !j.tailCut {
			return
		}
		repaired := data[:j.offset]
		j3, err := readJournalBytes(repaired)
		if err != nil || j3.tail != 0 || stateSummary(j3.state) != want {
			t.Fatalf("without its cut-short tail: %v, tail %d, state\n%s\nwant\n%s", err, j3.tail, stateSummary(j3.state), want)
		}
		// What a writer appends after the repair (the header first when
		// nothing is left) is read.
		next := slices.Clone(repaired)
		if len(next) == 0 {
			next = append(next, JournalHeaderLine...)
		}
		next = append(next, `{"op":"create_study","study":"fuzz-added","v":1,"direction":"maximize"}`+"\n"...)
		j4, err := readJournalBytes(next)
		if err != nil {
			t.Fatalf("after appending a record: %v", err)
		}
		if strings.Contains(want, `"fuzz-added"`) {
			return // the study was there already
		}
		if s, ok := j4.state.studies["fuzz-added"]; !ok || s.dir != studydata.Maximize {
			t.Fatalf("the record appended after the repair was not read")
		}
	})
}

// TestJournalEveryCutLoads: a journal cut as a writer killed mid-write
// leaves it (with the header, or written before it) — at every byte of its
// first and last 300, and around every newline — is taken as a journal
// whose tail is a cut-short record, and holds what its complete lines hold;
// cut just before a newline, its last record is complete and is read too.
func TestJournalEveryCutLoads(t *testing.T) {
	journal := seedJournal(t)
	for _, data := range [][]byte{journal, bytes.TrimPrefix(journal, []byte(JournalHeaderLine))} {
		var cuts []int
		for n := 1; n < len(data); n++ {
			if n <= 300 || n >= len(data)-300 || bytes.IndexByte(data[max(0, n-3):min(len(data), n+2)], '\n') >= 0 {
				cuts = append(cuts, n)
			}
		}
		complete := map[int]string{} // the state of the first n bytes, when they end with a newline
		for _, n := range cuts {
			j, err := readJournalBytes(data[:n])
			if err != nil {
				t.Fatalf("cut after %d bytes: %v", n, err)
			}
			last := bytes.LastIndexByte(data[:n], '\n') + 1
			if data[n] == '\n' { // only the newline is missing
				if j.offset != int64(n) || !j.unterminated || j.tail != 0 {
					t.Fatalf("cut just before a newline after %d bytes: read up to %d, unterminated %v, tail %d", n, j.offset, j.unterminated, j.tail)
				}
				last = n + 1
			} else if j.offset != int64(last) || j.tail > 0 && !j.tailCut {
				t.Fatalf("cut after %d bytes: read up to %d (want %d), tail of %d bytes taken as cut-short: %v", n, j.offset, last, j.tail, j.tailCut)
			}
			want, ok := complete[last]
			if !ok {
				whole, err := readJournalBytes(data[:last])
				if err != nil {
					t.Fatalf("the first %d bytes: %v", last, err)
				}
				want = stateSummary(whole.state)
				complete[last] = want
			}
			if got := stateSummary(j.state); got != want {
				t.Fatalf("cut after %d bytes: the state differs from that of its complete lines:\n%s\nwant\n%s", n, got, want)
			}
		}
	}
}
