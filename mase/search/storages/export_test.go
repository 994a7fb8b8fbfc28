package storages

import (
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// What the external tests (package storages_test, which run studies) reach
// inside the storages.

type (
	Owner         = owner
	JournalRecord = journalRecord
)

const (
	OpCreateTrial   = opCreateTrial
	OpFinishTrial   = opFinishTrial
	PGSchemaVersion = pgSchemaVersion
)

var (
	SelfOwner      = selfOwner
	PGMigrations   = pgMigrations
	HeartbeatGrace = heartbeatGrace
	URLSecrets     = urlSecrets
	RedactURL      = redactURL
)

// Pool is p's connection pool.
func Pool(p *PostgresStorage) *pgxpool.Pool { return p.pool }

// As is p's database seen by a worker of owner o.
func As(p *PostgresStorage, o owner) *PostgresStorage {
	return &PostgresStorage{pool: p.pool, where: p.where, url: p.url, logger: p.logger, self: o}
}

// SetHost makes p's worker claim another host.
func SetHost(p *PostgresStorage, host string) { p.self.Host = host }

// SetJournalHost makes j's worker claim another host: it judges the trials
// of this machine's processes as another machine would.
func SetJournalHost(j *JournalStorage, host string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.self.Host = host
}

// SetMaxJournalLine bounds journal lines at n bytes until restore is called.
func SetMaxJournalLine(n int) (restore func()) {
	old := maxJournalLine
	maxJournalLine = n
	return func() { maxJournalLine = old }
}

// TempPrefix begins the names of the temporary journals CreateJournal makes
// for path in process o.
func TempPrefix(path string, o owner) string { return tempPrefix(path, o) }

// KeptTrials is the number of the first trial p keeps of study, and how
// many it keeps; ok is false when it keeps none.
func KeptTrials(p *PostgresStorage, study string) (from, n int, ok bool) {
	k := p.keptTrials[study]
	if k == nil {
		return 0, 0, false
	}
	return k.from, len(k.trials), true
}

// OrphanTrial writes a trial of study owned by o into j, as a worker that
// crashed would leave it, and returns its number.
func OrphanTrial(j *JournalStorage, study string, o owner) (int, error) {
	var number int
	err := j.update(func(emit func(*journalRecord) error) error {
		st, err := j.state.study(study)
		if err != nil {
			return err
		}
		number = len(st.trials)
		now := time.Now()
		return emit(&journalRecord{Op: opCreateTrial, Study: study, Trial: &number, Time: &now, Owner: &o})
	})
	return number, err
}
