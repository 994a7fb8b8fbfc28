package ir

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Meta is MASE's node.meta["mase"].parameters: three sections.
type Meta struct {
	Common   Common         `json:"common"`
	Hardware Hardware       `json:"hardware"`
	Software map[string]any `json:"software"`
}

// NewMeta returns empty metadata, as init_metadata_analysis_pass attaches.
func NewMeta() *Meta {
	return &Meta{Common: Common{Args: &ArgMap{}, Results: &ArgMap{}}, Software: map[string]any{}}
}

// Common is the "common" section: operator inference and shapes.
type Common struct {
	// MaseType is the operator family: module, module_related_func,
	// builtin_func, implicit_func, placeholder, get_attr, output.
	MaseType string `json:"mase_type"`
	// MaseOp is the operator: linear, relu, add, dropout, ...
	MaseOp string `json:"mase_op"`
	// Args are the inputs: data_in_0, data_in_1, ... for tensors, then
	// config arguments under their own names, then module parameters
	// (weight, bias, ...), in that order.
	Args *ArgMap `json:"args"`
	// Results are the outputs: data_out_0, ...
	Results *ArgMap `json:"results"`
}

// ArgInfo describes one argument or result.
type ArgInfo struct {
	// Type is "float", "fixed", ... for tensors, or a Go/Python type name
	// ("int", "bool", "tuple") for config arguments.
	Type string `json:"type"`
	// Precision is the format's parameter list: [32] for float32,
	// [width, frac_width] for fixed point.
	Precision []int `json:"precision"`
	// Shape is the tensor shape (1-D parameters are reported as [1, n], as
	// MASE does); nil for scalars.
	Shape []int `json:"shape"`
	// DType is the element type of a tensor argument (float32, int32, ...).
	DType string `json:"dtype,omitempty"`
	// IsParam marks module parameters (weight, bias): MASE's "from": None.
	IsParam bool `json:"is_param,omitempty"`
	// Value is the recorded value when add_value is on: a tensor's values or
	// a constant. It is not serialised to JSON.
	Value any `json:"-"`
}

// ArgMap is an ordered map from argument name to its description.
type ArgMap struct {
	keys []string
	vals map[string]*ArgInfo
}

// Set adds or replaces an entry; new names go at the end.
func (m *ArgMap) Set(name string, info *ArgInfo) {
	if m.vals == nil {
		m.vals = map[string]*ArgInfo{}
	}
	if _, ok := m.vals[name]; !ok {
		m.keys = append(m.keys, name)
	}
	m.vals[name] = info
}

// Get returns an entry, or nil.
func (m *ArgMap) Get(name string) *ArgInfo {
	if m == nil {
		return nil
	}
	return m.vals[name]
}

// Keys returns the names in order.
func (m *ArgMap) Keys() []string {
	if m == nil {
		return nil
	}
	return append([]string(nil), m.keys...)
}

// Len returns the number of entries.
func (m *ArgMap) Len() int {
	if m == nil {
		return 0
	}
	return len(m.keys)
}

// Delete removes an entry when present.
func (m *ArgMap) Delete(name string) {
	if m == nil || m.vals[name] == nil {
		return
	}
	delete(m.vals, name)
	for i, k := range m.keys {
		if k == name {
			m.keys = append(m.keys[:i], m.keys[i+1:]...)
			break
		}
	}
}

// MarshalJSON writes the entries as a JSON object in order.
func (m *ArgMap) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	if m != nil {
		for i, k := range m.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			vb, err := json.Marshal(m.vals[k])
			if err != nil {
				return nil, fmt.Errorf("argument %s: %w", k, err)
			}
			b.Write(vb)
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads a JSON object, keeping its key order.
func (m *ArgMap) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("argument map: want a JSON object")
	}
	*m = ArgMap{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return err
		}
		var info ArgInfo
		if err := dec.Decode(&info); err != nil {
			return fmt.Errorf("argument %v: %w", kt, err)
		}
		m.Set(kt.(string), &info)
	}
	return nil
}

// Hardware is the "hardware" section, filled by the hardware metadata pass.
type Hardware struct {
	IsImplicit      bool                      `json:"is_implicit"`
	DeviceID        int                       `json:"device_id"`
	Toolchain       string                    `json:"toolchain,omitempty"`
	Module          string                    `json:"module,omitempty"`
	DependenceFiles []string                  `json:"dependence_files,omitempty"`
	Interface       map[string]map[string]any `json:"interface,omitempty"`
	VerilogParam    map[string]any            `json:"verilog_param,omitempty"`
	MaxParallelism  []int                     `json:"max_parallelism,omitempty"`
	Parallelism     map[string][]int          `json:"parallelism,omitempty"`
}

// GraphMeta is mg.meta["mase"]: graph-level metadata.
type GraphMeta struct {
	// NodesIn / NodesOut are the graph's first and last non-implicit nodes.
	NodesIn  []string `json:"nodes_in,omitempty"`
	NodesOut []string `json:"nodes_out,omitempty"`
	// Hardware holds graph-level hardware facts (verilog sources, ...).
	Hardware map[string]any `json:"hardware,omitempty"`
}
