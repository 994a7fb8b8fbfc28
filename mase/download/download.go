// Package download is the one place where gomase writes downloaded bytes
// to disk (the hub client, the datasets and the tokenizer use it).
//
// A Transfer gives a request its context, which the caller's context, a
// stall (no bytes for Options.Stall) or the whole-transfer timeout ends.
// Transfer.Save streams the response body into a temporary file beside
// its destination (a name starting with "." and ending in Suffix), stops
// at the file's byte limit, checks the complete file (length, sha256,
// JSON or text content, the caller's Verify) and only then renames it
// into place. On every error, cancellation included, the temporary file
// is removed; Sweep, run before each download into a folder, removes the
// ones a killed process left behind.
package download

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Suffix ends the name of every temporary file a download writes.
const Suffix = ".incomplete"

// DefaultStall is how long a transfer may go without receiving a byte
// when Options.Stall is zero; Sweep treats a temporary file not written
// for this long as abandoned.
const DefaultStall = 60 * time.Second

// ErrTooLarge is wrapped by the error for a response above its limit.
var ErrTooLarge = errors.New("download: larger than the limit")

// ErrContent is wrapped by the error for a file that is not what it
// should be (HTML instead of JSON, a wrong sha256, a failed Verify).
var ErrContent = errors.New("download: unusable content")

// Options configure a Transfer.
type Options struct {
	// Stall ends the transfer when no byte arrives for this long (while
	// waiting for the response too); default DefaultStall.
	Stall time.Duration
	// Timeout, when above zero, bounds the whole transfer, request and
	// body.
	Timeout time.Duration
	// Progress, when set, is called with the bytes received so far: once
	// with 0 before the body is read, then as bytes arrive; total is the
	// Content-Length, -1 when unknown.
	Progress func(done, total int64)
}

// Content says how the bytes of a File are checked.
type Content int

const (
	// Binary files are checked only by size and sha256.
	Binary Content = iota
	// Text files must be UTF-8 without NUL bytes, and not an HTML page
	// (served as text/html, or starting with "<!doctype html" or "<html").
	Text
	// JSON files must parse as one JSON value; an HTML page (served as
	// text/html, or any body starting with '<') is refused.
	JSON
)

func (c Content) String() string {
	switch c {
	case Text:
		return "text"
	case JSON:
		return "JSON"
	}
	return "binary"
}

// File says where a response body goes and what it must be.
type File struct {
	// Path is the destination; with NameBySHA256 it is the folder, and the
	// file is named by the hex sha256 of its content.
	Path         string
	NameBySHA256 bool
	// Name is what errors call the file; default the base name of Path.
	Name string
	// Limit is the most bytes accepted (required, above zero): a larger
	// Content-Length is refused before the body is read, and a body that
	// runs past it is cut at Limit+1 bytes.
	Limit int64
	// LimitWhy says what the limit is, for errors ("the cap for JSON
	// files").
	LimitWhy string
	// SHA256, when set, is the hex sha256 the content must have.
	SHA256 string
	// Content selects the built-in content check.
	Content Content
	// Verify, when set, checks the complete temporary file at tmp before
	// it is renamed into place; an error discards it.
	Verify func(tmp string) error
}

// Result describes a saved file.
type Result struct {
	Path   string // where it now is
	Size   int64
	SHA256 string // hex
}

// Transfer is one download: Start it, make the request with Context,
// Save the response, Stop it (defer Stop right after Start).
type Transfer struct {
	ctx      context.Context
	cancel   context.CancelCauseFunc
	stopTime context.CancelFunc
	stall    *time.Timer
	opts     Options
}

// errStopped is the cause of a Transfer's context after Stop.
var errStopped = errors.New("download: transfer stopped")

// Start begins a transfer whose context is a child of parent.
func Start(parent context.Context, o Options) *Transfer {
	if o.Stall <= 0 {
		o.Stall = DefaultStall
	}
	ctx, stopTime := parent, context.CancelFunc(func() {})
	if o.Timeout > 0 {
		ctx, stopTime = context.WithTimeoutCause(parent, o.Timeout, fmt.Errorf("timed out after %v", o.Timeout))
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stall := o.Stall
	t := &Transfer{ctx: ctx, cancel: cancel, stopTime: stopTime, opts: o}
	t.stall = time.AfterFunc(stall, func() { cancel(fmt.Errorf("no data for %v", stall)) })
	return t
}

// Context is the context for the transfer's request.
func (t *Transfer) Context() context.Context { return t.ctx }

// Stop releases the transfer's timers and ends its context.
func (t *Transfer) Stop() {
	t.stall.Stop()
	t.cancel(errStopped)
	t.stopTime()
}

// Why returns why the transfer's context ended (no data for the stall
// timeout, the whole-transfer timeout, the caller's cancellation and its
// cause), or err when it has not ended.
func (t *Transfer) Why(err error) error {
	if t.ctx.Err() == nil {
		return err
	}
	return context.Cause(t.ctx)
}

// where is the host of u (the file's source in size and transfer errors).
func where(u *url.URL) string {
	if u == nil {
		return "an unknown host"
	}
	return u.Host
}

// show is u without credentials and query (signed CDN URLs carry
// secrets there), for errors.
func show(u *url.URL) string {
	if u == nil {
		return "an unknown URL"
	}
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = nil, "", false, "", ""
	return c.String()
}

// Save streams resp's body into f (see the package comment) and closes
// the body. resp must come from a request made with t.Context().
func (t *Transfer) Save(resp *http.Response, f File) (res Result, err error) {
	defer resp.Body.Close()
	var u *url.URL
	if resp.Request != nil {
		u = resp.Request.URL
	}
	name := f.Name
	if name == "" {
		name = filepath.Base(f.Path)
	}
	limit := fmt.Sprintf("the limit of %d bytes", f.Limit)
	if f.LimitWhy != "" {
		limit += " (" + f.LimitWhy + ")"
	}
	host, shown := where(u), show(u)
	if f.Limit <= 0 {
		return res, fmt.Errorf("download of %s from %s: no byte limit given (File.Limit %d); refused", name, host, f.Limit)
	}
	total := resp.ContentLength
	if total < 0 {
		total = -1
	}
	if total > f.Limit {
		return res, failf(ErrTooLarge, nil, "%s from %s is %d bytes (Content-Length), above %s; refused before reading",
			name, host, total, limit)
	}
	if f.Content != Binary && isHTMLType(resp.Header.Get("Content-Type")) {
		return res, failf(ErrContent, nil, "%s from %s is an HTML page (Content-Type %s), not %s (a login page or a proxy in the way?); nothing was kept",
			name, shown, resp.Header.Get("Content-Type"), f.Content)
	}

	dir := f.Path
	if !f.NameBySHA256 {
		dir = filepath.Dir(f.Path)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, fmt.Errorf("download of %s: %w", name, err)
	}
	Sweep(dir, t.opts.Stall)
	base := "download"
	if !f.NameBySHA256 {
		base = filepath.Base(f.Path)
		if len(base) > 100 {
			base = base[:100]
		}
	}
	tmp, err := os.CreateTemp(dir, tempPattern(base))
	if err != nil {
		return res, fmt.Errorf("download of %s: %w", name, err)
	}
	live.Store(tmp.Name(), true)
	defer live.Delete(tmp.Name())
	kept := false
	defer func() {
		if !kept {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()

	if t.opts.Progress != nil {
		t.opts.Progress(0, total)
	}
	sum := sha256.New()
	body := io.LimitReader(resp.Body, f.Limit+1)
	buf := make([]byte, 256<<10)
	var done int64
	var rerr error
	for {
		n, err := body.Read(buf)
		if n > 0 {
			t.stall.Reset(t.opts.Stall)
			if _, werr := tmp.Write(buf[:n]); werr != nil {
				return res, fmt.Errorf("download of %s: writing %s: %w; nothing was kept", name, dir, werr)
			}
			sum.Write(buf[:n])
			done += int64(n)
			if t.opts.Progress != nil {
				t.opts.Progress(done, total)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			rerr = err
			break
		}
	}
	if done > f.Limit {
		return res, failf(ErrTooLarge, nil, "%s from %s is larger than %s: stopped after %d bytes; nothing was kept",
			name, host, limit, done)
	}
	if rerr == nil && total >= 0 && done != total {
		rerr = io.ErrUnexpectedEOF
	}
	t.stall.Stop() // the network part is over
	if rerr != nil {
		size := "unknown"
		if total >= 0 {
			size = fmt.Sprint(total)
		}
		cause := t.Why(StripURL(rerr))
		return res, failf(nil, cause, "download of %s from %s interrupted after %d of %s bytes: %v; nothing was kept",
			name, host, done, size, cause)
	}
	if err := tmp.Sync(); err != nil {
		return res, fmt.Errorf("download of %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return res, fmt.Errorf("download of %s: %w", name, err)
	}
	got := hex.EncodeToString(sum.Sum(nil))
	if f.SHA256 != "" && got != f.SHA256 {
		return res, failf(ErrContent, nil, "%s from %s is corrupt: sha256 %s, expected %s (%d bytes received); nothing was kept",
			name, shown, got, f.SHA256, done)
	}
	if err := CheckFile(tmp.Name(), f.Content); err != nil {
		return res, failf(ErrContent, err, "%s from %s is %v; nothing was kept", name, shown, err)
	}
	if f.Verify != nil {
		if err := f.Verify(tmp.Name()); err != nil {
			return res, failf(ErrContent, err, "download of %s from %s is not usable: %v; nothing was kept", name, shown, err)
		}
	}
	if t.ctx.Err() != nil { // cancelled while the file was checked
		cause := context.Cause(t.ctx)
		return res, failf(nil, cause, "download of %s from %s interrupted after all %d bytes: %v; nothing was kept", name, host, done, cause)
	}
	dest := f.Path
	if f.NameBySHA256 {
		dest = filepath.Join(dir, got)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return res, fmt.Errorf("download of %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return res, fmt.Errorf("download of %s: %w", name, err)
	}
	kept = true
	return Result{Path: dest, Size: done, SHA256: got}, nil
}

// dlError is a one-line error that wraps a kind (ErrTooLarge,
// ErrContent) and a cause without repeating them.
type dlError struct {
	msg         string
	kind, cause error
}

func (e *dlError) Error() string { return e.msg }

func (e *dlError) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.kind, e.cause} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// failf makes a dlError, folding line breaks so that it stays one line.
func failf(kind, cause error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if strings.ContainsAny(msg, "\r\n") {
		msg = strings.Join(strings.Fields(msg), " ")
	}
	return &dlError{msg: msg, kind: kind, cause: cause}
}

// StripURL drops the method and URL that *url.Error repeats, for errors
// that name the file and host themselves.
func StripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// DefaultClient is the client Get uses when given none: connection, TLS
// and response-header timeouts, proxies from the environment.
var DefaultClient = &http.Client{Transport: &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DialContext:           (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
	TLSHandshakeTimeout:   30 * time.Second,
	ResponseHeaderTimeout: 60 * time.Second,
}}

// Get downloads rawURL into f with a plain GET, which must answer 200 OK.
// client nil means DefaultClient.
func Get(ctx context.Context, client *http.Client, rawURL string, f File, o Options) (Result, error) {
	if why := OfflineWhy(); why != "" {
		return Result{}, fmt.Errorf("%w: %s forbids downloading %s (unset it, or put the file where the loader looks first)", ErrOffline, why, rawURL)
	}
	if client == nil {
		client = DefaultClient
	}
	t := Start(ctx, o)
	defer t.Stop()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, rawURL, nil)
	if err != nil {
		return Result{}, fmt.Errorf("download from %s failed: %v", rawURL, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		cause := t.Why(StripURL(err))
		return Result{}, failf(nil, cause, "download from %s failed: %v", rawURL, cause)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return Result{}, fmt.Errorf("download from %s failed: HTTP status %s, want 200 OK", rawURL, resp.Status)
	}
	return t.Save(resp, f)
}
