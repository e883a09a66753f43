package measure

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Noise is what else the machine did while a test was measured: the interference that makes
// figures drift by several times on a shared machine (measured on this kind of 2-core VM: with
// other work running, the same variant's repetitions differed up to 3.8×).
type Noise struct {
	// StealPct is the share of the CPUs' time the hypervisor gave to other guests (/proc/stat
	// steal), in percent of all CPU time during the span.
	StealPct float64 `json:"steal_pct"`
	// OtherCPUPct is the CPU time of processes that are neither fsbench nor its children (nor
	// kernel threads, which do fsbench's own writeback and loop I/O), in percent of one CPU:
	// 100 means another process kept a whole CPU busy.
	OtherCPUPct float64 `json:"other_cpu_pct"`
	// CPUPressurePct, IOPressurePct and MemPressurePct are the shares of the span during which
	// some task waited for a CPU, for I/O or for memory (PSI "some", /proc/pressure). fsbench's
	// own I/O waits count in IOPressurePct, so that one is recorded, not judged.
	CPUPressurePct float64 `json:"cpu_pressure_pct,omitempty"`
	IOPressurePct  float64 `json:"io_pressure_pct,omitempty"`
	MemPressurePct float64 `json:"mem_pressure_pct,omitempty"`
	// OtherIOBytes is what other block devices moved (read + written, whole disks only), less
	// what the device under test sent to the disk holding its backing file.
	OtherIOBytes uint64 `json:"other_io_bytes,omitempty"`
	// Busy says the measurement was disturbed, and Why says by what, in words.
	Busy bool   `json:"busy,omitempty"`
	Why  string `json:"why,omitempty"`
}

// Thresholds above which a span counts as disturbed. They are deliberately loose: a quiet
// machine's own daemons stay below them (measured here: steal under 1 %, other processes
// under 5 % of a CPU), and the load that decided a ranking before (load 17–30, steal ~16 %)
// is far above them.
const (
	BusySteal     = 5.0  // percent of CPU time
	BusyOtherCPU  = 25.0 // percent of one CPU
	BusyCPUPSI    = 20.0 // percent of the span
	BusyMemPSI    = 5.0  // percent of the span
	BusyOtherIOPS = 4e6  // bytes per second moved by other devices
)

// Sentinel watches the machine during spans. Its paths are fields so that tests point them at
// fake files.
type Sentinel struct {
	Proc string // normally /proc
	Sys  string // normally /sys
	// Device is the sysfs name of the device under test ("loop3", "mmcblk0"); its own I/O and
	// that of its backing disk are not other I/O.
	Device string
	// Backing is the file that finally holds the device's data, when the loop device's own
	// backing file does not tell (a simulated card's data file, behind FUSE).
	Backing string
	self    int
}

// NewSentinel watches for interference with the tests on device (a /sys/block name; "" for
// none, on raw flash).
func NewSentinel(device string) *Sentinel {
	return &Sentinel{Proc: "/proc", Sys: "/sys", Device: device, self: os.Getpid()}
}

// Watch is a span being watched.
type Watch struct {
	s     *Sentinel
	start time.Time
	snap  snapshot
}

type snapshot struct {
	cpu      cpuTimes
	procs    map[int]uint64 // pid → utime+stime ticks of processes not ours
	psi      [3]uint64      // cpu, io, memory "some" totals, µs
	disks    map[string]uint64
	ownBytes uint64 // the device under test's sectors × 512
	ok       bool
}

type cpuTimes struct{ total, steal uint64 }

// Start takes the first reading. It never fails: what cannot be read is left out.
func (s *Sentinel) Start() *Watch {
	return &Watch{s: s, snap: s.read(), start: time.Now()}
}

// Stop takes the second reading and returns what happened in between.
func (w *Watch) Stop() Noise {
	wall := time.Since(w.start)
	end := w.s.read()
	return w.s.compare(w.snap, end, wall)
}

func (s *Sentinel) compare(a, b snapshot, wall time.Duration) Noise {
	var n Noise
	if !a.ok || !b.ok || wall <= 0 {
		return n
	}
	if dt := b.cpu.total - a.cpu.total; dt > 0 {
		n.StealPct = 100 * float64(b.cpu.steal-a.cpu.steal) / float64(dt)
	}
	var other uint64
	for pid, t := range b.procs {
		if t0, ok := a.procs[pid]; ok && t >= t0 {
			other += t - t0
		} else if !ok {
			other += t // started during the span: all its time is in it
		}
	}
	n.OtherCPUPct = 100 * float64(other) / clockTicks / wall.Seconds()
	us := float64(wall.Microseconds())
	pct := func(i int) float64 {
		if b.psi[i] < a.psi[i] {
			return 0
		}
		return 100 * float64(b.psi[i]-a.psi[i]) / us
	}
	n.CPUPressurePct, n.IOPressurePct, n.MemPressurePct = pct(0), pct(1), pct(2)
	backing := s.backingDisk()
	for d, v := range b.disks {
		v0 := a.disks[d]
		if v < v0 {
			continue
		}
		moved := v - v0
		if d == backing {
			own := b.ownBytes - a.ownBytes
			// The backing file's filesystem adds its own metadata: a tenth and a MiB of slack.
			if moved <= own+own/10+1<<20 {
				continue
			}
			moved -= own
		}
		n.OtherIOBytes += moved
	}
	var why []string
	if n.StealPct > BusySteal {
		why = append(why, fmt.Sprintf("steal %.0f %%", n.StealPct))
	}
	if n.OtherCPUPct > BusyOtherCPU {
		why = append(why, fmt.Sprintf("other processes %.0f %% of a CPU", n.OtherCPUPct))
	}
	if n.CPUPressurePct > BusyCPUPSI && n.OtherCPUPct > BusyOtherCPU/2 {
		// CPU pressure alone may be fsbench's own threads; with another process busy it is not.
		why = append(why, fmt.Sprintf("CPU pressure %.0f %%", n.CPUPressurePct))
	}
	if n.MemPressurePct > BusyMemPSI {
		why = append(why, fmt.Sprintf("memory pressure %.0f %%", n.MemPressurePct))
	}
	if rate := float64(n.OtherIOBytes) / wall.Seconds(); rate > BusyOtherIOPS {
		why = append(why, fmt.Sprintf("other disks %.1f MB/s", rate/1e6))
	}
	n.Busy, n.Why = len(why) > 0, strings.Join(why, ", ")
	return n
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every Linux architecture.
const clockTicks = 100

func (s *Sentinel) read() snapshot {
	var sn snapshot
	b, err := os.ReadFile(filepath.Join(s.Proc, "stat"))
	if err != nil {
		return sn
	}
	sn.cpu, sn.ok = parseCPULine(b)
	sn.procs = s.otherProcs()
	for i, f := range []string{"cpu", "io", "memory"} {
		sn.psi[i] = readPSISome(filepath.Join(s.Proc, "pressure", f))
	}
	sn.disks, sn.ownBytes = s.diskBytes()
	return sn
}

// parseCPULine reads the first line of /proc/stat: user nice system idle iowait irq softirq
// steal guest guest_nice, in clock ticks. guest and guest_nice are already in user and nice.
func parseCPULine(b []byte) (cpuTimes, bool) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return cpuTimes{}, false
	}
	var t cpuTimes
	for i := 1; i < len(f) && i <= 8; i++ {
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return cpuTimes{}, false
		}
		t.total += v
		if i == 8 {
			t.steal = v
		}
	}
	return t, true
}

// otherProcs reads the CPU time of every process that is not fsbench, not a descendant of
// fsbench (mkfs, the card server, QEMU) and not a kernel thread.
func (s *Sentinel) otherProcs() map[int]uint64 {
	type st struct {
		ppid  int
		ticks uint64
		kthr  bool
	}
	all := map[int]st{}
	entries, err := os.ReadDir(s.Proc)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.Proc, e.Name(), "stat"))
		if err != nil {
			continue
		}
		ppid, ticks, flags, ok := parseStat(b)
		if !ok {
			continue
		}
		all[pid] = st{ppid: ppid, ticks: ticks, kthr: flags&pfKthread != 0 || pid == 2 || ppid == 2}
	}
	self := s.self
	if self == 0 {
		self = os.Getpid()
	}
	ours := func(pid int) bool {
		for i := 0; i < 64 && pid > 1; i++ {
			if pid == self {
				return true
			}
			pid = all[pid].ppid
		}
		return false
	}
	out := map[int]uint64{}
	for pid, p := range all {
		if !p.kthr && !ours(pid) {
			out[pid] = p.ticks
		}
	}
	return out
}

// pfKthread is PF_KTHREAD in the flags field of /proc/<pid>/stat.
const pfKthread = 0x00200000

// parseStat reads ppid (field 4), flags (9), utime (14) and stime (15) of /proc/<pid>/stat. The
// command name (field 2) may hold spaces and parentheses, so fields are counted from the last ')'.
func parseStat(b []byte) (ppid int, ticks, flags uint64, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 13 {
		return 0, 0, 0, false
	}
	p, err1 := strconv.Atoi(f[1])
	fl, err2 := strconv.ParseUint(f[6], 10, 64)
	u, err3 := strconv.ParseUint(f[11], 10, 64)
	s, err4 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return 0, 0, 0, false
	}
	return p, u + s, fl, true
}

// readPSISome returns the "some" total (µs) of a /proc/pressure file, 0 without PSI.
func readPSISome(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || f[0] != "some" {
			continue
		}
		if v, ok := strings.CutPrefix(f[4], "total="); ok {
			n, _ := strconv.ParseUint(v, 10, 64)
			return n
		}
	}
	return 0
}

// diskBytes reads /proc/diskstats: bytes read + written per whole disk (not partitions, loop,
// ram, zram or device-mapper devices, whose I/O lands on a disk too, or nowhere), and the bytes
// of the device under test.
func (s *Sentinel) diskBytes() (map[string]uint64, uint64) {
	b, err := os.ReadFile(filepath.Join(s.Proc, "diskstats"))
	if err != nil {
		return nil, 0
	}
	out := map[string]uint64{}
	var own uint64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 {
			continue
		}
		name := f[2]
		rd, _ := strconv.ParseUint(f[5], 10, 64)
		wr, _ := strconv.ParseUint(f[9], 10, 64)
		bytes := (rd + wr) * 512
		if name == s.Device {
			own = bytes
			continue
		}
		if !s.wholeDisk(name) {
			continue
		}
		out[name] = bytes
	}
	return out, own
}

// wholeDisk reports whether name is a disk whose I/O is physical: not a partition (its disk
// counts it), nor a virtual device.
func (s *Sentinel) wholeDisk(name string) bool {
	for _, p := range []string{"loop", "ram", "zram", "dm-", "md", "nbd"} {
		if strings.HasPrefix(name, p) {
			return false
		}
	}
	_, err := os.Stat(filepath.Join(s.Sys, "block", name))
	return err == nil
}

// backingDisk is the disk holding the device under test's backing file (a loop device's image
// or a simulated card's data file), "" when there is none or it cannot be told.
func (s *Sentinel) backingDisk() string {
	if s.Backing != "" {
		return diskOf(s.Sys, s.Backing)
	}
	if s.Device == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(s.Sys, "block", s.Device, "loop", "backing_file"))
	if err != nil {
		return ""
	}
	file := strings.TrimSpace(string(b))
	return diskOf(s.Sys, file)
}

// diskOf returns the whole disk holding file ("vda" for a file on /dev/vda1), "" when the file
// is not on a block device (tmpfs, FUSE) or it cannot be told.
func diskOf(sys, file string) string {
	var st unix.Stat_t
	if err := unix.Stat(file, &st); err != nil {
		return ""
	}
	dev := uint64(st.Dev)
	if st.Mode&unix.S_IFMT == unix.S_IFBLK {
		dev = uint64(st.Rdev) // a device node: the device itself, not the filesystem holding the node
	}
	link, err := os.Readlink(filepath.Join(sys, "dev", "block", fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev))))
	if err != nil {
		return ""
	}
	if _, err := os.Stat(filepath.Join(sys, "dev", "block", link, "partition")); err == nil {
		return filepath.Base(filepath.Dir(link)) // a partition: its parent directory is the disk
	}
	return filepath.Base(link)
}
