// Package offlinetest checks that offline mode makes no network access: it
// turns offline mode on for a test and puts in place of the downloads'
// HTTP client one whose dialer (where a request would resolve its host)
// fails the test loudly and counts the attempt.
package offlinetest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/gomase/gomase/mase/download"
)

// Guard turns on GOMASE_OFFLINE for t and swaps download.DefaultClient for
// a client that fails t on any dial, restoring it when t ends. The count
// it returns is the dials attempted: 0 when offline mode held.
func Guard(t *testing.T) *atomic.Int64 {
	t.Helper()
	t.Setenv("GOMASE_OFFLINE", "1")
	var dials atomic.Int64
	loud := &http.Client{Transport: &http.Transport{DialContext: func(_ context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		t.Errorf("offline mode dialed %s %s (a DNS lookup and a connection)", network, addr)
		return nil, errors.New("offlinetest: no network in offline mode")
	}}}
	saved := download.DefaultClient
	download.DefaultClient = loud
	t.Cleanup(func() { download.DefaultClient = saved })
	return &dials
}
