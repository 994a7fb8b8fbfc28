// Package studydata is the record a search study keeps and every storage
// holds: parameter distributions (float, int, categorical, with their
// internal and wire forms), trial states, directions, FrozenTrial, and the
// Storage interface a storage implements (with the retry and whole-trial
// rules all storages share). It imports nothing of gomase: package search
// runs studies and samplers on it, and the storages keep it.
package studydata
