package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// idleTimeout aborts a download whose body stalls this long.
var idleTimeout = 5 * time.Minute

const userAgent = "gomase-hub/1"

// fileURL is <endpoint>/<id>/resolve/<revision>/<file>, each part escaped.
func fileURL(endpoint, id, rev, file string) string {
	return endpoint + "/" + escapeSegments(id) + "/resolve/" + url.PathEscape(rev) + "/" + escapeSegments(file)
}

func escapeSegments(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// keepAuth reports whether the Authorization header may follow a redirect
// from one URL to another: same host and port, or an http to https upgrade
// on default ports (the rule of Python requests). Go's own rule also keeps
// it for other ports and subdomains, such as a CDN under the Hub's domain.
func keepAuth(from, to *url.URL) bool {
	if !strings.EqualFold(from.Hostname(), to.Hostname()) {
		return false
	}
	if from.Scheme == to.Scheme {
		return portOf(from) == portOf(to)
	}
	return from.Scheme == "http" && to.Scheme == "https" && portOf(from) == "80" && portOf(to) == "443"
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch u.Scheme {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// clientFor copies the configured client, recording the headers of every
// redirect response in hops and dropping Authorization when leaving the
// original host.
func (c *config) clientFor(orig *url.URL, hops *[]http.Header) *http.Client {
	cl := *c.client
	prev := c.client.CheckRedirect
	cl.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.Response != nil {
			*hops = append(*hops, req.Response.Header)
		}
		if !keepAuth(orig, req.URL) {
			req.Header.Del("Authorization")
		}
		if prev != nil {
			return prev(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &cl
}

// firstHeader returns the first non-empty value of key across hops.
func firstHeader(hops []http.Header, key string) string {
	for _, h := range hops {
		if v := strings.TrimSpace(h.Get(key)); v != "" {
			return v
		}
	}
	return ""
}

// cleanEtag strips a W/ prefix and quotes; it returns "" when the result is
// not usable as a blob file name.
func cleanEtag(e string) string {
	e = strings.TrimSpace(e)
	e = strings.TrimPrefix(e, "W/")
	e = strings.Trim(e, `"`)
	if !safeName(e) {
		return ""
	}
	return e
}

// download fetches file into the cache and returns its snapshot path.
func (c *config) download(id, file, repo string) (string, error) {
	u := fileURL(c.endpoint, id, c.revision, file)
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", errorf(nil, "bad endpoint %q: %v", c.endpoint, err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("User-Agent", userAgent)
	var hops []http.Header
	resp, err := c.clientFor(req.URL, &hops).Do(req)
	if err != nil {
		e := errorf(nil, "cannot download %s of %s from %s: %v; to work without network set HF_HUB_OFFLINE=1 and pass a local folder or a filled cache",
			file, id, c.endpoint, stripURLError(err))
		e.cause = err
		return "", e
	}
	defer resp.Body.Close()
	hops = append(hops, resp.Header)

	commit := firstHeader(hops, "X-Repo-Commit")
	fromHeader := safeName(commit)
	if !fromHeader {
		commit = sanitize(c.revision)
	}
	if resp.StatusCode != http.StatusOK {
		return "", c.statusError(resp, u, id, file, repo, commit, fromHeader || isCommit(c.revision))
	}

	blobs := filepath.Join(repo, "blobs")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return "", c.cacheError(err)
	}
	etag := cleanEtag(firstHeader(hops, "X-Linked-Etag"))
	if etag == "" {
		etag = cleanEtag(firstHeader(hops, "ETag"))
	}
	var blob string
	if etag != "" {
		blob = filepath.Join(blobs, etag)
		// Blobs only ever appear complete, so an existing one is reused.
		if st, err := os.Stat(blob); err != nil || !st.Mode().IsRegular() ||
			(resp.ContentLength >= 0 && st.Size() != resp.ContentLength) {
			blob = ""
		}
	}
	if blob == "" {
		blob, err = c.writeBlob(ctx, cancel, resp, blobs, etag, id, file, u)
		if err != nil {
			return "", err
		}
	}

	link := filepath.Join(repo, "snapshots", commit, filepath.FromSlash(file))
	if err := linkSnapshot(blob, link); err != nil {
		return "", c.cacheError(err)
	}
	os.Remove(filepath.Join(repo, ".no_exist", commit, filepath.FromSlash(file)))
	if err := writeRef(repo, c.revision, commit); err != nil {
		return "", c.cacheError(err)
	}
	return link, nil
}

func (c *config) cacheError(err error) error {
	e := errorf(nil, "hub cache %s: %v", c.cacheDir, err)
	e.cause = err
	return e
}

// stripURLError drops the method and URL that *url.Error repeats.
func stripURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// idleReader cancels the download when no bytes arrive for d.
type idleReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (ir *idleReader) Read(p []byte) (int, error) {
	n, err := ir.r.Read(p)
	ir.t.Reset(ir.d)
	return n, err
}

// writeBlob streams the body into blobs/<etag> (or blobs/<sha256> when the
// server sent no usable etag) via a temporary file that is removed on any
// error, so only complete blobs exist.
func (c *config) writeBlob(ctx context.Context, cancel context.CancelFunc, resp *http.Response, blobs, etag, id, file, u string) (string, error) {
	f, err := os.CreateTemp(blobs, ".download-*.incomplete")
	if err != nil {
		return "", c.cacheError(err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()

	var fired atomic.Bool
	timer := time.AfterFunc(idleTimeout, func() { fired.Store(true); cancel() })
	defer timer.Stop()
	body := &idleReader{r: resp.Body, t: timer, d: idleTimeout}

	total := resp.ContentLength
	if total < 0 {
		total = -1
	}
	// An LFS file's etag is the sha256 of its content: check it, so a
	// corrupted transfer is never cached.
	var sum hash.Hash
	var w io.Writer = f
	if etag == "" || isSHA256(etag) {
		sum = sha256.New()
		w = io.MultiWriter(f, sum)
	}
	if c.progress != nil {
		c.progress(file, 0, total)
	}
	buf := make([]byte, 256<<10)
	var done int64
	var rerr error
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return "", c.cacheError(werr)
			}
			done += int64(n)
			if c.progress != nil {
				c.progress(file, done, total)
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
	if rerr == nil && total >= 0 && done != total {
		rerr = io.ErrUnexpectedEOF
	}
	if rerr != nil {
		switch {
		case fired.Load():
			rerr = fmt.Errorf("no data for %v", idleTimeout)
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			rerr = fmt.Errorf("timed out after %v", c.timeout)
		}
		size := "unknown"
		if total >= 0 {
			size = fmt.Sprint(total)
		}
		e := errorf(nil, "download of %s of %s from %s interrupted after %d of %s bytes: %v; nothing was cached, retry",
			file, id, u, done, size, rerr)
		e.cause = rerr
		return "", e
	}
	if err := f.Sync(); err != nil {
		return "", c.cacheError(err)
	}
	if err := f.Close(); err != nil {
		return "", c.cacheError(err)
	}
	if sum != nil {
		got := hex.EncodeToString(sum.Sum(nil))
		if etag == "" {
			etag = got
		} else if got != etag {
			return "", errorf(nil, "download of %s of %s from %s is corrupt: sha256 %s, the hub says %s; nothing was cached, retry",
				file, id, u, got, etag)
		}
	}
	blob := filepath.Join(blobs, etag)
	if err := os.Chmod(tmp, 0o644); err != nil {
		return "", c.cacheError(err)
	}
	if err := os.Rename(tmp, blob); err != nil {
		return "", c.cacheError(err)
	}
	ok = true
	return blob, nil
}

// isSHA256 reports whether s is 64 lower-case hex digits, the form of an
// LFS file's etag.
func isSHA256(s string) bool { return isLowerHex(s, 64) }

// statusError turns a non-200 response into a one-line error and records a
// .no_exist marker when the file is known absent at a known commit.
func (c *config) statusError(resp *http.Response, u, id, file, repo, commit string, commitKnown bool) error {
	code := resp.Header.Get("X-Error-Code")
	status := resp.StatusCode
	tokenNote := "no token was sent"
	if c.token != "" {
		tokenNote = "the token sent was refused"
	}
	detail := ""
	if m := strings.TrimSpace(resp.Header.Get("X-Error-Message")); m != "" {
		if len(m) > 200 {
			m = m[:200] + "..."
		}
		detail = ": " + m
	}
	switch {
	case code == "GatedRepo":
		return errorf(ErrUnauthorized, "repository %s is gated: accept its terms at %s/%s and set HF_TOKEN (HTTP %d, %s)%s",
			id, c.endpoint, id, status, tokenNote, detail)
	case code == "RepoNotFound":
		return errorf(ErrNotFound, "repository %s not found at %s, or it is private and needs HF_TOKEN (HTTP %d, %s)%s",
			id, c.endpoint, status, tokenNote, detail)
	case code == "RevisionNotFound":
		return errorf(ErrNotFound, "revision %s not found in %s (HTTP %d from %s)%s", c.revision, id, status, u, detail)
	case code == "EntryNotFound" || status == http.StatusNotFound && code == "":
		if commitKnown {
			writeMarker(repo, commit, file)
			if resp.Header.Get("X-Repo-Commit") != "" {
				_ = writeRef(repo, c.revision, commit)
			}
		}
		e := errorf(ErrNotFound, "%s not found in %s at revision %s (HTTP %d from %s)", file, id, c.revision, status, u)
		e.absent = true
		return e
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return errorf(ErrUnauthorized, "repository %s needs authentication: set HF_TOKEN (HTTP %d, %s)%s",
			id, status, tokenNote, detail)
	}
	where := u
	if resp.Request != nil && resp.Request.URL.Host != "" && !strings.HasPrefix(u, resp.Request.URL.Scheme+"://"+resp.Request.URL.Host) {
		where += " after a redirect to " + resp.Request.URL.Host
	}
	return errorf(nil, "download of %s of %s failed: HTTP %s from %s%s", file, id, resp.Status, where, detail)
}
