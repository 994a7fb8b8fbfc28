//go:build unix

package pgtest

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestServer(t *testing.T) {
	s := New(t)
	for _, u := range []string{s.Database(t), s.SocketURL("postgres")} {
		conn, err := pgx.Connect(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		var who string
		if err := conn.QueryRow(context.Background(), "SELECT current_user").Scan(&who); err != nil || who != User {
			t.Fatalf("current_user %q, %v", who, err)
		}
		conn.Close(context.Background())
	}
}

// TestNoServer: without the binaries Start fails, saying how to get them.
func TestNoServer(t *testing.T) {
	empty := t.TempDir()
	t.Setenv("GOMASE_PG_BINDIR", "")
	t.Setenv("PATH", empty)
	defer func(old string) { debianBinDirs = old }(debianBinDirs)
	debianBinDirs = filepath.Join(empty, "*", "bin")
	_, err := Start(t.TempDir())
	if !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), "`make setup` installs Debian's postgresql") {
		t.Fatalf("Start without binaries: %v", err)
	}
	t.Setenv("GOMASE_PG_BINDIR", empty)
	if _, err := BinDir(); err == nil || !strings.Contains(err.Error(), "holds no initdb and postgres") {
		t.Fatalf("GOMASE_PG_BINDIR without binaries: %v", err)
	}
}
