package storages

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gomase/gomase/mase/limits"
)

// Bounds of what a journal holds, checked before it is read: the file, and
// each line (a record with its user attributes; longer lines are skipped
// as unreadable, and a longer record is refused before it is written).
var (
	journalFile = limits.File{What: "a study journal", Max: 4 << 30}
	// maxJournalLine is the longest record a journal reads or writes.
	maxJournalLine = 16 << 20
)

// What a journal file may start with. gomase's journal is its own format
// (Optuna reads an export of it, not the journal), so a header line costs
// no compatibility.
const (
	// journalHeader is the first line of every journal gomase creates: it
	// marks the file as a journal before any study is in it.
	journalHeader = `{"format":"gomase-search-journal","v":1}`
	// legacyStart begins the first line of a journal written before the
	// header: the creation of its first study (json.Marshal writes "op"
	// and "study" first).
	legacyStart = `{"op":"create_study","study":`
	// recordStart begins every record.
	recordStart = `{"op":"`
	// maxHead bounds what is read of a file to recognise it.
	maxHead = 64 << 10
)

// prefixEither reports whether one of b and s is a prefix of the other.
func prefixEither(b []byte, s string) bool {
	n := min(len(b), len(s))
	return string(b[:n]) == s[:n]
}

// recogniseJournal checks head, the first bytes of a file of size bytes
// (all of them, or maxHead), and returns the length of the header line to
// skip (0 for a journal written before the header, or one whose first line
// was cut short), or an error saying what the file holds instead.
func recogniseJournal(path string, head []byte, size int64) (int64, error) {
	line, complete := head, false
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		line, complete = head[:i], true
	}
	switch {
	case !complete && int64(len(head)) == size:
		// The whole file is one unterminated line: a journal whose first
		// write was cut short holds a beginning of its header, or of its
		// first record.
		if strings.HasPrefix(journalHeader, string(line)) || prefixEither(line, legacyStart) {
			return 0, nil
		}
	case !complete:
	case string(line) == journalHeader:
		return int64(len(line)) + 1, nil
	case isStudyCreation(line):
		return 0, nil
	}
	return 0, fmt.Errorf("search: %s is not a gomase study journal: it holds %s; give a journal gomase wrote, an empty file or a new file name (the file was left as it is)",
		path, describeContent(head))
}

// isStudyCreation reports whether line is a create_study record.
func isStudyCreation(line []byte) bool {
	var r struct {
		Op    string  `json:"op"`
		Study *string `json:"study"`
	}
	return json.Unmarshal(line, &r) == nil && r.Op == opCreateStudy && r.Study != nil
}

// describeContent says what a file that is not a journal holds, from its
// first bytes.
func describeContent(head []byte) string {
	valid := head
	if len(head) == maxHead { // the last character may be cut
		valid = head[:max(0, len(head)-utf8.UTFMax)]
	}
	if !utf8.Valid(valid) || bytes.ContainsFunc(head, func(r rune) bool {
		return r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f
	}) {
		return "binary data (a checkpoint, an archive or another binary file)"
	}
	line := head
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		line = head[:i]
	}
	if json.Valid(line) {
		var m map[string]json.RawMessage
		if json.Unmarshal(line, &m) == nil && m["op_code"] != nil {
			return "an Optuna journal (op_code records), which gomase imports (ImportOptunaJournal, mase search import) instead of opening"
		}
		return "JSON that is not a journal (its first line is neither the journal header nor a study's creation)"
	}
	return "text that is not a journal (its first line is neither the journal header nor a study's creation)"
}

// checkJournalSize refuses, before it is read, a journal larger than
// journalFile allows or than the memory its replay would take (about its
// size).
func checkJournalSize(path string, size int64) error {
	if size > journalFile.Max {
		return fmt.Errorf("search: journal %s is %s, more than the %s allowed for %s; give the journal of one study (mase search export and import move a study to a new one)",
			path, limits.Bytes(size), limits.Bytes(journalFile.Max), journalFile.What)
	}
	if avail, ok := limits.AvailableMemory(); ok && size > avail.Bytes {
		return fmt.Errorf("search: journal %s is %s, more than the %s of memory available to replay it (%s)", path, limits.Bytes(size),
			limits.Bytes(avail.Bytes), avail.Source)
	}
	return nil
}

// CreateJournal creates a journal at path, which must not exist yet,
// holding what fill records in it. fill gets the journal while it is a
// temporary file beside path (named .NAME.tmp-HOST-PID-START-*, after the
// process making it); the file takes path's name only once fill has
// returned nil and ctx is not done, and is removed otherwise, so a failure
// leaves nothing at path. The temporary files of earlier CreateJournal
// calls for path whose process was killed are removed first (only files of
// that naming, made on this machine by a process that is gone, that hold a
// journal). The journal is closed when CreateJournal returns.
func CreateJournal(ctx context.Context, path string, logger *slog.Logger, fill func(*JournalStorage) error) (err error) {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("search: %s already exists; CreateJournal makes a new journal (open an existing one with OpenJournal)", path)
	}
	if logger == nil {
		logger = slog.Default()
	}
	self := selfOwner()
	sweepTemps(path, self, logger)
	tmp, err := os.CreateTemp(filepath.Dir(path), tempPrefix(path, self)+"*")
	if err != nil {
		return fmt.Errorf("search: creating journal %s: %w", path, err)
	}
	name := tmp.Name()
	tmp.Close()
	j, err := OpenJournal(name, logger)
	if err != nil {
		os.Remove(name)
		return err
	}
	j.path = path // what messages name
	defer func() {
		j.Close()
		if err != nil {
			os.Remove(name)
		}
	}()
	if err := fill(j); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("search: creating journal %s: %w; nothing was written", path, err)
	}
	if err := os.Chmod(name, 0o644); err != nil {
		return fmt.Errorf("search: creating journal %s: %w", path, err)
	}
	// A link, unlike a rename, never replaces a file that appeared at path
	// meanwhile.
	if err := os.Link(name, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("search: %s appeared while its journal was being made; it was left as it is and nothing was written", path)
		}
		// A file system without hard links.
		if _, serr := os.Lstat(path); serr == nil {
			return fmt.Errorf("search: %s appeared while its journal was being made; it was left as it is and nothing was written", path)
		}
		if err := os.Rename(name, path); err != nil {
			return fmt.Errorf("search: creating journal %s: %w", path, err)
		}
	} else {
		os.Remove(name)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync() // best effort: the journal itself is synced
		d.Close()
	}
	return nil
}

// tempPrefix begins the name of the temporary files CreateJournal makes for
// path in process self: .NAME.tmp-HOST-PID-START- (HOST: a hash of the
// host name; START: the process start time, so that a reused pid is told
// apart).
func tempPrefix(path string, self owner) string {
	return fmt.Sprintf(".%s.tmp-%s-%d-%d-", filepath.Base(path), hostTag(self.Host), self.PID, self.Start)
}

// hostTag is a short hash of a host name, for file names.
func hostTag(host string) string {
	h := sha256.Sum256([]byte(host))
	return hex.EncodeToString(h[:4])
}

// sweepTemps removes the temporary journals of earlier CreateJournal calls
// for path that were killed: files named by tempPrefix for this host whose
// process is gone, regular, and empty or holding a journal header. Anything
// else is left alone.
func sweepTemps(path string, self owner, logger *slog.Logger) {
	base := "." + filepath.Base(path) + ".tmp-"
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), base)
		if !ok {
			continue
		}
		f := strings.Split(rest, "-")
		if len(f) != 4 || f[0] != hostTag(self.Host) {
			continue
		}
		pid, err1 := strconv.Atoi(f[1])
		start, err2 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil || pid <= 0 {
			continue
		}
		o := owner{Host: self.Host, PID: pid, Start: start, Boot: self.Boot}
		if alive, known := o.aliveFrom(self); alive || !known {
			continue
		}
		name := filepath.Join(filepath.Dir(path), e.Name())
		if !holdsJournalStart(name) {
			continue
		}
		if err := os.Remove(name); err == nil {
			logger.Info("search: removed the temporary journal of an earlier import that was killed", "file", name)
		}
	}
}

// holdsJournalStart reports whether name is a regular file that is empty or
// starts as a journal gomase makes does.
func holdsJournalStart(name string) bool {
	f, err := os.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	if li, err := os.Lstat(name); err != nil || !li.Mode().IsRegular() {
		return false
	}
	head := make([]byte, len(journalHeader))
	n, _ := io.ReadFull(f, head)
	return strings.HasPrefix(journalHeader, string(head[:n]))
}
