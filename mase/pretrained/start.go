package pretrained

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gomase/gomase/mase/hub"
)

// The choices of --pretrained besides a repository id or folder.
const (
	// Off starts from the seeded random initialisation.
	Off = "off"
	// Auto starts from LabsModel when it can be had (a folder, the
	// HuggingFace cache, or the hub) and otherwise from the seeded
	// initialisation, saying why.
	Auto = "auto"
)

// autoDialTimeout bounds how long Auto waits to reach the hub before it
// falls back (an offline machine should not stall a notebook).
const autoDialTimeout = 5 * time.Second

// Start loads the model an experiment starts from, as choice says: Off
// (or "") loads nothing; Auto loads LabsModel or falls back; anything else
// is a repository id or folder that must load. note is one line saying
// which start was taken (and, for a fallback, why); m is nil for the
// seeded initialisation.
func Start(choice string, opts Options) (m *Model, note string, err error) {
	return StartContext(context.Background(), choice, opts)
}

// StartContext is Start with a context: cancelling it stops a download and
// removes what it had written, and is an error even for Auto (which does
// not fall back then).
func StartContext(ctx context.Context, choice string, opts Options) (m *Model, note string, err error) {
	switch strings.TrimSpace(choice) {
	case "", Off:
		return nil, "starting from a seeded random initialisation (--pretrained off)", nil
	case Auto:
		if opts.Hub.Client == nil {
			opts.Hub.Client = &http.Client{Transport: &http.Transport{
				Proxy:                 http.ProxyFromEnvironment,
				DialContext:           (&net.Dialer{Timeout: autoDialTimeout}).DialContext,
				TLSHandshakeTimeout:   autoDialTimeout,
				ResponseHeaderTimeout: 2 * autoDialTimeout,
			}}
		}
		m, err := LoadContext(ctx, LabsModel, opts)
		if err != nil && ctx.Err() != nil {
			return nil, "", err
		}
		if err != nil {
			return nil, fmt.Sprintf("starting from a seeded random initialisation: the pretrained %s could not be had (%s)", LabsModel, reason(err)), nil
		}
		return m, fmt.Sprintf("starting from the pretrained %s (%s)", LabsModel, m.Weights), nil
	}
	m, err = LoadContext(ctx, choice, opts)
	if err != nil {
		return nil, "", err
	}
	return m, fmt.Sprintf("starting from the pretrained %s (%s)", choice, m.Weights), nil
}

// reason shortens a load error for a fallback note.
func reason(err error) string {
	switch {
	case errors.Is(err, hub.ErrOffline):
		return "offline and not in the HuggingFace cache"
	case errors.Is(err, hub.ErrUnauthorized):
		return "the hub asks for a token: set HF_TOKEN"
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "not in the HuggingFace cache, and the hub's host " + dnsErr.Name + " cannot be resolved: no network?"
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return "not in the HuggingFace cache, and the hub cannot be reached: " + netErr.Error()
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}
