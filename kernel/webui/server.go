package webui

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/gomase/gomase/kernel/runner"
)

// ServerOptions configure StartServer.
type ServerOptions struct {
	// Jupyter is the jupyter command (runner.DefaultJupyter if empty).
	Jupyter string
	// Dir is the directory the server serves (its --notebook-dir), and the
	// working directory of the server and of its kernels.
	Dir string
	// StateDir receives the server's Jupyter runtime and config directories
	// (connection files, an empty user config) and its notebook-signing
	// files, so that the user's ~/.jupyter settings do not leak in and
	// nothing is written to the user's Jupyter directories.
	StateDir string
	// Env is the server's environment (kernels inherit it); os.Environ()
	// if nil. JUPYTER_RUNTIME_DIR and JUPYTER_CONFIG_DIR are replaced.
	Env []string
	// Log, when set, receives the server's output (stdout and stderr) as
	// it comes.
	Log io.Writer
	// StartTimeout bounds how long the server may take to answer on /api
	// (one minute if zero).
	StartTimeout time.Duration
}

// Server is a classic `jupyter notebook` server (Notebook 6) listening on
// 127.0.0.1 with a random token. Stop ends it and its kernels.
type Server struct {
	// URL is the server's base URL, "http://127.0.0.1:PORT".
	URL string
	// Token is the server's authentication token.
	Token string
	// Dir is the served directory.
	Dir string

	cmd        *exec.Cmd
	runtimeDir string
	log        *runner.LineTail
	done       chan struct{} // closed when the server process has exited
	waitErr    error
	stopOnce   sync.Once
	stopErr    error
}

// StartServer starts `jupyter notebook` on a free loopback port serving
// opts.Dir and waits until it answers on /api. The server runs in its own
// process group. On error nothing is left running.
func StartServer(ctx context.Context, opts ServerOptions) (*Server, error) {
	if opts.Jupyter == "" {
		opts.Jupyter = defaultJupyter
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = time.Minute
	}
	if opts.Dir == "" || opts.StateDir == "" {
		return nil, errors.New("webui: StartServer needs Dir and StateDir")
	}
	env := opts.Env
	if env == nil {
		env = os.Environ()
	}
	runtimeDir := filepath.Join(opts.StateDir, "jupyter-runtime")
	configDir := filepath.Join(opts.StateDir, "jupyter-config")
	notaryDir := filepath.Join(opts.StateDir, "jupyter-notary")
	for _, d := range []string{runtimeDir, configDir, notaryDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("webui: %w", err)
		}
	}
	env = runner.SetEnv(env, "JUPYTER_RUNTIME_DIR", runtimeDir)
	env = runner.SetEnv(env, "JUPYTER_CONFIG_DIR", configDir)

	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("webui: no free loopback port: %w", err)
	}
	token, err := randomToken()
	if err != nil {
		return nil, fmt.Errorf("webui: %w", err)
	}
	// The flags are those of Notebook 6.4.12 (Debian 12's jupyter-notebook);
	// --port-retries=0 makes a taken port an error instead of a silent
	// move to another one.
	cmd := exec.Command(opts.Jupyter, "notebook",
		"--no-browser",
		"--ip=127.0.0.1",
		"--port="+strconv.Itoa(port),
		"--port-retries=0",
		"--notebook-dir="+opts.Dir,
		"--NotebookApp.token="+token,
		"--NotebookApp.password=",
		"--NotebookApp.terminals_enabled=False",
		"--NotebookNotary.data_dir="+notaryDir,
		"--allow-root",
	)
	cmd.Dir = opts.Dir
	cmd.Env = env
	// Its own process group, so that Stop can end the server and whatever
	// it started in that group; the parent-death signal ends the server
	// if this process dies without calling Stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	s := &Server{
		URL:        "http://127.0.0.1:" + strconv.Itoa(port),
		Token:      token,
		Dir:        opts.Dir,
		cmd:        cmd,
		runtimeDir: runtimeDir,
		log:        runner.NewLineTail(400),
		done:       make(chan struct{}),
	}
	var out io.Writer = s.log
	if opts.Log != nil {
		out = io.MultiWriter(s.log, opts.Log)
	}
	cmd.Stdout = out
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("webui: starting %s notebook: %w", opts.Jupyter, err)
	}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(ctx, opts.StartTimeout); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// waitReady polls /api until the server answers with its version.
func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	client := &http.Client{Timeout: 5 * time.Second}
	var last error
	for {
		var info struct {
			Version string `json:"version"`
		}
		if err := s.getJSON(ctx, client, "/api", &info); err == nil && info.Version != "" {
			return nil
		} else if err != nil {
			last = err
		} else {
			last = errors.New("no version in the answer")
		}
		select {
		case <-s.done:
			return fmt.Errorf("webui: jupyter notebook exited before answering on %s/api (%v)", s.URL, s.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("webui: waiting for jupyter notebook on %s/api: %w", s.URL, ctx.Err())
		case <-deadline.C:
			return fmt.Errorf("webui: jupyter notebook did not answer on %s/api within %s (last: %v)", s.URL, timeout, last)
		case <-tick.C:
		}
	}
}

// getJSON GETs path from the server with the token and decodes the answer.
func (s *Server) getJSON(ctx context.Context, client *http.Client, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "token "+s.Token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}

// KernelSpecs returns the names of the kernels the server can start, as its
// /api/kernelspecs lists them.
func (s *Server) KernelSpecs(ctx context.Context) ([]string, error) {
	var specs struct {
		KernelSpecs map[string]json.RawMessage `json:"kernelspecs"`
	}
	if err := s.getJSON(ctx, &http.Client{Timeout: 10 * time.Second}, "/api/kernelspecs", &specs); err != nil {
		return nil, err
	}
	var names []string
	for name := range specs.KernelSpecs {
		names = append(names, name)
	}
	return names, nil
}

// NotebookURL is the address of the classic notebook page for name (a
// path relative to the served directory), with the token.
func (s *Server) NotebookURL(name string) string {
	return s.URL + "/notebooks/" + (&url.URL{Path: filepath.ToSlash(name)}).EscapedPath() + "?token=" + url.QueryEscape(s.Token)
}

// LogTail returns the last n lines the server wrote.
func (s *Server) LogTail(n int) string { return s.log.Last(n) }

// Stop shuts the server's kernels down through the REST API, asks the
// server to stop (SIGTERM: it shuts down its remaining kernels and exits),
// and after a grace period kills its process group. Kernels that outlive it
// (Jupyter starts each in a session of its own) are found by their
// connection file in the server's runtime directory and killed. Stop may be
// called more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.stop() })
	return s.stopErr
}

func (s *Server) stop() error {
	select {
	case <-s.done:
	default:
		s.shutdownKernels()
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(20 * time.Second):
		}
		// Whatever is left of the group (the server, if it hung).
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			return fmt.Errorf("webui: jupyter notebook (pid %d) did not exit after SIGKILL", s.cmd.Process.Pid)
		}
	}
	if left := runner.StopKernels(s.runtimeDir, 5*time.Second); len(left) > 0 {
		return fmt.Errorf("webui: kernel processes %v of the stopped server could not be killed", left)
	}
	return nil
}

// shutdownKernels deletes every running kernel through the REST API (a
// clean shutdown_request to each), best effort.
func (s *Server) shutdownKernels() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	client := &http.Client{Timeout: 10 * time.Second}
	var kernels []struct {
		ID string `json:"id"`
	}
	if err := s.getJSON(ctx, client, "/api/kernels", &kernels); err != nil {
		return
	}
	for _, k := range kernels {
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.URL+"/api/kernels/"+url.PathEscape(k.ID), nil)
		if err != nil {
			continue
		}
		req.Header.Set("Authorization", "token "+s.Token)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
		}
	}
}

// freePort returns a TCP port free on 127.0.0.1 right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
