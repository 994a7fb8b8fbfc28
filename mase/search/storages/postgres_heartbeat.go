package storages

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gomase/gomase/mase/search/studydata"

	"github.com/jackc/pgx/v5"
)

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
	beats := p.beats
	p.beats = nil
	p.interval = interval
	p.mu.Unlock()
	beats.stop()
	if err := p.beat(context.Background(), interval); err != nil { // record the new interval now
		return err
	}
	if interval > 0 {
		loop := startBeatLoop(interval, func(ctx context.Context) error { return p.beat(ctx, interval) }, func(err error) {
			p.logger.Warn("search: PostgreSQL heartbeat failed; other hosts may mark this storage's running trials failed",
				"database", p.where, "error", err)
		})
		p.mu.Lock()
		p.beats = loop
		p.mu.Unlock()
	}
	return nil
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

// UnjudgedTrials returns the Running trials whose worker this process can
// tell neither alive nor dead: on another host (or none recorded), without
// a heartbeat.
func (p *PostgresStorage) UnjudgedTrials(study string) ([]studydata.UnjudgedTrial, error) {
	var out []studydata.UnjudgedTrial
	err := p.read(func(ctx context.Context, tx pgx.Tx) error {
		out = nil
		id, err := studyID(ctx, tx, study)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT number, owner_host, owner_pid, owner_boot, owner_start
			FROM gomase_trials WHERE study_id = $1 AND state = 'running' AND heartbeat_ms IS NULL ORDER BY number`, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var number int
			var o owner
			var start int64
			if err := rows.Scan(&number, &o.Host, &o.PID, &o.Boot, &start); err != nil {
				return err
			}
			o.Start = uint64(start)
			if o.Host == p.self.Host {
				if _, known := o.alive(); known {
					continue
				}
			}
			out = append(out, studydata.UnjudgedTrial{Number: number, Owner: ownerName(o), Why: unjudgedWhy(o, p.self)})
		}
		return rows.Err()
	})
	return out, err
}

// FailStale marks Fail, with a message saying why, every Running trial of
// the study whose process is gone (see staleReason). Each is finished in its
// own transaction, after checking again under the trial's row lock.
func (p *PostgresStorage) FailStale(study string, retries int) ([]studydata.StaleTrial, error) {
	type candidate struct {
		number int
		o      owner
	}
	var cands []candidate
	err := p.read(func(ctx context.Context, tx pgx.Tx) error {
		cands = nil
		id, err := studyID(ctx, tx, study)
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
	var failed []studydata.StaleTrial
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
			if state != studydata.Running.String() || msg == "" {
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
			failed = append(failed, studydata.StaleTrial{Number: c.number, Retry: retry})
		}
	}
	return failed, nil
}

// ---- URLs and messages
