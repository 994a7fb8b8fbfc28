package limits

import (
	"testing"
	"testing/fstest"
)

// FuzzCgroupFiles: whatever /proc/self/cgroup, mountinfo and the cgroup
// files hold, the headroom is found without a panic, is never negative,
// and never exceeds a limit the files hold.
func FuzzCgroupFiles(f *testing.F) {
	f.Add(v2Self, v2MountInfo, "/sys/fs/cgroup/user.slice/job-7/task", "4294967296\n", "1073741824\n", "inactive_file 268435456\n")
	f.Add(v1Self, v1Info, "/sys/fs/cgroup/memory/process_api/88344ebe", "3221225472\n", "1073741824\n", "total_inactive_file 536870912\n")
	f.Add("0::/\n", "", "/sys/fs/cgroup", "max\n", "0\n", "")
	f.Add("0::/../..\n", `1 2 0:1 /a\04 /x\ - cgroup2 c rw`, "/x", "-1", "99999999999999999999", "inactive_file -5")
	f.Fuzz(func(t *testing.T, self, mountinfo, dir, limit, usage, stat string) {
		fsys := fstest.MapFS{"proc/self/cgroup": file(self), "proc/self/mountinfo": file(mountinfo)}
		rel := func(name string) string {
			p := dir + "/" + name
			for len(p) > 0 && p[0] == '/' {
				p = p[1:]
			}
			return p
		}
		files := []string{"memory.max", "memory.current", "memory.stat", "memory.limit_in_bytes", "memory.usage_in_bytes"}
		bodies := []string{limit, usage, stat, limit, usage}
		for i, name := range files {
			fsys[rel(name)] = file(bodies[i])
		}
		n, ok := cgroupHeadroom(fsys)
		if n < 0 {
			t.Fatalf("negative headroom %d", n)
		}
		if l, limited := parseCgroupLimit(limit); ok && limited && n > l {
			// Only levels with a limit count; another level may hold the
			// same files, never a larger headroom than its own limit.
			t.Fatalf("headroom %d above the limit %d", n, l)
		}
		parseMountInfo(mountinfo)
		parseProcCgroup(self)
		parseStatField(stat, "inactive_file")
	})
}
