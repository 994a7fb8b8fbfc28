package main

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/gomase/gomase/mase/hub"
	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/pretrained"
	"github.com/gomase/gomase/mase/workmem"
)

// trainSizes are the flags of mase train that size its working memory.
type trainSizes struct {
	pretrained                string
	batch, maxLen, evalBatch  int // evalBatch 0: the backend's
	limit, evalLimit          int // 0: every example
	loraRank, padToMultipleOf int
	freezeEmbeddings          bool
	// batchName names the batch size in the message ("" for --batch-size,
	// the flag; commands without that flag name their fixed batch).
	batchName string
}

// checkTrainMemory checks, before any data is read or model built, that
// fine-tuning fits (workmem.BertTraining): the weights, gradients and
// AdamW's two moments within limits.MaxModelBytes, and with the
// activations at the batch and length within the memory available. The
// model's config is bert-tiny's, or the --pretrained folder's (or cached
// repository's) config.json; a repository not in the cache yet is checked
// by its parameters once loaded. Sizes out of their bounds, and configs
// that do not read, are left to the checks that name them.
func checkTrainMemory(s trainSizes) error {
	if limits.BatchSize.Check(s.batch) != nil || s.loraRank < 0 || s.loraRank > limits.LoRARank.Max ||
		s.evalBatch < 0 || s.evalBatch > limits.BatchSize.Max || s.padToMultipleOf < 0 || s.padToMultipleOf > 1<<10 ||
		s.limit < 0 || s.evalLimit < 0 {
		return nil
	}
	cfg, named, ok := trainConfig(s.pretrained)
	if !ok || s.maxLen < 2 || s.maxLen > cfg.MaxPositionEmbeddings {
		return nil
	}
	device := onDevice("")
	// Batches are padded up to a multiple of 32 (Go) or 64 (XLA) tokens.
	multiple := int64(cmp.Or(s.padToMultipleOf, 64))
	seq := (int64(s.maxLen) + multiple - 1) / multiple * multiple
	evalBatch := s.evalBatch
	if evalBatch == 0 {
		evalBatch = s.batch
		if device {
			evalBatch = 64
		}
	}
	// A batch holds at most the examples kept (the Go backend does not pad
	// a short batch up; XLA's fixed shapes do).
	batch := s.batch
	if !device {
		batch = fewer(batch, s.limit)
		evalBatch = fewer(evalBatch, s.evalLimit)
	}
	e := workmem.BertTraining(cfg, workmem.Training{
		Batch:            limits.Dim{Name: cmp.Or(s.batchName, "--batch-size"), N: int64(batch)},
		Seq:              limits.Dim{Name: "--max-len", N: seq},
		EvalBatch:        limits.Dim{Name: "--eval-batch-size", N: int64(evalBatch)},
		LoRARank:         limits.Dim{Name: "--lora-rank", N: int64(s.loraRank)},
		FreezeEmbeddings: s.freezeEmbeddings,
		Where:            workmem.Where{WeightCopies: 2, OnDevice: device},
	})
	flags := []string{fmt.Sprintf("%s %d --max-len %d", cmp.Or(s.batchName, "--batch-size"), s.batch, s.maxLen)}
	if named {
		flags = append([]string{"--pretrained " + s.pretrained}, flags...)
	}
	if s.evalBatch > 0 {
		flags = append(flags, fmt.Sprintf("--eval-batch-size %d", s.evalBatch))
	}
	if s.loraRank > 0 {
		flags = append(flags, fmt.Sprintf("--lora-rank %d", s.loraRank))
	}
	return e.Check(strings.Join(flags, " "))
}

// fewer is n, or limit when that is set (above 0) and smaller.
func fewer(n, limit int) int {
	if limit > 0 && limit < n {
		return limit
	}
	return n
}

// trainConfig is the config of the model --pretrained starts from:
// bert-tiny's for off, auto and the labs' model (random or pretrained,
// the same sizes), else the config.json of the folder or of the cached
// repository (named true). ok is false when it is not at hand or does
// not read (the load says why).
func trainConfig(choice string) (cfg models.BertConfig, named, ok bool) {
	switch strings.TrimSpace(choice) {
	case "", pretrained.Off, pretrained.Auto, pretrained.LabsModel:
		return models.BertTinyConfig(), false, true
	}
	path, err := hub.Resolve(choice, "config.json", hub.Options{Offline: true})
	if err != nil {
		return cfg, true, false
	}
	raw, err := limits.ReadFile(path, limits.JSONConfig)
	if err != nil {
		return cfg, true, false
	}
	if cfg, _, err = pretrained.ParseConfig(raw, 2); err != nil {
		return cfg, true, false
	}
	return cfg, true, true
}
