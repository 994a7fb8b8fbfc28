package mixedprecision

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/lab/compress"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/quant"
	"github.com/gomase/gomase/mase/search"
)

// Bit accountings of Objective.Bits.
const (
	// BitsStorage is the real storage cost per element
	// (passes.AvgBits.WeightStorageBits): integer 8/4 is 8 bits, float 32.
	BitsStorage = "storage"
	// BitsMASE is MASE's calculate_avg_bits figure, the sum of each
	// format's precision list (passes.AvgBits.WeightAvgBits): integer 8/4
	// counts 12, float 32.
	BitsMASE = "mase"
)

// Objective is Tutorial 6's objective as a search.Objective (use
// o.Run): each trial loads a fresh copy of the session's checkpoint,
// applies the space (Space.Apply), fine-tunes it (quantization-aware, for
// Session.Config.Epochs), evaluates it on Session.Test and returns
//
//	accuracy − Lambda · w_avg_bits
//
// where w_avg_bits is the element-weighted average bits of the Linear
// layers' weights in the accounting Bits names (the real storage bits by
// default; MASE's precision sum with "mase"). Lambda 0 is the lab's plain
// accuracy objective; seed 002's cost search used Lambda > 0 on integer
// layers.
//
// Each trial records the user attributes:
//
//	accuracy           test accuracy
//	w_avg_bits         weight bits in the Bits accounting (the cost's figure)
//	data_avg_bits      data-input bits in the Bits accounting
//	w_storage_bits     weight storage bits per element
//	data_storage_bits  data-input storage bits per element
//	mase_w_avg_bits    MASE's weight figure, when the formats allow it
//	mase_data_avg_bits MASE's data-input figure, likewise
//	quantized_layers   "k/N" (Space.Apply)
//	layer_types        Linear-like layers by MASE class, e.g. {"Linear": 5, "LinearInteger": 9}
//
// The bits are counted on the quantized graph with the common metadata of
// MASE's dummy input (models.DummyInput: the two dummy sentences for
// BERT), as calculate_avg_bits_mg_analysis_pass does; they do not depend on
// training. The metadata is added to the float graph before quantizing, so
// the returned graph's quantized nodes record their format and precision
// (integer [8, 4]) as MASE's quantize pass writes them.
//
// Unless Session.Verbose, Run swaps passes.Logger for a silent one while
// it quantizes (as compress's sweeps do), so run one trial at a time
// (Study.Optimize does) or set Verbose when several goroutines optimize
// the same objective.
type Objective struct {
	// Space is searched.
	Space Space
	// Session gives the base checkpoint, the data, the batch options and
	// the training config (its Epochs is the fine-tuning length; the lab
	// trains 1 epoch). Progress (or SweepProgress, preferred when set)
	// reports each trial's training; the passes' per-layer log lines are
	// silenced unless Session.Verbose.
	Session *compress.Session
	// Lambda weighs the bit cost; 0 is plain accuracy.
	Lambda float64
	// Bits picks the cost's accounting: BitsStorage ("storage", the
	// default when empty) or BitsMASE ("mase"). With "mase" a space whose
	// formats MASE cannot sum is an error (see Validate).
	Bits string
	// Train fine-tunes each quantized model before evaluating it
	// (NewObjective sets it); false evaluates right after quantization
	// (post-training quantization).
	Train bool
	// OnModel, when set, sees each trial's final graph after its
	// attributes are recorded (MASE stores the model as a user attribute;
	// a Go graph is not JSON, so save it here if needed).
	OnModel func(t *search.Trial, mg *ir.MaseGraph)
}

// NewObjective returns the lab's objective on space and session: train,
// then evaluate; Lambda 0; storage bits.
func NewObjective(space Space, session *compress.Session) *Objective {
	return &Objective{Space: space, Session: session, Bits: BitsStorage, Train: true}
}

// bits returns the accounting, with the default resolved.
func (o *Objective) bits() string {
	if o.Bits == "" {
		return BitsStorage
	}
	return o.Bits
}

// Validate checks the objective: a session, a valid space, a finite
// Lambda, Bits "storage", "mase" or empty; with "mase", every format of the
// space must have a precision list MASE can sum (integer, the binary
// formats and mxint8 can; minifloat and log with the default exponent bias
// None, the block formats with their block-size list, and ternary with its
// None statistics cannot, and make MASE's pass fail too).
func (o *Objective) Validate() error {
	if o.Session == nil {
		return errors.New("mixedprecision: Objective.Session is nil (it gives the checkpoint, data and training config)")
	}
	if err := o.Space.Validate(); err != nil {
		return err
	}
	if math.IsNaN(o.Lambda) || math.IsInf(o.Lambda, 0) {
		return fmt.Errorf("mixedprecision: Objective.Lambda %v is not finite (allowed: a finite number; 0 for plain accuracy)", o.Lambda)
	}
	switch o.bits() {
	case BitsStorage:
	case BitsMASE:
		var bad []string
		for _, c := range o.Space.Choices {
			if c != Linear && !maseSummable(c, o.Space) {
				bad = append(bad, c)
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf(`mixedprecision: Objective.Bits "mase": MASE's precision-sum accounting cannot count %s (a precision list holding None or a block-size list, which Python's sum() rejects; MASE's calculate_avg_bits fails too): use Bits "storage", or a space of integer, binary and mxint8 formats`,
				strings.Join(bad, ", "))
		}
	default:
		return fmt.Errorf("mixedprecision: Objective.Bits %q is unknown (allowed: %s, %s)", o.Bits, BitsStorage, BitsMASE)
	}
	return nil
}

// maseSummable reports whether MASE's precision sum of the format's data
// input and weight exists at the space's widths.
func maseSummable(format string, s Space) bool {
	cfg, err := FormatConfig(format, s.width(), s.fracWidth())
	if err != nil {
		return false
	}
	lc, err := quant.ParseLinearConfig(cfg)
	if err != nil {
		return false
	}
	for _, spec := range []*quant.Spec{lc.DataIn, lc.Weight} {
		if spec == nil {
			continue
		}
		if _, err := spec.PrecisionSum(); err != nil {
			return false
		}
	}
	return true
}

// Run evaluates one trial: it is a search.Objective (pass o.Run to
// Study.Optimize). See Objective for what it returns and records.
func (o *Objective) Run(t *search.Trial) (float64, error) {
	if t == nil {
		return 0, errors.New("mixedprecision: Objective.Run: the trial is nil")
	}
	if err := o.Validate(); err != nil {
		return 0, err
	}
	if err := t.Context().Err(); err != nil {
		return 0, err
	}
	start, compiled := time.Now(), o.Session.Compiles()
	var (
		mg   *ir.MaseGraph
		sum  Summary
		bits passes.AvgBits
	)
	err := o.Session.Quietly(func() error {
		var err error
		if mg, err = o.Session.Load(); err != nil {
			return err
		}
		// Metadata first, on the float graph: QuantizeTransform then
		// rewrites the quantized nodes' type and precision, as MASE's pass
		// does (running it afterwards would record float [32] for them).
		dummy, err := models.DummyInput(mg.Model, mg.InputNames, 0)
		if err != nil {
			return fmt.Errorf("mixedprecision: %w", err)
		}
		if _, _, err = passes.InitMetadata(mg); err != nil {
			return err
		}
		if _, _, err = passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{DummyIn: dummy}); err != nil {
			return err
		}
		if mg, sum, err = o.Space.Apply(t, mg); err != nil {
			return err
		}
		if bits, _, err = passes.CalculateAvgBits(mg); err != nil {
			return fmt.Errorf("mixedprecision: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if o.bits() == BitsMASE && !bits.MASEAvailable {
		return 0, fmt.Errorf(`mixedprecision: Objective.Bits "mase": MASE's precision sum is unavailable for this trial's layers (%s); use Bits "storage"`, sum)
	}
	if o.Train {
		s := *o.Session
		if s.SweepProgress != nil {
			s.Progress = s.SweepProgress
		}
		if _, err := s.FineTune(mg, fmt.Sprintf("trial %d: %s", t.Number(), sum)); err != nil {
			return 0, fmt.Errorf("mixedprecision: trial %d: fine-tuning: %w", t.Number(), err)
		}
	}
	m, err := o.Session.Evaluate(mg)
	if err != nil {
		return 0, fmt.Errorf("mixedprecision: trial %d: evaluating: %w", t.Number(), err)
	}
	w, d := bits.WeightStorageBits, bits.DataStorageBits
	if o.bits() == BitsMASE {
		w, d = bits.WeightAvgBits, bits.DataAvgBits
	}
	type attr struct {
		key string
		v   any
	}
	attrs := []attr{
		{"accuracy", m.Accuracy},
		{"w_avg_bits", w},
		{"data_avg_bits", d},
		{"w_storage_bits", bits.WeightStorageBits},
		{"data_storage_bits", bits.DataStorageBits},
	}
	if bits.MASEAvailable {
		attrs = append(attrs, attr{"mase_w_avg_bits", bits.WeightAvgBits}, attr{"mase_data_avg_bits", bits.DataAvgBits})
	}
	attrs = append(attrs, attr{"layer_types", LayerTypes(mg)})
	done := o.Session.Compiles()
	attrs = append(attrs, attr{"seconds", time.Since(start).Seconds()}, attr{"compiles", done.Count - compiled.Count},
		attr{"compile_seconds", done.Seconds - compiled.Seconds})
	for _, a := range attrs {
		if err := t.SetUserAttr(a.key, a.v); err != nil {
			return 0, err
		}
	}
	if o.OnModel != nil {
		o.OnModel(t, mg)
	}
	return m.Accuracy - o.Lambda*w, nil
}
