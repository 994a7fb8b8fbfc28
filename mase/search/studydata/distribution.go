package studydata

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
)

// Distribution describes the values one parameter may take. It is implemented
// by FloatDistribution, IntDistribution and CategoricalDistribution only.
//
// Samplers work on a float64 "internal" representation, as Optuna does: a float
// parameter is its value, an int parameter its value as a float64, and a
// categorical parameter the index of the choice.
type Distribution interface {
	// String describes the distribution, e.g. "float[1e-05, 0.1] log".
	String() string
	// Contains reports whether the internal value x is one of the
	// distribution's values.
	Contains(x float64) bool
	// ToExternal converts an internal value to the value the objective sees:
	// float64, int, or the choice itself.
	ToExternal(x float64) any
	// ToInternal converts an external value (a grid value, say) to the
	// internal representation. It does not check the range.
	ToInternal(v any) (float64, error)
	// Single reports whether the distribution holds exactly one value.
	Single() bool
	// Validate says what is wrong with the distribution's fields, if
	// anything.
	Validate() error
	// Equal reports whether other is the same distribution.
	Equal(other Distribution) bool
}

// FloatDistribution is the distribution of SuggestFloat: the interval
// [Low, High], on a log scale when Log is set, or the grid Low, Low+Step, …
// when Step > 0 (Step and Log exclude each other).
type FloatDistribution struct {
	Low, High float64
	// Step is the spacing of the allowed values; 0 means continuous.
	Step float64
	// Log samples on a logarithmic scale; Low must then be > 0.
	Log bool
}

// IntDistribution is the distribution of SuggestInt: the integers Low,
// Low+Step, …, High, on a log scale when Log is set (Step must then be 1).
type IntDistribution struct {
	Low, High int
	// Step is the spacing of the allowed values, ≥ 1.
	Step int
	// Log samples on a logarithmic scale; Low must then be ≥ 1.
	Log bool
}

// CategoricalDistribution is the distribution of SuggestCategorical: one of
// Choices, which are compared by value (numbers by numeric value, so 2 and
// 2.0 are the same choice; other values with ==, or reflect.DeepEqual for
// values that are not comparable).
type CategoricalDistribution struct {
	Choices []any
}

// ---- FloatDistribution

// String describes the distribution, e.g. "float[1e-05, 0.1] log".
func (d FloatDistribution) String() string {
	s := fmt.Sprintf("float[%s, %s]", fmtFloat(d.Low), fmtFloat(d.High))
	if d.Log {
		s += " log"
	}
	if d.Step > 0 {
		s += " step " + fmtFloat(d.Step)
	}
	return s
}

// Contains reports whether x lies in [Low, High] (and on the step grid).
func (d FloatDistribution) Contains(x float64) bool {
	if math.IsNaN(x) || x < d.Low || x > d.High {
		return false
	}
	if d.Step > 0 {
		k := (x - d.Low) / d.Step
		return math.Abs(k-math.Round(k)) < 1e-8
	}
	return true
}

// ToExternal returns x itself.
func (d FloatDistribution) ToExternal(x float64) any { return x }

// ToInternal accepts any Go number.
func (d FloatDistribution) ToInternal(v any) (float64, error) {
	x, ok := toFloat(v)
	if !ok {
		return 0, fmt.Errorf("value %v of type %T is not a number (a float parameter takes a Go integer or floating-point value)", v, v)
	}
	return x, nil
}

// Single reports whether Low == High.
func (d FloatDistribution) Single() bool {
	return d.Low == d.High
}

func (d FloatDistribution) Validate() error {
	switch {
	case math.IsNaN(d.Low) || math.IsInf(d.Low, 0) || math.IsNaN(d.High) || math.IsInf(d.High, 0):
		return fmt.Errorf("float range [%v, %v] is not finite; low and high must be finite numbers", d.Low, d.High)
	case d.Low > d.High:
		return fmt.Errorf("float range [%v, %v] is empty; low must be ≤ high", d.Low, d.High)
	case d.Log && d.Low <= 0:
		return fmt.Errorf("log float range [%v, %v] starts at %v; a log scale needs low > 0", d.Low, d.High, d.Low)
	case d.Step < 0 || math.IsNaN(d.Step) || math.IsInf(d.Step, 0):
		return fmt.Errorf("float step %v is invalid; step must be a finite number > 0 (or 0 for none)", d.Step)
	case d.Step > 0 && d.Log:
		return fmt.Errorf("float step %v with log scale; step and log cannot be combined", d.Step)
	}
	return nil
}

func (d FloatDistribution) Equal(o Distribution) bool {
	od, ok := o.(FloatDistribution)
	return ok && od == d
}

// ---- IntDistribution

// String describes the distribution, e.g. "int[0, 8] step 2".
func (d IntDistribution) String() string {
	s := fmt.Sprintf("int[%d, %d]", d.Low, d.High)
	if d.Log {
		s += " log"
	}
	if d.Step > 1 {
		s += fmt.Sprintf(" step %d", d.Step)
	}
	return s
}

// Contains reports whether x is an integer in [Low, High] on the step grid.
func (d IntDistribution) Contains(x float64) bool {
	if math.IsNaN(x) || x != math.Trunc(x) || x < float64(d.Low) || x > float64(d.High) {
		return false
	}
	step := max(d.Step, 1)
	return (int64(x)-int64(d.Low))%int64(step) == 0
}

// ToExternal returns x as an int.
func (d IntDistribution) ToExternal(x float64) any { return int(math.Round(x)) }

// ToInternal accepts any Go integer, or a floating-point value holding an integer.
func (d IntDistribution) ToInternal(v any) (float64, error) {
	x, ok := toFloat(v)
	if !ok || x != math.Trunc(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("value %v of type %T is not an integer (an int parameter takes a Go integer, or a float holding an integer)", v, v)
	}
	return x, nil
}

// Single reports whether the distribution holds one integer only.
func (d IntDistribution) Single() bool {
	return d.Low == d.High
}

func (d IntDistribution) Validate() error {
	switch {
	case d.Low > d.High:
		return fmt.Errorf("int range [%d, %d] is empty; low must be ≤ high", d.Low, d.High)
	case d.Step < 1:
		return fmt.Errorf("int step %d is invalid; step must be ≥ 1", d.Step)
	case d.Log && d.Low < 1:
		return fmt.Errorf("log int range [%d, %d] starts at %d; a log scale needs low ≥ 1", d.Low, d.High, d.Low)
	case d.Log && d.Step != 1:
		return fmt.Errorf("int step %d with log scale; step and log cannot be combined (step must be 1)", d.Step)
	}
	return nil
}

func (d IntDistribution) Equal(o Distribution) bool {
	od, ok := o.(IntDistribution)
	return ok && od == d
}

// ---- CategoricalDistribution

// String lists the choices, e.g. "categorical{relu, gelu}".
func (d CategoricalDistribution) String() string {
	parts := make([]string, len(d.Choices))
	for i, c := range d.Choices {
		parts[i] = fmt.Sprintf("%v", c)
	}
	return "categorical{" + strings.Join(parts, ", ") + "}"
}

// Contains reports whether x is the index of a choice.
func (d CategoricalDistribution) Contains(x float64) bool {
	return x == math.Trunc(x) && x >= 0 && x < float64(len(d.Choices))
}

// ToExternal returns the choice at index x.
func (d CategoricalDistribution) ToExternal(x float64) any {
	i := int(x)
	if i < 0 || i >= len(d.Choices) {
		return nil
	}
	return d.Choices[i]
}

// ToInternal returns the index of the first choice equal to v.
func (d CategoricalDistribution) ToInternal(v any) (float64, error) {
	if i := d.Index(v); i >= 0 {
		return float64(i), nil
	}
	return 0, fmt.Errorf("value %v of type %T is not one of the choices %v", v, v, d.Choices)
}

// Index returns the index of the choice equal to v (ChoiceEqual), or -1.
func (d CategoricalDistribution) Index(v any) int {
	for i, c := range d.Choices {
		if ChoiceEqual(c, v) {
			return i
		}
	}
	return -1
}

// Single reports whether there is exactly one choice.
func (d CategoricalDistribution) Single() bool { return len(d.Choices) == 1 }

func (d CategoricalDistribution) Validate() error {
	if len(d.Choices) == 0 {
		return fmt.Errorf("categorical distribution has no choices; give at least one")
	}
	return nil
}

func (d CategoricalDistribution) Equal(o Distribution) bool {
	od, ok := o.(CategoricalDistribution)
	if !ok || len(od.Choices) != len(d.Choices) {
		return false
	}
	for i := range d.Choices {
		if !ChoiceEqual(d.Choices[i], od.Choices[i]) {
			return false
		}
	}
	return true
}

// AdjustHigh moves High down onto the step grid, as Optuna does (its
// _adjust_discrete_uniform_high: in decimal arithmetic on the numbers as
// written, so that [0, 1] with step 0.3 ends at 0.9, not 0.8999999999999999);
// it reports whether it changed anything.
func (d *FloatDistribution) AdjustHigh() bool {
	if d.Step <= 0 || !(d.Low <= d.High) || math.IsInf(d.High-d.Low, 0) {
		return false
	}
	low, high, step := decimalRat(d.Low), decimalRat(d.High), decimalRat(d.Step)
	if low == nil || high == nil || step == nil || step.Sign() <= 0 {
		return false
	}
	q := new(big.Rat).Quo(new(big.Rat).Sub(high, low), step)
	if q.IsInt() {
		return false
	}
	n := new(big.Int).Quo(q.Num(), q.Denom()) // q ≥ 0: the floor
	h, _ := new(big.Rat).Add(new(big.Rat).Mul(new(big.Rat).SetInt(n), step), low).Float64()
	if h == d.High {
		return false
	}
	d.High = h
	return true
}

// decimalRat is x as the shortest decimal that reads back as x (Python's
// str(x)), exactly; nil when x is not finite.
func decimalRat(x float64) *big.Rat {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(x, 'g', -1, 64))
	if !ok {
		return nil
	}
	return r
}

// AdjustHigh moves High down onto the step grid, as Optuna does (its
// _adjust_int_uniform_high); it reports whether it changed anything.
func (d *IntDistribution) AdjustHigh() bool {
	if d.Step <= 1 || d.Low > d.High {
		return false
	}
	// In big integers: High − Low may not fit in an int.
	low, step := big.NewInt(int64(d.Low)), big.NewInt(int64(d.Step))
	r := new(big.Int).Sub(big.NewInt(int64(d.High)), low)
	h := r.Add(r.Mul(r.Quo(r, step), step), low).Int64()
	if int(h) == d.High {
		return false
	}
	d.High = int(h)
	return true
}

// ---- value helpers

// toFloat converts any Go number to float64.
func toFloat(v any) (float64, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	}
	return 0, false
}

// ChoiceEqual compares two choices by value: numbers of any Go type by
// numeric value, other values with == (or reflect.DeepEqual when not comparable).
func ChoiceEqual(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	ra, rb := reflect.ValueOf(a), reflect.ValueOf(b)
	if isNumberKind(ra.Kind()) && isNumberKind(rb.Kind()) {
		ka, kb := numClass(ra.Kind()), numClass(rb.Kind())
		switch {
		case ka == 'i' && kb == 'i':
			return ra.Int() == rb.Int()
		case ka == 'u' && kb == 'u':
			return ra.Uint() == rb.Uint()
		case ka == 'i' && kb == 'u':
			return ra.Int() >= 0 && uint64(ra.Int()) == rb.Uint()
		case ka == 'u' && kb == 'i':
			return rb.Int() >= 0 && uint64(rb.Int()) == ra.Uint()
		}
		fa, _ := toFloat(a)
		fb, _ := toFloat(b)
		return fa == fb
	}
	if ra.Type() != rb.Type() {
		return false
	}
	if ra.Type().Comparable() {
		return a == b
	}
	return reflect.DeepEqual(a, b)
}

func isNumberKind(k reflect.Kind) bool { return numClass(k) != 0 }

func numClass(k reflect.Kind) byte {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return 'i'
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return 'u'
	case reflect.Float32, reflect.Float64:
		return 'f'
	}
	return 0
}

func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// ---- JSON form of distributions (journal records)

type wireDist struct {
	Type    string       `json:"type"`
	Low     json.Number  `json:"low"`
	High    json.Number  `json:"high"`
	Step    json.Number  `json:"step,omitempty"`
	Log     bool         `json:"log,omitempty"`
	Choices []WireChoice `json:"choices,omitempty"`
}

// MarshalDistribution writes d as the JSON object storages keep (its kind,
// bounds, step, log flag and typed choices).
func MarshalDistribution(d Distribution) (json.RawMessage, error) {
	var w wireDist
	switch d := d.(type) {
	case FloatDistribution:
		w = wireDist{Type: "float", Low: json.Number(fmtFloat(d.Low)), High: json.Number(fmtFloat(d.High)), Log: d.Log}
		if d.Step > 0 {
			w.Step = json.Number(fmtFloat(d.Step))
		}
	case IntDistribution:
		w = wireDist{Type: "int", Low: json.Number(strconv.Itoa(d.Low)), High: json.Number(strconv.Itoa(d.High)),
			Step: json.Number(strconv.Itoa(d.Step)), Log: d.Log}
	case CategoricalDistribution:
		w = wireDist{Type: "categorical", Low: "0", High: json.Number(strconv.Itoa(len(d.Choices) - 1))}
		for i, c := range d.Choices {
			wc, err := EncodeChoice(c)
			if err != nil {
				return nil, fmt.Errorf("choice %d: %w", i, err)
			}
			w.Choices = append(w.Choices, wc)
		}
	default:
		return nil, fmt.Errorf("unknown distribution type %T", d)
	}
	return json.Marshal(w)
}

// UnmarshalDistribution reads what MarshalDistribution wrote and validates it.
func UnmarshalDistribution(b []byte) (Distribution, error) {
	var w wireDist
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, err
	}
	var d Distribution
	switch w.Type {
	case "float":
		low, err1 := w.Low.Float64()
		high, err2 := w.High.Float64()
		var step float64
		var err3 error
		if w.Step != "" {
			step, err3 = w.Step.Float64()
		}
		if err := firstErr(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("float distribution: %w", err)
		}
		d = FloatDistribution{Low: low, High: high, Step: step, Log: w.Log}
	case "int":
		low, err1 := strconv.Atoi(string(w.Low))
		high, err2 := strconv.Atoi(string(w.High))
		step, err3 := strconv.Atoi(string(w.Step))
		if err := firstErr(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("int distribution: %w", err)
		}
		d = IntDistribution{Low: low, High: high, Step: step, Log: w.Log}
	case "categorical":
		cd := CategoricalDistribution{Choices: make([]any, len(w.Choices))}
		for i, wc := range w.Choices {
			cd.Choices[i] = wc.v
		}
		d = cd
	default:
		return nil, fmt.Errorf("unknown distribution type %q (allowed: float, int, categorical)", w.Type)
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// WireChoice is a categorical choice with its Go type, so that a journal
// round trip gives back an int as an int and a float64 as a float64. It is
// written as a two-element JSON array: ["int", 4], ["string", "relu"].
type WireChoice struct{ v any }

// EncodeChoice wraps a categorical choice for the wire; choices of other
// types than nil, bool, string and Go's numbers are refused.
func EncodeChoice(v any) (WireChoice, error) {
	switch x := v.(type) {
	case nil, bool, string, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return WireChoice{v}, nil
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return WireChoice{}, fmt.Errorf("choice %v cannot be stored; only finite floats are allowed", x)
		}
		return WireChoice{v}, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return WireChoice{}, fmt.Errorf("choice %v cannot be stored; only finite floats are allowed", x)
		}
		return WireChoice{v}, nil
	}
	return WireChoice{}, fmt.Errorf("choice %v of type %T cannot be stored in a journal (allowed: nil, bool, string, Go integer and floating-point types)", v, v)
}

// MarshalJSON writes ["type", value].
func (c WireChoice) MarshalJSON() ([]byte, error) {
	var tname string
	if c.v == nil {
		tname = "nil"
	} else {
		tname = reflect.TypeOf(c.v).Kind().String()
	}
	var val []byte
	var err error
	switch x := c.v.(type) {
	case float32:
		val = []byte(strconv.FormatFloat(float64(x), 'g', -1, 32))
	case float64:
		val = []byte(fmtFloat(x))
	default:
		val, err = json.Marshal(c.v)
	}
	if err != nil {
		return nil, err
	}
	tj, _ := json.Marshal(tname)
	return []byte("[" + string(tj) + "," + string(val) + "]"), nil
}

// UnmarshalJSON reads ["type", value].
func (c *WireChoice) UnmarshalJSON(b []byte) error {
	var pair []json.RawMessage
	if err := json.Unmarshal(b, &pair); err != nil || len(pair) != 2 {
		return fmt.Errorf("choice %s is not a [type, value] pair", b)
	}
	var tname string
	if err := json.Unmarshal(pair[0], &tname); err != nil {
		return fmt.Errorf("choice %s: type is not a string", b)
	}
	raw := string(pair[1])
	var err error
	switch tname {
	case "nil":
		c.v = nil
	case "bool":
		var x bool
		err = json.Unmarshal(pair[1], &x)
		c.v = x
	case "string":
		var x string
		err = json.Unmarshal(pair[1], &x)
		c.v = x
	case "int", "int8", "int16", "int32", "int64":
		var x int64
		x, err = strconv.ParseInt(raw, 10, bitsOf(tname, "int"))
		c.v = convertInt(tname, x)
	case "uint", "uint8", "uint16", "uint32", "uint64":
		var x uint64
		x, err = strconv.ParseUint(raw, 10, bitsOf(tname, "uint"))
		c.v = convertUint(tname, x)
	case "float32":
		var x float64
		x, err = strconv.ParseFloat(raw, 32)
		c.v = float32(x)
	case "float64":
		var x float64
		x, err = strconv.ParseFloat(raw, 64)
		c.v = x
	default:
		return fmt.Errorf("choice %s has unknown type %q", b, tname)
	}
	if err != nil {
		return fmt.Errorf("choice %s: %w", b, err)
	}
	return nil
}

func bitsOf(tname, prefix string) int {
	if n, err := strconv.Atoi(strings.TrimPrefix(tname, prefix)); err == nil {
		return n
	}
	return strconv.IntSize
}

func convertInt(tname string, x int64) any {
	switch tname {
	case "int8":
		return int8(x)
	case "int16":
		return int16(x)
	case "int32":
		return int32(x)
	case "int64":
		return x
	}
	return int(x)
}

func convertUint(tname string, x uint64) any {
	switch tname {
	case "uint8":
		return uint8(x)
	case "uint16":
		return uint16(x)
	case "uint32":
		return uint32(x)
	case "uint64":
		return x
	}
	return uint(x)
}
