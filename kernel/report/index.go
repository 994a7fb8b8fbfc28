package report

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"html/template"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/gomase/gomase/internal/atomicfile"
	"github.com/gomase/gomase/kernel/notebook"
	"github.com/gomase/gomase/mase/lab/labsetup/scale"
	"github.com/gomase/gomase/mase/limits"
)

// IndexInfo describes one `mase labs` run for its index page.
type IndexInfo struct {
	// Started is when the run began.
	Started time.Time
	// Scale is the notebooks' scale.
	Scale scale.Scale
	// Machine, Backend and Commit describe where and what ran; see
	// DescribeRun for how they are found.
	Machine, Backend, Commit string
	// Pending lists the notebooks (paths) of a run still in progress that
	// have no result yet, in the order they will run: the first is shown
	// as running, the others as waiting.
	Pending []string
}

// DescribeRun fills an IndexInfo for a run started now in the checkout at
// root at scale: the machine (host name, CPU model, cores, OS), the GoMLX
// backend the notebooks get (scale.BackendName) and the checkout's commit (git,
// "unknown" without it).
func DescribeRun(root string, sc scale.Scale) IndexInfo {
	host, _ := os.Hostname()
	machine := fmt.Sprintf("%s, %d cores, %s/%s", cpuModel(), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
	if host != "" {
		machine = host + ": " + machine
	}
	commit := "unknown"
	if out, err := exec.Command("git", "-C", root, "describe", "--always", "--dirty").Output(); err == nil {
		commit = strings.TrimSpace(string(out))
	}
	return IndexInfo{Started: time.Now(), Scale: sc, Machine: machine, Backend: scale.BackendName(), Commit: commit}
}

// cpuModel is the first "model name" of /proc/cpuinfo, or the
// architecture where there is none.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// indexRow is one notebook on the index page.
type indexRow struct {
	Name, Title, Status, Time, Link, Error string
	// Compare links the report's closing table (the lab's numbers beside
	// the run's), or is empty.
	Compare string
	// Class styles the status: ok, failed or pending.
	Class string
	// Note says where a row from another run comes from, or is empty.
	Note string
}

// WriteIndex writes index.html into dir: one line per notebook with its
// title, status, wall time and a link to its report, under the run's date,
// machine, backend, commit and scale. The rows are this run's results and
// pending notebooks, then every other report mase labs wrote in dir (by
// another run, maybe one running beside this one), read from the reports
// themselves; the folder is locked (flock) while it is read and the page
// written, so two runs into one folder never drop each other's reports.
// The page is self-contained (inline style, no script, no remote
// resource) and written whole (atomicfile). It returns the page's path.
func WriteIndex(dir string, results []Result, info IndexInfo) (string, error) {
	unlock, err := lockFolder(dir)
	if err != nil {
		return "", fmt.Errorf("writing the index page: %w", err)
	}
	defer unlock()
	var rows []indexRow
	var total time.Duration
	failed := 0
	ours := map[string]bool{}
	for _, r := range results {
		ours[r.Name] = true
		row := indexRow{Name: r.Name, Title: titleOf(r.Notebook, r.Name), Status: "OK", Class: "ok", Time: formatDuration(r.Duration)}
		total += r.Duration
		if r.Report != "" {
			if rel, err := filepath.Rel(dir, r.Report); err == nil {
				row.Link = filepath.ToSlash(rel)
				if id := comparisonAnchor(r.Report); id != "" {
					row.Compare = row.Link + "#" + id
				}
			}
		}
		if !r.OK() {
			failed++
			row.Status, row.Class = "FAILED", "failed"
			row.Error = notebook.FirstLine(notebook.StripANSI(r.Err.Error()))
		}
		rows = append(rows, row)
	}
	for i, nb := range info.Pending {
		name := notebook.Name(nb)
		ours[name] = true
		row := indexRow{Name: name, Title: titleOf(nb, name), Status: "waiting", Class: "pending"}
		if i == 0 {
			row.Status = "running"
		}
		rows = append(rows, row)
	}
	others, err := otherReports(dir, ours)
	if err != nil {
		return "", fmt.Errorf("writing the index page: %w", err)
	}
	for _, o := range others {
		total += o.duration
		if o.row.Class == "failed" {
			failed++
		}
		rows = append(rows, o.row)
	}
	var buf bytes.Buffer
	err = indexPage.Execute(&buf, map[string]any{
		"Date":    info.Started.Format("2006-01-02 15:04 MST"),
		"Machine": info.Machine, "Backend": info.Backend, "Commit": info.Commit, "Scale": info.Scale.Describe(),
		"Rows": rows, "Total": formatDuration(total), "Failed": failed, "Count": len(results) + len(others),
		"Pending": len(info.Pending),
	})
	if err != nil {
		return "", fmt.Errorf("index page: %w", err)
	}
	if err := CheckOffline(buf.String()); err != nil {
		return "", fmt.Errorf("index page: %w", err)
	}
	// Written whole and renamed into place: a browser reloading the page
	// during a run never reads half of it, and a full disk leaves the old one.
	path := filepath.Join(dir, "index.html")
	if err := atomicfile.Write(atomicfile.File{Path: path, Data: buf.Bytes()}); err != nil {
		return "", fmt.Errorf("writing the index page: %w", err)
	}
	return path, nil
}

// lockWait bounds how long WriteIndex waits for another run's lock on the
// folder (each holds it for the few milliseconds of one index page).
const lockWait = 30 * time.Second

// lockFolder takes an exclusive flock on the folder dir itself (nothing
// is added to it) and returns the function that releases it.
func lockFolder(dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(lockWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", dir, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another mase labs has held the lock on %s for %s (allowed: one index page written at a time; is a run stuck?)", dir, lockWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pageResult is what a report says of its run in its head (the content of
// <meta name="gomase-result">), so that an index page can list it.
type pageResult struct {
	Notebook  string    `json:"notebook"`
	Title     string    `json:"title"`
	OK        bool      `json:"ok"`
	Error     string    `json:"error,omitempty"`
	Seconds   float64   `json:"seconds"`
	Scale     string    `json:"scale,omitempty"`
	Backend   string    `json:"backend,omitempty"`
	Generated time.Time `json:"generated,omitzero"`
}

// maxErrorLine bounds the error line a report's result carries.
const maxErrorLine = 300

// firstLine is the first line of an error text, at most maxErrorLine runes.
func firstLine(s string) string {
	line := []rune(notebook.FirstLine(s))
	if len(line) > maxErrorLine {
		line = append(line[:maxErrorLine-3], []rune("...")...)
	}
	return string(line)
}

// resultMetaRE finds the result meta element in a report's head.
var resultMetaRE = regexp.MustCompile(`<meta name="gomase-result" content="([^"]*)">`)

// otherRow is a report of another run, as WriteIndex lists it.
type otherRow struct {
	row      indexRow
	duration time.Duration
}

// otherReports lists the reports mase labs wrote in dir whose names are
// not in skip (nor index.html), sorted by name, read from their heads.
func otherReports(dir string, skip map[string]bool) ([]otherRow, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var rows []otherRow
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".html")
		if !ok || name == "index" || skip[name] || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		head, ok := labsPageHead(path)
		if !ok {
			continue // not a page mase labs wrote
		}
		row := indexRow{Name: name, Title: name, Link: filepath.ToSlash(e.Name()), Status: "unknown", Class: "pending",
			Note: "written by an earlier mase labs that did not record its result"}
		var res pageResult
		var d time.Duration
		if m := resultMetaRE.FindSubmatch(head); m != nil && json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &res) == nil {
			d = time.Duration(res.Seconds * float64(time.Second))
			row.Title, row.Time, row.Status, row.Class = cmp.Or(res.Title, name), formatDuration(d), "OK", "ok"
			if !res.OK {
				row.Status, row.Class, row.Error = "FAILED", "failed", res.Error
			}
			row.Note = "from another run"
			if !res.Generated.IsZero() {
				row.Note += " (" + res.Generated.Format("2006-01-02 15:04 MST")
				if sc, err := scale.Parse(res.Scale); err == nil {
					row.Note += ", " + sc.Describe()
				}
				row.Note += ")"
			}
		}
		if id := comparisonAnchor(path); id != "" {
			row.Compare = row.Link + "#" + id
		}
		rows = append(rows, otherRow{row: row, duration: d})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].row.Name < rows[j].row.Name })
	return rows, nil
}

// labsPageHead returns the first 16 KiB of the page at path when it is a
// regular file that mase labs wrote (WrittenByLabs).
func labsPageHead(path string) ([]byte, bool) {
	if ok, err := WrittenByLabs(path); !ok || err != nil {
		return nil, false
	}
	f, _, err := limits.Open(path, anyPage)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	head := make([]byte, 16<<10)
	n, _ := io.ReadFull(f, head)
	return head[:n], true
}

// comparisonMarker is in the heading of the table labsetup.Comparison
// ends every report with.
const comparisonMarker = "numbers beside this run"

// headingID matches an HTML heading's id.
var headingID = regexp.MustCompile(`<h[1-6][^>]*\sid="([^"]+)"`)

// comparisonAnchor is the id of the last heading before the report's
// closing comparison table, or "" when the report has none (or cannot be
// read, or is over 64 MiB).
func comparisonAnchor(report string) string {
	if info, err := os.Stat(report); err != nil || info.Size() > 64<<20 {
		return ""
	}
	b, err := os.ReadFile(report)
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndex(s, comparisonMarker)
	if i < 0 {
		return ""
	}
	ids := headingID.FindAllStringSubmatch(s[:i], -1)
	if len(ids) == 0 {
		return ""
	}
	return ids[len(ids)-1][1]
}

// notebookSource bounds the notebook titleOf reads.
var notebookSource = limits.File{What: "a notebook", Max: 256 << 20}

// titleOf is a notebook's title (its first heading), or name if it cannot
// be read (or is not a regular file within notebookSource).
func titleOf(path, name string) string {
	data, err := limits.ReadFile(path, notebookSource)
	if err != nil {
		return name
	}
	if nb, err := notebook.ParseNotebook(data); err == nil {
		return notebookTitle(nb, name)
	}
	return name
}

var indexPage = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="generator" content="gomase mase labs">
<title>gomase lab reports</title>
<style>
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #ddd;padding:.4rem .6rem;text-align:left;vertical-align:top}
th{background:#f4f4f4}.ok{color:#176317;font-weight:600}.failed{color:#a11;font-weight:600}.pending{color:#777;font-style:italic}
dl{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem}dt{font-weight:600}.err{font-size:.85em;color:#a11}.note{font-size:.85em;color:#777}
</style></head><body>
<h1>gomase lab reports</h1>
<dl>
<dt>run</dt><dd>{{.Date}}</dd>
<dt>machine</dt><dd>{{.Machine}}</dd>
<dt>backend</dt><dd>{{.Backend}}</dd>
<dt>scale</dt><dd>{{.Scale}}</dd>
<dt>commit</dt><dd>{{.Commit}}</dd>
<dt>wall time</dt><dd>{{.Total}} for {{.Count}} notebook(s){{if .Failed}}, {{.Failed}} failed{{end}}{{if .Pending}}; {{.Pending}} still to run (reload this page to follow the run){{end}}</dd>
</dl>
<table>
<tr><th>notebook</th><th>title</th><th>status</th><th>wall time</th><th>the lab's numbers</th></tr>
{{range .Rows}}<tr><td>{{if .Link}}<a href="{{.Link}}">{{.Name}}</a>{{else}}{{.Name}}{{end}}</td><td>{{.Title}}{{if .Note}}<div class="note">{{.Note}}</div>{{end}}</td><td class="{{.Class}}">{{.Status}}{{if .Error}}<div class="err">{{.Error}}</div>{{end}}</td><td>{{.Time}}</td><td>{{if .Compare}}<a href="{{.Compare}}">beside this run's</a>{{end}}</td></tr>
{{end}}</table>
</body></html>
`))

// Result is the outcome of running one notebook.
type Result struct {
	// Notebook is the input path, Name its base name without ".ipynb".
	Notebook, Name string
	// Executed and Report are the written notebook and HTML report ("" when
	// not written).
	Executed, Report string
	// Duration is the wall time of the run.
	Duration time.Duration
	// Err is nil on success; a *CellError when a cell failed.
	Err error
}

// OK reports whether the notebook ran without error.
func (r Result) OK() bool { return r.Err == nil }
