package limits

import (
	"math"
	"strings"
	"testing"
	"testing/fstest"
)

// A cgroup v2 container: the process's cgroup has no limit of its own,
// its parent allows 4 GiB of which 1 GiB is used and 256 MiB of that is
// reclaimable page cache; the mount root is the namespace's root.
const (
	v2Self      = "0::/user.slice/job-7/task\n"
	v2MountInfo = "24 30 0:22 / /proc rw,nosuid - proc proc rw\n" +
		"35 30 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"
	// A hybrid host (cgroup v1 with the v2 hierarchy mounted beside it, as
	// on this project's CI machines).
	v1Self = "9:name=systemd:/\n4:memory:/process_api/88344ebe\n3:cpuset:/\n0::/\n"
	v1Info = "34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
		"33 30 0:30 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n" +
		"40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
)

func TestParseProcCgroup(t *testing.T) {
	v2, v1, has2, has1 := parseProcCgroup(v2Self)
	if !has2 || has1 || v2 != "/user.slice/job-7/task" {
		t.Errorf("v2: %q %q %v %v", v2, v1, has2, has1)
	}
	v2, v1, has2, has1 = parseProcCgroup(v1Self)
	if !has2 || !has1 || v2 != "/" || v1 != "/process_api/88344ebe" {
		t.Errorf("hybrid: %q %q %v %v", v2, v1, has2, has1)
	}
	if _, _, has2, has1 := parseProcCgroup("garbage\n1:cpu\n"); has2 || has1 {
		t.Error("garbage gave a cgroup")
	}
}

func TestParseMountInfo(t *testing.T) {
	v2, _, has2, has1 := parseMountInfo(v2MountInfo)
	if !has2 || has1 || v2 != (cgroupMount{"/", "/sys/fs/cgroup"}) {
		t.Errorf("v2: %+v %v %v", v2, has2, has1)
	}
	v2, v1, has2, has1 := parseMountInfo(v1Info)
	if !has2 || !has1 || v1 != (cgroupMount{"/", "/sys/fs/cgroup/memory"}) || v2.point != "/sys/fs/cgroup/unified" {
		t.Errorf("hybrid: %+v %+v %v %v", v2, v1, has2, has1)
	}
	// A mount point with a space, and a cgroup namespace root.
	v2, _, has2, _ = parseMountInfo(`50 1 0:40 /kube/pod1 /my\040cgroup rw - cgroup2 none rw` + "\n")
	if !has2 || v2 != (cgroupMount{"/kube/pod1", "/my cgroup"}) {
		t.Errorf("escaped: %+v %v", v2, has2)
	}
	if _, _, has2, has1 := parseMountInfo("1 2 3\n- - -\n"); has2 || has1 {
		t.Error("garbage gave a mount")
	}
}

func TestParseCgroupLimit(t *testing.T) {
	for text, want := range map[string]int64{"4294967296\n": 4 << 30, "0\n": 0} {
		if n, ok := parseCgroupLimit(text); !ok || n != want {
			t.Errorf("%q: %d, %v", text, n, ok)
		}
	}
	// "max", v1's "no limit" (a page-rounded 2^63), junk and negatives are
	// no limit.
	for _, text := range []string{"max\n", "9223372036854771712\n", "lots", "-5", ""} {
		if _, ok := parseCgroupLimit(text); ok {
			t.Errorf("%q read as a limit", text)
		}
	}
	stat := "cache 823296\nactive_file 4096\ninactive_file 12288\ntotal_inactive_file 16384\n"
	if n, ok := parseStatField(stat, "inactive_file"); !ok || n != 12288 {
		t.Errorf("inactive_file: %d, %v", n, ok)
	}
	if n, ok := parseStatField(stat, "total_inactive_file"); !ok || n != 16384 {
		t.Errorf("total_inactive_file: %d, %v", n, ok)
	}
	if _, ok := parseStatField(stat, "pgfault"); ok {
		t.Error("an absent field was found")
	}
}

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func TestCgroupHeadroom(t *testing.T) {
	const gib = 1 << 30
	cases := []struct {
		name string
		fs   fstest.MapFS
		want int64
		ok   bool
	}{
		{"v2: the parent's limit, less what cannot be reclaimed", fstest.MapFS{
			"proc/self/cgroup":                                   file(v2Self),
			"proc/self/mountinfo":                                file(v2MountInfo),
			"sys/fs/cgroup/user.slice/job-7/task/memory.max":     file("max\n"),
			"sys/fs/cgroup/user.slice/job-7/task/memory.current": file("104857600\n"),
			"sys/fs/cgroup/user.slice/job-7/memory.max":          file("4294967296\n"),
			"sys/fs/cgroup/user.slice/job-7/memory.current":      file("1073741824\n"),
			"sys/fs/cgroup/user.slice/job-7/memory.stat":         file("anon 805306368\ninactive_file 268435456\n"),
			"sys/fs/cgroup/user.slice/memory.max":                file("max\n"),
		}, 4*gib - (gib - gib/4), true},
		{"v2: the smaller of two levels", fstest.MapFS{
			"proc/self/cgroup":                                   file(v2Self),
			"proc/self/mountinfo":                                file(v2MountInfo),
			"sys/fs/cgroup/user.slice/job-7/task/memory.max":     file("2147483648\n"),
			"sys/fs/cgroup/user.slice/job-7/task/memory.current": file("1073741824\n"),
			"sys/fs/cgroup/user.slice/memory.max":                file("17179869184\n"),
			"sys/fs/cgroup/user.slice/memory.current":            file("16106127360\n"),
		}, gib, true},
		{"v2 without mountinfo: the usual mount point", fstest.MapFS{
			"proc/self/cgroup":             file("0::/\n"),
			"sys/fs/cgroup/memory.max":     file("536870912\n"),
			"sys/fs/cgroup/memory.current": file("805306368\n"),
		}, 0, true},
		{"v1 hybrid", fstest.MapFS{
			"proc/self/cgroup":    file(v1Self),
			"proc/self/mountinfo": file(v1Info),
			"sys/fs/cgroup/memory/process_api/88344ebe/memory.limit_in_bytes": file("3221225472\n"),
			"sys/fs/cgroup/memory/process_api/88344ebe/memory.usage_in_bytes": file("1073741824\n"),
			"sys/fs/cgroup/memory/process_api/88344ebe/memory.stat":           file("inactive_file 1\ntotal_inactive_file 536870912\n"),
			"sys/fs/cgroup/memory/process_api/memory.limit_in_bytes":          file("9223372036854771712\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                      file("9223372036854771712\n"),
		}, 3*gib - gib + gib/2, true},
		{"v1 without limits", fstest.MapFS{
			"proc/self/cgroup":    file(v1Self),
			"proc/self/mountinfo": file(v1Info),
			"sys/fs/cgroup/memory/process_api/88344ebe/memory.limit_in_bytes": file("9223372036854771712\n"),
		}, 0, false},
		{"no /proc", fstest.MapFS{}, 0, false},
	}
	for _, c := range cases {
		got, ok := cgroupHeadroom(c.fs)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestStatusAndRlimit(t *testing.T) {
	status := "Name:\tmase\nVmPeak:\t  2000 kB\nVmSize:\t  1500 kB\nVmData:\t   700 kB\n"
	if n, ok := parseKBField(strings.NewReader(status), "VmSize:"); !ok || n != 1500<<10 {
		t.Errorf("VmSize: %d, %v", n, ok)
	}
	if n, ok := rlimitHeadroom(3<<30, 1<<30); !ok || n != 2<<30 {
		t.Errorf("3 GiB limit, 1 GiB mapped: %d, %v", n, ok)
	}
	if n, ok := rlimitHeadroom(1<<30, 2<<30); !ok || n != 0 {
		t.Errorf("over the limit: %d, %v", n, ok)
	}
	if _, ok := rlimitHeadroom(math.MaxUint64, 0); ok {
		t.Error("RLIM_INFINITY read as a limit")
	}
}

func TestSmallest(t *testing.T) {
	m, ok := smallest(Memory{8 << 30, SourceMemAvailable}, Memory{2 << 30, SourceCgroup}, Memory{3 << 30, SourceRlimitAS})
	if !ok || m != (Memory{2 << 30, SourceCgroup}) {
		t.Errorf("%+v, %v", m, ok)
	}
	if _, ok := smallest(); ok {
		t.Error("nothing known, yet a bound")
	}
	if m, ok := AvailableMemory(); ok && (m.Bytes < 0 || m.Source == "") {
		t.Errorf("this machine: %+v", m)
	}
}

// TestEstimate: products and sums are exact or name the overflowing
// factors; Check refuses by overflow, by the model's state and by the
// memory available, naming each.
func TestEstimate(t *testing.T) {
	batch, seq := Dim{"--batch", 4096}, Dim{"--seq", 512}
	var e Estimate
	e.AddState(16, Dim{"parameters", 1000})
	e.Add(4, batch, seq, Dim{"hidden_size", 128})
	if e.State != 16000 || e.Total != 16000+4*4096*512*128 || e.Overflow != "" {
		t.Fatalf("%+v", e)
	}
	e.Times(2, "copies")
	if e.State != 16000 || e.Total != 2*(16000+4*4096*512*128) {
		t.Errorf("times 2: %+v", e)
	}
	var o Estimate
	o.Add(4, Dim{"--batch", math.MaxInt64 / 2}, seq)
	if o.Overflow != "--batch × --seq" {
		t.Errorf("overflow named %q", o.Overflow)
	}
	var sum Estimate
	sum.Add(1, Dim{N: math.MaxInt64})
	sum.Add(1, Dim{"--values", 1})
	if sum.Overflow != "--values" {
		t.Errorf("a sum's overflow named %q", sum.Overflow)
	}
	if got := Larger(e, o); got.Overflow == "" {
		t.Error("Larger lost the overflow")
	}
	small := Estimate{Total: 100}
	if got := Larger(small, e); got.Total != e.Total {
		t.Errorf("Larger: %+v", got)
	}
	inc := Estimate{StateWhat: "the weights"}
	inc.Include(e)
	inc.Include(e)
	if inc.State != 2*e.State || inc.Total != 2*e.Total {
		t.Errorf("Include: %+v", inc)
	}
	avail := Memory{18 << 30, SourceCgroup}
	for _, c := range []struct {
		e    Estimate
		want string
	}{
		{o, "profile: --batch × --seq overflows int64"},
		{Estimate{State: MaxModelBytes + 1, StateWhat: "the weights, gradients and AdamW's two moments of 536870913 parameters", Total: MaxModelBytes + 1},
			"profile: the weights, gradients and AdamW's two moments of 536870913 parameters need 8.0 GiB, more than the 8 GiB a model may take (limits.MaxModelBytes)"},
		{Estimate{Total: 21 << 30}, "profile needs about 21 GiB of working memory; 18 GiB is available (cgroup limit)"},
	} {
		err := c.e.check("profile", avail, true)
		if err == nil || err.Error() != c.want && !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.e, err, c.want)
		}
	}
	if err := (Estimate{Total: 18 << 30}).check("profile", avail, true); err != nil {
		t.Errorf("exactly what is available: %v", err)
	}
	if err := (Estimate{Total: 1 << 50}).check("profile", Memory{}, false); err != nil {
		t.Errorf("memory unknown: %v", err)
	}
}
