//go:build !unix

package filelock

import "os"

// flock is a no-op where flock(2) does not exist: callers then run
// without mutual exclusion.
func flock(*os.File, bool) error { return nil }
