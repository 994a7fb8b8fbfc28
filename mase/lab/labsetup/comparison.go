package labsetup

import (
	"fmt"
	"strings"
)

// PerScale names a setting's value at each scale; Pick returns the one of
// the notebooks' scale. It reads better in a cell than ByScale's three
// positional arguments: PerScale[int]{Quick: 2, Standard: 8, Full: 20}.Pick().
type PerScale[T any] struct {
	Quick, Standard, Full T
}

// Pick returns the value of the notebooks' scale.
func (p PerScale[T]) Pick() T { return ByScale(p.Quick, p.Standard, p.Full) }

// LabFigure is one row of the table a lab report ends with: a figure the
// lab handout or MASE's tutorial reports, the same figure from this run,
// and why the two differ.
type LabFigure struct {
	What   string // the quantity, e.g. "accuracy after one epoch"
	Lab    string // the lab's figure as the lab states it ("0.83")
	Source string // who reports it, in words a student can follow ("MASE's Tutorial 2")
	Ours   string // this run's figure
	Why    string // why they differ (scale, start, data, a MASE bug)
}

// Comparison is the closing table of a report: the lab's figures beside
// this run's, headed by the scale the run used and where its model
// started (start: "seeded" for a random initialisation with Seed,
// "pretrained" for downloaded weights, or a sentence). It returns
// Markdown; an empty Lab or Ours cell reads "—".
func Comparison(start string, rows []LabFigure) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**The lab's numbers beside this run's** (scale: %s; start: %s)\n\n", Scale(), start)
	b.WriteString("| figure | the lab's | reported by | this run's | why they differ |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", cell(r.What), cell(r.Lab), cell(r.Source), cell(r.Ours), cell(r.Why))
	}
	return b.String()
}

// cell escapes a Markdown table cell ("|" and line breaks) and fills an
// empty one with a dash.
func cell(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "—"
	}
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
