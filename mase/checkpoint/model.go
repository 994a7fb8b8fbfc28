package checkpoint

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/gomase/gomase/internal/atomicfile"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/safetensors"
)

// StateFile returns a safetensors File holding every parameter of m under
// its HuggingFace name (bert.embeddings.word_embeddings.weight, ...):
// float32 parameters as F32, int32 ones as I32. The metadata is copied,
// with "format": "pt" added unless given, since HF's loaders require it.
func StateFile(m *nn.Model, metadata map[string]string) (*safetensors.File, error) {
	if m == nil {
		return nil, fmt.Errorf("cannot save a nil model")
	}
	f := &safetensors.File{Tensors: map[string]*safetensors.Tensor{}, Metadata: map[string]string{"format": "pt"}}
	maps.Copy(f.Metadata, metadata)
	for _, p := range m.Parameters() {
		t, err := p.Variable.Value()
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %w", p.Name, err)
		}
		if f.Tensors[p.Name], err = fromGoMLX(t); err != nil {
			return nil, fmt.Errorf("parameter %s: %w", p.Name, err)
		}
	}
	return f, nil
}

// fromGoMLX converts a float32 or int32 GoMLX tensor.
func fromGoMLX(t *tensors.Tensor) (*safetensors.Tensor, error) {
	switch t.DType() {
	case dtypes.Float32:
		vals, err := tensors.CopyFlatData[float32](t)
		if err != nil {
			return nil, err
		}
		return safetensors.NewF32(t.Shape().Dimensions, vals)
	case dtypes.Int32:
		vals, err := tensors.CopyFlatData[int32](t)
		if err != nil {
			return nil, err
		}
		return safetensors.NewI32(t.Shape().Dimensions, vals)
	}
	return nil, fmt.Errorf("dtype %s cannot be saved (allowed: float32, int32)", t.DType())
}

// SaveModel writes every parameter of m to a safetensors file at path,
// under its HuggingFace name, with the given metadata (see StateFile). The
// write is atomic: on failure any previous file at path is unchanged.
func SaveModel(path string, m *nn.Model, metadata map[string]string) error {
	f, err := StateFile(m, metadata)
	if err != nil {
		return fmt.Errorf("saving model to %s: %w", path, err)
	}
	data, err := f.Encode()
	if err != nil {
		return fmt.Errorf("saving model to %s: %w", path, err)
	}
	return atomicfile.Write(atomicfile.File{Path: path, Data: data})
}

// LoadOptions controls how checkpoint names are matched to a model's
// parameters. The zero value is strict: every parameter must be in the
// checkpoint and every tensor must be a parameter.
type LoadOptions struct {
	// AllowMissing keeps the current values of parameters the checkpoint
	// lacks (HF: "newly initialized", e.g. classifier.* when loading a base
	// BertModel checkpoint) instead of failing. They are listed in
	// LoadReport.Missing.
	AllowMissing bool
	// AllowUnexpected ignores checkpoint tensors that match no parameter
	// (e.g. HF's int64 buffer bert.embeddings.position_ids) instead of
	// failing. They are listed in LoadReport.Unexpected.
	AllowUnexpected bool
	// Prefix is prepended (with a '.') to checkpoint names that do not
	// match a parameter as they are: "bert" loads a base BertModel
	// checkpoint (embeddings.word_embeddings.weight, ...) into
	// BertForSequenceClassification. Empty means automatic detection,
	// unless NoAutoPrefix is set.
	Prefix string
	// NoAutoPrefix turns off automatic prefix detection. Detection picks a
	// top-level submodule P of the model (bert) when no checkpoint name
	// starts with "P." and prefixing matches more tensors than the names
	// as they are.
	NoAutoPrefix bool
}

// LoadReport says what a load did.
type LoadReport struct {
	// Loaded lists the parameters given new values, in model order.
	Loaded []string
	// Missing lists the parameters the checkpoint lacks, in model order;
	// they keep their current values (only with AllowMissing).
	Missing []string
	// Unexpected lists the checkpoint tensors that match no parameter,
	// sorted (only with AllowUnexpected).
	Unexpected []string
	// Renamed maps a checkpoint name to the parameter it was loaded into,
	// where they differ (an added prefix, or old-style LayerNorm gamma/beta
	// for weight/bias).
	Renamed map[string]string
	// Converted maps a parameter to the checkpoint dtype it was converted
	// from, where that was not the parameter's own (F16, BF16, F64).
	Converted map[string]safetensors.DType
	// Prefix is the prefix added to checkpoint names ("" for none).
	Prefix string
	// Metadata is the checkpoint's string metadata.
	Metadata map[string]string
}

// Warnings returns HuggingFace-style warnings about missing and unexpected
// tensors; none for a complete, exact load.
func (r *LoadReport) Warnings() []string { return r.WarningsFor("", "") }

// WarningsFor is Warnings in transformers' full wording, naming the
// checkpoint (at) and the model class being initialised when given.
func (r *LoadReport) WarningsFor(at, class string) []string {
	ckpt, model, initializing := "the model checkpoint", "the model", ""
	if at != "" {
		ckpt += " at " + at
	}
	if class != "" {
		model, initializing = class, " when initializing "+class
	}
	var w []string
	if len(r.Unexpected) > 0 {
		w = append(w, fmt.Sprintf("Some weights of %s were not used%s: %s", ckpt, initializing, pyList(r.Unexpected)))
	}
	if len(r.Missing) > 0 {
		w = append(w, fmt.Sprintf("Some weights of %s were not initialized from %s and are newly initialized: %s\n"+
			"You should probably TRAIN this model on a down-stream task to be able to use it for predictions and inference.", model, ckpt, pyList(r.Missing)))
	}
	return w
}

// pyList prints names as a Python list of strings.
func pyList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// LoadModel reads the safetensors file at path and assigns its tensors to
// m's parameters by name (see LoadOptions for the matching rules). Shapes
// must match exactly; F16, BF16 and F64 values are converted to float32.
// The whole file is read and validated, and every value converted, before
// the first parameter changes: on error the model is unchanged.
func LoadModel(path string, m *nn.Model, opts LoadOptions) (*LoadReport, error) {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("loading model: %w", err)
	}
	r, err := LoadState(f, m, opts)
	if err != nil {
		return nil, fmt.Errorf("loading model from %s: %w", path, err)
	}
	return r, nil
}

// LoadState is LoadModel for a File already in memory.
func LoadState(f *safetensors.File, m *nn.Model, opts LoadOptions) (*LoadReport, error) {
	if m == nil || f == nil {
		return nil, fmt.Errorf("LoadState needs a model and a file")
	}
	params := m.Parameters()
	byName := make(map[string]nn.Parameter, len(params))
	for _, p := range params {
		byName[p.Name] = p
	}
	names := f.Names()
	prefix := strings.TrimSuffix(opts.Prefix, ".")
	if prefix == "" && !opts.NoAutoPrefix {
		prefix = detectPrefix(names, byName, m)
	}
	r := &LoadReport{Renamed: map[string]string{}, Converted: map[string]safetensors.DType{}, Prefix: prefix, Metadata: f.Metadata}

	// Map checkpoint names to parameters.
	source := map[string]string{} // parameter → checkpoint name
	var problems []string
	for _, name := range names {
		target, ok := resolveName(name, prefix, byName)
		if !ok {
			r.Unexpected = append(r.Unexpected, name)
			continue
		}
		if prev, dup := source[target]; dup {
			problems = append(problems, fmt.Sprintf("checkpoint tensors %q and %q both map to parameter %s", prev, name, target))
			continue
		}
		source[target] = name
		if target != name {
			r.Renamed[name] = target
		}
	}
	for _, p := range params {
		if _, ok := source[p.Name]; !ok {
			r.Missing = append(r.Missing, p.Name)
		}
	}

	// Convert every value before touching the model.
	type assignment struct {
		v *model.Variable
		t *tensors.Tensor
	}
	var todo []assignment
	for _, p := range params {
		name, ok := source[p.Name]
		if !ok {
			continue
		}
		t, conv, err := toTensor(f.Tensors[name], p)
		if err != nil {
			label := name
			if name != p.Name {
				label = fmt.Sprintf("%s (parameter %s)", name, p.Name)
			}
			problems = append(problems, fmt.Sprintf("tensor %s: %v", label, err))
			continue
		}
		if conv != "" {
			r.Converted[p.Name] = conv
		}
		todo = append(todo, assignment{p.Variable, t})
		r.Loaded = append(r.Loaded, p.Name)
	}
	if len(r.Missing) > 0 && !opts.AllowMissing {
		problems = append(problems, fmt.Sprintf("the checkpoint lacks %d parameters of the model: %s (set LoadOptions.AllowMissing to keep their current values)",
			len(r.Missing), listSome(r.Missing)))
	}
	if len(r.Unexpected) > 0 && !opts.AllowUnexpected {
		problems = append(problems, fmt.Sprintf("the checkpoint has %d tensors that match no parameter of the model: %s (set LoadOptions.AllowUnexpected to ignore them, or LoadOptions.Prefix if the names lack a prefix)",
			len(r.Unexpected), listSome(r.Unexpected)))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("nothing was loaded: %s", strings.Join(problems, "; "))
	}

	// Assign, restoring the old values should a variable refuse.
	for _, a := range todo {
		if err := a.v.CheckValid(); err != nil {
			return nil, fmt.Errorf("nothing was loaded: %w", err)
		}
	}
	old := make([]*tensors.Tensor, len(todo))
	for i, a := range todo {
		prev, err := a.v.Value()
		if err != nil {
			return nil, fmt.Errorf("nothing was loaded: %w", err)
		}
		old[i] = prev
	}
	for i, a := range todo {
		if err := a.v.SetValuePreservingOld(a.t); err != nil {
			for j := 0; j < i; j++ {
				_ = todo[j].v.SetValuePreservingOld(old[j])
			}
			return nil, fmt.Errorf("nothing was loaded: setting %s: %w", a.v.Path(), err)
		}
	}
	return r, nil
}

// listSome lists up to 10 names, then how many more.
func listSome(names []string) string {
	const most = 10
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:most], ", "), len(names)-most)
}

// legacyName maps old-style LayerNorm names (…gamma, …beta) to the
// current ones (…weight, …bias); other names are returned unchanged.
func legacyName(name string) string {
	switch {
	case name == "gamma" || strings.HasSuffix(name, ".gamma"):
		return strings.TrimSuffix(name, "gamma") + "weight"
	case name == "beta" || strings.HasSuffix(name, ".beta"):
		return strings.TrimSuffix(name, "beta") + "bias"
	}
	return name
}

// resolveName finds the parameter a checkpoint name refers to: the name
// with the prefix, then as it is, each also with legacy LayerNorm names.
func resolveName(name, prefix string, byName map[string]nn.Parameter) (string, bool) {
	var candidates []string
	if prefix != "" {
		candidates = append(candidates, prefix+"."+name)
	}
	candidates = append(candidates, name)
	for _, c := range candidates {
		if _, ok := byName[c]; ok {
			return c, true
		}
		if l := legacyName(c); l != c {
			if _, ok := byName[l]; ok {
				return l, true
			}
		}
	}
	return "", false
}

// detectPrefix returns the top-level submodule name that, added to the
// checkpoint names, matches more parameters than the names as they are,
// provided no checkpoint name already starts with it; "" when none does.
func detectPrefix(names []string, byName map[string]nn.Parameter, m *nn.Model) string {
	count := func(prefix string) int {
		n := 0
		for _, name := range names {
			var ok bool
			if prefix == "" {
				_, ok = resolveName(name, "", byName)
			} else {
				c := prefix + "." + name
				_, ok = byName[c]
				if !ok {
					_, ok = byName[legacyName(c)]
				}
			}
			if ok {
				n++
			}
		}
		return n
	}
	best, bestCount := "", count("")
	for _, ch := range m.Root.Children() {
		p := ch.Name
		if slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, p+".") }) {
			continue
		}
		if c := count(p); c > bestCount {
			best, bestCount = p, c
		}
	}
	return best
}

// toTensor converts a checkpoint tensor to a value for parameter p,
// checking the shape. conv is the source dtype when it differs from p's.
func toTensor(st *safetensors.Tensor, p nn.Parameter) (t *tensors.Tensor, conv safetensors.DType, err error) {
	want := p.Variable.Shape().Dimensions
	if !slices.Equal(st.Shape, want) {
		return nil, "", fmt.Errorf("shape %v in the checkpoint, but parameter %s has shape %v", st.Shape, p.Name, want)
	}
	switch dt := p.Variable.DType(); dt {
	case dtypes.Float32:
		vals, err := st.Float32s()
		if err != nil {
			return nil, "", fmt.Errorf("parameter %s is float32: %w", p.Name, err)
		}
		if st.DType != safetensors.F32 {
			conv = st.DType
		}
		return tensors.FromFlatDataAndDimensions(vals, want...), conv, nil
	case dtypes.Int32:
		vals, err := st.Int64s()
		if err != nil {
			return nil, "", fmt.Errorf("parameter %s is int32: %w", p.Name, err)
		}
		out := make([]int32, len(vals))
		for i, v := range vals {
			if int64(int32(v)) != v {
				return nil, "", fmt.Errorf("value %d at index %d does not fit parameter %s (int32)", v, i, p.Name)
			}
			out[i] = int32(v)
		}
		if st.DType != safetensors.I32 {
			conv = st.DType
		}
		return tensors.FromFlatDataAndDimensions(out, want...), conv, nil
	default:
		return nil, "", fmt.Errorf("parameter %s has dtype %s, which cannot be loaded (allowed: float32, int32)", p.Name, dt)
	}
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
