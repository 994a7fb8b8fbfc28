// Package notebook reads Jupyter notebooks (.ipynb, nbformat 4): cells,
// outputs and MIME bundles, and the error of the first failing cell as a
// student should read it (GoNB's compiler and panic reports made plain).
package notebook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Notebook is the part of a Jupyter notebook (nbformat 4) that the runner
// and the HTML report read.
type Notebook struct {
	Cells         []Cell         `json:"cells"`
	Metadata      map[string]any `json:"metadata"`
	NBFormat      int            `json:"nbformat"`
	NBFormatMinor int            `json:"nbformat_minor"`
}

// Cell is one notebook cell: "code", "markdown" or "raw".
type Cell struct {
	ID          string                `json:"id"`
	CellType    string                `json:"cell_type"`
	Source      Text                  `json:"source"`
	Metadata    CellMetadata          `json:"metadata"`
	Execution   *int                  `json:"execution_count"`
	Outputs     []Output              `json:"outputs"`
	Attachments map[string]MIMEBundle `json:"attachments"`
}

// CellMetadata holds the cell metadata the runner uses.
type CellMetadata struct {
	// Tags are the cell's tags; "raises-exception" marks a cell whose error
	// is expected, "skip-execution" one that is not run.
	Tags []string `json:"tags"`
	// Execution holds nbclient's timestamps (record_timing).
	Execution map[string]string `json:"execution"`
}

// HasTag reports whether the cell carries tag.
func (c *Cell) HasTag(tag string) bool {
	for _, t := range c.Metadata.Tags {
		if t == tag {
			return true
		}
	}
	return false
}

// Duration returns how long the cell ran, from nbclient's timing metadata,
// or 0 when unknown.
func (c *Cell) Duration() time.Duration {
	start, ok1 := c.Metadata.Execution["iopub.execute_input"]
	end, ok2 := c.Metadata.Execution["shell.execute_reply"]
	if !ok1 || !ok2 {
		return 0
	}
	t0, err1 := time.Parse(time.RFC3339Nano, start)
	t1, err2 := time.Parse(time.RFC3339Nano, end)
	if err1 != nil || err2 != nil || t1.Before(t0) {
		return 0
	}
	return t1.Sub(t0)
}

// MIMEBundle maps a MIME type to its data: a Text for text types and
// base64 images, raw JSON for application/json and the like.
type MIMEBundle map[string]json.RawMessage

// Text returns the bundle's value for mime as a string (nbformat stores
// text either as one string or as a list of lines), and whether it is there.
func (b MIMEBundle) Text(mime string) (string, bool) {
	raw, ok := b[mime]
	if !ok {
		return "", false
	}
	var t Text
	if err := json.Unmarshal(raw, &t); err != nil {
		// Not a string: keep the JSON itself (e.g. application/json).
		return string(raw), true
	}
	return string(t), true
}

// Output is one output of a code cell: "stream", "display_data",
// "execute_result" or "error".
type Output struct {
	OutputType string     `json:"output_type"`
	Name       string     `json:"name"` // stream: "stdout" or "stderr"
	Text       Text       `json:"text"` // stream text
	Data       MIMEBundle `json:"data"` // display_data, execute_result
	EName      string     `json:"ename"`
	EValue     string     `json:"evalue"`
	Traceback  []string   `json:"traceback"`
}

// Text is an nbformat multi-line string: a JSON string or list of strings,
// joined.
type Text string

// UnmarshalJSON accepts a string or a list of strings.
func (t *Text) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var parts []string
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		*t = Text(strings.Join(parts, ""))
		return nil
	}
	if string(b) == "null" {
		*t = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*t = Text(s)
	return nil
}

// ParseNotebook decodes an nbformat 4 notebook.
func ParseNotebook(data []byte) (*Notebook, error) {
	var nb Notebook
	if err := json.Unmarshal(data, &nb); err != nil {
		return nil, fmt.Errorf("not a Jupyter notebook (JSON): %w", err)
	}
	if nb.NBFormat != 4 {
		return nil, fmt.Errorf("notebook format %d is not supported (allowed: nbformat 4)", nb.NBFormat)
	}
	for i, c := range nb.Cells {
		switch c.CellType {
		case "code", "markdown", "raw":
		default:
			return nil, fmt.Errorf("cell %d has cell_type %q (allowed: code, markdown, raw)", i+1, c.CellType)
		}
	}
	return &nb, nil
}

// ReadNotebook reads and decodes the notebook file at path.
func ReadNotebook(path string) (*Notebook, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	nb, err := ParseNotebook(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return nb, nil
}

// KernelName returns the kernel named in the notebook's metadata, or "".
func (nb *Notebook) KernelName() string {
	ks, _ := nb.Metadata["kernelspec"].(map[string]any)
	name, _ := ks["name"].(string)
	return name
}

// FirstLine returns the first line of a cell's source that says something:
// blank lines and a bare "%%" (GoNB's "the rest is main()") are skipped.
func FirstLine(src string) string {
	for _, l := range strings.Split(src, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l == "%%" {
			continue
		}
		return l
	}
	return strings.TrimSpace(src)
}

// Name is a notebook's name: its file name without ".ipynb".
func Name(path string) string {
	return strings.TrimSuffix(filepath.Base(path), ".ipynb")
}
