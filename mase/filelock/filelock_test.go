package filelock

import (
	"path/filepath"
	"testing"
	"time"
)

// TestExclusiveWaitsForShared: an exclusive lock waits until every shared
// lock is released; shared locks do not wait for each other.
func TestExclusiveWaitsForShared(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	first, err := Acquire(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Share(); err != nil {
		t.Fatal(err)
	}
	second, err := Acquire(path, false) // must not wait
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Lock)
	go func() {
		l, err := Acquire(path, true)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	select {
	case <-got:
		t.Fatal("an exclusive lock was granted while two shared locks were held")
	case <-time.After(200 * time.Millisecond):
	}
	first.Release()
	select {
	case <-got:
		t.Fatal("an exclusive lock was granted while a shared lock was held")
	case <-time.After(200 * time.Millisecond):
	}
	second.Release()
	select {
	case l := <-got:
		l.Release()
	case <-time.After(10 * time.Second):
		t.Fatal("the exclusive lock was not granted after every shared lock was released")
	}
}
