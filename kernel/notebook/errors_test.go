package notebook

import (
	"path/filepath"
	"strings"
	"testing"
)

func mustRead(t *testing.T, name string) *Notebook {
	t.Helper()
	nb, err := ReadNotebook(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return nb
}

func TestFirstErrorCompile(t *testing.T) {
	e := FirstError(mustRead(t, "failed_compile.ipynb"))
	if e == nil {
		t.Fatal("FirstError found no error in failed_compile.ipynb")
	}
	if e.Index != 3 || e.Execution != 2 || e.ID != "broken" {
		t.Errorf("cell = %d (In [%d], id %q), want 3 (In [2], id broken)", e.Index, e.Execution, e.ID)
	}
	if e.FirstLine != `fmt.Println("before")` {
		t.Errorf("FirstLine = %q, want the first line after %%%%", e.FirstLine)
	}
	msg := e.Error()
	if strings.Contains(msg, "main.go") || strings.Contains(msg, "# gonb_") {
		t.Errorf("error message refers to GoNB's generated main.go:\n%s", msg)
	}
	for _, want := range []string{"cell 3 (In [2], id broken) `fmt.Println(\"before\")` failed: ERROR: undefined: undefinedThing\n", "Cell[2]: Line 3", "^"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error message lacks %q:\n%s", want, msg)
		}
	}
}

func TestFirstErrorPanicSkipsExpectedFailures(t *testing.T) {
	e := FirstError(mustRead(t, "failed_panic.ipynb"))
	if e == nil {
		t.Fatal("FirstError found no error in failed_panic.ipynb")
	}
	if e.Index != 2 {
		t.Errorf("cell %d failed, want 2 (cell 1 is tagged raises-exception)", e.Index)
	}
	msg := e.Error()
	for _, want := range []string{"failed: ERROR: panic: runtime error: index out of range [3] with length 0 (exit status 2)\n", "panic: runtime error: index out of range [3] with length 0", "[[ Cell [2] Line 4 ]]"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "\x1b") {
		t.Errorf("error message keeps ANSI escapes: %q", msg)
	}
}

func TestFirstErrorGoNBHTML(t *testing.T) {
	e := FirstError(mustRead(t, "failed_html.ipynb"))
	if e == nil {
		t.Fatal("FirstError found no error in failed_html.ipynb")
	}
	msg := e.Error()
	if !strings.Contains(msg, "undefined: undefinedThing") || !strings.Contains(msg, "Cell[1]: Line 3") {
		t.Errorf("the compile error inside GoNB's HTML report is missing:\n%s", msg)
	}
	for _, junk := range []string{"<style", "gonb-err", "var(--jp", "flag.Parse"} {
		if strings.Contains(msg, junk) {
			t.Errorf("error message keeps %q from the HTML report:\n%s", junk, msg)
		}
	}
}

func TestFirstErrorNone(t *testing.T) {
	if e := FirstError(mustRead(t, "outputs.ipynb")); e != nil {
		t.Errorf("FirstError(outputs.ipynb) = %v, want nil", e)
	}
}

func TestStripANSIAndCR(t *testing.T) {
	if got := StripANSI("\x1b[1;31mred\x1b[0m \x1b]0;title\x07x"); got != "red x" {
		t.Errorf("StripANSI = %q", got)
	}
	if got := collapseCR("a 10%\ra 50%\ra 100%\nnext\r\n"); got != "a 100%\nnext\n" {
		t.Errorf("collapseCR = %q", got)
	}
}

func TestParseNotebookErrors(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{`{`, "not a Jupyter notebook"},
		{`{"nbformat": 3, "cells": []}`, "nbformat 4"},
		{`{"nbformat": 4, "cells": [{"cell_type": "heading", "source": ""}]}`, "allowed: code, markdown, raw"},
	} {
		_, err := ParseNotebook([]byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseNotebook(%s) = %v, want an error with %q", tc.data, err, tc.want)
		}
	}
}
