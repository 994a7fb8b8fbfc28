package search

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PostgresStorage keeps studies in a PostgreSQL database, so that workers on
// several machines can share a study. Its tables are named gomase_*, so they
// may live beside other applications' tables (Optuna's, say); gomase creates
// them on first use and upgrades them when a newer gomase opens an older
// schema.
//
// Every change is one transaction: a killed worker never leaves a half-written
// trial. Trial numbers are allocated under a lock on the study's row, so they
// stay unique and consecutive (0, 1, 2, …) whatever the number of workers.
//
// A Running trial whose process is gone is marked Fail by NewStudy and at the
// start of Optimize (see failStale): on the same host the owning process is
// looked up as with a journal; for other hosts the trial's heartbeat is used,
// which the owner refreshes when SetHeartbeat is on.
//
// A PostgresStorage is safe for concurrent use by several goroutines.
type PostgresStorage struct {
	pool   *pgxpool.Pool
	where  string // host:port/database, for messages
	url    string // the URL with its password masked
	logger *slog.Logger
	self   owner  // this process; a test may pretend to be on another host
	id     string // random: marks the trials this storage created, for its heartbeat

	beatMu     sync.Mutex // serialises SetHeartbeat and Close
	keptMu     sync.Mutex
	keptTrials map[string]*pgKept // finished trials read, by study name

	mu       sync.Mutex
	closed   bool
	interval time.Duration // heartbeat interval; 0: off
	stopBeat context.CancelFunc
	beatDone chan struct{}
}

// pgSchemaVersion is the version of the tables this gomase writes;
// pgMigrations[v] upgrades version v to v+1.
const pgSchemaVersion = 2

var pgMigrations = []string{
	0: `
CREATE TABLE gomase_schema_version (
	only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
	version integer NOT NULL
);
CREATE TABLE gomase_studies (
	id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	name text NOT NULL UNIQUE,
	direction text NOT NULL CHECK (direction IN ('minimize', 'maximize')),
	next_trial integer NOT NULL DEFAULT 0,
	created timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE gomase_trials (
	study_id bigint NOT NULL REFERENCES gomase_studies (id) ON DELETE CASCADE,
	number integer NOT NULL CHECK (number >= 0),
	state text NOT NULL CHECK (state IN ('running', 'complete', 'pruned', 'fail')),
	value double precision,
	message text NOT NULL DEFAULT '',
	recovered boolean NOT NULL DEFAULT false,
	started timestamptz NOT NULL,
	finished timestamptz,
	owner_host text NOT NULL DEFAULT '',
	owner_pid integer NOT NULL DEFAULT 0,
	owner_boot text NOT NULL DEFAULT '',
	owner_start bigint NOT NULL DEFAULT 0,
	owner_session text NOT NULL DEFAULT '',
	heartbeat timestamptz NOT NULL DEFAULT now(),
	heartbeat_ms bigint CHECK (heartbeat_ms > 0),
	PRIMARY KEY (study_id, number),
	CHECK ((state = 'complete') = (value IS NOT NULL)),
	CHECK ((state = 'running') = (finished IS NULL))
);
CREATE INDEX gomase_trials_running ON gomase_trials (owner_session) WHERE state = 'running';
CREATE TABLE gomase_trial_params (
	study_id bigint NOT NULL,
	number integer NOT NULL,
	name text NOT NULL,
	value double precision NOT NULL,
	distribution json NOT NULL,
	PRIMARY KEY (study_id, number, name),
	FOREIGN KEY (study_id, number) REFERENCES gomase_trials ON DELETE CASCADE
);
CREATE TABLE gomase_trial_user_attrs (
	study_id bigint NOT NULL,
	number integer NOT NULL,
	key text NOT NULL,
	value json NOT NULL,
	PRIMARY KEY (study_id, number, key),
	FOREIGN KEY (study_id, number) REFERENCES gomase_trials ON DELETE CASCADE
);
CREATE TABLE gomase_trial_system_attrs (
	study_id bigint NOT NULL,
	number integer NOT NULL,
	key text NOT NULL,
	value text NOT NULL,
	PRIMARY KEY (study_id, number, key),
	FOREIGN KEY (study_id, number) REFERENCES gomase_trials ON DELETE CASCADE
);`,
	// Version 2: waiting trials (enqueued retries and imported ones), which
	// have no start time yet. The checks of gomase_trials are made again,
	// named, whatever names version 1 gave them.
	1: `
DO $$
DECLARE c record;
BEGIN
	FOR c IN SELECT conname FROM pg_constraint WHERE conrelid = 'gomase_trials'::regclass AND contype = 'c' LOOP
		EXECUTE format('ALTER TABLE gomase_trials DROP CONSTRAINT %I', c.conname);
	END LOOP;
END $$;
ALTER TABLE gomase_trials ALTER COLUMN started DROP NOT NULL;
ALTER TABLE gomase_trials
	ADD CONSTRAINT gomase_trials_number_check CHECK (number >= 0),
	ADD CONSTRAINT gomase_trials_state_check CHECK (state IN ('running', 'complete', 'pruned', 'fail', 'waiting')),
	ADD CONSTRAINT gomase_trials_value_check CHECK ((state = 'complete') = (value IS NOT NULL)),
	ADD CONSTRAINT gomase_trials_finished_check CHECK ((state IN ('running', 'waiting')) = (finished IS NULL)),
	ADD CONSTRAINT gomase_trials_started_check CHECK (state = 'waiting' OR started IS NOT NULL),
	ADD CONSTRAINT gomase_trials_heartbeat_ms_check CHECK (heartbeat_ms > 0);
CREATE INDEX gomase_trials_waiting ON gomase_trials (study_id, number) WHERE state = 'waiting';`,
}

// pgMigrationLock is the advisory lock key under which the schema is checked
// and migrated, so that workers opening a new database at once create it once.
const pgMigrationLock = 0x676f6d617365 // "gomase"

// Time limits of opening a storage and of one operation.
const (
	pgOpenTimeout = 30 * time.Second
	pgOpTimeout   = 2 * time.Minute
)

// IsPostgresURL reports whether spec is a postgresql:// or postgres:// URL.
func IsPostgresURL(spec string) bool {
	s := strings.ToLower(spec)
	return strings.HasPrefix(s, "postgresql://") || strings.HasPrefix(s, "postgres://")
}

// StorageCloser is a Storage to close when done: what OpenStorage returns.
// String names it (a journal's path, a database URL without its password).
type StorageCloser interface {
	Storage
	Close() error
	String() string
}

// OpenStorage opens the storage spec names: a postgresql:// or postgres://
// URL opens a PostgresStorage (OpenPostgres), anything else is the path of a
// journal file (OpenJournal).
func OpenStorage(spec string, logger *slog.Logger) (StorageCloser, error) {
	if IsPostgresURL(spec) {
		p, err := OpenPostgres(spec, logger)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
	j, err := OpenJournal(spec, logger)
	if err != nil {
		return nil, err
	}
	return j, nil
}

// OpenPostgres connects to the PostgreSQL database of a postgresql:// or
// postgres:// URL (postgres://user:password@host:port/database?options, as
// libpq takes it; a host=/dir option reaches a Unix socket), creates gomase's
// tables or upgrades them to this gomase's schema, and returns the storage.
// Warnings (a failed heartbeat) go to logger, or to slog.Default() when
// logger is nil. Errors are one line and never show the password. Close the
// storage when done.
func OpenPostgres(rawURL string, logger *slog.Logger) (*PostgresStorage, error) {
	if logger == nil {
		logger = slog.Default()
	}
	secrets := urlSecrets(rawURL)
	if !IsPostgresURL(rawURL) {
		return nil, fmt.Errorf("search: OpenPostgres needs a postgresql:// or postgres:// URL, not %q", mask(rawURL, secrets))
	}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		reason := err.Error()
		if _, after, ok := strings.Cut(reason, "`: "); ok && strings.HasPrefix(reason, "cannot parse `") {
			reason = after
		}
		return nil, fmt.Errorf("search: malformed PostgreSQL URL %s: %s", mask(rawURL, secrets), oneLine(mask(reason, secrets)))
	}
	cc := cfg.ConnConfig
	if cc.RuntimeParams["application_name"] == "" {
		cc.RuntimeParams["application_name"] = "gomase search"
	}
	p := &PostgresStorage{
		where:  net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port))) + "/" + cc.Database,
		url:    redactURL(rawURL, secrets),
		logger: logger,
		self:   selfOwner(),
		id:     newSessionID(),
	}
	ctx, cancel := context.WithTimeout(context.Background(), pgOpenTimeout)
	defer cancel()
	p.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("search: PostgreSQL %s: %s", p.where, oneLine(mask(err.Error(), secrets)))
	}
	if err := p.pool.Ping(ctx); err != nil {
		p.pool.Close()
		return nil, connectError(ctx, err, cc.Host, cc.Port, cc.User, cc.Database, secrets)
	}
	if err := p.migrate(ctx); err != nil {
		p.pool.Close()
		return nil, err
	}
	return p, nil
}

// connectError turns a failed first connection into one line naming the
// server and what went wrong.
func connectError(ctx context.Context, err error, host string, port uint16, user, db string, secrets []string) error {
	addr := net.JoinHostPort(host, strconv.Itoa(int(port)))
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "28P01" || pgErr.Code == "28000": // invalid_password, invalid_authorization_specification
			return fmt.Errorf("search: PostgreSQL at %s refused user %q: %s (SQLSTATE %s)", addr, user, oneLine(pgErr.Message), pgErr.Code)
		case pgErr.Code == "3D000": // invalid_catalog_name
			return fmt.Errorf("search: PostgreSQL at %s has no database %q; create it (createdb %s) or name another in the URL", addr, db, db)
		}
		return fmt.Errorf("search: PostgreSQL at %s: %s (SQLSTATE %s)", addr, oneLine(mask(pgErr.Message, secrets)), pgErr.Code)
	}
	reason := ""
	var opErr *net.OpError
	var dnsErr *net.DNSError
	switch {
	case ctx.Err() != nil:
		reason = fmt.Sprintf("no answer within %v", pgOpenTimeout)
	case errors.As(err, &dnsErr):
		reason = dnsErr.Error()
	case errors.As(err, &opErr):
		reason = opErr.Err.Error()
	default:
		reason = err.Error()
		if _, after, ok := strings.Cut(reason, "`: "); ok && strings.HasPrefix(reason, "failed to connect to `") {
			reason = after
		}
		// pgx names the address tried, "host:port (host): ", which the message already says.
		if rest, ok := strings.CutPrefix(reason, addr+" ("); ok {
			if _, after, ok := strings.Cut(rest, "): "); ok {
				reason = after
			}
		}
	}
	return fmt.Errorf("search: cannot connect to PostgreSQL at %s: %s", addr, oneLine(mask(reason, secrets)))
}

// migrate creates or upgrades the tables, under an advisory lock, and
// refuses a schema newer than this gomase's.
func (p *PostgresStorage) migrate(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(pgMigrationLock)); err != nil {
			return err
		}
		version := 0
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT to_regclass('gomase_schema_version') IS NOT NULL").Scan(&exists); err != nil {
			return err
		}
		if exists {
			err := tx.QueryRow(ctx, "SELECT version FROM gomase_schema_version").Scan(&version)
			if errors.Is(err, pgx.ErrNoRows) {
				return pgInvalid{errors.New("table gomase_schema_version is empty; it should hold the schema version")}
			}
			if err != nil {
				return err
			}
		}
		if version > pgSchemaVersion {
			return pgInvalid{fmt.Errorf("gomase schema version %d is newer than this gomase supports (%d); upgrade gomase", version, pgSchemaVersion)}
		}
		if version == pgSchemaVersion {
			return nil
		}
		for v := version; v < pgSchemaVersion; v++ {
			if _, err := tx.Exec(ctx, pgMigrations[v]); err != nil {
				return fmt.Errorf("creating or upgrading the schema from version %d to %d: %w", v, v+1, err)
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO gomase_schema_version (version) VALUES ($1)
			ON CONFLICT (only_row) DO UPDATE SET version = EXCLUDED.version`, pgSchemaVersion)
		if err == nil && version > 0 {
			p.logger.Info("search: upgraded the gomase tables", "database", p.where, "from", version, "to", pgSchemaVersion)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("search: PostgreSQL %s: %s", p.where, oneLine(unwrapInvalid(err).Error()))
	}
	return nil
}

// String returns the storage's URL with its password masked.
func (p *PostgresStorage) String() string { return p.url }

// Close stops the heartbeat and closes the connections. Trials still running
// are left Running: a later NewStudy marks them Fail once their process is
// gone, or, from another host, once their heartbeat is stale.
func (p *PostgresStorage) Close() error {
	p.beatMu.Lock()
	defer p.beatMu.Unlock()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	stop, done := p.stopBeat, p.beatDone
	p.stopBeat, p.beatDone = nil, nil
	p.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	p.pool.Close()
	return nil
}

// pgInvalid marks an error of the caller (an unknown study, a finished
// trial), as opposed to one of the database.
type pgInvalid struct{ error }

func (e pgInvalid) Unwrap() error { return e.error }

func unwrapInvalid(err error) error {
	var inv pgInvalid
	if errors.As(err, &inv) {
		return inv.error
	}
	return err
}

// write runs fn in a transaction, again when PostgreSQL reports a
// serialization failure or a deadlock. A caller's error comes back as is;
// others name the database.
func (p *PostgresStorage) write(fn func(ctx context.Context, tx pgx.Tx) error) error {
	return p.run(pgx.TxOptions{}, fn)
}

// read runs fn in a read-only transaction that sees one snapshot.
func (p *PostgresStorage) read(fn func(ctx context.Context, tx pgx.Tx) error) error {
	return p.run(pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

func (p *PostgresStorage) run(opts pgx.TxOptions, fn func(ctx context.Context, tx pgx.Tx) error) error {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return fmt.Errorf("PostgreSQL storage %s is closed", p.where)
	}
	ctx, cancel := context.WithTimeout(context.Background(), pgOpTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		err := pgx.BeginTxFunc(ctx, p.pool, opts, func(tx pgx.Tx) error { return fn(ctx, tx) })
		var pgErr *pgconn.PgError
		if err != nil && attempt < 5 && errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01") {
			time.Sleep(time.Duration(attempt) * 10 * time.Millisecond)
			continue
		}
		var inv pgInvalid
		if errors.As(err, &inv) {
			return inv.error
		}
		if err != nil {
			return fmt.Errorf("PostgreSQL %s: %s", p.where, oneLine(err.Error()))
		}
		return nil
	}
}

// newSessionID returns a random id for a storage's trials.
func newSessionID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// pgTime is t as PostgreSQL keeps it (microseconds), so that a time given
// back by a write equals the one read later.
func pgTime(t time.Time) time.Time { return t.Truncate(time.Microsecond) }

func (p *PostgresStorage) createStudy(name string, dir Direction) (Direction, bool, error) {
	var got Direction
	var existed bool
	err := p.write(func(ctx context.Context, tx pgx.Tx) error {
		existed = false
		var d string
		err := tx.QueryRow(ctx, `INSERT INTO gomase_studies (name, direction) VALUES ($1, $2)
			ON CONFLICT (name) DO NOTHING RETURNING direction`, name, dir.String()).Scan(&d)
		if errors.Is(err, pgx.ErrNoRows) {
			existed = true
			err = tx.QueryRow(ctx, "SELECT direction FROM gomase_studies WHERE name = $1", name).Scan(&d)
		}
		if err != nil {
			return err
		}
		got, err = ParseDirection(d)
		return err
	})
	return got, existed, err
}

// heartbeatMS is the heartbeat interval to record with a trial: nil when off.
func (p *PostgresStorage) heartbeatMS() *int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.interval <= 0 {
		return nil
	}
	ms := max(p.interval.Milliseconds(), 1)
	return &ms
}

func (p *PostgresStorage) studyDirection(name string) (Direction, error) {
	var dir Direction
	err := p.read(func(ctx context.Context, tx pgx.Tx) error {
		var d string
		err := tx.QueryRow(ctx, "SELECT direction FROM gomase_studies WHERE name = $1", name).Scan(&d)
		if errors.Is(err, pgx.ErrNoRows) {
			return errNoStudy(name)
		}
		if err != nil {
			return err
		}
		dir, err = ParseDirection(d)
		return err
	})
	return dir, err
}

// lockStudy locks the row of a study, for the rest of the transaction, and
// returns its id: trials are started and enqueued under this lock.
func lockStudy(ctx context.Context, tx pgx.Tx, study string) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, "SELECT id FROM gomase_studies WHERE name = $1 FOR UPDATE", study).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, errNoStudy(study)
	}
	return id, err
}

// nextNumber takes the next trial number of a study whose row is locked.
func nextNumber(ctx context.Context, tx pgx.Tx, id int64) (int, error) {
	var number int
	err := tx.QueryRow(ctx, "UPDATE gomase_studies SET next_trial = next_trial + 1 WHERE id = $1 RETURNING next_trial - 1", id).Scan(&number)
	return number, err
}

// startTrial runs in one transaction under the study row's lock, so that
// the plan (the grid's choice of a point, OptimizeUntil's count of the
// trials still to run) sees every trial started before and none can start
// before this one is recorded with its system attributes.
func (p *PostgresStorage) startTrial(study string, plan startPlan) (FrozenTrial, error) {
	var ft FrozenTrial
	o := p.self
	err := p.write(func(ctx context.Context, tx pgx.Tx) error {
		id, err := lockStudy(ctx, tx, study)
		if err != nil {
			return err
		}
		waiting := -1
		err = tx.QueryRow(ctx, "SELECT number FROM gomase_trials WHERE study_id = $1 AND state = 'waiting' ORDER BY number LIMIT 1",
			id).Scan(&waiting)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var attrs map[string]string
		if plan != nil {
			ts, err := p.trialsTx(ctx, tx, study, id)
			if err != nil {
				return err
			}
			var w *FrozenTrial
			if waiting >= 0 {
				for i := range ts {
					if ts[i].Number == waiting {
						w = &ts[i]
					}
				}
			}
			if attrs, err = plan(ts, w); err != nil {
				return pgInvalid{err}
			}
		}
		now := pgTime(time.Now())
		number := waiting
		if waiting >= 0 {
			_, err = tx.Exec(ctx, `UPDATE gomase_trials SET state = 'running', started = $3,
					owner_host = $4, owner_pid = $5, owner_boot = $6, owner_start = $7, owner_session = $8, heartbeat = now(), heartbeat_ms = $9
				WHERE study_id = $1 AND number = $2`,
				id, waiting, now, o.Host, o.PID, o.Boot, int64(o.Start), p.id, p.heartbeatMS())
		} else {
			if number, err = nextNumber(ctx, tx, id); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `INSERT INTO gomase_trials (study_id, number, state, started,
					owner_host, owner_pid, owner_boot, owner_start, owner_session, heartbeat, heartbeat_ms)
				VALUES ($1, $2, 'running', $3, $4, $5, $6, $7, $8, now(), $9)`,
				id, number, now, o.Host, o.PID, o.Boot, int64(o.Start), p.id, p.heartbeatMS())
		}
		if err != nil {
			return err
		}
		for _, k := range sortedKeys(attrs) {
			if _, err := tx.Exec(ctx, `INSERT INTO gomase_trial_system_attrs (study_id, number, key, value) VALUES ($1, $2, $3, $4)
				ON CONFLICT (study_id, number, key) DO UPDATE SET value = EXCLUDED.value`, id, number, k, attrs[k]); err != nil {
				return err
			}
		}
		if waiting < 0 { // a new trial holds only what was just written
			ft = FrozenTrial{Number: number, State: Running, Value: math.NaN(), Started: now,
				Params: map[string]any{}, Distributions: map[string]Distribution{}, internal: map[string]float64{},
				UserAttrs: map[string]any{}, SystemAttrs: maps.Clone(attrs)}
			if ft.SystemAttrs == nil {
				ft.SystemAttrs = map[string]string{}
			}
			return nil
		}
		ts, err := loadTrials(ctx, tx, id, " AND number = $2", number)
		if err != nil {
			return err
		}
		if len(ts) != 1 {
			return fmt.Errorf("trial %d of study %q vanished while starting it", number, study)
		}
		ft = ts[0]
		return nil
	})
	return ft, err
}

// insertWhole inserts a trial given whole (waiting or finished) as number.
func insertWhole(ctx context.Context, tx pgx.Tx, id int64, number int, ft FrozenTrial) error {
	ft.Number = number
	if err := checkAdded(&ft); err != nil {
		return pgInvalid{err}
	}
	var value *float64
	if ft.State == Complete {
		value = &ft.Value
	}
	var started, finished *time.Time
	if !ft.Started.IsZero() {
		t := pgTime(ft.Started)
		started = &t
	}
	if ft.State.IsFinished() {
		t := pgTime(ft.Finished)
		if ft.Finished.IsZero() {
			t = pgTime(time.Now())
		}
		finished = &t
		if started == nil {
			started = finished
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO gomase_trials (study_id, number, state, value, message, recovered, started, finished)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, id, number, ft.State.String(), value, ft.Message, ft.recovered, started, finished)
	if err != nil {
		return err
	}
	for _, name := range sortedKeys(ft.Distributions) {
		dj, err := marshalDist(ft.Distributions[name])
		if err != nil {
			return pgInvalid{fmt.Errorf("trial %d, parameter %q: %w", number, name, err)}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO gomase_trial_params (study_id, number, name, value, distribution) VALUES ($1, $2, $3, $4, $5)`,
			id, number, name, ft.internal[name], []byte(dj)); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(ft.UserAttrs) {
		vj, err := json.Marshal(ft.UserAttrs[k])
		if err != nil {
			return pgInvalid{fmt.Errorf("trial %d: user attribute %q must be JSON-encodable; %T is not: %w", number, k, ft.UserAttrs[k], err)}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO gomase_trial_user_attrs (study_id, number, key, value) VALUES ($1, $2, $3, $4)`,
			id, number, k, vj); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(ft.SystemAttrs) {
		if _, err := tx.Exec(ctx, `INSERT INTO gomase_trial_system_attrs (study_id, number, key, value) VALUES ($1, $2, $3, $4)`,
			id, number, k, ft.SystemAttrs[k]); err != nil {
			return err
		}
	}
	return nil
}

func (p *PostgresStorage) enqueueTrial(study string, ft FrozenTrial) (int, error) {
	var number int
	err := p.write(func(ctx context.Context, tx pgx.Tx) error {
		id, err := lockStudy(ctx, tx, study)
		if err != nil {
			return err
		}
		if number, err = nextNumber(ctx, tx, id); err != nil {
			return err
		}
		ft.State = Waiting
		return insertWhole(ctx, tx, id, number, ft)
	})
	return number, err
}

// enqueueRetry inserts the retry of failed trial ft (retryOf), if any.
func enqueueRetry(ctx context.Context, tx pgx.Tx, study string, ft FrozenTrial, retries int) (*FrozenTrial, error) {
	r, ok := retryOf(ft, retries)
	if !ok {
		return nil, nil
	}
	id, err := lockStudy(ctx, tx, study)
	if err != nil {
		return nil, err
	}
	if r.Number, err = nextNumber(ctx, tx, id); err != nil {
		return nil, err
	}
	if err := insertWhole(ctx, tx, id, r.Number, r); err != nil {
		return nil, err
	}
	r = normalizeAdded(r)
	return &r, nil
}

func (p *PostgresStorage) importStudy(name string, dir Direction, trials []FrozenTrial) error {
	return p.write(func(ctx context.Context, tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `INSERT INTO gomase_studies (name, direction, next_trial) VALUES ($1, $2, $3)
			ON CONFLICT (name) DO NOTHING RETURNING id`, name, dir.String(), len(trials)).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return pgInvalid{fmt.Errorf("study %q already exists in the storage; import it under another name or into another storage", name)}
		}
		if err != nil {
			return err
		}
		for i, ft := range trials {
			if err := insertWhole(ctx, tx, id, i, ft); err != nil {
				return err
			}
		}
		return nil
	})
}

func errNoStudy(study string) error {
	return pgInvalid{fmt.Errorf("study %q does not exist in the storage", study)}
}

// lockRunning locks the row of trial number of study, checking that it
// exists and runs, and returns the study's id.
func lockRunning(ctx context.Context, tx pgx.Tx, study string, number int) (int64, error) {
	var id int64
	var n int
	err := tx.QueryRow(ctx, "SELECT id, next_trial FROM gomase_studies WHERE name = $1", study).Scan(&id, &n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, errNoStudy(study)
	}
	if err != nil {
		return 0, err
	}
	missing := pgInvalid{fmt.Errorf("trial %d does not exist in study %q (it has %d trials)", number, study, n)}
	if number < 0 || number >= n {
		return 0, missing
	}
	var state, msg string
	err = tx.QueryRow(ctx, "SELECT state, message FROM gomase_trials WHERE study_id = $1 AND number = $2 FOR UPDATE",
		id, number).Scan(&state, &msg)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, missing
	}
	if err != nil {
		return 0, err
	}
	if state == Waiting.String() {
		return 0, pgInvalid{fmt.Errorf("trial %d of study %q is waiting (enqueued), not running; only a running trial can change", number, study)}
	}
	if state != Running.String() {
		if msg != "" {
			msg = ": " + msg
		}
		return 0, pgInvalid{fmt.Errorf("trial %d of study %q is already finished (%s%s); only a running trial can change", number, study, state, msg)}
	}
	return id, nil
}

func (p *PostgresStorage) setParam(study string, number int, name string, x float64, d Distribution) error {
	dj, err := marshalDist(d)
	if err != nil {
		return fmt.Errorf("PostgreSQL storage cannot store parameter %q: %w", name, err)
	}
	return p.write(func(ctx context.Context, tx pgx.Tx) error {
		id, err := lockRunning(ctx, tx, study, number)
		if err != nil {
			return err
		}
		var old []byte
		err = tx.QueryRow(ctx, "SELECT distribution FROM gomase_trial_params WHERE study_id = $1 AND number = $2 AND name = $3",
			id, number, name).Scan(&old)
		switch {
		case err == nil:
			od, err := unmarshalDist(old)
			if err != nil {
				return fmt.Errorf("trial %d, parameter %q: stored distribution %s: %w", number, name, old, err)
			}
			if !od.equal(d) {
				return pgInvalid{fmt.Errorf("parameter %q of trial %d is already set with distribution %v, not %v", name, number, od, d)}
			}
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO gomase_trial_params (study_id, number, name, value, distribution)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (study_id, number, name) DO UPDATE SET value = EXCLUDED.value, distribution = EXCLUDED.distribution`,
			id, number, name, x, []byte(dj))
		return err
	})
}

func (p *PostgresStorage) setUserAttr(study string, number int, key string, v any) error {
	vj, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("PostgreSQL storage needs JSON-encodable user attributes; %T is not: %w", v, err)
	}
	return p.write(func(ctx context.Context, tx pgx.Tx) error {
		id, err := lockRunning(ctx, tx, study, number)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO gomase_trial_user_attrs (study_id, number, key, value) VALUES ($1, $2, $3, $4)
			ON CONFLICT (study_id, number, key) DO UPDATE SET value = EXCLUDED.value`, id, number, key, vj)
		return err
	})
}

func (p *PostgresStorage) setSystemAttr(study string, number int, key, v string) error {
	return p.write(func(ctx context.Context, tx pgx.Tx) error {
		id, err := lockRunning(ctx, tx, study, number)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO gomase_trial_system_attrs (study_id, number, key, value) VALUES ($1, $2, $3, $4)
			ON CONFLICT (study_id, number, key) DO UPDATE SET value = EXCLUDED.value`, id, number, key, v)
		return err
	})
}

func (p *PostgresStorage) finishTrial(study string, number int, state TrialState, value float64, msg string, retries int) (FrozenTrial, *FrozenTrial, error) {
	if err := checkFinish(number, state, value); err != nil {
		return FrozenTrial{}, nil, err
	}
	var retry *FrozenTrial
	var stored *float64
	if state == Complete {
		stored = &value
	}
	now := pgTime(time.Now())
	var ft FrozenTrial
	err := p.write(func(ctx context.Context, tx pgx.Tx) error {
		id, err := lockRunning(ctx, tx, study, number)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE gomase_trials SET state = $3, value = $4, message = $5, finished = $6
			WHERE study_id = $1 AND number = $2`, id, number, state.String(), stored, msg, now); err != nil {
			return err
		}
		ts, err := loadTrials(ctx, tx, id, " AND number = $2", number)
		if err != nil {
			return err
		}
		if len(ts) != 1 {
			return fmt.Errorf("trial %d of study %q vanished while finishing it", number, study)
		}
		ft = ts[0]
		retry, err = enqueueRetry(ctx, tx, study, ft, retries)
		return err
	})
	return ft, retry, err
}

// trials reads the study's trials. Finished trials never change, so those
// read once are kept (per study id) and only the others are read again: the
// trials from the first one not kept on, less those kept after it.
func (p *PostgresStorage) trials(study string) ([]FrozenTrial, error) {
	var out []FrozenTrial
	err := p.read(func(ctx context.Context, tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, "SELECT id FROM gomase_studies WHERE name = $1", study).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return errNoStudy(study)
		}
		if err != nil {
			return err
		}
		out, err = p.trialsTx(ctx, tx, study, id)
		return err
	})
	return out, err
}

// trialsTx reads the trials of study id in transaction tx, with the kept ones.
func (p *PostgresStorage) trialsTx(ctx context.Context, tx pgx.Tx, study string, id int64) ([]FrozenTrial, error) {
	kept, from, skip := p.kept(study, id)
	fresh, err := loadTrials(ctx, tx, id, " AND number >= $2 AND NOT (number = ANY($3))", from, skip)
	if err != nil {
		return nil, err
	}
	p.keep(study, id, fresh)
	out := make([]FrozenTrial, 0, len(kept)+len(fresh))
	i := 0
	for _, ft := range fresh { // merge two lists in number order
		for i < len(kept) && kept[i].Number < ft.Number {
			out = append(out, kept[i])
			i++
		}
		out = append(out, ft)
	}
	return append(out, kept[i:]...), nil
}

// pgKept are the finished trials of a study that a storage has read.
type pgKept struct {
	id     int64
	trials map[int]FrozenTrial
	from   int // the lowest number not kept
}

// kept returns the kept trials of a study in number order, the lowest
// number not kept, and the numbers kept above it.
func (p *PostgresStorage) kept(study string, id int64) ([]FrozenTrial, int, []int32) {
	p.keptMu.Lock()
	defer p.keptMu.Unlock()
	k := p.keptTrials[study]
	if k == nil || k.id != id { // new, or the study was deleted and made again
		return nil, 0, []int32{}
	}
	out := make([]FrozenTrial, 0, len(k.trials))
	skip := []int32{}
	for n := range k.from {
		out = append(out, k.trials[n])
	}
	for n, ft := range k.trials {
		if n > k.from {
			out = append(out, ft)
			skip = append(skip, int32(n))
		}
	}
	slices.SortFunc(out[k.from:], func(a, b FrozenTrial) int { return a.Number - b.Number })
	return out, k.from, skip
}

// keep adds the finished trials among ts to the kept ones.
func (p *PostgresStorage) keep(study string, id int64, ts []FrozenTrial) {
	p.keptMu.Lock()
	defer p.keptMu.Unlock()
	if p.keptTrials == nil {
		p.keptTrials = map[string]*pgKept{}
	}
	k := p.keptTrials[study]
	if k == nil || k.id != id {
		k = &pgKept{id: id, trials: map[int]FrozenTrial{}}
		p.keptTrials[study] = k
	}
	for _, ft := range ts {
		if ft.State.IsFinished() {
			k.trials[ft.Number] = ft
		}
	}
	for {
		if _, ok := k.trials[k.from]; !ok {
			break
		}
		k.from++
	}
}

// loadTrials reads the trials of a study that filter (SQL on number, its
// parameters from $2 on) selects, in number order.
func loadTrials(ctx context.Context, tx pgx.Tx, studyID int64, filter string, filterArgs ...any) ([]FrozenTrial, error) {
	args := append([]any{studyID}, filterArgs...)
	rows, err := tx.Query(ctx, `SELECT number, state, value, message, recovered, started, finished
		FROM gomase_trials WHERE study_id = $1`+filter+` ORDER BY number`, args...)
	if err != nil {
		return nil, err
	}
	var out []FrozenTrial
	index := map[int]int{}
	for rows.Next() {
		var ft FrozenTrial
		var state string
		var value *float64
		var started, finished *time.Time
		if err := rows.Scan(&ft.Number, &state, &value, &ft.Message, &ft.recovered, &started, &finished); err != nil {
			rows.Close()
			return nil, err
		}
		if ft.State, err = parseState(state); err != nil {
			rows.Close()
			return nil, err
		}
		ft.Value = math.NaN()
		if value != nil {
			ft.Value = *value
		}
		if started != nil {
			ft.Started = *started
		}
		if finished != nil {
			ft.Finished = *finished
		}
		ft.Params, ft.Distributions, ft.internal = map[string]any{}, map[string]Distribution{}, map[string]float64{}
		ft.UserAttrs, ft.SystemAttrs = map[string]any{}, map[string]string{}
		index[ft.Number] = len(out)
		out = append(out, ft)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// each hands every row of an attribute table to scan; at gives scan the
	// trial of a number (nil for one not read: skip it).
	at := func(number int) *FrozenTrial {
		if i, ok := index[number]; ok {
			return &out[i]
		}
		return nil
	}
	each := func(table, cols string, scan func(rows pgx.Rows) error) error {
		rows, err := tx.Query(ctx, "SELECT number, "+cols+" FROM "+table+" WHERE study_id = $1"+filter, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				return fmt.Errorf("%s: %w", table, err)
			}
		}
		return rows.Err()
	}
	err = each("gomase_trial_params", "name, value, distribution", func(rows pgx.Rows) error {
		var number int
		var name string
		var x float64
		var dj []byte
		if err := rows.Scan(&number, &name, &x, &dj); err != nil {
			return err
		}
		ft := at(number)
		if ft == nil {
			return nil
		}
		d, err := unmarshalDist(dj)
		if err != nil {
			return fmt.Errorf("trial %d, parameter %q: distribution %s: %w", number, name, dj, err)
		}
		ft.internal[name] = x
		ft.Distributions[name] = d
		ft.Params[name] = d.ToExternal(x)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = each("gomase_trial_user_attrs", "key, value", func(rows pgx.Rows) error {
		var number int
		var key string
		var vj []byte
		if err := rows.Scan(&number, &key, &vj); err != nil {
			return err
		}
		ft := at(number)
		if ft == nil {
			return nil
		}
		var v any
		if err := json.Unmarshal(vj, &v); err != nil {
			return fmt.Errorf("trial %d, user attribute %q: %w", number, key, err)
		}
		ft.UserAttrs[key] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = each("gomase_trial_system_attrs", "key, value", func(rows pgx.Rows) error {
		var number int
		var key, v string
		if err := rows.Scan(&number, &key, &v); err != nil {
			return err
		}
		if ft := at(number); ft != nil {
			ft.SystemAttrs[key] = v
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// heartbeatGrace is how long a trial's heartbeat may be silent before
// another host marks the trial Fail: two intervals and a margin of one more
// (at most 10 s).
func heartbeatGrace(interval time.Duration) time.Duration {
	return 2*interval + min(interval, 10*time.Second)
}

// SetHeartbeat makes the storage refresh the heartbeat of the Running trials
// it created every interval (interval ≤ 0 turns it off, the default),
// and records the interval with them and with the trials created later. A
// NewStudy or Optimize on another host then marks a trial Fail once its
// heartbeat has been silent for longer than heartbeatGrace(interval): two
// intervals and a margin of one more, at most 10 s. Its process crashed, was
// killed, or lost the database. On the trial's own host the process is looked
// up instead, as with a journal. Trials whose process sends no heartbeat are
// never failed from another host. Turn it on before creating trials; a
// minute suits trials that take minutes or hours (Optuna's heartbeat_interval).
func (p *PostgresStorage) SetHeartbeat(interval time.Duration) error {
	interval = max(interval, 0)
	p.beatMu.Lock()
	defer p.beatMu.Unlock()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return fmt.Errorf("PostgreSQL storage %s is closed", p.where)
	}
	stop, done := p.stopBeat, p.beatDone
	p.stopBeat, p.beatDone = nil, nil
	p.interval = interval
	p.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	if err := p.beat(context.Background(), interval); err != nil { // record the new interval now
		return err
	}
	if interval > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		p.mu.Lock()
		p.stopBeat, p.beatDone = cancel, done
		p.mu.Unlock()
		go p.beatLoop(ctx, interval, done)
	}
	return nil
}

func (p *PostgresStorage) beatLoop(ctx context.Context, interval time.Duration, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := p.beat(ctx, interval); err != nil && ctx.Err() == nil {
			p.logger.Warn("search: PostgreSQL heartbeat failed; other hosts may mark this storage's running trials failed",
				"database", p.where, "error", err)
		}
	}
}

// beat refreshes the heartbeat of the Running trials this storage created
// and records interval with them (none when interval is 0).
func (p *PostgresStorage) beat(ctx context.Context, interval time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, max(interval, 10*time.Second))
	defer cancel()
	var ms *int64
	if interval > 0 {
		v := max(interval.Milliseconds(), 1)
		ms = &v
	}
	_, err := p.pool.Exec(ctx, `UPDATE gomase_trials SET heartbeat = now(), heartbeat_ms = $2
		WHERE state = 'running' AND owner_session = $1`, p.id, ms)
	if err != nil {
		return fmt.Errorf("PostgreSQL %s: heartbeat: %s", p.where, oneLine(err.Error()))
	}
	return nil
}

// staleReason says why a Running trial of owner o is to be marked Fail, or
// returns "" to leave it: on this host its process is looked up; otherwise,
// or when that cannot tell, a heartbeat silent for age seconds is compared
// with the grace of its interval (heartbeatMS; nil: it sends none).
func (p *PostgresStorage) staleReason(o owner, heartbeatMS *int64, age float64) string {
	if o.Host == p.self.Host {
		if alive, known := o.alive(); known {
			if alive {
				return ""
			}
			return fmt.Sprintf("the process that ran this trial (%v) is gone: it crashed or was killed; marked failed by %v", o, p.self)
		}
	}
	if heartbeatMS == nil {
		return ""
	}
	interval := time.Duration(*heartbeatMS) * time.Millisecond
	silent := time.Duration(age * float64(time.Second))
	if silent <= heartbeatGrace(interval) {
		return ""
	}
	return fmt.Sprintf("the process that ran this trial (%v) sent no heartbeat for %v (one was due every %v): it crashed, was killed or lost the database; marked failed by %v",
		o, silent.Round(time.Millisecond), interval, p.self)
}

// failStale marks Fail, with a message saying why, every Running trial of
// the study whose process is gone (see staleReason). Each is finished in its
// own transaction, after checking again under the trial's row lock.
func (p *PostgresStorage) failStale(study string, retries int) ([]staleTrial, error) {
	type candidate struct {
		number int
		o      owner
	}
	var cands []candidate
	err := p.read(func(ctx context.Context, tx pgx.Tx) error {
		cands = nil
		var id int64
		err := tx.QueryRow(ctx, "SELECT id FROM gomase_studies WHERE name = $1", study).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return errNoStudy(study)
		}
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT number, owner_host, owner_pid, owner_boot, owner_start, heartbeat_ms,
				EXTRACT(EPOCH FROM now() - heartbeat)::float8
			FROM gomase_trials WHERE study_id = $1 AND state = 'running' ORDER BY number`, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c candidate
			var start int64
			var ms *int64
			var age float64
			if err := rows.Scan(&c.number, &c.o.Host, &c.o.PID, &c.o.Boot, &start, &ms, &age); err != nil {
				return err
			}
			c.o.Start = uint64(start)
			if p.staleReason(c.o, ms, age) != "" {
				cands = append(cands, c)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	var failed []staleTrial
	for _, c := range cands {
		now := pgTime(time.Now())
		done := false
		retry := -1
		err := p.write(func(ctx context.Context, tx pgx.Tx) error {
			done, retry = false, -1
			var state string
			var ms *int64
			var age float64
			err := tx.QueryRow(ctx, `SELECT t.state, t.heartbeat_ms, EXTRACT(EPOCH FROM now() - t.heartbeat)::float8
				FROM gomase_trials t JOIN gomase_studies s ON s.id = t.study_id
				WHERE s.name = $1 AND t.number = $2 FOR UPDATE OF t`, study, c.number).Scan(&state, &ms, &age)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			msg := p.staleReason(c.o, ms, age)
			if state != Running.String() || msg == "" {
				return nil // finished meanwhile, or its heartbeat came back
			}
			var id int64
			err = tx.QueryRow(ctx, `UPDATE gomase_trials t SET state = 'fail', message = $3, recovered = true, finished = $4
				FROM gomase_studies s WHERE s.id = t.study_id AND s.name = $1 AND t.number = $2 RETURNING t.study_id`,
				study, c.number, msg, now).Scan(&id)
			if err != nil {
				return err
			}
			ts, err := loadTrials(ctx, tx, id, " AND number = $2", c.number)
			if err != nil {
				return err
			}
			if len(ts) != 1 {
				return fmt.Errorf("trial %d of study %q vanished while failing it", c.number, study)
			}
			r, err := enqueueRetry(ctx, tx, study, ts[0], retries)
			if err != nil {
				return err
			}
			if r != nil {
				retry = r.Number
			}
			done = true
			return nil
		})
		if err != nil {
			return failed, err
		}
		if done {
			failed = append(failed, staleTrial{number: c.number, retry: retry})
		}
	}
	return failed, nil
}

// ---- URLs and messages

// urlSecrets returns the password-like parts of a connection URL, found
// leniently so that even a malformed URL's password can be masked: the
// password of the user information (up to the last '@') and the values of
// password and sslpassword options, each as written and decoded.
func urlSecrets(s string) []string {
	var out []string
	add := func(v string) {
		if v == "" {
			return
		}
		out = append(out, v)
		if d, err := url.QueryUnescape(v); err == nil && d != v && d != "" {
			out = append(out, d)
		}
		if d, err := url.PathUnescape(v); err == nil && d != v && d != "" {
			out = append(out, d)
		}
	}
	rest := s
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
			add(pw)
		}
	}
	lower := strings.ToLower(s)
	for _, key := range []string{"password="} { // also matches sslpassword=
		for i := 0; ; {
			j := strings.Index(lower[i:], key)
			if j < 0 {
				break
			}
			v := s[i+j+len(key):]
			if k := strings.IndexAny(v, "&#"); k >= 0 {
				v = v[:k]
			}
			add(v)
			i += j + len(key)
		}
	}
	// Longest first, so that a secret holding another is masked whole.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && len(out[j]) > len(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// mask replaces every secret in s by xxxxx.
func mask(s string, secrets []string) string {
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec, "xxxxx")
	}
	return s
}

// redactURL returns a connection URL with its password masked.
func redactURL(raw string, secrets []string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return mask(raw, secrets)
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			if strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword") {
				q.Set(k, "xxxxx")
			}
		}
		u.RawQuery = q.Encode()
	}
	return mask(u.String(), secrets)
}

// oneLine folds a multi-line message onto one line.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\n\t", "; ")
	s = strings.ReplaceAll(s, "\n", "; ")
	return strings.ReplaceAll(s, "\t", " ")
}
