package download

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"os"
	"strings"
	"unicode/utf8"
)

// isHTMLType reports whether a Content-Type header names an HTML page.
func isHTMLType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(ct))
	}
	return mt == "text/html" || mt == "application/xhtml+xml"
}

// CheckFile checks the file at path as c says (see Content); Binary
// files always pass. The error says what is wrong, without the path.
func CheckFile(path string, c Content) error {
	if c == Binary {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return CheckBytes(b, c)
}

// CheckBytes is CheckFile for content in memory.
func CheckBytes(b []byte, c Content) error {
	start := bytes.TrimLeft(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")), " \t\r\n")
	switch c {
	case JSON:
		if len(start) > 0 && start[0] == '<' {
			kind := "an HTML or XML page"
			if looksHTML(start) {
				kind = "an HTML page"
			}
			return fmt.Errorf("not JSON but %s (it starts with %q)", kind, head(start))
		}
		if !json.Valid(b) {
			var v any
			return fmt.Errorf("not JSON: %v", json.Unmarshal(b, &v)) // Unmarshal says where
		}
	case Text:
		if looksHTML(start) {
			return fmt.Errorf("an HTML page, not text (it starts with %q)", head(start))
		}
		if i := bytes.IndexByte(b, 0); i >= 0 {
			return fmt.Errorf("not text: a NUL byte at offset %d", i)
		}
		if !utf8.Valid(b) {
			return fmt.Errorf("not text: invalid UTF-8")
		}
	}
	return nil
}

// looksHTML reports whether b (leading space trimmed) starts an HTML
// document.
func looksHTML(b []byte) bool {
	l := bytes.ToLower(b[:min(len(b), 15)])
	return bytes.HasPrefix(l, []byte("<!doctype html")) || bytes.HasPrefix(l, []byte("<html"))
}

// head is the first bytes of b, for errors.
func head(b []byte) string {
	if len(b) > 24 {
		b = b[:24]
	}
	return string(b)
}
