package hub

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/gomase/gomase/mase/download"
)

// idleTimeout aborts a download that receives no byte for this long;
// leftovers of downloads killed longer ago are swept.
var idleTimeout = download.DefaultStall

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
func (c *config) download(ctx context.Context, id, file, repo string) (string, error) {
	u := fileURL(c.endpoint, id, c.revision, file)
	name := file + " of " + id
	var progress func(done, total int64)
	if c.progress != nil {
		progress = func(done, total int64) { c.progress(file, done, total) }
	}
	tr := download.Start(ctx, download.Options{Stall: idleTimeout, Timeout: c.timeout, Progress: progress})
	defer tr.Stop()
	req, err := http.NewRequestWithContext(tr.Context(), http.MethodGet, u, nil)
	if err != nil {
		return "", errorf(nil, "bad endpoint %q: %v", c.endpoint, err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("User-Agent", userAgent)
	if c.offline || download.OfflineWhy() != "" { // the lookups above never get here offline; this is the last guard
		return "", errorf(ErrOffline, "cannot download %s: %s forbids network access", name, cmp.Or(c.offlineWhy, download.OfflineWhy()))
	}
	var hops []http.Header
	resp, err := c.clientFor(req.URL, &hops).Do(req)
	if err != nil {
		if ctx.Err() != nil || tr.Context().Err() != nil {
			why := tr.Why(err)
			e := errorf(nil, "download of %s from %s interrupted: %v; nothing was kept", name, c.endpoint, why)
			e.cause = why
			return "", e
		}
		e := errorf(nil, "cannot download %s from %s: %v; to work without network set HF_HUB_OFFLINE=1 and pass a local folder or a filled cache",
			name, c.endpoint, download.StripURL(err))
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
	etag := cleanEtag(firstHeader(hops, "X-Linked-Etag"))
	if etag == "" {
		etag = cleanEtag(firstHeader(hops, "ETag"))
	}
	lim := limitFor(file, firstHeader(hops, "X-Linked-Size"), resp.ContentLength)
	if lim.bytes > MaxFileBytes {
		return "", errorf(nil, "%s from %s: %s is %d bytes, more than the %d one file may be (a file gomase loads is read whole); refused before reading",
			name, c.endpoint, lim.why, lim.bytes, int64(MaxFileBytes))
	}
	var blob string
	if etag != "" {
		blob = filepath.Join(blobs, etag)
		// Blobs only ever appear complete, so an existing one is reused,
		// unless it is not what the file must be (an older cache).
		if st, err := os.Stat(blob); err != nil || !st.Mode().IsRegular() ||
			(resp.ContentLength >= 0 && st.Size() != resp.ContentLength) ||
			download.CheckFile(blob, lim.content) != nil {
			blob = ""
		}
	}
	if blob == "" {
		f := download.File{Path: blobs, Name: name, Limit: lim.bytes, LimitWhy: lim.why, Content: lim.content}
		// An LFS file's etag is the sha256 of its content: check it, so a
		// corrupted transfer is never cached. Without an etag the blob is
		// named by its sha256.
		switch {
		case etag == "":
			f.NameBySHA256 = true
		case isSHA256(etag):
			f.Path, f.SHA256 = filepath.Join(blobs, etag), etag
		default:
			f.Path = filepath.Join(blobs, etag)
		}
		res, err := tr.Save(resp, f)
		if err != nil {
			e := errorf(nil, "%v", err)
			e.cause = err
			return "", e
		}
		blob = res.Path
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
