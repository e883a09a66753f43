package measure

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// KernelMemoryMethod says in the results how mount_mem is measured.
const KernelMemoryMethod = "mount_mem = change of kernel memory across the mount(2) call, after sync and drop_caches: " +
	"Slab + Buffers + KernelStack + PageTables + Percpu + VmallocUsed from /proc/meminfo. " +
	"It counts the superblock, caches of metadata read at mount, journal and log buffers and the " +
	"filesystem's kernel threads; it excludes file data in the page cache. Other activity on the " +
	"machine frees and allocates kernel memory meanwhile (a single difference was seen at -6.9 MiB), so on a block device " +
	"each repetition mounts three more times, untimed and cold, and records the median of those three (every sample, and the timed " +
	"mount's own difference as first_mount_bytes, are in extra); a median below zero is noise and is recorded as 0 with a note. " +
	"On raw NAND (init_mem, mount_mem) it is the one difference across the step, as the 2010 study measured it."

// kernelMemoryFields are summed by KernelMemory; see KernelMemoryMethod for why these.
var kernelMemoryFields = []string{"Slab", "Buffers", "KernelStack", "PageTables", "Percpu", "VmallocUsed"}

// Meminfo is /proc/meminfo with every value in bytes.
type Meminfo map[string]uint64

// ParseMeminfo parses /proc/meminfo text. Lines are "Name:   123 kB" or, for the HugePages
// counts, "Name: 123" without a unit.
func ParseMeminfo(b []byte) (Meminfo, error) {
	m := Meminfo{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			return nil, fmt.Errorf("meminfo line %d: no colon in %q", line, sc.Text())
		}
		f := strings.Fields(rest)
		if len(f) == 0 || len(f) > 2 {
			return nil, fmt.Errorf("meminfo line %d: want a number and an optional unit, got %q", line, rest)
		}
		v, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("meminfo line %d: %w", line, err)
		}
		if len(f) == 2 {
			if f[1] != "kB" {
				return nil, fmt.Errorf("meminfo line %d: unknown unit %q", line, f[1])
			}
			v *= 1024
		}
		m[strings.TrimSpace(name)] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// ReadMeminfo reads and parses /proc/meminfo.
func ReadMeminfo() (Meminfo, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return nil, err
	}
	return ParseMeminfo(b)
}

// KernelMemory is the sum of the fields named in KernelMemoryMethod.
func (m Meminfo) KernelMemory() uint64 {
	var sum uint64
	for _, f := range kernelMemoryFields {
		sum += m[f]
	}
	return sum
}
