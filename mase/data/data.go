// Package data loads the labs' text-classification datasets (IMDb, SST-2)
// and turns them into tokenised, dynamically padded batches.
//
// It replaces what the MASE labs get from HuggingFace: load_dataset("imdb"),
// tokenizer(..., truncation=True) mapped over the dataset, and
// DataCollatorWithPadding behind the Trainer's shuffled sampler. The
// loaders read the real data from the data directory (package datadir),
// from a path or environment variable, from the cache, or download the
// official archives into the cache; see LoadIMDb, LoadIMDbSample and
// LoadSST2. Batches and Pretokenized.Batches yield batches; NumBatches
// gives the number of optimiser steps per epoch.
//
// Every order in this package is deterministic: loaders sort their
// examples, and shuffles use a fixed pseudo-random generator
// (SplitMix64 with Fisher–Yates) whose output depends only on the seed, on
// every platform and Go version.
package data

import (
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strings"
)

// Example is one labelled text.
type Example struct {
	// Text is the raw text, exactly as stored (IMDb reviews keep their
	// "<br />" tags, as in HF's dataset).
	Text string
	// Label is the class: 0 = negative, 1 = positive.
	Label int
	// Rating is the IMDb star rating (1–10) taken from the file name, or −1
	// when the source has none (SST-2).
	Rating int
	// ID says where the example came from: "train/pos/123_9" (IMDb: split,
	// folder and file stem of the original file) or "train.tsv:18" (SST-2:
	// file and line number).
	ID string
}

// Split is one named part of a dataset ("train", "dev", "test").
type Split struct {
	// Name is the split's name.
	Name string
	// Examples are the split's examples, in the loader's documented order.
	Examples []Example
}

// Len returns the number of examples.
func (s *Split) Len() int { return len(s.Examples) }

// Texts returns the examples' texts, in order.
func (s *Split) Texts() []string {
	out := make([]string, len(s.Examples))
	for i, e := range s.Examples {
		out[i] = e.Text
	}
	return out
}

// Labels returns the examples' labels, in order.
func (s *Split) Labels() []int {
	out := make([]int, len(s.Examples))
	for i, e := range s.Examples {
		out[i] = e.Label
	}
	return out
}

// LabelCounts returns how many examples carry each label.
func (s *Split) LabelCounts() map[int]int {
	c := map[int]int{}
	for _, e := range s.Examples {
		c[e.Label]++
	}
	return c
}

// Limit returns a deterministic, class-balanced subset of at most n
// examples, in the split's own order. The examples are shuffled with seed,
// each label (in increasing order) is given n/k places for k labels, the
// first n mod k labels one more, and each label fills its places with its
// first examples in the shuffled order; places a small class cannot fill
// go to the other classes. n ≥ Len() returns a copy of the whole split;
// n < 0 is an error, and 0 means "no limit".
func (s *Split) Limit(n int, seed uint64) (*Split, error) {
	if n < 0 {
		return nil, fmt.Errorf("limit %d for split %q is negative (allowed: 0 for no limit, or a positive number of examples)", n, s.Name)
	}
	if n == 0 || n >= len(s.Examples) {
		return &Split{Name: s.Name, Examples: slices.Clone(s.Examples)}, nil
	}
	order := make([]int, len(s.Examples))
	for i := range order {
		order[i] = i
	}
	newRNG(seed).shuffle(order)
	byLabel := map[int][]int{}
	for _, i := range order {
		l := s.Examples[i].Label
		byLabel[l] = append(byLabel[l], i)
	}
	labels := slices.Sorted(maps.Keys(byLabel))
	quota := make(map[int]int, len(labels))
	for j, l := range labels {
		quota[l] = n / len(labels)
		if j < n%len(labels) {
			quota[l]++
		}
	}
	// Places a class cannot fill pass to the next classes, round robin.
	spare := 0
	for _, l := range labels {
		if have := len(byLabel[l]); have < quota[l] {
			spare += quota[l] - have
			quota[l] = have
		}
	}
	for spare > 0 {
		moved := false
		for _, l := range labels {
			if spare > 0 && quota[l] < len(byLabel[l]) {
				quota[l]++
				spare--
				moved = true
			}
		}
		if !moved {
			break
		}
	}
	var keep []int
	for _, l := range labels {
		keep = append(keep, byLabel[l][:quota[l]]...)
	}
	slices.Sort(keep)
	out := &Split{Name: s.Name, Examples: make([]Example, len(keep))}
	for j, i := range keep {
		out.Examples[j] = s.Examples[i]
	}
	return out, nil
}

// Dataset is a loaded dataset: its splits and where they were read from.
type Dataset struct {
	// Name is "imdb", "imdb-sample" or "sst2".
	Name string
	// Source is the file or folder the splits were read from.
	Source string
	// Splits are the splits in their conventional order (train first).
	Splits []*Split
}

// SplitNames returns the names of the splits, in order.
func (d *Dataset) SplitNames() []string {
	out := make([]string, len(d.Splits))
	for i, s := range d.Splits {
		out[i] = s.Name
	}
	return out
}

// Split returns the split called name, or an error naming the splits the
// dataset has.
func (d *Dataset) Split(name string) (*Split, error) {
	for _, s := range d.Splits {
		if s.Name == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("dataset %s has no split %q (it has: %s)", d.Name, name, strings.Join(d.SplitNames(), ", "))
}

// Limit applies Split.Limit(n, seed) to every split in place; n = 0 keeps
// everything.
func (d *Dataset) Limit(n int, seed uint64) error {
	if n == 0 {
		return nil
	}
	for i, s := range d.Splits {
		l, err := s.Limit(n, seed)
		if err != nil {
			return err
		}
		d.Splits[i] = l
	}
	return nil
}

// rng is SplitMix64: tiny, fast and, unlike math/rand's helpers, fixed
// forever, so seeded orders never change.
type rng struct{ s uint64 }

func newRNG(seed uint64) *rng { return &rng{s: seed} }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a uniform integer in [0, n), n > 0 (Lemire's method).
func (r *rng) intn(n int) int {
	un := uint64(n)
	hi, lo := bits.Mul64(r.next(), un)
	if lo < un {
		thresh := -un % un
		for lo < thresh {
			hi, lo = bits.Mul64(r.next(), un)
		}
	}
	return int(hi)
}

// shuffle permutes xs uniformly (Fisher–Yates).
func (r *rng) shuffle(xs []int) {
	for i := len(xs) - 1; i > 0; i-- {
		j := r.intn(i + 1)
		xs[i], xs[j] = xs[j], xs[i]
	}
}
