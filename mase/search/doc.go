// Package search is an Optuna-like hyper-parameter search library, the
// substrate of the NAS (Lab 2) and mixed-precision (Lab 3) searches.
//
// A Study minimises or maximises an Objective: each Trial suggests its
// parameters (SuggestInt, SuggestFloat, SuggestCategorical), and the study's
// Sampler picks their values: RandomSampler, GridSampler, or TPESampler
// (Optuna's default univariate TPE). Trials end Complete, Pruned (the
// objective returned an error wrapping ErrPruned) or Fail (any other error,
// a panic, NaN or ±Inf).
//
// Trials live in a Storage (package studydata holds the record a study
// keeps and the Storage interface; FrozenTrial, the states and directions
// are re-exported here): package storages has the in-memory, journal-file
// and PostgreSQL storages, and package optuna reads and writes Optuna's
// journal files. A failed trial can be run again with the same parameters
// (Config.RetryFailed), and trials can be enqueued (Study.EnqueueTrial).
//
//	study, err := search.NewStudy(search.Config{Name: "nas", Direction: search.Maximize, Sampler: sampler})
//	err = study.Optimize(ctx, func(t *search.Trial) (float64, error) {
//		hidden, err := search.Categorical(t, "hidden_size", []int{128, 192, 256, 384, 512})
//		...
//		return accuracy, nil
//	}, 100, 24*time.Hour)
//	best, err := study.BestTrial()
//
// See docs/search.md for the algorithms, the journal format, the PostgreSQL
// tables and benchmarks.
package search
