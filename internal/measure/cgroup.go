package measure

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroupUsage reads usage_usec from a cgroup v2 directory's cpu.stat: the CPU time (user and
// system) of every task that ran in the cgroup, also the ones that have exited since. The file
// is there whether or not the cpu controller is enabled (cgroup-v2.rst, "cpu.stat").
func cgroupUsage(dir string) (uint64, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "usage_usec "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// psiFiles are the pressure files read for the machine (/proc/pressure/<name>) and for a cgroup
// (<dir>/<name>.pressure), in the order of snapshot.psi.
var psiFiles = [3]string{"cpu", "io", "memory"}

// readPSI returns the "some" totals (µs) of the three pressure files under dir (file names
// name+suffix), and whether all three could be read: a kernel without PSI (CONFIG_PSI off, or
// Debian's default psi=0) has no such files, or refuses to read them (EOPNOTSUPP).
func readPSI(dir, suffix string) ([3]uint64, bool) {
	var out [3]uint64
	for i, f := range psiFiles {
		v, ok := readPSISome(filepath.Join(dir, f+suffix))
		if !ok {
			return [3]uint64{}, false
		}
		out[i] = v
	}
	return out, true
}

// readPSISome returns the "some" total (µs) of a pressure file.
func readPSISome(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || f[0] != "some" {
			continue
		}
		if v, ok := strings.CutPrefix(f[4], "total="); ok {
			n, err := strconv.ParseUint(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
