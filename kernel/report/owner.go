package report

import (
	"bytes"
	"errors"
	"io"
	"io/fs"

	"github.com/gomase/gomase/mase/limits"
)

// Generator is the generator meta element of every page mase labs writes
// (the reports and the index), by which WrittenByLabs knows them.
const Generator = `<meta name="generator" content="gomase mase labs">`

// anyPage lets WrittenByLabs open a page of any size: it reads only its head.
var anyPage = limits.File{What: "an HTML page", Max: 1 << 62}

// indexTitle is the title of the index pages written before they carried
// Generator.
const indexTitle = `<title>gomase lab reports</title>`

// WrittenByLabs reports whether the HTML file at path is a page mase labs
// wrote (its head carries Generator, or the index's title): such a file
// may be replaced by a new run; any other may not. A missing file is
// false with no error; a file that is not a regular file is an error.
func WrittenByLabs(path string) (bool, error) {
	f, _, err := limits.Open(path, anyPage)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, 8<<10)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, err
	}
	head = head[:n]
	return bytes.Contains(head, []byte(Generator)) || bytes.Contains(head, []byte(indexTitle)), nil
}
