package torchbin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/gomase/gomase/mase/limits"
)

// checkPickle walks the opcodes of a pickle once, the way gopickle's
// Unpickler (v0.2.0) will, without building any object, and refuses what
// would make gopickle allocate more than the input holds or panic:
//
//   - every length-prefixed argument (FRAME, BINBYTES8, BINUNICODE8,
//     BYTEARRAY8, BINBYTES, BINUNICODE, BINSTRING, LONG4, the SHORT_ forms,
//     ...) and every fixed-size one must fit in the bytes that remain
//     (gopickle allocates the length before reading a byte);
//   - text arguments must end with a newline; names and numbers are at most
//     limits.MaxPickleLine bytes, integers at most limits.MaxPickleIntBytes;
//   - the opcode must be one gopickle knows (0xff indexes past its table);
//   - LONG1 and LONG4 must hold at least one byte (gopickle indexes the
//     last byte of an empty one);
//   - DICT and SETITEMS take an even number of items (gopickle reads the
//     item after the last one), and an object used as a dict or set key
//     must not be a bytes object (a Go slice, which cannot be a map key);
//   - the stack, the open MARKs, the memo and the opcode count stay within
//     limits.MaxPickleStack, MaxPickleMarks, MaxPickleMemo and MaxPickleOps,
//     so that the unpickler's memory stays a small multiple of the input's.
//
// The scan follows the stack as gopickle does (items since the last MARK,
// MARKs, the memo by key) and keeps one flag per item: whether it is a bytes
// object. Extension codes and out-of-band buffers, which a state dict never
// uses, are refused. The first error names the opcode and its byte offset.
func checkPickle(p []byte) error {
	s := pickleScan{p: p, memo: map[int64]bool{}}
	for ops := 0; ; ops++ {
		if ops == limits.MaxPickleOps {
			return fmt.Errorf("the pickle has more than %d opcodes (limits.MaxPickleOps)", limits.MaxPickleOps)
		}
		if s.pos >= len(p) {
			return fmt.Errorf("the pickle ends at byte %d without a STOP opcode", s.pos)
		}
		at, op := s.pos, p[s.pos]
		s.pos++
		stop, err := s.step(op)
		if err != nil {
			return fmt.Errorf("pickle opcode %s at byte %d: %w", opName(op), at, err)
		}
		if stop {
			return nil
		}
	}
}

// pickleScan is checkPickle's state.
type pickleScan struct {
	p   []byte
	pos int
	// stack holds one flag per object on the unpickler's stack, MARKs
	// included as positions: true for a bytes object.
	stack []bool
	// marks are the stack's lengths at the open MARKs.
	marks []int
	// memo is the unpickler's memo by key: true for a bytes object.
	memo       map[int64]bool
	memoWrites int
}

// errUnderflow is the error for an opcode that takes more objects than the
// stack holds since the last MARK.
var errUnderflow = errors.New("the stack holds fewer objects than the opcode takes")

// step checks one opcode and its argument and applies its stack effect; it
// reports true at STOP.
func (s *pickleScan) step(op byte) (bool, error) {
	var err error
	switch op {
	case '.': // STOP
		if err = s.need(1); err == nil {
			return true, nil
		}
	case '(': // MARK
		if len(s.marks) == limits.MaxPickleMarks {
			return false, fmt.Errorf("more than %d MARKs open at once (limits.MaxPickleMarks)", limits.MaxPickleMarks)
		}
		s.marks = append(s.marks, len(s.stack))
	case '0': // POP: an empty stack pops its MARK instead
		if len(s.stack) > s.base() {
			s.stack = s.stack[:len(s.stack)-1]
		} else {
			_, err = s.popMark()
		}
	case '1': // POP_MARK
		_, err = s.popMark()
	case '2': // DUP
		if err = s.need(1); err == nil {
			err = s.push(s.stack[len(s.stack)-1])
		}
	case 'N', '\x88', '\x89', ')', ']', '}', '\x8f': // NONE, NEWTRUE, NEWFALSE, EMPTY_TUPLE, EMPTY_LIST, EMPTY_DICT, EMPTY_SET
		err = s.push(false)
	case 'K', 'U', 'C', '\x8c', '\x8a': // BININT1; SHORT_BINSTRING, SHORT_BINBYTES, SHORT_BINUNICODE, LONG1: a 1-byte length
		var n uint64
		if n, err = s.uint(1); err != nil {
			break
		}
		switch op {
		case 'K':
		case '\x8a':
			if n == 0 {
				return false, errors.New("an integer of 0 bytes (gopickle cannot decode it; pickle writes 0 as BININT1)")
			}
			err = s.skip(n)
		default:
			err = s.skip(n)
		}
		if err == nil {
			err = s.push(op == 'C')
		}
	case 'M': // BININT2
		if _, err = s.uint(2); err == nil {
			err = s.push(false)
		}
	case 'J': // BININT
		if _, err = s.uint(4); err == nil {
			err = s.push(false)
		}
	case 'G': // BINFLOAT
		if _, err = s.uint(8); err == nil {
			err = s.push(false)
		}
	case 'T', '\x8b': // BINSTRING, LONG4: a signed 4-byte length
		var n uint64
		if n, err = s.uint(4); err != nil {
			break
		}
		length := int64(int32(uint32(n)))
		switch {
		case length < 0:
			err = fmt.Errorf("a negative length %d", length)
		case op == '\x8b' && length == 0:
			err = errors.New("an integer of 0 bytes (gopickle cannot decode it)")
		case op == '\x8b' && length > limits.MaxPickleIntBytes:
			err = fmt.Errorf("an integer of %d bytes (allowed: up to %d, limits.MaxPickleIntBytes)", length, limits.MaxPickleIntBytes)
		default:
			err = s.skip(uint64(length))
		}
		if err == nil {
			err = s.push(false)
		}
	case 'X', 'B': // BINUNICODE, BINBYTES: an unsigned 4-byte length
		var n uint64
		if n, err = s.uint(4); err == nil {
			if err = s.skip(n); err == nil {
				err = s.push(op == 'B')
			}
		}
	case '\x8d', '\x8e', '\x96': // BINUNICODE8, BINBYTES8, BYTEARRAY8: an 8-byte length
		var n uint64
		if n, err = s.uint(8); err == nil {
			if err = s.skip(n); err == nil {
				err = s.push(op == '\x8e')
			}
		}
	case '\x95': // FRAME: the next n bytes (read from the input, not the frame)
		var n uint64
		if n, err = s.uint(8); err == nil {
			err = s.fits(n)
		}
	case '\x80': // PROTO
		var v uint64
		if v, err = s.uint(1); err == nil && v > 5 {
			err = fmt.Errorf("protocol %d (allowed: 0 to 5)", v)
		}
	case 'S', 'V': // STRING, UNICODE: data up to a newline, any length
		if _, err = s.line(len(s.p)); err == nil {
			err = s.push(false)
		}
	case 'I', 'F', 'P': // INT, FLOAT, PERSID
		if _, err = s.line(limits.MaxPickleLine); err == nil {
			err = s.push(false)
		}
	case 'L': // LONG: a sign, decimal digits, an optional L
		if _, err = s.line(limits.MaxPickleIntBytes + 3); err == nil {
			err = s.push(false)
		}
	case 'c': // GLOBAL: module and name lines
		if _, err = s.line(limits.MaxPickleLine); err == nil {
			if _, err = s.line(limits.MaxPickleLine); err == nil {
				err = s.push(false)
			}
		}
	case 'i': // INST: module and name lines, then the arguments since MARK
		if _, err = s.line(limits.MaxPickleLine); err == nil {
			if _, err = s.line(limits.MaxPickleLine); err == nil {
				if _, err = s.popMark(); err == nil {
					err = s.push(false)
				}
			}
		}
	case 'o': // OBJ: class and arguments since MARK
		var items []bool
		if items, err = s.popMark(); err == nil {
			if len(items) == 0 {
				err = errors.New("no class after the MARK")
			} else {
				err = s.push(false)
			}
		}
	case 'l', 't': // LIST, TUPLE
		if _, err = s.popMark(); err == nil {
			err = s.push(false)
		}
	case 'd': // DICT: key, value pairs since MARK (a slice-based dict: any key)
		var items []bool
		if items, err = s.popMark(); err == nil {
			if len(items)%2 != 0 {
				err = fmt.Errorf("%d items, not key and value pairs", len(items))
			} else {
				err = s.push(false)
			}
		}
	case '\x91': // FROZENSET: the items since MARK are keys
		var items []bool
		if items, err = s.popMark(); err == nil {
			if err = keys(items, 1); err == nil {
				err = s.push(false)
			}
		}
	case 'u', '\x90', 'e': // SETITEMS, ADDITEMS, APPENDS: items since MARK into the object below
		var items []bool
		if items, err = s.popMark(); err != nil {
			break
		}
		switch op {
		case 'u':
			if len(items)%2 != 0 {
				err = fmt.Errorf("%d items, not key and value pairs", len(items))
			} else {
				err = keys(items, 2)
			}
		case '\x90':
			err = keys(items, 1)
		}
		if err == nil {
			err = s.need(1)
		}
	case 's': // SETITEM: dict, key, value
		if err = s.need(3); err == nil {
			if err = keys(s.stack[len(s.stack)-2:len(s.stack)-1], 1); err == nil {
				s.stack = s.stack[:len(s.stack)-2]
			}
		}
	case 'a', 'b': // APPEND (list, value), BUILD (object, state): the object stays
		if err = s.need(2); err == nil {
			s.stack = s.stack[:len(s.stack)-1]
		}
	case '\x85', 'Q': // TUPLE1, BINPERSID
		err = s.replace(1)
	case '\x86', 'R', '\x81', '\x93': // TUPLE2, REDUCE, NEWOBJ, STACK_GLOBAL
		err = s.replace(2)
	case '\x87', '\x92': // TUPLE3, NEWOBJ_EX
		err = s.replace(3)
	case 'g': // GET
		var key int64
		if key, err = s.textKey(); err == nil {
			err = s.push(s.memo[key])
		}
	case 'h', 'j': // BINGET, LONG_BINGET
		var key uint64
		if key, err = s.uint(argSize(op, 'h')); err == nil {
			err = s.push(s.memo[int64(key)])
		}
	case 'p': // PUT
		var key int64
		if key, err = s.textKey(); err == nil {
			if key < 0 {
				err = fmt.Errorf("a negative memo key %d", key)
			} else {
				err = s.put(key)
			}
		}
	case 'q', 'r': // BINPUT, LONG_BINPUT
		var key uint64
		if key, err = s.uint(argSize(op, 'q')); err == nil {
			err = s.put(int64(key))
		}
	case '\x94': // MEMOIZE: the key is the memo's size
		err = s.put(int64(len(s.memo)))
	case '\x98': // READONLY_BUFFER: a no-op for gopickle without MakeReadOnly
	case '\x82', '\x83', '\x84', '\x97': // EXT1, EXT2, EXT4, NEXT_BUFFER
		err = errors.New("extension codes and out-of-band buffers are not used by state dicts")
	default:
		err = errors.New("not a pickle opcode gomase reads")
	}
	return false, err
}

// argSize is the memo key's size of BINGET/BINPUT (short: 1 byte) and
// LONG_BINGET/LONG_BINPUT (4 bytes).
func argSize(op, short byte) int {
	if op == short {
		return 1
	}
	return 4
}

// base is the stack's length at the last MARK (0 without one).
func (s *pickleScan) base() int {
	if len(s.marks) == 0 {
		return 0
	}
	return s.marks[len(s.marks)-1]
}

// need checks that n objects lie on the stack above the last MARK.
func (s *pickleScan) need(n int) error {
	if len(s.stack)-s.base() < n {
		return errUnderflow
	}
	return nil
}

// push adds one object (bytes: whether it is a bytes object).
func (s *pickleScan) push(bytes bool) error {
	if len(s.stack) == limits.MaxPickleStack {
		return fmt.Errorf("more than %d objects on the stack (limits.MaxPickleStack)", limits.MaxPickleStack)
	}
	s.stack = append(s.stack, bytes)
	return nil
}

// replace pops n objects and pushes the (non-bytes) result.
func (s *pickleScan) replace(n int) error {
	if err := s.need(n); err != nil {
		return err
	}
	s.stack = s.stack[:len(s.stack)-n+1]
	s.stack[len(s.stack)-1] = false
	return nil
}

// popMark removes the last MARK and the objects above it, returning their
// flags (valid until the next push).
func (s *pickleScan) popMark() ([]bool, error) {
	if len(s.marks) == 0 {
		return nil, errors.New("no MARK to pop")
	}
	b := s.base()
	items := s.stack[b:]
	s.stack = s.stack[:b]
	s.marks = s.marks[:len(s.marks)-1]
	return items, nil
}

// put stores the top of the stack in the memo under key.
func (s *pickleScan) put(key int64) error {
	if err := s.need(1); err != nil {
		return err
	}
	if s.memoWrites == limits.MaxPickleMemo {
		return fmt.Errorf("more than %d memo writes (limits.MaxPickleMemo)", limits.MaxPickleMemo)
	}
	s.memoWrites++
	s.memo[key] = s.stack[len(s.stack)-1]
	return nil
}

// keys refuses a bytes object among the keys of items (every step-th item
// from the first).
func keys(items []bool, step int) error {
	for i := 0; i < len(items); i += step {
		if items[i] {
			return errors.New("a bytes object as a dict or set key (gomase cannot hash it)")
		}
	}
	return nil
}

// fits checks that n more bytes remain in the input.
func (s *pickleScan) fits(n uint64) error {
	if rest := uint64(len(s.p) - s.pos); n > rest {
		return fmt.Errorf("a length of %d bytes, but only %d bytes of the pickle remain", n, rest)
	}
	return nil
}

// skip moves past n bytes of argument.
func (s *pickleScan) skip(n uint64) error {
	if err := s.fits(n); err != nil {
		return err
	}
	s.pos += int(n)
	return nil
}

// uint reads a little-endian unsigned argument of size bytes (1, 2, 4, 8).
func (s *pickleScan) uint(size int) (uint64, error) {
	if err := s.fits(uint64(size)); err != nil {
		return 0, fmt.Errorf("the pickle ends inside the opcode's %d-byte argument", size)
	}
	var buf [8]byte
	copy(buf[:], s.p[s.pos:s.pos+size])
	s.pos += size
	return binary.LittleEndian.Uint64(buf[:]), nil
}

// line reads a newline-terminated argument of at most max bytes (newline
// included) and returns it without the newline.
func (s *pickleScan) line(max int) ([]byte, error) {
	rest := s.p[s.pos:]
	if len(rest) > max {
		rest = rest[:max]
	}
	i := bytes.IndexByte(rest, '\n')
	if i < 0 {
		if len(s.p)-s.pos > max {
			return nil, fmt.Errorf("a text argument longer than %d bytes (limits.MaxPickleLine, MaxPickleIntBytes)", max-1)
		}
		return nil, errors.New("the pickle ends before the argument's newline")
	}
	s.pos += i + 1
	return rest[:i], nil
}

// textKey reads the decimal memo key of GET or PUT as gopickle does.
func (s *pickleScan) textKey() (int64, error) {
	l, err := s.line(limits.MaxPickleLine)
	if err != nil {
		return 0, err
	}
	k, err := strconv.Atoi(string(l))
	if err != nil {
		return 0, fmt.Errorf("the memo key %q is not an integer", l)
	}
	return int64(k), nil
}

// opName names an opcode for errors: its pickletools name and byte.
func opName(op byte) string {
	if n, ok := pickleOpNames[op]; ok {
		return fmt.Sprintf("%s (0x%02x)", n, op)
	}
	return fmt.Sprintf("0x%02x", op)
}

var pickleOpNames = map[byte]string{
	'(': "MARK", '.': "STOP", '0': "POP", '1': "POP_MARK", '2': "DUP", 'F': "FLOAT", 'I': "INT", 'J': "BININT",
	'K': "BININT1", 'L': "LONG", 'M': "BININT2", 'N': "NONE", 'P': "PERSID", 'Q': "BINPERSID", 'R': "REDUCE",
	'S': "STRING", 'T': "BINSTRING", 'U': "SHORT_BINSTRING", 'V': "UNICODE", 'X': "BINUNICODE", 'a': "APPEND",
	'b': "BUILD", 'c': "GLOBAL", 'd': "DICT", '}': "EMPTY_DICT", 'e': "APPENDS", 'g': "GET", 'h': "BINGET",
	'i': "INST", 'j': "LONG_BINGET", 'l': "LIST", ']': "EMPTY_LIST", 'o': "OBJ", 'p': "PUT", 'q': "BINPUT",
	'r': "LONG_BINPUT", 's': "SETITEM", 't': "TUPLE", ')': "EMPTY_TUPLE", 'u': "SETITEMS", 'G': "BINFLOAT",
	'\x80': "PROTO", '\x81': "NEWOBJ", '\x82': "EXT1", '\x83': "EXT2", '\x84': "EXT4", '\x85': "TUPLE1",
	'\x86': "TUPLE2", '\x87': "TUPLE3", '\x88': "NEWTRUE", '\x89': "NEWFALSE", '\x8a': "LONG1", '\x8b': "LONG4",
	'B': "BINBYTES", 'C': "SHORT_BINBYTES", '\x8c': "SHORT_BINUNICODE", '\x8d': "BINUNICODE8", '\x8e': "BINBYTES8",
	'\x8f': "EMPTY_SET", '\x90': "ADDITEMS", '\x91': "FROZENSET", '\x92': "NEWOBJ_EX", '\x93': "STACK_GLOBAL",
	'\x94': "MEMOIZE", '\x95': "FRAME", '\x96': "BYTEARRAY8", '\x97': "NEXT_BUFFER", '\x98': "READONLY_BUFFER",
}
