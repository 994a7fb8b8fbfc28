package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/launcher/flags"
	"github.com/go-rod/rod/lib/proto"

	"github.com/gomase/gomase/kernel/runner"
)

// browser is a headless Chromium started by rod's launcher from a given
// binary (rod never downloads one here), with the network closed to all
// but loopback.
type browser struct {
	launcher *launcher.Launcher
	rod      *rod.Browser
	pid      int
}

// offlineFlags keep Chromium off the network except loopback: every
// request goes to a proxy at 127.0.0.1:9 (the discard port, where nothing
// listens) except those to loopback, which Chromium's implicit proxy bypass
// rules (localhost, 127.0.0.0/8, [::1]) send direct; and no host name or
// address but localhost and 127.0.0.1 resolves (the rules apply to IP
// literals too). The page's own requests are also recorded
// (see netRecorder), so a leak is reported even if these flags stop
// working.
var offlineFlags = map[string][]string{
	"proxy-server":        {"127.0.0.1:9"},
	"host-resolver-rules": {"MAP * ~NOTFOUND", "EXCLUDE localhost", "EXCLUDE 127.0.0.1"},
	// Chromium's own background traffic.
	"disable-background-networking": nil,
	"disable-component-update":      nil,
	"disable-domain-reliability":    nil,
	"disable-sync":                  nil,
	"no-pings":                      nil,
	"disable-quic":                  nil,
}

// launchBrowser starts Chromium headless with a profile in profileDir; ctx
// bounds the start.
func launchBrowser(ctx context.Context, bin, profileDir string) (*browser, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("no Chromium at %s: %w", bin, err)
	}
	// Bin set: the launcher runs that binary and never fetches a browser.
	// Leakless off: no helper binary is unpacked; Close kills the process
	// group the launcher puts Chromium in.
	l := launcher.New().
		Context(ctx).
		Bin(bin).
		Headless(true).
		NoSandbox(true).
		Leakless(false).
		UserDataDir(profileDir).
		RemoteDebuggingPort(0).
		Set("disable-gpu").
		Set("disable-extensions").
		Set("no-default-browser-check").
		Set("mute-audio").
		Set("hide-scrollbars").
		Set("force-device-scale-factor", "1")
	for name, values := range offlineFlags {
		l = l.Set(flags.Flag(name), values...)
	}
	wsURL, err := l.Launch()
	if err != nil {
		l.Kill()
		return nil, fmt.Errorf("launching %s: %w", bin, err)
	}
	b := &browser{launcher: l, pid: l.PID()}
	if u, err := url.Parse(wsURL); err != nil || !isLoopbackHost(u.Hostname()) {
		b.close()
		return nil, fmt.Errorf("Chromium's DevTools address %q is not on loopback", wsURL)
	}
	// The connection lives until close, beyond ctx (which bounds the
	// launch); pages get their own contexts.
	r := rod.New().ControlURL(wsURL).NoDefaultDevice()
	if err := r.Connect(); err != nil {
		b.close()
		return nil, fmt.Errorf("connecting to Chromium's DevTools at %s: %w", wsURL, err)
	}
	b.rod = r
	return b, nil
}

// close ends the browser and waits (briefly) for its process to go.
func (b *browser) close() {
	if b.rod != nil {
		_ = b.rod.Timeout(10 * time.Second).Close()
	}
	b.launcher.Kill()
	if b.pid > 0 {
		runner.WaitGone(b.pid, 10*time.Second)
	}
}

// checkOffline opens a blank page and makes sure the browser cannot reach
// a non-loopback address (by IP and by name).
func (b *browser) checkOffline(ctx context.Context) error {
	page, err := b.rod.Page(proto.TargetCreateTarget{URL: "about:blank"})
	if err != nil {
		return err
	}
	defer page.Close()
	page = page.Context(ctx).Timeout(30 * time.Second)
	// 192.0.2.1 is TEST-NET-1 (RFC 5737): an address; example.com: a name.
	for _, target := range []string{"http://192.0.2.1/", "https://example.com/"} {
		res, err := page.Eval(`async (u) => {
			try { await fetch(u, {mode: "no-cors", cache: "no-store"}); return "reached"; }
			catch (e) { return "blocked: " + e; }
		}`, target)
		if err != nil {
			return fmt.Errorf("fetch(%q) in a blank page: %w", target, err)
		}
		if got := res.Value.Str(); !strings.HasPrefix(got, "blocked") {
			return fmt.Errorf("the browser reached %s; it must be off the network except loopback", target)
		}
	}
	return nil
}

// isLoopbackHost reports whether host (a name or an IP, without port or
// brackets) is loopback.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// offLoopback reports whether a request for rawURL leaves the machine:
// http(s) and ws(s) to a non-loopback host, or any scheme that is not
// local (data:, blob:, about:, javascript:, chrome-error:, devtools:).
func offLoopback(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return true
	}
	switch strings.ToLower(u.Scheme) {
	case "data", "blob", "about", "javascript", "chrome-error", "devtools", "chrome", "chrome-extension":
		return false
	case "http", "https", "ws", "wss":
		return !isLoopbackHost(u.Hostname())
	}
	return true
}

// netRecorder records what a page asks of the network: requests that
// leave loopback, and loopback requests that failed.
type netRecorder struct {
	mu      sync.Mutex
	remote  map[string]bool
	failed  []string
	urls    map[proto.NetworkRequestID]string
	console []string
}

func newNetRecorder() *netRecorder {
	return &netRecorder{remote: map[string]bool{}, urls: map[proto.NetworkRequestID]string{}}
}

// watch enables the Network and Runtime domains on page and records their
// events until ctx ends.
func (r *netRecorder) watch(page *rod.Page) error {
	if err := (proto.NetworkEnable{}).Call(page); err != nil {
		return err
	}
	if err := (proto.RuntimeEnable{}).Call(page); err != nil {
		return err
	}
	go page.EachEvent(
		func(e *proto.NetworkRequestWillBeSent) {
			r.request(e.RequestID, e.Request.URL)
		},
		func(e *proto.NetworkWebSocketCreated) {
			r.request("", e.URL)
		},
		func(e *proto.NetworkLoadingFailed) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if u := r.urls[e.RequestID]; u != "" && !e.Canceled && len(r.failed) < 50 {
				r.failed = append(r.failed, fmt.Sprintf("%s (%s)", redactToken(u), e.ErrorText))
			}
		},
		func(e *proto.RuntimeExceptionThrown) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if len(r.console) < 50 && e.ExceptionDetails != nil {
				msg := e.ExceptionDetails.Text
				if e.ExceptionDetails.Exception != nil && e.ExceptionDetails.Exception.Description != "" {
					msg += " " + firstLine(e.ExceptionDetails.Exception.Description)
				}
				r.console = append(r.console, "uncaught: "+msg)
			}
		},
	)()
	return nil
}

func (r *netRecorder) request(id proto.NetworkRequestID, u string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id != "" {
		r.urls[id] = u
	}
	if offLoopback(u) {
		r.remote[truncate(redactToken(u), 200)] = true
	}
}

// remoteRequests returns the recorded non-loopback requests, sorted.
func (r *netRecorder) remoteRequests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for u := range r.remote {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

// failedRequests returns the loopback requests that failed, and uncaught
// exceptions on the page.
func (r *netRecorder) problems() (failed, exceptions []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.failed...), append([]string(nil), r.console...)
}

// evalJSON evaluates js (a function expression) on page and decodes its
// JSON result into v.
func evalJSON(page *rod.Page, v any, js string, args ...any) error {
	res, err := page.Eval(js, args...)
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(res.Value.JSON("", "")), v)
}

var tokenRE = regexp.MustCompile(`([?&]token=)[^&#]*`)

// redactToken hides the server token in a URL.
func redactToken(u string) string { return tokenRE.ReplaceAllString(u, "${1}…") }

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-3]) + "..."
	}
	return s
}
