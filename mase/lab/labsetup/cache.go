package labsetup

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gomase/gomase/internal/atomicfile"
	"github.com/gomase/gomase/mase/data"
	"github.com/gomase/gomase/mase/lab/compress"
	"github.com/gomase/gomase/mase/lab/finetune"
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
	return atomicfile.Write(atomicfile.File{Path: c.path(key, ".json"), Data: append(js, '\n')})
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

// Splits returns o's training and test splits, tokenised with
// bert-base-uncased: from the cache when an earlier cell stored them,
// otherwise loaded and tokenised (Splits) and stored
// (data.Pretokenized.WriteFile, read back with data.ReadPretokenized).
func (c *Cache) Splits(o finetune.Options) (trainData, testData *data.Pretokenized, err error) {
	key := fmt.Sprintf("splits_%s_%d_%d_%d", o.Dataset, o.Limit, o.EvalLimit, o.Seed)
	trainFile, testFile := c.path(key+"_train", ".tokens"), c.path(key+"_test", ".tokens")
	trainData, err = data.ReadPretokenized(trainFile)
	if err == nil {
		testData, err = data.ReadPretokenized(testFile)
	}
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return trainData, testData, err
	}
	if trainData, testData, err = Splits(o); err != nil {
		return nil, nil, err
	}
	if err := trainData.WriteFile(trainFile); err != nil {
		return nil, nil, err
	}
	return trainData, testData, testData.WriteFile(testFile)
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
