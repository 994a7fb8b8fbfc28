package limits

import (
	"bufio"
	"bytes"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// cgroupMount is one mounted cgroup hierarchy: the cgroup path its mount
// point shows (root, "/" outside a cgroup namespace's nesting) and the
// mount point.
type cgroupMount struct{ root, point string }

// cgroupFiles names the files of one cgroup version's memory controller.
type cgroupFiles struct {
	limit, usage string // memory.max and memory.current, or v1's names
	inactive     string // memory.stat's field of reclaimable page cache
}

var (
	cgroupV2Files = cgroupFiles{limit: "memory.max", usage: "memory.current", inactive: "inactive_file"}
	cgroupV1Files = cgroupFiles{limit: "memory.limit_in_bytes", usage: "memory.usage_in_bytes", inactive: "total_inactive_file"}
)

// maxProcFile caps what is read of one /proc or /sys file (they are a few
// KiB; a mountinfo with thousands of mounts stays far below).
const maxProcFile = 4 << 20

// readSmall reads at most maxProcFile bytes of name in fsys.
func readSmall(fsys fs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxProcFile))
}

// cgroupHeadroom is the memory this process's cgroups leave it: for the
// cgroup v2 hierarchy and the v1 memory hierarchy, at every level from
// the process's own cgroup up to the mount point, the limit less the
// usage that the kernel cannot reclaim (usage less the inactive page
// cache), the smallest of them. fsys is the file system root ("/");
// ok is false when no level has a limit.
func cgroupHeadroom(fsys fs.FS) (int64, bool) {
	self, err := readSmall(fsys, "proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	v2Path, v1Path, has2, has1 := parseProcCgroup(string(self))
	// Without mountinfo, the usual mount points.
	v2, v1 := cgroupMount{"/", "/sys/fs/cgroup"}, cgroupMount{"/", "/sys/fs/cgroup/memory"}
	if info, err := readSmall(fsys, "proc/self/mountinfo"); err == nil {
		m2, m1, ok2, ok1 := parseMountInfo(string(info))
		if ok2 {
			v2 = m2
		}
		if ok1 {
			v1 = m1
		}
	}
	var best int64
	found := false
	take := func(n int64, ok bool) {
		if ok && (!found || n < best) {
			best, found = n, true
		}
	}
	if has2 {
		take(cgroupLevels(fsys, v2, v2Path, cgroupV2Files))
	}
	if has1 {
		take(cgroupLevels(fsys, v1, v1Path, cgroupV1Files))
	}
	return best, found
}

// cgroupLevels walks from the cgroup at cgPath up to the mount point of m
// and returns the smallest headroom of a level that has a limit.
func cgroupLevels(fsys fs.FS, m cgroupMount, cgPath string, files cgroupFiles) (int64, bool) {
	top := path.Clean(m.point)
	dir := cgroupDir(m, cgPath)
	var best int64
	found := false
	for {
		if n, ok := cgroupLevel(fsys, dir, files); ok && (!found || n < best) {
			best, found = n, true
		}
		if dir == top || dir == "/" || !strings.HasPrefix(dir, top+"/") {
			break
		}
		dir = path.Dir(dir)
	}
	return best, found
}

// cgroupDir is the folder of cgroup cgPath under mount m: the path below
// the mount's root, or the mount point itself when the cgroup is outside
// what the mount shows.
func cgroupDir(m cgroupMount, cgPath string) string {
	root, p := path.Clean(m.root), path.Clean("/"+cgPath)
	switch {
	case root == "/":
		return path.Join(m.point, p)
	case p == root:
		return path.Clean(m.point)
	case strings.HasPrefix(p, root+"/"):
		return path.Join(m.point, strings.TrimPrefix(p, root))
	}
	return path.Clean(m.point)
}

// cgroupLevel reads one cgroup folder's limit and usage.
func cgroupLevel(fsys fs.FS, dir string, files cgroupFiles) (int64, bool) {
	rel := func(name string) string { return strings.TrimPrefix(path.Join(dir, name), "/") }
	raw, err := readSmall(fsys, rel(files.limit))
	if err != nil {
		return 0, false
	}
	limit, limited := parseCgroupLimit(string(raw))
	if !limited {
		return 0, false
	}
	var usage int64
	if raw, err := readSmall(fsys, rel(files.usage)); err == nil {
		usage, _ = parseCgroupLimit(string(raw))
	}
	if raw, err := readSmall(fsys, rel("memory.stat")); err == nil {
		if inactive, ok := parseStatField(string(raw), files.inactive); ok && inactive <= usage {
			usage -= inactive
		}
	}
	return max(limit-usage, 0), true
}

// parseCgroupLimit reads a memory.max, memory.current,
// memory.limit_in_bytes or memory.usage_in_bytes text: a byte count, or
// "max" (no limit: ok false).
func parseCgroupLimit(text string) (int64, bool) {
	s := strings.TrimSpace(text)
	if s == "max" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false
	}
	if n > 1<<62 { // v1 writes "no limit" as a number near 2^63
		return 0, false
	}
	return int64(n), true
}

// parseStatField reads the line "<field> <n>" of a memory.stat text.
func parseStatField(text, field string) (int64, bool) {
	for line := range strings.Lines(text) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || name != field {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		return n, err == nil && n >= 0
	}
	return 0, false
}

// parseProcCgroup reads /proc/self/cgroup ("hierarchy:controllers:path"
// lines) and returns the process's cgroup v2 path (hierarchy 0, no
// controllers) and its cgroup v1 memory controller's path.
func parseProcCgroup(text string) (v2, v1 string, has2, has1 bool) {
	for line := range strings.Lines(text) {
		id, rest, ok := strings.Cut(strings.TrimRight(line, "\n"), ":")
		if !ok {
			continue
		}
		controllers, p, ok := strings.Cut(rest, ":")
		if !ok || !strings.HasPrefix(p, "/") {
			continue
		}
		switch {
		case id == "0" && controllers == "":
			v2, has2 = p, true
		case hasField(controllers, ',', "memory"):
			v1, has1 = p, true
		}
	}
	return v2, v1, has2, has1
}

// parseMountInfo finds, in a /proc/self/mountinfo text, the cgroup v2
// mount and the cgroup v1 mount that carries the memory controller.
// Each line: id parent major:minor root mount-point options [optional
// fields] - fstype source super-options.
func parseMountInfo(text string) (v2, v1 cgroupMount, has2, has1 bool) {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		sep := -1
		for i := 6; i < len(f); i++ {
			if string(f[i]) == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(f) {
			continue
		}
		m := cgroupMount{root: unescapeMount(string(f[3])), point: unescapeMount(string(f[4]))}
		fstype := string(f[sep+1])
		switch {
		case fstype == "cgroup2" && !has2:
			v2, has2 = m, true
		case fstype == "cgroup" && !has1 && sep+3 < len(f) && hasField(string(f[sep+3]), ',', "memory"):
			v1, has1 = m, true
		}
	}
	return v2, v1, has2, has1
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// hasField reports whether the sep-separated list holds want.
func hasField(list string, sep byte, want string) bool {
	for _, f := range strings.Split(list, string(sep)) {
		if f == want {
			return true
		}
	}
	return false
}

// rlimitHeadroom is what a resource limit of cur bytes leaves when used
// bytes are mapped already; ok is false for no limit.
func rlimitHeadroom(cur uint64, used int64) (int64, bool) {
	if cur > 1<<62 { // RLIM_INFINITY and the like
		return 0, false
	}
	return max(int64(cur)-used, 0), true
}
