package display

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/janpfeifer/gonb/gonbui/protocol"
)

// Outside a notebook nothing is shown and nothing is saved.
func TestSilentOutsideNotebook(t *testing.T) {
	t.Setenv("GONB_TMP_DIR", t.TempDir())
	if InNotebook() {
		t.Fatal("go test runs as a GoNB cell?")
	}
	if SVG("<svg/>") || HTML("<b>x</b>") || Markdown("*x*") {
		t.Error("a display reported shown outside a notebook")
	}
	if _, err := os.Stat(dir()); !os.IsNotExist(err) {
		t.Errorf("%s exists (err %v): nothing should be saved outside a notebook", dir(), err)
	}
}

var savedRE = regexp.MustCompile(`^\[(SVG image|HTML): (/.+\.(svg|html))\]$`)

// savedPath checks that the text form of data names a saved file and
// returns the file's path and content.
func savedPath(t *testing.T, data bundle, kind string) (path, content string) {
	t.Helper()
	text, _ := data[protocol.MIMETextPlain].(string)
	m := savedRE.FindStringSubmatch(text)
	if m == nil || m[1] != kind {
		t.Fatalf("text/plain is %q, want [%s: PATH]", text, kind)
	}
	b, err := os.ReadFile(m[2])
	if err != nil {
		t.Fatal(err)
	}
	return m[2], string(b)
}

func TestSVGData(t *testing.T) {
	t.Setenv("GONB_TMP_DIR", t.TempDir())
	svg := `<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>`
	data := svgData(svg)
	if got := data[protocol.MIMETextHTML]; got != "<div>"+svg+"</div>" {
		t.Errorf("text/html is %q, want the SVG in a div", got)
	}
	path, content := savedPath(t, data, "SVG image")
	if content != svg {
		t.Errorf("%s holds %q, want the SVG", path, content)
	}
	if again, _ := savedPath(t, svgData(svg), "SVG image"); again != path {
		t.Errorf("the same SVG was saved as %s, then %s", path, again)
	}
	if other, _ := savedPath(t, svgData(strings.Replace(svg, `"4"`, `"5"`, 1)), "SVG image"); other == path {
		t.Errorf("two different SVGs share %s", path)
	}
	entries, err := os.ReadDir(dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("%s holds %d files, want 2 (no partial files left)", dir(), len(entries))
	}
}

func TestHTMLData(t *testing.T) {
	t.Setenv("GONB_TMP_DIR", t.TempDir())
	frag := `<table><tr><td>1</td></tr></table>`
	data := htmlData(frag)
	if data[protocol.MIMETextHTML] != frag {
		t.Errorf("text/html is %q, want the fragment", data[protocol.MIMETextHTML])
	}
	_, page := savedPath(t, data, "HTML")
	if !strings.HasPrefix(page, "<!DOCTYPE html>") || !strings.Contains(page, frag) {
		t.Errorf("saved page is %q, want a document holding the fragment", page)
	}
}

func TestMarkdownData(t *testing.T) {
	md := "| a | b |\n|---|---|\n| 1 | 2 |"
	data := markdownData(md)
	if data[protocol.MIMETextMarkdown] != md || data[protocol.MIMETextPlain] != md {
		t.Errorf("bundle %q, want the Markdown as text/markdown and text/plain", data)
	}
}

// Without GoNB's directory, files go to the system's temporary directory.
func TestDirFallback(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("GONB_TMP_DIR", "")
	t.Setenv("TMPDIR", tmp)
	if d := dir(); filepath.Dir(d) != tmp || !strings.HasPrefix(filepath.Base(d), "gomase-display-") {
		t.Errorf("dir() = %s, want %s/gomase-display-<uid>", d, tmp)
	}
}

func TestSaveError(t *testing.T) {
	t.Setenv("GONB_TMP_DIR", t.TempDir())
	if err := os.WriteFile(dir(), nil, 0o600); err != nil { // a file where the directory goes
		t.Fatal(err)
	}
	text := saved("SVG image", "svg", "<svg/>")
	if !strings.HasPrefix(text, "[SVG image of 6 bytes, not saved: ") {
		t.Errorf("text/plain is %q, want a note that the image was not saved", text)
	}
}
