package search

import "github.com/gomase/gomase/mase/search/studydata"

// The record of a study (package studydata) under the names a study's user
// reaches for, so that one import serves an objective, a sampler and the
// trials a study returns.
type (
	// FrozenTrial is the record of a trial as the storage holds it.
	FrozenTrial = studydata.FrozenTrial
	// TrialState is the life-cycle state of a trial.
	TrialState = studydata.TrialState
	// Direction says whether a study minimises or maximises its objective.
	Direction = studydata.Direction
	// Distribution is the range of values a parameter takes.
	Distribution = studydata.Distribution
	// FloatDistribution is a float parameter's range.
	FloatDistribution = studydata.FloatDistribution
	// IntDistribution is an int parameter's range.
	IntDistribution = studydata.IntDistribution
	// CategoricalDistribution is a categorical parameter's choices.
	CategoricalDistribution = studydata.CategoricalDistribution
	// Storage holds studies and their trials (studydata.Storage).
	Storage = studydata.Storage
)

// Trial states and study directions (studydata's).
const (
	Running  = studydata.Running
	Complete = studydata.Complete
	Pruned   = studydata.Pruned
	Fail     = studydata.Fail
	Waiting  = studydata.Waiting

	Minimize = studydata.Minimize
	Maximize = studydata.Maximize
)

// ParseDirection parses "minimize" or "maximize" ("min" and "max" too).
func ParseDirection(s string) (Direction, error) { return studydata.ParseDirection(s) }
