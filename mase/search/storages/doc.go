// Package storages keeps search studies: InMemoryStorage (one process),
// JournalStorage (an append-only JSON-lines file under flock that several
// processes share and a study resumes from after a crash) and
// PostgresStorage (a database that workers on several machines share, with
// heartbeats). Open opens a journal or a database from a path or a
// postgresql:// URL. Each implements studydata.Storage.
package storages
