package notebook

import (
	"fmt"
	"html"
	"regexp"
	"strings"
)

// CellError describes the cell that stopped a notebook run.
type CellError struct {
	// Index is the cell's 1-based position in the notebook (all cells,
	// markdown included), as Jupyter's cell list shows them.
	Index int
	// Execution is the cell's execution count (the n of "In [n]"), 0 if none.
	Execution int
	// ID is the cell id, "" when the notebook has none.
	ID string
	// FirstLine is the first meaningful line of the cell's source.
	FirstLine string
	// Kind is "error" (the cell raised or failed to compile), "timeout" or
	// "dead kernel".
	Kind string
	// EName and EValue are the error output's name and value, ANSI colour
	// codes stripped.
	EName, EValue string
	// Traceback is the error output's traceback, ANSI stripped, one string.
	Traceback string
	// Details is what else the cell said about its failure: the tail of its
	// stderr (a Go panic and its stack), GoNB's HTML compile errors as text.
	Details string
}

// Error returns a multi-line message: the cell, then the error, then details.
func (e *CellError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cell %d", e.Index)
	var tags []string
	if e.Execution > 0 {
		tags = append(tags, fmt.Sprintf("In [%d]", e.Execution))
	}
	if e.ID != "" {
		tags = append(tags, "id "+e.ID)
	}
	if len(tags) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(tags, ", "))
	}
	if e.FirstLine != "" {
		line := e.FirstLine
		if r := []rune(line); len(r) > 80 {
			line = string(r[:77]) + "..."
		}
		fmt.Fprintf(&b, " `%s`", line)
	}
	switch e.Kind {
	case "timeout":
		b.WriteString(" timed out")
	case "dead kernel":
		b.WriteString(": the kernel died")
	default:
		b.WriteString(" failed")
	}
	value := strings.TrimSpace(e.EValue)
	if exitStatusRE.MatchString(value) {
		// GoNB only says the cell's program exited; its stderr says why.
		if m := panicLineRE.FindString(e.Details); m != "" {
			value = strings.TrimSpace(m) + " (" + value + ")"
		}
	}
	head := strings.TrimSpace(strings.TrimSpace(e.EName) + ": " + value)
	head = strings.TrimPrefix(strings.TrimSuffix(head, ":"), ": ")
	if head != "" {
		b.WriteString(": ")
		b.WriteString(indentTail(head))
	}
	tb := strings.TrimSpace(e.Traceback)
	if tb != "" && tb != strings.TrimSpace(e.EValue) && !strings.Contains(head, tb) {
		b.WriteString("\n")
		b.WriteString(indent(tb))
	}
	if d := strings.TrimSpace(e.Details); d != "" {
		b.WriteString("\n")
		b.WriteString(indent(d))
	}
	return b.String()
}

func indent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n")
}

// indentTail indents every line of s but the first.
func indentTail(s string) string {
	first, rest, ok := strings.Cut(s, "\n")
	if !ok {
		return s
	}
	return first + "\n" + indent(rest)
}

// maxDetailLines bounds the stderr tail kept in a CellError.
const maxDetailLines = 40

// FirstError returns the first code cell of nb with an error output, or nil
// when there is none. Cells tagged "raises-exception" are expected to fail
// and are skipped, as nbclient does.
func FirstError(nb *Notebook) *CellError {
	for i := range nb.Cells {
		c := &nb.Cells[i]
		if c.CellType != "code" || c.HasTag("raises-exception") {
			continue
		}
		for _, o := range c.Outputs {
			if o.OutputType == "error" {
				e := cellError(c, i)
				e.Kind = "error"
				e.EName = StripANSI(o.EName)
				e.EValue = cleanGoNB(StripANSI(o.EValue))
				e.Traceback = cleanGoNB(StripANSI(strings.Join(o.Traceback, "\n")))
				e.Details = failureDetails(c)
				return e
			}
		}
	}
	return nil
}

var (
	exitStatusRE  = regexp.MustCompile(`^exit status \d+$`)
	panicLineRE   = regexp.MustCompile(`(?m)^(panic|fatal error): .*$`)
	gonbPkgLineRE = regexp.MustCompile(`(?m)^# gonb_[0-9a-f]+\s*$\n?`)
	gonbFileRE    = regexp.MustCompile(`(?m)^\s*(\./|/tmp/gonb_[0-9a-f]+/)?main(_test)?\.go:\d+(:\d+)?: `)
)

// cleanGoNB drops what only refers to GoNB's generated program from an
// error text: the "# gonb_1234abcd" package header of `go build` and the
// "./main.go:12:13: " positions (GoNB's traceback gives cell lines instead).
func cleanGoNB(s string) string {
	s = gonbPkgLineRE.ReplaceAllString(s, "")
	s = gonbFileRE.ReplaceAllString(s, "")
	s = blankRunRE.ReplaceAllString(s, "\n")
	return strings.TrimSpace(s)
}

// cellError fills the identity of cell i of nb.
func cellError(c *Cell, i int) *CellError {
	e := &CellError{Index: i + 1, ID: c.ID, FirstLine: FirstLine(string(c.Source))}
	if c.Execution != nil {
		e.Execution = *c.Execution
	}
	return e
}

// CellFailure is the error of cell i of nb, which failed without leaving
// an error output (a timeout, a dead kernel): the cell's identity and, as
// its details, its stderr and any GoNB error report.
func CellFailure(c *Cell, i int) *CellError {
	e := cellError(c, i)
	e.Details = failureDetails(c)
	return e
}

// failureDetails collects the cell's stderr (tail) and any GoNB HTML error
// report as plain text.
func failureDetails(c *Cell) string {
	var stderr strings.Builder
	var parts []string
	for _, o := range c.Outputs {
		switch o.OutputType {
		case "stream":
			if o.Name == "stderr" {
				stderr.WriteString(string(o.Text))
			}
		case "display_data", "execute_result":
			if h, ok := o.Data.Text("text/html"); ok && strings.Contains(h, "gonb-err-") {
				if t := strings.TrimSpace(gonbErrorText(h)); t != "" {
					parts = append(parts, t)
				}
			}
		}
	}
	if s := strings.TrimSpace(StripANSI(collapseCR(stderr.String()))); s != "" {
		lines := strings.Split(s, "\n")
		if len(lines) > maxDetailLines {
			lines = append([]string{fmt.Sprintf("... (%d earlier lines of stderr)", len(lines)-maxDetailLines)}, lines[len(lines)-maxDetailLines:]...)
		}
		parts = append([]string{strings.Join(lines, "\n")}, parts...)
	}
	return strings.Join(parts, "\n")
}

var (
	ansiRE         = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[@-Z\\-_]`)
	styleScriptRE  = regexp.MustCompile(`(?is)<(style|script)\b[^>]*>.*?</(style|script)\s*>`)
	gonbContextRE  = regexp.MustCompile(`(?is)<div class="gonb-err-context">.*?</div>\s*</div>`)
	blockBreakRE   = regexp.MustCompile(`(?i)<br\s*/?>|</(div|p|li|tr|h[1-6]|pre)>`)
	tagRE          = regexp.MustCompile(`(?s)<[^>]*>`)
	blankRunRE     = regexp.MustCompile(`\n[ \t]*(\n[ \t]*)+`)
	trailingSpaceR = regexp.MustCompile(`[ \t]+\n`)
)

// StripANSI removes ANSI terminal escape sequences (colours, cursor moves)
// from s.
func StripANSI(s string) string {
	return ansiRE.ReplaceAllString(s, "")
}

// collapseCR applies carriage returns the way a terminal does: within a
// line, only the text after the last "\r" stays (progress bars).
func collapseCR(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if j := strings.LastIndex(strings.TrimRight(l, "\r"), "\r"); j >= 0 {
			lines[i] = l[j+1:]
		} else {
			lines[i] = strings.TrimRight(l, "\r")
		}
	}
	return strings.Join(lines, "\n")
}

// gonbErrorText turns GoNB's HTML compile error report into text, dropping
// its CSS and the hover pop-ups with code context.
func gonbErrorText(h string) string {
	h = styleScriptRE.ReplaceAllString(h, "")
	h = gonbContextRE.ReplaceAllString(h, "</div>")
	return HTMLToText(h)
}

// HTMLToText strips tags from an HTML fragment, keeping line breaks.
func HTMLToText(h string) string {
	h = blockBreakRE.ReplaceAllString(h, "\n")
	h = tagRE.ReplaceAllString(h, "")
	h = html.UnescapeString(h)
	h = trailingSpaceR.ReplaceAllString(h, "\n")
	h = blankRunRE.ReplaceAllString(h, "\n")
	return strings.TrimSpace(h)
}

// PlainText is an output's text as a terminal shows it: ANSI escapes
// removed and each carriage-return-overwritten line at its last state.
func PlainText(s string) string { return collapseCR(StripANSI(s)) }

// LastLines returns the last n lines of s (a process's output, for an
// error message).
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
