//go:build unix

// Package pgtest runs a private, throw-away PostgreSQL server for tests:
// initdb in a temporary directory, a postgres process listening on a free
// port of 127.0.0.1 (and a Unix socket in that directory), one database per
// test. It never touches a system service or cluster.
//
// As root (CI, containers) the server runs as the "postgres" OS user, or as
// "nobody" when there is none, since PostgreSQL refuses to run as root;
// otherwise it runs as the current user.
//
// The server binaries are looked up in $GOMASE_PG_BINDIR, then
// /usr/lib/postgresql/<version>/bin (Debian's layout, the newest version),
// then $PATH. When none are found Start fails with ErrNoServer, whose message
// says that `make setup` installs Debian's postgresql.
package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoServer is returned by Start when the PostgreSQL server binaries
// (initdb, postgres) are not installed.
var ErrNoServer = errors.New("pgtest: the PostgreSQL server binaries (initdb, postgres) are not installed " +
	"(none in $GOMASE_PG_BINDIR, /usr/lib/postgresql/*/bin or $PATH); `make setup` installs Debian's postgresql")

// User and Admin are the roles of the server: tests connect as User (with a
// password, over TCP); Admin is the superuser that creates databases.
const (
	User  = "gomase"
	Admin = "postgres"
)

// Server is a running private PostgreSQL server.
type Server struct {
	// Dir holds the data directory (data), the Unix socket (sock) and the
	// server log (postgres.log).
	Dir string
	// Host and Port are the TCP address the server listens on.
	Host string
	Port int
	// SocketDir is the directory of the server's Unix socket.
	SocketDir string
	// Password is User's password (and Admin's).
	Password string
	// BinDir is the directory of the server binaries.
	BinDir string

	durable bool
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error
	stopped sync.Once
	dbs     atomic.Int64
}

// debianBinDirs is where Debian's postgresql-<version> packages put the
// server binaries (a variable for the tests).
var debianBinDirs = "/usr/lib/postgresql/*/bin"

// BinDir returns the directory holding initdb and postgres, or ErrNoServer.
func BinDir() (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	if d := os.Getenv("GOMASE_PG_BINDIR"); d != "" {
		if has(d) {
			return d, nil
		}
		return "", fmt.Errorf("pgtest: $GOMASE_PG_BINDIR=%s holds no initdb and postgres", d)
	}
	matches, _ := filepath.Glob(debianBinDirs)
	version := func(dir string) float64 {
		v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(dir)), 64)
		return v
	}
	sort.Slice(matches, func(i, j int) bool { return version(matches[i]) > version(matches[j]) })
	for _, d := range matches {
		if has(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("postgres"); err == nil && has(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	return "", ErrNoServer
}

// New starts a server in t.TempDir() and stops it in t.Cleanup; it fails the
// test (never skips it) when the server cannot start.
func New(t testing.TB) *Server {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() == 0 { // the server's user must reach dir; testing made it and its parent 0700
		for _, d := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o711); err != nil {
				t.Fatal(err)
			}
		}
	}
	s, err := Start(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// Start initialises a cluster under dir, which must exist and be empty of
// it, and starts its server; stop it with Stop. For a server shared by a
// package's tests, call it from TestMain (or once, lazily) with a directory
// from os.MkdirTemp.
func Start(dir string) (*Server, error) {
	return StartWith(dir, Options{})
}

// Options configures StartWith.
type Options struct {
	// Durable keeps PostgreSQL's defaults for durability (fsync,
	// synchronous_commit and full_page_writes on: a commit waits for the
	// disk), as a production server runs, for benchmarks. Without it the
	// server skips them, which makes tests faster.
	Durable bool
}

// StartWith is Start with options.
func StartWith(dir string, o Options) (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, Host: "127.0.0.1", SocketDir: filepath.Join(dir, "sock"), BinDir: bin,
		logPath: filepath.Join(dir, "postgres.log"), durable: o.Durable}
	s.Password = randomHex(12)
	cred, err := serverUser()
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chmod(dir, 0o711); err != nil {
			return nil, fmt.Errorf("pgtest: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	for _, d := range []string{data, s.SocketDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, fmt.Errorf("pgtest: %w", err)
		}
		if cred != nil {
			if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, fmt.Errorf("pgtest: %w", err)
			}
		}
	}
	pwfile := filepath.Join(s.SocketDir, "pw")
	if err := os.WriteFile(pwfile, []byte(s.Password+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	if cred != nil {
		if err := os.Chown(pwfile, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("pgtest: %w", err)
		}
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", Admin, "--pwfile", pwfile,
		"--auth-local=trust", "--auth-host=scram-sha-256", "--no-locale", "-E", "UTF8", "--no-sync")
	initdb.Dir = dir
	initdb.Env = serverEnv()
	initdb.SysProcAttr = sysProcAttr(cred)
	out, err := initdb.CombinedOutput()
	os.Remove(pwfile)
	if err != nil {
		return nil, fmt.Errorf("pgtest: initdb in %s: %v\n%s", data, err, tail(out, 2000))
	}
	for attempt := 0; ; attempt++ {
		err := s.start(data, cred)
		if err == nil {
			break
		}
		if attempt < 3 && strings.Contains(err.Error(), "Address already in use") {
			continue // the free port was taken before the server bound it
		}
		return nil, err
	}
	if err := s.admin(context.Background(), fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", User, s.Password)); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// start runs the server on a free port and waits until it accepts connections.
func (s *Server) start(data string, cred *syscall.Credential) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	s.Port = port
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer logf.Close()
	start, _ := logf.Seek(0, 2)
	args := []string{"-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=" + s.Host, "-c", "unix_socket_directories=" + s.SocketDir,
		"-c", "max_connections=200", "-c", "shared_buffers=32MB"}
	if !s.durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	cmd := exec.Command(filepath.Join(s.BinDir, "postgres"), args...)
	cmd.Dir = s.Dir
	cmd.Env = serverEnv()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr(cred)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: starting postgres: %w", err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.adminURL("postgres"))
		if err == nil {
			conn.Close(ctx)
			cancel()
			return nil
		}
		cancel()
		select {
		case <-s.exited:
			log, _ := os.ReadFile(s.logPath)
			if int64(len(log)) > start {
				log = log[start:]
			}
			return fmt.Errorf("pgtest: postgres exited before accepting connections (%v); its log:\n%s", s.waitErr, tail(log, 2000))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("pgtest: postgres on port %d accepted no connection within 60 s: %v (log: %s)", port, err, s.logPath)
		}
	}
}

// Stop shuts the server down (a fast shutdown: sessions are disconnected)
// and waits for it; it may be called more than once.
func (s *Server) Stop() error {
	var err error
	s.stopped.Do(func() {
		if s.cmd == nil || s.cmd.Process == nil {
			return
		}
		s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			s.cmd.Process.Kill()
			<-s.exited
			err = fmt.Errorf("pgtest: postgres did not shut down within 30 s; killed it (log: %s)", s.logPath)
		}
	})
	return err
}

// Kill stops the server abruptly (SIGKILL), as a crash would.
func (s *Server) Kill() {
	s.stopped.Do(func() {
		if s.cmd != nil && s.cmd.Process != nil {
			s.cmd.Process.Kill()
			<-s.exited
		}
	})
}

// URL returns the postgres:// URL of database db for User, over TCP.
func (s *Server) URL(db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(User, s.Password),
		Host: net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), Path: "/" + db}
	return u.String()
}

// SocketURL returns a postgresql:// URL of database db for User through the
// server's Unix socket.
func (s *Server) SocketURL(db string) string {
	q := url.Values{"host": {s.SocketDir}, "port": {strconv.Itoa(s.Port)}}
	u := url.URL{Scheme: "postgresql", User: url.UserPassword(User, s.Password), Path: "/" + db, RawQuery: q.Encode()}
	return u.String()
}

func (s *Server) adminURL(db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(Admin, s.Password),
		Host: net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// admin runs statements as the superuser in database postgres.
func (s *Server) admin(ctx context.Context, stmts ...string) error {
	return s.exec(ctx, "postgres", stmts...)
}

// exec runs statements as the superuser in database db, each on its own.
func (s *Server) exec(ctx context.Context, db string, stmts ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.adminURL(db))
	if err != nil {
		return fmt.Errorf("pgtest: connecting as %s: %w", Admin, err)
	}
	defer conn.Close(ctx)
	for _, q := range stmts {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("pgtest: %s: %w", q, err)
		}
	}
	return nil
}

// CreateDatabase creates a new, empty database owned by User, named after
// hint (a test name, say) and unique on the server, and returns its URL.
func (s *Server) CreateDatabase(hint string) (string, error) {
	var b strings.Builder
	for _, r := range strings.ToLower(hint) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else if b.Len() > 0 && !strings.HasSuffix(b.String(), "_") {
			b.WriteByte('_')
		}
		if b.Len() >= 40 {
			break
		}
	}
	name := fmt.Sprintf("t%d_%s", s.dbs.Add(1), strings.TrimSuffix(b.String(), "_"))
	if err := s.admin(context.Background(), fmt.Sprintf("CREATE DATABASE %s OWNER %s", name, User)); err != nil {
		return "", err
	}
	return s.URL(name), nil
}

// Database is CreateDatabase for a test, failing it on error.
func (s *Server) Database(t testing.TB) string {
	t.Helper()
	u, err := s.CreateDatabase(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Exec runs statements as the superuser in database db (to set up a state a
// test needs, say).
func (s *Server) Exec(db string, stmts ...string) error {
	return s.exec(context.Background(), db, stmts...)
}

// serverUser returns the credential to run the server with: nil when not
// root, else the postgres user's, else nobody's.
func serverUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
	}
	return nil, errors.New("pgtest: running as root, and there is neither a postgres nor a nobody user to run PostgreSQL as (it refuses root)")
}

// serverEnv is the environment of initdb and postgres: this one, without
// the PG* variables that would point them elsewhere, and with a C locale.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LANG=C")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func tail(b []byte, n int) []byte {
	b = bytes.TrimSpace(b)
	if len(b) > n {
		return append([]byte("…"), b[len(b)-n:]...)
	}
	return b
}
