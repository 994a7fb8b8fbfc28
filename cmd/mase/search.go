package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gomase/gomase/mase/data"
	"github.com/gomase/gomase/mase/lab/compress"
	"github.com/gomase/gomase/mase/lab/finetune"
	"github.com/gomase/gomase/mase/lab/nas"
	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/search/storages"
	"github.com/gomase/gomase/mase/tokenizer"
	"github.com/gomase/gomase/mase/ui/plot"
	"github.com/gomase/gomase/mase/ui/searchplot"
)

const searchUsage = "--space nas|mixed-precision|toy [--sampler random|grid|tpe] [--trials N] [--storage FILE|postgresql://...] [--study NAME] [--seed S] [--quick] " +
	"[--heartbeat D] [--retry-failed N] [--tpe-startup N] " +
	"[--timeout D] [--dataset D] [--limit N] [--eval-limit N] [--max-len L] [--epochs E] [--lr LR] [--plot FILE.svg] " +
	"[nas: --num-layers 2,4,8 --num-heads ... --hidden-sizes ... --intermediate-sizes ... --like-mase --grid-layer-choices linear[,identity] --compress --post-epochs E --best CKPT] " +
	"[toy: --toy-sleep D] " +
	"[mixed-precision: --checkpoint CKPT | --pretrained auto|off|ID|PATH --start-epochs E --formats integer,...|all --widths 8,16,32 --frac-widths 2,4,8 --lambda L --bits storage|mase]; " +
	"or: mase search " + searchExportUsage + "; or: mase search " + searchImportUsage + "; or: mase search " + searchFailUsage

func init() {
	register(command{
		name:  "search",
		usage: searchUsage,
		short: "run Lab 2's architecture search or Lab 3's mixed-precision search, one JSON line per finished trial, the best last; export a study to Optuna's journal format or import one",
		run:   runSearch,
		heavy: true,
	})
}

// searchSpaces are the values --space accepts.
// toy is a synthetic objective for trying storages and workers (search_toy.go).
var searchSpaces = []string{"nas", "mixed-precision", "toy"}

// searchFlags are the flags every space shares.
type searchFlags struct {
	space, sampler, storage, study, dataset, plot string
	trials, limit, evalLimit, maxLen, epochs      int
	retryFailed, tpeStartup                       int
	seed                                          uint64
	lr                                            float64
	quick                                         bool
	timeout, heartbeat                            time.Duration
	training                                      trainingFlags
}

// Quick mode's data scale: 2,000 SST-2 sentences cut to 32 tokens, on
// which a QuickSpace model trains in a few seconds and accuracies differ.
const (
	quickSearchLimit     = 2000
	quickSearchEvalLimit = 400
	quickSearchMaxLen    = 32
)

// trialLine is the JSON line printed for each finished trial.
type trialLine struct {
	Number    int            `json:"number"`
	State     string         `json:"state"`
	Value     *float64       `json:"value"`
	Params    map[string]any `json:"params"`
	UserAttrs map[string]any `json:"user_attrs,omitempty"`
	Duration  float64        `json:"duration_s"`
	Message   string         `json:"message,omitempty"`
}

func newTrialLine(ft search.FrozenTrial) trialLine {
	l := trialLine{Number: ft.Number, State: ft.State.String(), Params: ft.Params, UserAttrs: ft.UserAttrs,
		Duration: ft.Duration().Seconds(), Message: ft.Message}
	if ft.State == search.Complete && !math.IsNaN(ft.Value) {
		v := ft.Value
		l.Value = &v
	}
	return l
}

// runSearch is `mase search` (and its export and import).
func runSearch(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "export":
			return runSearchExport(args[1:], stdout, stderr)
		case "import":
			return runSearchImport(args[1:], stdout, stderr)
		case "fail":
			return runSearchFail(args[1:], stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("search", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f searchFlags
	fs.StringVar(&f.space, "space", "", "search space: "+strings.Join(searchSpaces, ", ")+" (required)")
	fs.StringVar(&f.sampler, "sampler", "tpe", "sampler: random, grid or tpe")
	fs.IntVar(&f.trials, "trials", 10, "stop when the study holds this many complete trials, counting those already in --storage and those other workers sharing it run (grid: at most the grid's size)")
	fs.StringVar(&f.storage, "storage", "", "where the study is kept: a journal file (one machine; created if missing, and an existing file must be a journal), or a PostgreSQL URL "+
		"postgresql://USER:PASSWORD@HOST:PORT/DB (workers on several machines share the study); a killed search started again with it resumes (default: memory only)")
	durationVar(fs, &f.heartbeat, "heartbeat", 0, false, "with a --storage: record this worker's heartbeat every D (e.g. 60s), so that workers on other machines (or other containers sharing a journal) mark its trial failed once it dies (Optuna's heartbeat_interval; 0: off)")
	fs.IntVar(&f.retryFailed, "retry-failed", 0, "run a trial that failed (its objective failed, or its worker died) again with the same parameters, at most N times per trial (Optuna's RetryFailedTrialCallback; 0: never)")
	fs.IntVar(&f.tpeStartup, "tpe-startup", 10, "tpe sampler: the number of complete trials sampled at random before TPE starts (Optuna's n_startup_trials)")
	fs.StringVar(&f.study, "study", "", "study name (default bert-tiny-nas-study or bert-tiny-mixed-precision-study)")
	fs.Uint64Var(&f.seed, "seed", 42, "seed of the sampler, the models and the data order")
	fs.BoolVar(&f.quick, "quick", false, fmt.Sprintf("quick mode: SST-2, %d training and %d test sentences of at most %d tokens, and for nas the small nas.QuickSpace, unless other flags say otherwise",
		quickSearchLimit, quickSearchEvalLimit, quickSearchMaxLen))
	durationVar(fs, &f.timeout, "timeout", 0, false, "stop starting trials after this long (e.g. 2h; 0: no limit)")
	fs.StringVar(&f.dataset, "dataset", "imdb", "dataset: "+strings.Join(finetune.Datasets, ", "))
	fs.IntVar(&f.limit, "limit", 0, "class-balanced subset of N training examples (0: all)")
	fs.IntVar(&f.evalLimit, "eval-limit", 0, "class-balanced subset of N test examples (0: all)")
	fs.IntVar(&f.maxLen, "max-len", 512, "truncate sequences to this many tokens")
	fs.IntVar(&f.epochs, "epochs", 1, "training epochs per trial (0: evaluate without training)")
	numberVar(fs, &f.lr, "lr", finetune.FromScratch().LearningRate, learningRates, "peak learning rate")
	fs.StringVar(&f.plot, "plot", "", "write the best-so-far chart of the study as SVG to this file")
	f.training = addTrainingFlags(fs)
	dataDir := dataDirFlag(fs)
	nasFlags := addNASFlags(fs)
	mpFlags := addMixedPrecisionFlags(fs)
	toySleep := addToyFlags(fs)
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	defer useDataDir(*dataDir)()
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if f.quick {
		if !set["dataset"] {
			f.dataset = "sst2"
		}
		if !set["limit"] {
			f.limit = quickSearchLimit
		}
		if !set["eval-limit"] {
			f.evalLimit = quickSearchEvalLimit
		}
		if !set["max-len"] {
			f.maxLen = quickSearchMaxLen
		}
	}
	if f.trials < 1 {
		return fmt.Errorf("--trials must be ≥ 1 (got %d)", f.trials)
	}
	if f.retryFailed < 0 {
		return fmt.Errorf("--retry-failed must be ≥ 0 (got %d; 0: no retry)", f.retryFailed)
	}
	if f.tpeStartup < 0 {
		return fmt.Errorf("--tpe-startup must be ≥ 0 (got %d)", f.tpeStartup)
	}
	if f.heartbeat > 0 && f.storage == "" {
		return errors.New(heartbeatNeedsStorage)
	}
	if err := checkOutputPath("--plot", f.plot, ".svg"); err != nil {
		return err
	}
	if *nasFlags.best != "" {
		if f.space != "nas" {
			return fmt.Errorf("--best is for --space nas (it saves the best trial's model); --space %s has no model to save", shellArg(f.space))
		}
		if err := checkCheckpointOut("--best", *nasFlags.best); err != nil {
			return err
		}
	}
	if f.epochs < 0 {
		return fmt.Errorf("--epochs must be ≥ 0 (got %d)", f.epochs)
	}
	if f.maxLen < 8 || f.maxLen > 512 {
		return fmt.Errorf("--max-len %d out of range (allowed: 8..512)", f.maxLen)
	}

	if f.space == "" {
		return fmt.Errorf("--space is required (allowed: %s)", strings.Join(searchSpaces, ", "))
	}
	if !slices.Contains(searchSpaces, f.space) {
		return fmt.Errorf("unknown --space %q (allowed: %s)", f.space, strings.Join(searchSpaces, ", "))
	}
	// The storage opens first: a wrong URL or password is reported before
	// the data loads and a starting model trains.
	warnings := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var storage search.Storage
	storageName := ""
	if f.storage != "" {
		st, err := storages.Open(f.storage, warnings)
		if err != nil {
			return err
		}
		defer st.Close()
		storage, storageName = st, st.String()
		if hb, ok := st.(heartbeater); ok && f.heartbeat > 0 {
			if err := hb.SetHeartbeat(f.heartbeat); err != nil {
				return err
			}
		}
	}

	// Downloads (data, vocabulary, a pretrained start) stop on SIGINT and
	// SIGTERM until the study starts, which handles them itself.
	ctx, release := interruptible()
	defer release()
	var objective search.Objective
	var grid func() (map[string][]any, error)
	var value string
	var err error
	switch f.space {
	case "nas":
		if f.study == "" {
			f.study = "bert-tiny-nas-study"
		}
		objective, grid, value, err = nasFlags.objective(ctx, f, set, stderr)
	case "mixed-precision":
		if f.study == "" {
			f.study = "bert-tiny-mixed-precision-study"
		}
		defer mpFlags.removeStart()
		objective, grid, value, err = mpFlags.objective(ctx, f, set, stderr)
	case "toy":
		if f.study == "" {
			f.study = "toy-study"
		}
		objective, value = toyObjective(*toySleep), "toy objective (synthetic, no training)"
		grid = func() (map[string][]any, error) { return toyGrid, nil }
	}
	release()
	if err != nil {
		return err
	}
	sampler, err := newSampler(f.sampler, int64(f.seed), f.tpeStartup, grid)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	var emitErr error
	study, err := search.NewStudy(search.Config{Name: f.study, Direction: search.Maximize, Sampler: sampler, Storage: storage,
		Logger: warnings, RetryFailed: f.retryFailed,
		Callbacks: []func(*search.Study, search.FrozenTrial){func(_ *search.Study, ft search.FrozenTrial) {
			if err := enc.Encode(newTrialLine(ft)); err != nil && emitErr == nil {
				emitErr = err
			}
		}}})
	if err != nil {
		return err
	}
	before, err := study.Trials()
	if err != nil {
		return err
	}
	if done := countComplete(before); done > 0 {
		fmt.Fprintf(stderr, "resuming study %q from %s: %d complete trial(s) kept\n", f.study, shellArg(storageName), done)
	}
	fmt.Fprintf(stderr, "%s search, %s sampler, objective: %s; %d trial(s) in all\n", f.space, f.sampler, value, f.trials)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := study.OptimizeUntil(ctx, objective, f.trials, f.timeout); err != nil {
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("interrupted; finished trials are kept%s", resumeHint(storageName))
		}
		var unjudged *search.UnjudgedError
		if errors.As(err, &unjudged) {
			return unjudgedRemedy(unjudged, storageName)
		}
		return err
	}
	if emitErr != nil {
		return emitErr
	}
	best, err := study.BestTrial()
	if err != nil {
		return fmt.Errorf("no trial completed: %w", err)
	}
	if err := enc.Encode(map[string]any{"best": newTrialLine(best)}); err != nil {
		return err
	}
	if f.plot != "" {
		trials, err := study.Trials()
		if err != nil {
			return err
		}
		chart := searchplot.BestSoFarChart(fmt.Sprintf("%s: best so far (%s sampler)", f.study, f.sampler), search.Maximize,
			[]searchplot.Named{{Name: f.sampler, Trials: trials}})
		chart.YLabel = "best " + value + " so far"
		svg, err := plot.LineSVG(chart)
		if err != nil {
			return err
		}
		if err := os.WriteFile(f.plot, svg, 0o644); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
	}
	return nil
}

func resumeHint(storage string) string {
	if storage == "" {
		return " only in memory (give --storage FILE or a PostgreSQL URL to resume a search)"
	}
	return " in " + shellArg(storage) + "; run the same command to resume"
}

// heartbeatNeedsStorage is the error of --heartbeat without --storage: an
// in-memory study has one worker, this process.
const heartbeatNeedsStorage = "--heartbeat needs a --storage (a journal file or a postgresql:// URL) that workers share; " +
	"an in-memory study has one worker, this process"

// heartbeater is a storage whose workers can send a heartbeat (the journal
// and PostgreSQL storages).
type heartbeater interface {
	SetHeartbeat(interval time.Duration) error
}

// unjudgedRemedy is the one-line error of a search that would wait only for
// trials whose worker it cannot judge: which trials, why, and the commands
// that go on.
func unjudgedRemedy(e *search.UnjudgedError, storage string) error {
	return fmt.Errorf("study %s waits only for %s; not waiting without end: if that worker is gone, mark the trial failed "+
		"(mase search fail --storage %s --study %s --trial %s) and run this again; if it still runs, run this again once it has finished; "+
		"start every worker with --heartbeat D (e.g. 60s) so that a dead worker's trial is marked failed by itself",
		strconv.Quote(e.Study), search.DescribeUnjudged(e.Trials), shellArg(storage), shellArg(e.Study), joinInts(search.UnjudgedNumbers(e.Trials)))
}

// countComplete counts complete trials (what OptimizeUntil counts).
func countComplete(ts []search.FrozenTrial) int {
	n := 0
	for _, t := range ts {
		if t.State == search.Complete {
			n++
		}
	}
	return n
}

// newSampler builds the --sampler; grid gives the full grid of the space.
func newSampler(name string, seed int64, tpeStartup int, grid func() (map[string][]any, error)) (search.Sampler, error) {
	switch name {
	case "random":
		return search.NewRandomSampler(seed), nil
	case "tpe":
		startup := tpeStartup
		if startup == 0 {
			startup = -1 // TPEOptions: 0 is the default, a negative value none
		}
		return search.NewTPESampler(search.TPEOptions{Seed: seed, NStartupTrials: startup})
	case "grid":
		g, err := grid()
		if err != nil {
			return nil, err
		}
		return search.NewGridSampler(g, seed)
	}
	return nil, fmt.Errorf("unknown --sampler %q (allowed: random, grid, tpe)", name)
}

// searchSession loads the data the trials train and evaluate on.
func searchSession(ctx context.Context, f searchFlags, stderr io.Writer) (*compress.Session, error) {
	o := finetune.Options{Model: "bert-tiny", Dataset: f.dataset, Limit: f.limit, EvalLimit: f.evalLimit, MaxLen: f.maxLen, Seed: f.seed}
	cfg := finetune.FromScratch()
	cfg.LearningRate, cfg.Seed, cfg.Epochs = f.lr, f.seed, f.epochs
	if err := f.training.apply(&cfg, &o); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil && f.epochs > 0 {
		return nil, err
	}
	s, err := compress.NewSessionContext(ctx, o, cfg)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "data: %s, %d training and %d test examples, at most %d tokens\n", o.Dataset, s.Train.Len(), s.Test.Len(), f.maxLen)
	return s, nil
}

// checkSpaceMemory checks, once the data is in and before the first trial,
// that the space's largest trial trains in the memory available
// (nas.Space.CheckTraining) at the session's batch sizes and the length of
// its longest example (truncated to the maximum length and padded as the
// batches are): the data's own lengths, not --max-len, which SST-2's
// sentences are far below.
func checkSpaceMemory(space nas.Space, sess *compress.Session) error {
	longest := 0
	for _, split := range []*data.Pretokenized{sess.Train, sess.Test} {
		for i := range split.Len() {
			longest = max(longest, len(split.IDs(i)))
		}
	}
	maxLen := cmp.Or(sess.Batch.MaxLength, tokenizer.ModelMaxLength)
	seq := min(longest, maxLen)
	if m := sess.Batch.PadToMultipleOf; m > 1 {
		seq = min((seq+m-1)/m*m, maxLen) // never beyond the maximum length
	}
	batch := sess.Batch.BatchSize
	return space.CheckTraining(limits.Dim{Name: "batch size", N: int64(batch)},
		limits.Dim{Name: "the longest example's tokens", N: int64(max(seq, 1))},
		limits.Dim{Name: "evaluation batch size", N: int64(cmp.Or(sess.EvalBatchSize, batch))}, onDevice(""))
}

// nasFlags are the flags of --space nas.
type nasFlags struct {
	numLayers, numHeads, hidden, intermediate, gridChoices, best *string
	likeMASE, compress                                           *bool
	postEpochs                                                   *int
}

func addNASFlags(fs *flag.FlagSet) *nasFlags {
	join := func(v []int) string { return strings.Trim(strings.Join(strings.Fields(fmt.Sprint(v)), ","), "[]") }
	s := nas.Tutorial5Space()
	return &nasFlags{
		numLayers:    fs.String("num-layers", join(s.NumLayers), "nas: encoder layer counts (--quick: 1,2)"),
		numHeads:     fs.String("num-heads", join(s.NumHeads), "nas: attention head counts (--quick: 2,4)"),
		hidden:       fs.String("hidden-sizes", join(s.HiddenSize), "nas: hidden sizes (--quick: 64,128)"),
		intermediate: fs.String("intermediate-sizes", join(s.IntermediateSize), "nas: intermediate sizes (--quick: 128,256)"),
		gridChoices:  fs.String("grid-layer-choices", nas.KeepLinear+","+nas.Identity, "nas, grid sampler: the choices the grid gives every square Linear (linear,identity: the space random and tpe search; linear: every Linear kept)"),
		best:         fs.String("best", "", "nas: export the best trial's model to this checkpoint base path"),
		likeMASE:     fs.Bool("like-mase", false, "nas: reproduce MASE's tutorial, where num_layers and num_heads do not change the model"),
		compress:     fs.Bool("compress", false, "nas: Task 2's compression-aware objective: after training, quantize (integer 8/4) and prune (l1-norm 0.5) every Linear, return the accuracy after compression"),
		postEpochs:   fs.Int("post-epochs", 0, "nas, with --compress: train this many more epochs after compression"),
	}
}

func (n *nasFlags) objective(ctx context.Context, f searchFlags, set map[string]bool, stderr io.Writer) (search.Objective, func() (map[string][]any, error), string, error) {
	space := nas.Tutorial5Space()
	if f.quick {
		space = nas.QuickSpace()
	}
	space.LikeMASE = *n.likeMASE
	var err error
	for _, l := range []struct {
		flag string
		val  string
		dst  *[]int
	}{{"num-layers", *n.numLayers, &space.NumLayers}, {"num-heads", *n.numHeads, &space.NumHeads},
		{"hidden-sizes", *n.hidden, &space.HiddenSize}, {"intermediate-sizes", *n.intermediate, &space.IntermediateSize}} {
		if !set[l.flag] {
			continue
		}
		if *l.dst, err = parseInts("--"+l.flag, l.val); err != nil {
			return nil, nil, "", err
		}
	}
	if err := space.Validate(); err != nil {
		return nil, nil, "", err
	}
	if set["pretrained"] {
		return nil, nil, "", fmt.Errorf("--pretrained is for --space mixed-precision: NAS trial models are new architectures and start from random weights")
	}
	if *n.postEpochs < 0 || (*n.postEpochs > 0 && !*n.compress) {
		return nil, nil, "", fmt.Errorf("--post-epochs needs --compress and must be ≥ 0")
	}
	choices := strings.Split(*n.gridChoices, ",")
	sess, err := searchSession(ctx, f, stderr)
	if err != nil {
		return nil, nil, "", err
	}
	if err := checkSpaceMemory(space, sess); err != nil {
		return nil, nil, "", err
	}
	obj := &nas.Objective{Space: space, Session: sess, Seed: f.seed, BestPath: *n.best}
	value := "accuracy"
	if *n.compress {
		obj.Compression, obj.PostEpochs = nas.Tutorial5Compression(), *n.postEpochs
		value = "accuracy after compression"
		if obj.PostEpochs > 0 {
			value += " and training"
		}
	}
	archs, total := space.Size()
	fmt.Fprintf(stderr, "space: %d architectures, %s trials counting the layer choices\n", archs, total)
	return obj.Run, func() (map[string][]any, error) { return space.Grid(choices) }, value, nil
}
