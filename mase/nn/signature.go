package nn

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// ForwardSignature describes what a leaf module computes from its inputs
// and parameters: two leaves with the same signature build the same graph
// from the same argument shapes and parameter values (executors use it to
// share one executable between them, the parameters passed as inputs).
// It is the module's Go type and every field of its configuration
// (numbers, booleans, strings, and arrays, slices, structs and pointers of
// those), the initialisers (Init fields: they only fill parameters at
// creation) left out; for the activations, their class, printout and
// function. ok is false for a module holding anything else (a function
// that is not an Init, a map, an interface, a channel): such a module
// cannot be described, and must not share.
func ForwardSignature(mod Module) (sig string, ok bool) {
	if a, isAct := mod.(*activation); isAct {
		return fmt.Sprintf("activation %s(%s) fn@%#x", a.name, a.extra, reflect.ValueOf(a.fn).Pointer()), true
	}
	var b strings.Builder
	v := reflect.ValueOf(mod)
	b.WriteString(v.Type().String())
	if !writeConfig(&b, v, 0) {
		return "", false
	}
	return b.String(), true
}

var initType = reflect.TypeFor[Init]()

// writeConfig writes v's value; it returns false for a value that is not
// plain configuration.
func writeConfig(b *strings.Builder, v reflect.Value, depth int) bool {
	if depth > 16 {
		return false
	}
	switch v.Kind() {
	case reflect.Bool:
		b.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		b.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		b.WriteString(strconv.FormatFloat(v.Float(), 'g', -1, 64))
	case reflect.String:
		b.WriteString(strconv.Quote(v.String()))
	case reflect.Pointer:
		if v.IsNil() {
			b.WriteString("nil")
			return true
		}
		b.WriteByte('&')
		return writeConfig(b, v.Elem(), depth+1)
	case reflect.Array, reflect.Slice:
		if v.Kind() == reflect.Slice && v.IsNil() {
			b.WriteString("nil")
			return true
		}
		b.WriteByte('[')
		for i := range v.Len() {
			if !writeConfig(b, v.Index(i), depth+1) {
				return false
			}
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case reflect.Struct:
		t := v.Type()
		b.WriteByte('{')
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Type == initType {
				continue
			}
			b.WriteString(f.Name)
			b.WriteByte(':')
			if !writeConfig(b, v.Field(i), depth+1) {
				return false
			}
			b.WriteByte(' ')
		}
		b.WriteByte('}')
	default:
		return false
	}
	return true
}
