package labsetup

import (
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/gomase/gomase/mase/data"
	"github.com/gomase/gomase/mase/lab/compress"
	"github.com/gomase/gomase/mase/lab/finetune"
	"github.com/gomase/gomase/mase/tokenizer"
	"github.com/gomase/gomase/mase/train"
)

// Cache is a lab notebook's cache: the folder NAME_cache beside the
// notebook's checkpoints (CheckpointDir), holding what one cell works out
// for the later ones. GoNB runs every cell as a program of its own and
// keeps the cell's declarations (functions, types), not the values its
// body computes, so a value reaches a later cell only through a file: the
// start (Start), the tokenised data (Splits) and results (Save, Load).
type Cache struct {
	// Dir is the cache's folder.
	Dir string
	// name is the notebook's ("lab1").
	name string
}

// OpenCache opens (creating it if needed) the cache of the named notebook
// ("lab1"): CheckpointDir/lab1_cache.
func OpenCache(notebook string) (*Cache, error) {
	base, err := Checkpoint(notebook + "_cache")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, fmt.Errorf("%s's cache: %w", notebook, err)
	}
	return &Cache{Dir: base, name: notebook}, nil
}

// Reset empties the cache: a notebook's first cell does, so that a run
// never reads what an earlier run (another start, other data) left.
func (c *Cache) Reset() error {
	if err := os.RemoveAll(c.Dir); err != nil {
		return fmt.Errorf("emptying %s: %w", c.Dir, err)
	}
	return os.MkdirAll(c.Dir, 0o755)
}

// path is the file of a key.
func (c *Cache) path(key, ext string) string { return filepath.Join(c.Dir, key+ext) }

// Save stores v (JSON) under key, replacing what was there.
func (c *Cache) Save(key string, v any) error {
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("cache %s: %w", key, err)
	}
	return os.WriteFile(c.path(key, ".json"), append(js, '\n'), 0o644)
}

// Has reports whether key is stored.
func (c *Cache) Has(key string) bool {
	_, err := os.Stat(c.path(key, ".json"))
	return err == nil
}

// Load reads key into v; a key not stored yet is an error that says to run
// the cell that stores it first.
func (c *Cache) Load(key string, v any) error {
	js, err := os.ReadFile(c.path(key, ".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("the %s cache (%s) has no %q yet: run the notebook's earlier cells first, from the first one", c.name, c.Dir, key)
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(js, v); err != nil {
		return fmt.Errorf("%s: %w", c.path(key, ".json"), err)
	}
	return nil
}

// startKey is the key of the notebook's Start.
const startKey = "start"

// FindStart is FindStart (the first of names that exists, else Tutorial
// 2's checkpoint, trained now with progress when there is none) stored as
// the cache's start for Session.
func (c *Cache) FindStart(progress train.Progress, names ...string) (Start, error) {
	st, err := FindStart(progress, names...)
	if err != nil {
		return Start{}, err
	}
	return st, c.Save(startKey, st)
}

// Start is the start FindStart stored.
func (c *Cache) Start() (Start, error) {
	var st Start
	err := c.Load(startKey, &st)
	return st, err
}

// splits is what the cache keeps of a dataset: every example's token ids
// (untruncated) and label.
type splits struct {
	TrainIDs, TestIDs       [][]int32
	TrainLabels, TestLabels []int32
}

// Splits returns o's training and test splits, tokenised with
// bert-base-uncased: from the cache when an earlier cell stored them,
// otherwise loaded (finetune.LoadSplits), tokenised and stored.
func (c *Cache) Splits(o finetune.Options) (trainData, testData *data.Pretokenized, err error) {
	file := c.path(fmt.Sprintf("splits_%s_%d_%d_%d", o.Dataset, o.Limit, o.EvalLimit, o.Seed), ".gob")
	var s splits
	if f, err := os.Open(file); err == nil {
		defer f.Close()
		if err := gob.NewDecoder(f).Decode(&s); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", file, err)
		}
		return fromIDs(s.TrainIDs, s.TrainLabels), fromIDs(s.TestIDs, s.TestLabels), nil
	}
	trainSplit, testSplit, err := finetune.LoadSplits(o)
	if err != nil {
		return nil, nil, err
	}
	tok, err := tokenizer.BertBaseUncased()
	if err != nil {
		return nil, nil, err
	}
	trainData, testData = data.Pretokenize(trainSplit.Examples, tok), data.Pretokenize(testSplit.Examples, tok)
	s.TrainIDs, s.TrainLabels = idsAndLabels(trainData, trainSplit.Examples)
	s.TestIDs, s.TestLabels = idsAndLabels(testData, testSplit.Examples)
	f, err := os.Create(file)
	if err != nil {
		return nil, nil, err
	}
	if err := gob.NewEncoder(f).Encode(s); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	return trainData, testData, f.Close()
}

// idsAndLabels are p's token ids and the examples' labels.
func idsAndLabels(p *data.Pretokenized, examples []data.Example) ([][]int32, []int32) {
	ids, labels := make([][]int32, p.Len()), make([]int32, p.Len())
	for i := range ids {
		ids[i], labels[i] = p.IDs(i), int32(examples[i].Label)
	}
	return ids, labels
}

// fromIDs rebuilds a Pretokenized from stored ids: each example's text is
// its index, which indexEncoder maps back to its ids.
func fromIDs(ids [][]int32, labels []int32) *data.Pretokenized {
	examples := make([]data.Example, len(ids))
	for i := range examples {
		examples[i] = data.Example{Text: strconv.Itoa(i), Label: int(labels[i]), Rating: -1}
	}
	return data.Pretokenize(examples, indexEncoder(ids))
}

// indexEncoder encodes the text "i" as the stored ids of example i.
type indexEncoder [][]int32

func (e indexEncoder) Encode(text string) []int32 {
	i, _ := strconv.Atoi(text)
	return e[i]
}

// Session is the compress.Session every experiment of a notebook shares:
// the cache's start (its checkpoint, and its training setting Start.Config),
// o's splits from the cache, and Batch(o). Set the progress reporters on
// the result.
func (c *Cache) Session(o finetune.Options) (*compress.Session, error) {
	st, err := c.Start()
	if err != nil {
		return nil, err
	}
	trainData, testData, err := c.Splits(o)
	if err != nil {
		return nil, err
	}
	return &compress.Session{Checkpoint: st.Checkpoint, Train: trainData, Test: testData, Batch: Batch(o), Config: st.Config()}, nil
}
