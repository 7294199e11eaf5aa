package bwrap

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestCgroupMounts reads the hierarchies of each controller from mount
// tables of the kinds Talon meets: cgroup v1 with a hierarchy per
// controller (and a unified v2 beside it), v2 alone, and v1 with
// controllers mounted together.
func TestCgroupMounts(t *testing.T) {
	tests := []struct {
		name      string
		mountinfo string
		v1        map[string]cgroupMount
		v2        cgroupMount
	}{
		{
			name: "hybrid",
			mountinfo: "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n" +
				"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
				"39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n" +
				"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n",
			v1: map[string]cgroupMount{
				"rw":     {"/", "/sys/fs/cgroup/memory"},
				"memory": {"/", "/sys/fs/cgroup/memory"},
				"pids":   {"/", "/sys/fs/cgroup/pids"},
			},
			v2: cgroupMount{"/", "/sys/fs/cgroup/unified"},
		},
		{
			name:      "v2 only",
			mountinfo: "28 22 0:25 /../.. /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n",
			v1:        map[string]cgroupMount{},
			v2:        cgroupMount{"/../..", "/sys/fs/cgroup"},
		},
		{
			name: "controllers together, escaped point, first wins",
			mountinfo: "40 31 0:40 /talon /mnt/my\\040cg rw - cgroup cg rw,pids,memory\n" +
				"41 31 0:41 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n" +
				"bad line\n",
			v1: map[string]cgroupMount{
				"rw":     {"/talon", "/mnt/my cg"},
				"pids":   {"/talon", "/mnt/my cg"},
				"memory": {"/talon", "/mnt/my cg"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v1, v2 := cgroupMounts(tt.mountinfo)
			if !reflect.DeepEqual(v1, tt.v1) || v2 != tt.v2 {
				t.Fatalf("got %v %v, want %v %v", v1, v2, tt.v1, tt.v2)
			}
		})
	}
}

func TestOwnCgroup(t *testing.T) {
	own := "9:name=systemd:/\n8:pids:/a\n4:memory:/process_api/7a01\n2:cpu,cpuacct:/c\n0::/u\n"
	tests := []struct{ controller, want string }{
		{"pids", "/a"},
		{"memory", "/process_api/7a01"},
		{"cpuacct", "/c"},
		{"hugetlb", ""},
	}
	for _, tt := range tests {
		t.Run(tt.controller, func(t *testing.T) {
			if got := ownCgroup(own, tt.controller); got != tt.want {
				t.Fatalf("ownCgroup(%s) = %q, want %q", tt.controller, got, tt.want)
			}
		})
	}
}

// TestMemoryLimits checks which files hold a cgroup's memory and swap,
// for each version's files, with and without swap accounting.
func TestMemoryLimits(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		want  []cgroupWrite
	}{
		{"v2", []string{"memory.max", "memory.swap.max"}, []cgroupWrite{{"memory.max", "1048576"}, {"memory.swap.max", "0"}}},
		{"v2 without swap accounting", []string{"memory.max"}, []cgroupWrite{{"memory.max", "1048576"}}},
		{"v1", []string{"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"},
			[]cgroupWrite{{"memory.limit_in_bytes", "1048576"}, {"memory.memsw.limit_in_bytes", "1048576"}}},
		{"v1 without swap accounting", []string{"memory.limit_in_bytes"}, []cgroupWrite{{"memory.limit_in_bytes", "1048576"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got := memoryLimits(dir, 1<<20)
			for i := range got {
				got[i].file = filepath.Base(got[i].file)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}
