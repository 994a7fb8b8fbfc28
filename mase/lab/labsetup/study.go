package labsetup

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/search/storages"
	"github.com/gomase/gomase/mase/ui/display"
)

// LiveStudy makes the maximising in-memory study the Lab 2 and Lab 3
// notebooks run: its progress shows as one line under the cell, rewritten
// after every trial (trial k/total, state, value, quantized layers when
// the trial records them, best so far, duration), and the search
// library's per-trial log lines are kept to warnings.
func LiveStudy(name string, sampler search.Sampler, total int) (*search.Study, error) {
	return liveStudy(nil, name, sampler, total)
}

// LiveStudyAt is LiveStudy on a shared storage: spec is a journal file or a
// PostgreSQL URL (storages.Open), the same as `mase search --storage
// SPEC --study NAME`, so that workers started elsewhere share the study and
// a study started again resumes. Close the storage when done.
func LiveStudyAt(spec, name string, sampler search.Sampler, total int) (*search.Study, storages.Closer, error) {
	st, err := storages.Open(spec, warnings())
	if err != nil {
		return nil, nil, err
	}
	s, err := liveStudy(st, name, sampler, total)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return s, st, nil
}

func liveStudy(storage search.Storage, name string, sampler search.Sampler, total int) (*search.Study, error) {
	id := display.NewID()
	display.HTML(fmt.Sprintf(`<div id="%s">%s: starting</div>`, id, name))
	return search.NewStudy(search.Config{Name: name, Direction: search.Maximize, Sampler: sampler, Storage: storage,
		Logger: warnings(),
		Callbacks: []func(*search.Study, search.FrozenTrial){func(s *search.Study, ft search.FrozenTrial) {
			display.UpdateHTML(id, progressLine(name, total, s, ft))
		}}})
}

// warnings logs the search library's warnings to stderr, not its per-trial
// lines.
func warnings() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// progressLine is LiveStudy's line after trial ft.
func progressLine(name string, total int, s *search.Study, ft search.FrozenTrial) string {
	line := fmt.Sprintf("%s: trial %d/%d %s", name, ft.Number+1, total, ft.State)
	if ft.State == search.Complete {
		line += fmt.Sprintf(", value %.4f", ft.Value)
	}
	if q, ok := ft.UserAttrs["quantized_layers"]; ok {
		line += fmt.Sprintf(", %v layers quantized", q)
	}
	if best, err := s.BestTrial(); err == nil {
		line += fmt.Sprintf("; best so far %.4f", best.Value)
	}
	return line + fmt.Sprintf(" (%.1f s)", ft.Duration().Seconds())
}
