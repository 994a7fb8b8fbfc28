package storages

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gomase/gomase/mase/search/studydata"

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
// start of Optimize (see FailStale): on the same host the owning process is
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
	beats    *beatLoop     // the heartbeat loop, while one runs
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

// Closer is a Storage to close when done: what Open returns.
// String names it (a journal's path, a database URL without its password).
type Closer interface {
	studydata.Storage
	Close() error
	String() string
}

// Open opens the storage spec names: a postgresql:// or postgres://
// URL opens a PostgresStorage (OpenPostgres), anything else is the path of a
// journal file (OpenJournal).
func Open(spec string, logger *slog.Logger) (Closer, error) {
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
	beats := p.beats
	p.beats = nil
	p.mu.Unlock()
	beats.stop()
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
