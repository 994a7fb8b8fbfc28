package backend

import (
	"fmt"
	"os"
	"strings"
	"unicode"
)

// DumpXLAFlags returns XLA_FLAGS (flags) with the options that make XLA
// write every module it compiles to dir as HLO text — before and after its
// optimisations, the latter showing the fusions and the kernels it chose
// (XLA's --xla_dump_to, the way JAX users see what XLA made of a function).
func DumpXLAFlags(flags, dir string) string {
	return strings.TrimSpace(flags + " --xla_dump_to=" + dir + " --xla_dump_hlo_as_text")
}

// EnableXLADump sets XLA_FLAGS so that XLA backends opened after it dump
// their modules into dir (DumpXLAFlags). XLA reads the flags once, when
// the process creates its first XLA client, so it must run before any XLA
// backend is opened. dir must be a path without white space (XLA_FLAGS is
// split on it), and XLA_FLAGS must not choose a dump folder already.
func EnableXLADump(dir string) error {
	if dir == "" || strings.ContainsFunc(dir, unicode.IsSpace) {
		return fmt.Errorf("XLA dump folder %q: want a path without spaces (XLA_FLAGS is split on white space)", dir)
	}
	flags := os.Getenv(XLAFlagsEnv)
	if strings.Contains(flags, "xla_dump_to") {
		return fmt.Errorf("XLA_FLAGS already sets a dump folder (%s): unset it or drop the dump option", flags)
	}
	return os.Setenv(XLAFlagsEnv, DumpXLAFlags(flags, dir))
}
