//go:build unix

package storages_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/search/internal/searchtest"
	"github.com/gomase/gomase/mase/search/searchbench"
	"github.com/gomase/gomase/mase/search/storages"
	"github.com/gomase/gomase/mase/search/studydata"

	"github.com/gomase/gomase/internal/pgtest"
)

// The PostgreSQL tests share one private server (internal/pgtest), started
// by the first test that needs it and stopped after the last; each test has
// a database of its own. Without the server binaries they fail, saying that
// `make setup` installs them.
var pgShared struct {
	once sync.Once
	srv  *pgtest.Server
	err  error
}

func pgServer(t testing.TB) *pgtest.Server {
	t.Helper()
	pgShared.once.Do(func() {
		dir, err := os.MkdirTemp("", "gomase-search-pg-")
		if err != nil {
			pgShared.err = err
			return
		}
		start := time.Now()
		pgShared.srv, pgShared.err = pgtest.Start(dir)
		if pgShared.err != nil {
			os.RemoveAll(dir)
			return
		}
		t.Logf("PostgreSQL test server on port %d started in %v", pgShared.srv.Port, time.Since(start).Round(time.Millisecond))
		afterTests = append(afterTests, func() {
			pgShared.srv.Stop()
			os.RemoveAll(dir)
		})
	})
	if pgShared.err != nil {
		t.Fatal(pgShared.err)
	}
	return pgShared.srv
}

// pgDatabase returns the URL of a new, empty database for the test.
func pgDatabase(t testing.TB) string {
	t.Helper()
	return pgServer(t).Database(t)
}

func openPG(t testing.TB, u string) *storages.PostgresStorage {
	t.Helper()
	p, err := storages.OpenPostgres(u, searchtest.Quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func init() {
	storageKinds = append(storageKinds, storageKind{
		name:     "postgres",
		open:     func(t *testing.T) studydata.Storage { return openPG(t, pgDatabase(t)) },
		jsonOnly: true,
		orphan: func(t *testing.T, s studydata.Storage, study string, o storages.Owner) int {
			p := s.(*storages.PostgresStorage)
			other := storages.As(p, o)
			n, _, err := createTrial(other, study)
			if err != nil {
				t.Fatal(err)
			}
			return n
		},
	})
}

// pgQuery runs a query whose rows are one integer each.
func pgInts(t *testing.T, p *storages.PostgresStorage, q string, args ...any) []int {
	t.Helper()
	rows, err := storages.Pool(p).Query(context.Background(), q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkNumbers checks that the study's trials are numbered 0..want-1.
func checkNumbers(t *testing.T, s studydata.Storage, study string, want int) []studydata.FrozenTrial {
	t.Helper()
	ts := checkStudyNumbers(t, s, study)
	if len(ts) != want {
		t.Fatalf("%d trials, want %d", len(ts), want)
	}
	return ts
}

func TestPostgresRoundTrip(t *testing.T) {
	u := pgDatabase(t)
	s := searchtest.NewStudy(t, search.Config{Name: "rt", Sampler: searchtest.MustTPE(t, search.TPEOptions{Seed: 1, NStartupTrials: 4}), Storage: openPG(t, u)})
	if err := s.Optimize(context.Background(), roundTripObjective, 12, 0); err != nil {
		t.Fatal(err)
	}
	before, _ := s.Trials()
	s2 := searchtest.NewStudy(t, search.Config{Name: "rt", Sampler: search.NewRandomSampler(0), Storage: openPG(t, u)})
	after, err := s2.Trials()
	if err != nil {
		t.Fatal(err)
	}
	compareReopened(t, before, after)
	for i := range before {
		b, a := before[i], after[i]
		if !reflect.DeepEqual(a.InternalParams, b.InternalParams) {
			t.Errorf("trial %d: internal values %v became %v", i, b.InternalParams, a.InternalParams)
		}
		if v, ok := a.Params["typed"]; ok && v != nil {
			switch v.(type) {
			case int8, uint, float32, float64, bool, string:
			default:
				t.Errorf("choice %v came back as %T", v, v)
			}
		}
	}
	if _, err := search.NewStudy(search.Config{Name: "rt", Direction: studydata.Maximize, Storage: openPG(t, u), Logger: searchtest.Quiet}); err == nil ||
		!strings.Contains(err.Error(), "direction minimize") {
		t.Fatalf("direction mismatch: %v", err)
	}
}

// TestPostgresConcurrentTrials: goroutines with a storage each create and
// finish trials of one study at once; numbers stay unique and consecutive
// and no write is lost.
func TestPostgresConcurrentTrials(t *testing.T) {
	u := pgDatabase(t)
	const workers, each = 8, 25
	if _, _, err := openPG(t, u).CreateStudy("c", studydata.Minimize); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range workers {
		p := openPG(t, u)
		wg.Go(func() {
			for range each {
				n, _, err := createTrial(p, "c")
				if err == nil {
					err = p.SetUserAttr("c", n, "worker", w)
				}
				if err == nil {
					err = p.SetParam("c", n, "x", float64(n), studydata.FloatDistribution{Low: 0, High: 1000})
				}
				if err == nil {
					_, err = finishTrial(p, "c", n, studydata.Complete, float64(w), "")
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	ts := checkNumbers(t, openPG(t, u), "c", workers*each)
	per := map[float64]int{}
	for _, tr := range ts {
		if tr.State != studydata.Complete || tr.Params["x"] != float64(tr.Number) || tr.UserAttrs["worker"] != tr.Value {
			t.Fatalf("trial %+v", tr)
		}
		per[tr.Value]++
	}
	for w := range workers {
		if per[float64(w)] != each {
			t.Errorf("worker %d finished %d trials, want %d", w, per[float64(w)], each)
		}
	}
}

// TestPostgresStudyTPE runs one TPE study on PostgreSQL with two goroutine
// workers, then resumes it with OptimizeUntil from another storage.
func TestPostgresStudyTPE(t *testing.T) {
	u := pgDatabase(t)
	start := time.Now()
	s := searchtest.NewStudy(t, search.Config{Name: "tpe", Sampler: searchtest.MustTPE(t, search.TPEOptions{Seed: 3, NStartupTrials: 6}), Storage: openPG(t, u)})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if err := s.Optimize(context.Background(), searchbench.Sphere5, 20, 0); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	ts := checkNumbers(t, s.Storage(), "tpe", 40)
	if studydata.CountStates(ts, studydata.Complete) != 40 {
		t.Fatalf("%d complete trials, want 40", studydata.CountStates(ts, studydata.Complete))
	}
	best, err := s.BestTrial()
	if err != nil {
		t.Fatal(err)
	}
	first := math.Inf(1)
	for _, tr := range ts[:6] {
		first = min(first, tr.Value)
	}
	t.Logf("40 TPE trials, 2 workers: %v; best %.3g (best of the 6 random start-up trials %.3g)", time.Since(start).Round(time.Millisecond), best.Value, first)
	if best.Value > first {
		t.Errorf("TPE found nothing better than its random start-up trials: %v > %v", best.Value, first)
	}
	s2 := searchtest.NewStudy(t, search.Config{Name: "tpe", Sampler: searchtest.MustTPE(t, search.TPEOptions{Seed: 4}), Storage: openPG(t, u)})
	if err := s2.OptimizeUntil(context.Background(), searchbench.Sphere5, 45, 0); err != nil {
		t.Fatal(err)
	}
	checkNumbers(t, s2.Storage(), "tpe", 45)
}

// TestPostgresKeptTrials: a storage keeps the finished trials it has read,
// and still sees what other storages change: trials finished out of order,
// parameters of running trials, a study deleted and created again.
func TestPostgresKeptTrials(t *testing.T) {
	u := pgDatabase(t)
	a, b := openPG(t, u), openPG(t, u)
	if _, _, err := a.CreateStudy("k", studydata.Minimize); err != nil {
		t.Fatal(err)
	}
	states := func(s studydata.Storage) string {
		t.Helper()
		ts, err := s.Trials("k")
		if err != nil {
			t.Fatal(err)
		}
		out := ""
		for i, tr := range ts {
			if tr.Number != i {
				t.Fatalf("trials()[%d] is trial %d", i, tr.Number)
			}
			out += tr.State.String()[:1] + fmt.Sprint(len(tr.Params))
		}
		return out
	}
	fd := studydata.FloatDistribution{Low: 0, High: 1}
	for range 4 {
		if _, _, err := createTrial(b, "k"); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []int{0, 2} {
		if _, err := finishTrial(b, "k", n, studydata.Complete, 1, ""); err != nil {
			t.Fatal(err)
		}
	}
	if got := states(a); got != "c0r0c0r0" {
		t.Fatalf("states %s", got)
	}
	if from, n, ok := storages.KeptTrials(a, "k"); !ok || from != 1 || n != 2 {
		t.Fatalf("kept trials from %d: %d (%v)", from, n, ok)
	}
	if err := errors.Join(b.SetParam("k", 1, "x", 0.5, fd), b.SetParam("k", 3, "x", 0.5, fd)); err != nil {
		t.Fatal(err)
	}
	if _, err := finishTrial(b, "k", 1, studydata.Pruned, 0, ""); err != nil {
		t.Fatal(err)
	}
	if got := states(a); got != "c0p1c0r1" {
		t.Fatalf("states after changes elsewhere %s, want c0p1c0r1", got)
	}
	if got := states(openPG(t, u)); got != "c0p1c0r1" {
		t.Fatalf("states read afresh %s", got)
	}
	if _, err := storages.Pool(a).Exec(context.Background(), "DELETE FROM gomase_studies WHERE name = 'k'"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.CreateStudy("k", studydata.Minimize); err != nil {
		t.Fatal(err)
	}
	if got := states(a); got != "" {
		t.Fatalf("states of the study made again %q, want none", got)
	}
}

func TestPostgresMultiProcess(t *testing.T) {
	u := pgDatabase(t)
	runWorkers(t, u, 3, 8)
	p := openPG(t, u)
	ts := checkNumbers(t, p, "mp", 24)
	if c := studydata.CountStates(ts, studydata.Complete); c != 24 {
		t.Errorf("%d complete trials, want 24", c)
	}
	if pids := pgInts(t, p, "SELECT DISTINCT owner_pid FROM gomase_trials"); len(pids) != 3 {
		t.Errorf("trials came from %d processes (%v), want 3", len(pids), pids)
	}
}

// TestPostgresProcessCrash: a worker process dies in its third trial; a new
// process on the same host marks that trial Fail (its process is gone) and
// completes the total.
func TestPostgresProcessCrash(t *testing.T) {
	u := pgDatabase(t)
	out, err := runChild(u, "crash", 3, 1).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("crashing child: %v\n%s", err, out)
	}
	s := searchtest.NewStudy(t, search.Config{Name: "mp", Sampler: searchtest.MustTPE(t, search.TPEOptions{Seed: 9}), Storage: openPG(t, u)})
	ts, _ := s.Trials()
	if len(ts) != 3 || studydata.CountStates(ts, studydata.Complete) != 2 || ts[2].State != studydata.Fail || len(ts[2].Params) != 5 ||
		!strings.Contains(ts[2].Message, "is gone") {
		t.Fatalf("after the crash: %d trials, trial 2 %v %q with %d params", len(ts), ts[2].State, ts[2].Message, len(ts[2].Params))
	}
	if err := s.OptimizeUntil(context.Background(), searchbench.Sphere5, 5, 0); err != nil {
		t.Fatal(err)
	}
	ts = checkNumbers(t, s.Storage(), "mp", 6)
	if studydata.CountStates(ts, studydata.Complete) != 5 {
		t.Fatalf("after OptimizeUntil(5): %d complete", studydata.CountStates(ts, studydata.Complete))
	}
}

// TestPostgresHeartbeat: seen from another host, a trial whose process
// sends heartbeats is left alone, and is marked Fail once they stop; a
// trial whose process sends none is never failed from another host.
func TestPostgresHeartbeat(t *testing.T) {
	u := pgDatabase(t)
	const interval = 250 * time.Millisecond
	worker := openPG(t, u)
	if err := worker.SetHeartbeat(interval); err != nil {
		t.Fatal(err)
	}
	ws := searchtest.NewStudy(t, search.Config{Name: "hb", Storage: worker})
	beating, err := ws.Ask(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	silent := openPG(t, u) // no heartbeat
	ss := searchtest.NewStudy(t, search.Config{Name: "hb", Storage: silent})
	quietTrial, err := ss.Ask(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := openPG(t, u)
	storages.SetHost(elsewhere, "another-host")
	sameHost := openPG(t, u)

	time.Sleep(2 * storages.HeartbeatGrace(interval))
	if failed, err := failStale(elsewhere, "hb"); err != nil || len(failed) != 0 {
		t.Fatalf("failStale while the heartbeat beats: %v %v", failed, err)
	}
	// The heartbeat stops (as if the process were killed or cut off).
	worker.Close()
	time.Sleep(storages.HeartbeatGrace(interval) + interval)
	// On the trials' host, the process is looked up: it lives.
	if failed, err := failStale(sameHost, "hb"); err != nil || len(failed) != 0 {
		t.Fatalf("failStale on the same host: %v %v", failed, err)
	}
	failed, err := failStale(elsewhere, "hb")
	if err != nil || !reflect.DeepEqual(failed, []int{beating.Number()}) {
		t.Fatalf("failStale from another host after the heartbeat stopped: %v %v, want [%d]", failed, err, beating.Number())
	}
	ts, _ := elsewhere.Trials("hb")
	got := ts[beating.Number()]
	if got.State != studydata.Fail || !got.Recovered || !strings.Contains(got.Message, "sent no heartbeat for") ||
		!strings.Contains(got.Message, "one was due every 250ms") {
		t.Errorf("trial %d: %v %q", got.Number, got.State, got.Message)
	}
	if ts[quietTrial.Number()].State != studydata.Running {
		t.Errorf("the trial without heartbeat is %v, want running", ts[quietTrial.Number()].State)
	}
	if _, err := ss.Tell(quietTrial, 1, nil); err != nil {
		t.Fatal(err)
	}

	// A process in which the heartbeat is turned off clears its interval,
	// so its trials are no longer judged by it.
	p := openPG(t, u)
	if err := p.SetHeartbeat(interval); err != nil {
		t.Fatal(err)
	}
	n, _, err := createTrial(p, "hb")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetHeartbeat(0); err != nil {
		t.Fatal(err)
	}
	if ms := pgInts(t, p, "SELECT count(*) FROM gomase_trials WHERE number = $1 AND heartbeat_ms IS NULL", n); ms[0] != 1 {
		t.Errorf("heartbeat_ms still set after SetHeartbeat(0)")
	}
	time.Sleep(storages.HeartbeatGrace(interval) + interval)
	if failed, err := failStale(elsewhere, "hb"); err != nil || len(failed) != 0 {
		t.Fatalf("failStale after SetHeartbeat(0): %v %v", failed, err)
	}
	// Optimize, with a heartbeat, in a process killed mid-trial: another
	// host marks the trial Fail once the heartbeat is stale.
	out, err := runChild(u, "heartbeat", 1, 1).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("crashing child: %v\n%s", err, out)
	}
	var killed []int
	deadline := time.Now().Add(10 * time.Second)
	for len(killed) == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		if killed, err = failStale(elsewhere, "mp"); err != nil {
			t.Fatal(err)
		}
	}
	if len(killed) != 1 {
		t.Fatalf("the killed child's trial was not failed from another host")
	}
}

// TestPostgresSchemaVersion: a fresh database gets the schema (once, with
// several workers opening it at once); a newer schema is refused in one line.
func TestPostgresSchemaVersion(t *testing.T) {
	u := pgDatabase(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			p, err := storages.OpenPostgres(u, searchtest.Quiet)
			if err != nil {
				t.Error(err)
				return
			}
			p.Close()
		})
	}
	wg.Wait()
	p := openPG(t, u)
	if v := pgInts(t, p, "SELECT version FROM gomase_schema_version"); !reflect.DeepEqual(v, []int{storages.PGSchemaVersion}) {
		t.Fatalf("schema version rows %v, want [%d]", v, storages.PGSchemaVersion)
	}
	if _, err := storages.Pool(p).Exec(context.Background(), "UPDATE gomase_schema_version SET version = $1", storages.PGSchemaVersion+2); err != nil {
		t.Fatal(err)
	}
	_, err := storages.OpenPostgres(u, searchtest.Quiet)
	want := fmt.Sprintf("schema version %d is newer than this gomase supports (%d); upgrade gomase", storages.PGSchemaVersion+2, storages.PGSchemaVersion)
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("newer schema: %v, want one line with %q", err, want)
	}
	t.Logf("newer schema: %v", err)
}

// TestPostgresOpenErrors: malformed URLs, a server that is down, a wrong
// password and a missing database each give one line naming the problem,
// never the password.
func TestPostgresOpenErrors(t *testing.T) {
	srv := pgServer(t)
	pw := srv.Password
	withPW := func(u, password string) string {
		parsed, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		parsed.User = url.UserPassword(parsed.User.Username(), password)
		return parsed.String()
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downPort := l.Addr().(*net.TCPAddr).Port
	l.Close()
	down := fmt.Sprintf("127.0.0.1:%d", downPort)
	for _, c := range []struct {
		name, url, want, secret string
	}{
		{"bad port", "postgres://gomase:s3cr3t-pw@127.0.0.1:port/db", "malformed PostgreSQL URL postgres://gomase:xxxxx@127.0.0.1:port/db", "s3cr3t-pw"},
		{"bad escape", "postgresql://gomase:pa%zz-word@localhost/db", "malformed PostgreSQL URL", "pa%zz-word"},
		{"bad option", "postgres://gomase:s3cr3t-pw@localhost/db?sslmode=sometimes", "malformed PostgreSQL URL", "s3cr3t-pw"},
		{"not a URL", "host=localhost password=s3cr3t-pw", "needs a postgresql:// or postgres:// URL", "s3cr3t-pw"},
		{"server down", "postgres://gomase:s3cr3t-pw@" + down + "/db", "cannot connect to PostgreSQL at " + down + ": ", "s3cr3t-pw"},
		{"unknown host", "postgres://gomase:s3cr3t-pw@no-such-host.invalid:5432/db", "cannot connect to PostgreSQL at no-such-host.invalid:5432: ", "s3cr3t-pw"},
		{"wrong password", withPW(srv.URL("postgres"), "wrong-pw"),
			fmt.Sprintf(`PostgreSQL at 127.0.0.1:%d refused user "gomase": password authentication failed`, srv.Port), "wrong-pw"},
		{"no database", srv.URL("nope"), fmt.Sprintf(`PostgreSQL at 127.0.0.1:%d has no database "nope"`, srv.Port), pw},
	} {
		start := time.Now()
		_, err := storages.OpenPostgres(c.url, searchtest.Quiet)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") || strings.Contains(msg, c.secret) {
			t.Errorf("%s: %q, want one line containing %q, without %q", c.name, msg, c.want, c.secret)
		}
		t.Logf("%s (%v): %s", c.name, time.Since(start).Round(time.Millisecond), msg)
	}
	if got := storages.RedactURL("postgres://u:p%40ss@h/db?password=x1&sslpassword=y2&sslmode=disable", storages.URLSecrets("postgres://u:p%40ss@h/db?password=x1&sslpassword=y2&sslmode=disable")); strings.Contains(got, "p%40ss") ||
		strings.Contains(got, "x1") || strings.Contains(got, "y2") || !strings.Contains(got, "u:xxxxx@h/db") {
		t.Errorf("redactURL: %s", got)
	}
}

// TestOpenStorage: a PostgreSQL URL (TCP or Unix socket) opens a
// PostgresStorage, named without its password; anything else a journal.
func TestOpenStorage(t *testing.T) {
	u := pgDatabase(t)
	srv := pgServer(t)
	db := strings.TrimPrefix(must(url.Parse(u)).Path, "/")
	for _, spec := range []string{u, strings.Replace(u, "postgres://", "postgresql://", 1), srv.SocketURL(db)} {
		s, err := storages.Open(spec, searchtest.Quiet)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if _, ok := s.(*storages.PostgresStorage); !ok {
			t.Errorf("%s opened a %T", spec, s)
		}
		if strings.Contains(s.String(), srv.Password) || !strings.Contains(s.String(), "xxxxx") {
			t.Errorf("String() = %s", s)
		}
		if _, _, err := s.CreateStudy("o", studydata.Minimize); err != nil {
			t.Error(err)
		}
		s.Close()
	}
	path := filepath.Join(t.TempDir(), "j.jsonl")
	s, err := storages.Open(path, searchtest.Quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if j, ok := s.(*storages.JournalStorage); !ok || j.String() != path {
		t.Errorf("%s opened %T %s", path, s, s)
	}
	p := openPG(t, u)
	p.Close()
	if _, _, err := createTrial(p, "o"); err == nil || !strings.Contains(err.Error(), "is closed") {
		t.Errorf("createTrial after Close: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// BenchmarkPostgresTrials reads a study of 300 finished trials of 6
// parameters, what a sampler does before each suggestion.
func BenchmarkPostgresTrials(b *testing.B) {
	p := openPG(b, pgDatabase(b))
	s, err := search.NewStudy(search.Config{Name: "bench", Sampler: search.NewRandomSampler(1), Storage: p, Logger: searchtest.Quiet})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Optimize(context.Background(), searchtest.MixedObjective(false, false), 300, 0); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.Trials("bench"); err != nil {
			b.Fatal(err)
		}
	}
}
