// Package optuna converts studies to and from Optuna's journal file format
// (JournalFileStorage, Optuna 3.1 to 4.x): ExportJournal writes a study of
// any storage as a journal Optuna loads, ImportJournal replays an Optuna
// journal into a storage. It reads data only; nothing in a file is run.
package optuna
