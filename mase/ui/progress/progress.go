// Package progress shows training as it runs: a terminal bar, or a live
// loss plot under GoNB. Both implement train.Progress.
package progress

import (
	"fmt"
	"html"
	"io"
	"strings"
	"time"

	"github.com/gomase/gomase/mase/train"
	"github.com/gomase/gomase/mase/ui/display"
	"github.com/gomase/gomase/mase/ui/plot"
)

// Terminal draws a one-line progress bar with the loss, steps per
// second and the time left, redrawn in place (\r), and prints each log
// entry on its own line — the terminal counterpart of HF's tqdm bar.
type Terminal struct {
	W io.Writer
	// Every redraws the bar at most this often (default 200 ms).
	Every time.Duration

	start, last time.Time
}

// OnStep implements train.Progress.
func (p *Terminal) OnStep(step, total int, loss float64) {
	now := time.Now()
	if p.start.IsZero() {
		p.start = now
	}
	every := p.Every
	if every == 0 {
		every = 200 * time.Millisecond
	}
	if step != total && now.Sub(p.last) < every {
		return
	}
	p.last = now
	elapsed := now.Sub(p.start)
	rate := float64(step) / max(elapsed.Seconds(), 1e-9)
	eta := time.Duration(float64(total-step) / max(rate, 1e-9) * float64(time.Second))
	const width = 30
	done := width * step / max(total, 1)
	fmt.Fprintf(p.W, "\r[%s%s] %d/%d  loss %.4f  %.1f it/s  ETA %s ",
		strings.Repeat("=", done), strings.Repeat(" ", width-done), step, total, loss, rate, eta.Round(time.Second))
	if step == total {
		fmt.Fprintf(p.W, "\n")
	}
}

// OnLog implements train.Progress.
func (p *Terminal) OnLog(e train.LogEntry) {
	fmt.Fprintf(p.W, "\r{'loss': %.4f, 'learning_rate': %.4g, 'grad_norm': %.4f, 'epoch': %.2f, 'step': %d}\n",
		e.Loss, e.LearningRate, e.GradNorm, e.Epoch, e.Step)
}

// Notebook shows a live loss plot under GoNB: one output block,
// updated in place every logging step (and every Every steps), with a
// status line (step, loss, ETA). Outside a notebook it does nothing. The
// block is transient (GoNB's display_id updates): to keep the curve in an
// exported report, display LossChart after training.
type Notebook struct {
	// Title heads the plot.
	Title string
	// Every also refreshes the status line every so many steps (default 50).
	Every int

	id         string
	start      time.Time
	steps      []float64
	losses     []float64
	lastStatus string
}

// OnStep implements train.Progress.
func (p *Notebook) OnStep(step, total int, loss float64) {
	if !display.InNotebook() {
		return
	}
	if p.id == "" {
		p.id = display.NewID() // the output block is created by the first update
		p.start = time.Now()
	}
	every := p.Every
	if every <= 0 {
		every = 50
	}
	if step%every == 0 || step == total {
		rate := float64(step) / max(time.Since(p.start).Seconds(), 1e-9)
		eta := time.Duration(float64(total-step) / max(rate, 1e-9) * float64(time.Second)).Round(time.Second)
		p.lastStatus = fmt.Sprintf("step %d/%d · loss %.4f · %.1f steps/s · ETA %s", step, total, loss, rate, eta)
		p.render()
	}
}

// OnLog implements train.Progress.
func (p *Notebook) OnLog(e train.LogEntry) {
	p.steps = append(p.steps, float64(e.Step))
	p.losses = append(p.losses, e.Loss)
	if display.InNotebook() && p.id != "" {
		p.render()
	}
}

func (p *Notebook) render() {
	var img string
	if len(p.steps) > 0 {
		title := p.Title
		if title == "" {
			title = "training loss"
		}
		svg, err := plot.LineSVG(plot.Chart{Title: title, XLabel: "step", YLabel: "loss",
			Series: []plot.Series{{Name: "train loss", X: p.steps, Y: p.losses}}, Width: 14, Height: 7})
		if err == nil {
			img = string(svg)
		}
	}
	display.UpdateHTML(p.id, "<div><code>"+html.EscapeString(p.lastStatus)+"</code></div>"+img)
}

// LossChart returns the logged losses of a history as a chart, for
// drawing after training.
func LossChart(title string, h *train.History) plot.Chart {
	s := plot.Series{Name: "train loss"}
	for _, e := range h.Log {
		s.X = append(s.X, float64(e.Step))
		s.Y = append(s.Y, e.Loss)
	}
	return plot.Chart{Title: title, XLabel: "step", YLabel: "loss", Series: []plot.Series{s}}
}

var (
	_ train.Progress = (*Terminal)(nil)
	_ train.Progress = (*Notebook)(nil)
)
