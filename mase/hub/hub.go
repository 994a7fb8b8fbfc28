// Package hub fetches files of Hugging Face model repositories into the
// cache layout shared with huggingface_hub and transformers
// (<cache>/models--<org>--<name>/{refs,blobs,snapshots,.no_exist}).
package hub

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gomase/gomase/mase/download"
	"github.com/gomase/gomase/mase/limits"
)

// DefaultEndpoint is the Hub used when neither Options.Endpoint nor
// $HF_ENDPOINT is set.
const DefaultEndpoint = "https://huggingface.co"

// DefaultTimeout bounds one download when Options.Timeout is zero.
const DefaultTimeout = 30 * time.Minute

// Options control Resolve and ResolveOptional. The zero value is usable.
type Options struct {
	// Revision is a branch, tag or 40-hex commit; default "main".
	Revision string
	// Token is sent as "Authorization: Bearer"; default $HF_TOKEN, then
	// $HUGGING_FACE_HUB_TOKEN, then the file `huggingface-cli login`
	// writes (TokenPath).
	Token string
	// Endpoint is the Hub base URL; default $HF_ENDPOINT, else
	// https://huggingface.co.
	Endpoint string
	// CacheDir is the hub cache; default $HF_HUB_CACHE, else $HF_HOME/hub,
	// else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
	CacheDir string
	// Offline forbids network access. It is also on when $HF_HUB_OFFLINE
	// or $GOMASE_OFFLINE is 1, true, yes or on.
	Offline bool
	// Progress, if set, is called during downloads; total is -1 when
	// unknown.
	Progress func(file string, done, total int64)
	// Client is the HTTP client; default a plain http.Client.
	Client *http.Client
	// Timeout bounds each download (request and body); default
	// DefaultTimeout.
	Timeout time.Duration
}

// Errors returned by Resolve wrap one of these; test with errors.Is.
var (
	// ErrNotFound: the repository, revision or file does not exist.
	ErrNotFound = errors.New("hub: not found")
	// ErrUnauthorized: the Hub refused access (HTTP 401/403, gated repo).
	ErrUnauthorized = errors.New("hub: unauthorized")
	// ErrOffline: the file is not available locally and offline mode
	// forbids downloading it.
	ErrOffline = errors.New("hub: offline")
)

// hubError is a one-line error that wraps a sentinel kind and a cause.
type hubError struct {
	msg    string
	kind   error
	cause  error
	absent bool // the file itself does not exist (ResolveOptional: ok=false)
}

func (e *hubError) Error() string { return e.msg }

func (e *hubError) Unwrap() []error {
	var errs []error
	if e.kind != nil {
		errs = append(errs, e.kind)
	}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}

func errorf(kind error, format string, args ...any) *hubError {
	return &hubError{msg: oneLine(fmt.Sprintf(format, args...)), kind: kind}
}

// oneLine folds line breaks so every error stays on one line.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// Resolve returns a local path to file (slash-separated, relative) of
// repository id. id is either a local folder or a Hub repo id ("name" or
// "org/name"). Cached files are returned without network access; otherwise
// the file is downloaded into the cache unless offline.
func Resolve(id, file string, opts Options) (string, error) {
	return ResolveContext(context.Background(), id, file, opts)
}

// ResolveContext is Resolve with a context: cancelling it stops a download
// and removes what it had written.
func ResolveContext(ctx context.Context, id, file string, opts Options) (string, error) {
	return resolve(ctx, id, file, opts, false)
}

// ResolveOptional is Resolve for files that may legitimately be absent: it
// returns ok=false and no error when the file does not exist in the folder,
// the repository (HTTP 404 / EntryNotFound), a cached ".no_exist" marker, or
// (offline) the cached snapshot of the revision.
func ResolveOptional(id, file string, opts Options) (path string, ok bool, err error) {
	return ResolveOptionalContext(context.Background(), id, file, opts)
}

// ResolveOptionalContext is ResolveOptional with a context, as
// ResolveContext.
func ResolveOptionalContext(ctx context.Context, id, file string, opts Options) (path string, ok bool, err error) {
	p, err := resolve(ctx, id, file, opts, true)
	if err != nil {
		var he *hubError
		if errors.As(err, &he) && he.absent {
			return "", false, nil
		}
		return "", false, err
	}
	return p, true, nil
}

func resolve(ctx context.Context, id, file string, opts Options, optional bool) (string, error) {
	if err := checkFile(file); err != nil {
		return "", err
	}
	dir, local, err := localFolder(id)
	if err != nil {
		return "", err
	}
	if local {
		return fromFolder(dir, file)
	}
	if err := CheckRepoID(id); err != nil {
		return "", err
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return "", err
	}
	repo := repoDir(cfg.cacheDir, id)
	look := lookupCache(repo, cfg.revision, file)
	if look.path != "" {
		return look.path, nil
	}
	if look.marker && (optional || cfg.offline) {
		e := errorf(ErrNotFound, "%s not found in %s at revision %s (cached marker %s)",
			file, id, cfg.revision, look.markerPath)
		e.absent = true
		return "", e
	}
	if cfg.offline {
		if look.snapshot {
			e := errorf(ErrNotFound, "%s not found in %s at revision %s: the cached snapshot %s lacks it and %s forbids downloading",
				file, id, cfg.revision, look.snapshotDir, cfg.offlineWhy)
			e.absent = true
			return "", e
		}
		return "", errorf(ErrOffline, "cannot load %s of %s: not in folder %s (no such folder), not in the HF cache at %s (%s), and %s forbids downloading; fix: run once with network access to fill the cache, or pass a local folder that holds %s",
			file, id, id, repo, look.why, cfg.offlineWhy, file)
	}
	return cfg.download(ctx, id, file, repo)
}

// CheckRepoID reports whether id is a valid Hub repo id: "name" or
// "org/name", each part made of letters, digits, '-', '_' and '.', not
// starting or ending with '-' or '.', without "--" or "..", at most 96
// characters.
func CheckRepoID(id string) error {
	bad := func(why string) error {
		return errorf(nil, "invalid repo id %q: %s; use \"name\" or \"org/name\" with letters, digits, '-', '_', '.' (no \"--\" or \"..\", no leading or trailing '-' or '.', at most 96 characters each), or a local folder path", id, why)
	}
	if id == "" {
		return bad("empty")
	}
	parts := strings.Split(id, "/")
	if len(parts) > 2 {
		return bad("more than one '/'")
	}
	for _, p := range parts {
		switch {
		case p == "":
			return bad("empty part")
		case len(p) > 96:
			return bad("part longer than 96 characters")
		case strings.Contains(p, "--"), strings.Contains(p, ".."):
			return bad("contains \"--\" or \"..\"")
		case strings.IndexAny(p[:1], "-.") >= 0, strings.IndexAny(p[len(p)-1:], "-.") >= 0:
			return bad("part starts or ends with '-' or '.'")
		}
		for _, r := range p {
			if !isNameChar(r) {
				return bad(fmt.Sprintf("character %q not allowed", r))
			}
		}
	}
	return nil
}

func isNameChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '-' || r == '_' || r == '.'
}

// checkFile rejects file names that could escape the repository folder.
func checkFile(file string) error {
	bad := func(why string) error {
		return errorf(nil, "invalid file name %q: %s; use a relative slash-separated path such as \"config.json\" or \"sub/file.bin\"", file, why)
	}
	if file == "" {
		return bad("empty")
	}
	if strings.ContainsAny(file, "\\\x00") {
		return bad("contains a backslash or NUL")
	}
	if strings.HasPrefix(file, "/") {
		return bad("absolute")
	}
	for _, seg := range strings.Split(file, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return bad("empty, \".\" or \"..\" path segment")
		}
	}
	return nil
}

// checkRevision rejects revisions that could escape refs/ when used as a
// path.
func checkRevision(rev string) error {
	if strings.ContainsAny(rev, "\\\x00\r\n") || strings.HasPrefix(rev, "/") {
		return errorf(nil, "invalid revision %q", rev)
	}
	for _, seg := range strings.Split(rev, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return errorf(nil, "invalid revision %q: empty, \".\" or \"..\" segment", rev)
		}
	}
	return nil
}

// localFolder reports whether id names a local folder. Path-like ids
// (absolute, ".", "..", "./", "../", "~") must exist as folders.
func localFolder(id string) (string, bool, error) {
	pathLike := filepath.IsAbs(id) || id == "." || id == ".." || id == "~" ||
		strings.HasPrefix(id, "./") || strings.HasPrefix(id, "../") ||
		strings.HasPrefix(id, "/") || strings.HasPrefix(id, "~/") ||
		(filepath.Separator != '/' && (strings.HasPrefix(id, "."+string(filepath.Separator)) ||
			strings.HasPrefix(id, ".."+string(filepath.Separator))))
	dir, err := expandHome(id)
	if err != nil {
		return "", false, err
	}
	st, err := os.Stat(dir)
	switch {
	case err == nil && st.IsDir():
		return dir, true, nil
	case !pathLike:
		return "", false, nil
	case err == nil:
		return "", false, errorf(ErrNotFound, "%s is a file, not a model folder", dir)
	case errors.Is(err, fs.ErrNotExist):
		return "", false, errorf(ErrNotFound, "model folder %s does not exist", dir)
	default:
		return "", false, &hubError{msg: oneLine(fmt.Sprintf("model folder %s: %v", dir, err)), cause: err}
	}
}

func fromFolder(dir, file string) (string, error) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	p := filepath.Join(dir, filepath.FromSlash(file))
	st, err := os.Stat(p)
	switch {
	case err == nil && st.Mode().IsRegular():
		return p, nil
	case err == nil:
		return "", errorf(nil, "%s in folder %s is not a regular file", file, dir)
	case errors.Is(err, fs.ErrNotExist):
		e := errorf(ErrNotFound, "%s not found in folder %s", file, dir)
		e.absent = true
		return "", e
	default:
		return "", &hubError{msg: oneLine(fmt.Sprintf("%s in folder %s: %v", file, dir, err)), cause: err}
	}
}

// config is Options with defaults applied.
type config struct {
	revision   string
	token      string
	endpoint   string
	cacheDir   string
	offline    bool
	offlineWhy string
	progress   func(string, int64, int64)
	client     *http.Client
	timeout    time.Duration
}

func newConfig(o Options) (*config, error) {
	c := &config{
		revision: o.Revision,
		token:    o.Token,
		endpoint: o.Endpoint,
		cacheDir: o.CacheDir,
		progress: o.Progress,
		client:   o.Client,
		timeout:  o.Timeout,
	}
	if c.revision == "" {
		c.revision = "main"
	}
	if err := checkRevision(c.revision); err != nil {
		return nil, err
	}
	if c.token == "" {
		c.token = os.Getenv("HF_TOKEN")
	}
	if c.token == "" {
		c.token = os.Getenv("HUGGING_FACE_HUB_TOKEN")
	}
	if c.token == "" {
		c.token = savedToken()
	}
	c.token = strings.TrimSpace(c.token)
	if c.endpoint == "" {
		c.endpoint = os.Getenv("HF_ENDPOINT")
	}
	if c.endpoint == "" {
		c.endpoint = DefaultEndpoint
	}
	c.endpoint = strings.TrimRight(c.endpoint, "/")
	if c.cacheDir == "" {
		d, err := DefaultCacheDir()
		if err != nil {
			return nil, err
		}
		c.cacheDir = d
	}
	d, err := expandHome(c.cacheDir)
	if err != nil {
		return nil, err
	}
	c.cacheDir = d
	switch {
	case o.Offline:
		c.offline, c.offlineWhy = true, "offline mode (Options.Offline)"
	case download.OfflineWhy() != "":
		c.offline, c.offlineWhy = true, download.OfflineWhy()
	}
	if c.client == nil {
		c.client = &http.Client{}
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	return c, nil
}

// TokenPath returns where `huggingface-cli login` saves the token:
// $HF_TOKEN_PATH, else $HF_HOME/token, else
// $XDG_CACHE_HOME/huggingface/token, else ~/.cache/huggingface/token.
func TokenPath() (string, error) {
	if p := os.Getenv("HF_TOKEN_PATH"); p != "" {
		return expandHome(p)
	}
	home, err := hfHome()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, "token"), nil
}

// savedToken is the content of TokenPath's file; "" when there is none.
func savedToken() string {
	p, err := TokenPath()
	if err != nil {
		return ""
	}
	b, err := limits.ReadFile(p, limits.Small)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// hfHome is $HF_HOME, else $XDG_CACHE_HOME/huggingface, else
// ~/.cache/huggingface.
func hfHome() (string, error) {
	if d := os.Getenv("HF_HOME"); d != "" {
		return expandHome(d)
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		d, err := expandHome(d)
		return filepath.Join(d, "huggingface"), err
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errorf(nil, "no Hugging Face home folder: set HF_HOME (%v)", err)
	}
	return filepath.Join(home, ".cache", "huggingface"), nil
}

// DefaultCacheDir returns the hub cache folder from the environment:
// $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub,
// else ~/.cache/huggingface/hub.
func DefaultCacheDir() (string, error) {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return expandHome(d)
	}
	home, err := hfHome()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, "hub"), nil
}

func expandHome(p string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errorf(nil, "cannot expand %s: %v", p, err)
	}
	return filepath.Join(home, p[1:]), nil
}
