package storages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/gomase/gomase/mase/search/studydata"

	"github.com/jackc/pgx/v5"
)

// pgTime is t as PostgreSQL keeps it (microseconds), so that a time given
// back by a write equals the one read later.
func pgTime(t time.Time) time.Time { return t.Truncate(time.Microsecond) }

func (p *PostgresStorage) CreateStudy(name string, dir studydata.Direction) (studydata.Direction, bool, error) {
	var got studydata.Direction
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
		got, err = studydata.ParseDirection(d)
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

func (p *PostgresStorage) StudyDirection(name string) (studydata.Direction, error) {
	var dir studydata.Direction
	err := p.read(func(ctx context.Context, tx pgx.Tx) error {
		var d string
		err := tx.QueryRow(ctx, "SELECT direction FROM gomase_studies WHERE name = $1", name).Scan(&d)
		if errors.Is(err, pgx.ErrNoRows) {
			return errNoStudy(name)
		}
		if err != nil {
			return err
		}
		dir, err = studydata.ParseDirection(d)
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

// studyID returns the id of a study (no lock taken).
func studyID(ctx context.Context, tx pgx.Tx, study string) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, "SELECT id FROM gomase_studies WHERE name = $1", study).Scan(&id)
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

// StartTrial runs in one transaction under the study row's lock, so that
// the plan (the grid's choice of a point, OptimizeUntil's count of the
// trials still to run) sees every trial started before and none can start
// before this one is recorded with its system attributes.
func (p *PostgresStorage) StartTrial(study string, plan studydata.StartPlan) (studydata.FrozenTrial, error) {
	var ft studydata.FrozenTrial
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
			var w *studydata.FrozenTrial
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
		for _, k := range slices.Sorted(maps.Keys(attrs)) {
			if _, err := tx.Exec(ctx, `INSERT INTO gomase_trial_system_attrs (study_id, number, key, value) VALUES ($1, $2, $3, $4)
				ON CONFLICT (study_id, number, key) DO UPDATE SET value = EXCLUDED.value`, id, number, k, attrs[k]); err != nil {
				return err
			}
		}
		if waiting < 0 { // a new trial holds only what was just written
			ft = studydata.FrozenTrial{Number: number, State: studydata.Running, Value: math.NaN(), Started: now,
				Params: map[string]any{}, Distributions: map[string]studydata.Distribution{}, InternalParams: map[string]float64{},
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
func insertWhole(ctx context.Context, tx pgx.Tx, id int64, number int, ft studydata.FrozenTrial) error {
	ft.Number = number
	if err := studydata.CheckAdded(&ft); err != nil {
		return pgInvalid{err}
	}
	var value *float64
	if ft.State == studydata.Complete {
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
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, id, number, ft.State.String(), value, ft.Message, ft.Recovered, started, finished)
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(ft.Distributions)) {
		dj, err := studydata.MarshalDistribution(ft.Distributions[name])
		if err != nil {
			return pgInvalid{fmt.Errorf("trial %d, parameter %q: %w", number, name, err)}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO gomase_trial_params (study_id, number, name, value, distribution) VALUES ($1, $2, $3, $4, $5)`,
			id, number, name, ft.InternalParams[name], []byte(dj)); err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(ft.UserAttrs)) {
		vj, err := json.Marshal(ft.UserAttrs[k])
		if err != nil {
			return pgInvalid{fmt.Errorf("trial %d: user attribute %q must be JSON-encodable; %T is not: %w", number, k, ft.UserAttrs[k], err)}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO gomase_trial_user_attrs (study_id, number, key, value) VALUES ($1, $2, $3, $4)`,
			id, number, k, vj); err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(ft.SystemAttrs)) {
		if _, err := tx.Exec(ctx, `INSERT INTO gomase_trial_system_attrs (study_id, number, key, value) VALUES ($1, $2, $3, $4)`,
			id, number, k, ft.SystemAttrs[k]); err != nil {
			return err
		}
	}
	return nil
}

func (p *PostgresStorage) EnqueueTrial(study string, ft studydata.FrozenTrial) (int, error) {
	var number int
	err := p.write(func(ctx context.Context, tx pgx.Tx) error {
		id, err := lockStudy(ctx, tx, study)
		if err != nil {
			return err
		}
		if number, err = nextNumber(ctx, tx, id); err != nil {
			return err
		}
		ft.State = studydata.Waiting
		return insertWhole(ctx, tx, id, number, ft)
	})
	return number, err
}

// enqueueRetry inserts the retry of failed trial ft (retryOf), if any.
func enqueueRetry(ctx context.Context, tx pgx.Tx, study string, ft studydata.FrozenTrial, retries int) (*studydata.FrozenTrial, error) {
	r, ok := studydata.RetryOf(ft, retries)
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
	r = studydata.NormalizeAdded(r)
	return &r, nil
}

func (p *PostgresStorage) ImportStudy(name string, dir studydata.Direction, trials []studydata.FrozenTrial) error {
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
	if state == studydata.Waiting.String() {
		return 0, pgInvalid{fmt.Errorf("trial %d of study %q is waiting (enqueued), not running; only a running trial can change", number, study)}
	}
	if state != studydata.Running.String() {
		if msg != "" {
			msg = ": " + msg
		}
		return 0, pgInvalid{fmt.Errorf("trial %d of study %q is already finished (%s%s); only a running trial can change", number, study, state, msg)}
	}
	return id, nil
}

func (p *PostgresStorage) SetParam(study string, number int, name string, x float64, d studydata.Distribution) error {
	dj, err := studydata.MarshalDistribution(d)
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
			od, err := studydata.UnmarshalDistribution(old)
			if err != nil {
				return fmt.Errorf("trial %d, parameter %q: stored distribution %s: %w", number, name, old, err)
			}
			if !od.Equal(d) {
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

func (p *PostgresStorage) SetUserAttr(study string, number int, key string, v any) error {
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

func (p *PostgresStorage) SetSystemAttr(study string, number int, key, v string) error {
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

func (p *PostgresStorage) FinishTrial(study string, number int, state studydata.TrialState, value float64, msg string, retries int) (studydata.FrozenTrial, *studydata.FrozenTrial, error) {
	if err := checkFinish(number, state, value); err != nil {
		return studydata.FrozenTrial{}, nil, err
	}
	var retry *studydata.FrozenTrial
	var stored *float64
	if state == studydata.Complete {
		stored = &value
	}
	now := pgTime(time.Now())
	var ft studydata.FrozenTrial
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

// Trials reads the study's Trials. Finished Trials never change, so those
// read once are kept (per study id) and only the others are read again: the
// Trials from the first one not kept on, less those kept after it.
func (p *PostgresStorage) Trials(study string) ([]studydata.FrozenTrial, error) {
	var out []studydata.FrozenTrial
	err := p.read(func(ctx context.Context, tx pgx.Tx) error {
		id, err := studyID(ctx, tx, study)
		if err != nil {
			return err
		}
		out, err = p.trialsTx(ctx, tx, study, id)
		return err
	})
	return out, err
}

// trialsTx reads the trials of study id in transaction tx, with the kept ones.
func (p *PostgresStorage) trialsTx(ctx context.Context, tx pgx.Tx, study string, id int64) ([]studydata.FrozenTrial, error) {
	kept, from, skip := p.kept(study, id)
	fresh, err := loadTrials(ctx, tx, id, " AND number >= $2 AND NOT (number = ANY($3))", from, skip)
	if err != nil {
		return nil, err
	}
	if bad := failNonFinite(fresh); len(bad) > 0 {
		p.logger.Warn("search: trials stored as complete with a value that is not a finite number are read as failed; they take no part in the search",
			"database", p.where, "study", printable(study), "trials", bad)
	}
	p.keep(study, id, fresh)
	out := make([]studydata.FrozenTrial, 0, len(kept)+len(fresh))
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
	trials map[int]studydata.FrozenTrial
	from   int // the lowest number not kept
}

// kept returns the kept trials of a study in number order, the lowest
// number not kept, and the numbers kept above it.
func (p *PostgresStorage) kept(study string, id int64) ([]studydata.FrozenTrial, int, []int32) {
	p.keptMu.Lock()
	defer p.keptMu.Unlock()
	k := p.keptTrials[study]
	if k == nil || k.id != id { // new, or the study was deleted and made again
		return nil, 0, []int32{}
	}
	out := make([]studydata.FrozenTrial, 0, len(k.trials))
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
	slices.SortFunc(out[k.from:], func(a, b studydata.FrozenTrial) int { return a.Number - b.Number })
	return out, k.from, skip
}

// keep adds the finished trials among ts to the kept ones.
func (p *PostgresStorage) keep(study string, id int64, ts []studydata.FrozenTrial) {
	p.keptMu.Lock()
	defer p.keptMu.Unlock()
	if p.keptTrials == nil {
		p.keptTrials = map[string]*pgKept{}
	}
	k := p.keptTrials[study]
	if k == nil || k.id != id {
		k = &pgKept{id: id, trials: map[int]studydata.FrozenTrial{}}
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
func loadTrials(ctx context.Context, tx pgx.Tx, studyID int64, filter string, filterArgs ...any) ([]studydata.FrozenTrial, error) {
	args := append([]any{studyID}, filterArgs...)
	rows, err := tx.Query(ctx, `SELECT number, state, value, message, recovered, started, finished
		FROM gomase_trials WHERE study_id = $1`+filter+` ORDER BY number`, args...)
	if err != nil {
		return nil, err
	}
	var out []studydata.FrozenTrial
	index := map[int]int{}
	for rows.Next() {
		var ft studydata.FrozenTrial
		var state string
		var value *float64
		var started, finished *time.Time
		if err := rows.Scan(&ft.Number, &state, &value, &ft.Message, &ft.Recovered, &started, &finished); err != nil {
			rows.Close()
			return nil, err
		}
		if ft.State, err = studydata.ParseTrialState(state); err != nil {
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
		ft.Params, ft.Distributions, ft.InternalParams = map[string]any{}, map[string]studydata.Distribution{}, map[string]float64{}
		ft.UserAttrs, ft.SystemAttrs = map[string]any{}, map[string]string{}
		index[ft.Number] = len(out)
		out = append(out, ft)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// each hands every row of an attribute table to scan; at gives scan the
	// trial of a number (nil for one not read: skip it).
	at := func(number int) *studydata.FrozenTrial {
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
		d, err := studydata.UnmarshalDistribution(dj)
		if err != nil {
			return fmt.Errorf("trial %d, parameter %q: distribution %s: %w", number, name, dj, err)
		}
		ft.InternalParams[name] = x
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

// failNonFinite makes Fail, with a message saying why, the complete trials
// of ts whose value is not a finite number (NaN or ±Inf, written by another
// program: gomase refuses them), so that no sampler or BestTrial ranks them;
// it returns a note naming each.
func failNonFinite(ts []studydata.FrozenTrial) []string {
	var bad []string
	for i := range ts {
		ft := &ts[i]
		if ft.State != studydata.Complete || !(math.IsNaN(ft.Value) || math.IsInf(ft.Value, 0)) {
			continue
		}
		v := strconv.FormatFloat(ft.Value, 'g', -1, 64)
		ft.State, ft.Value = studydata.Fail, math.NaN()
		ft.Message = fmt.Sprintf("stored as complete with value %s, which is not a finite number; read as failed", v)
		bad = append(bad, fmt.Sprintf("trial %d value %s", ft.Number, v))
	}
	return bad
}
