package measure

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	// 100 means another process kept a whole CPU busy. With fsbench in a cgroup of its own it
	// is the machine's total less the cgroup's and the kernel threads', so that processes that
	// lived shorter than the span count too.
	OtherCPUPct float64 `json:"other_cpu_pct"`
	// OwnCPUPct is the CPU time of fsbench and its children (its cgroup), in percent of one
	// CPU; 0 without a cgroup.
	OwnCPUPct float64 `json:"own_cpu_pct,omitempty"`
	// CPUPressurePct, IOPressurePct and MemPressurePct are the shares of the span during which
	// some task of the machine waited for a CPU, for I/O or for memory (PSI "some",
	// /proc/pressure). fsbench's own I/O waits count in IOPressurePct, so that one is recorded,
	// not judged.
	CPUPressurePct float64 `json:"cpu_pressure_pct,omitempty"`
	IOPressurePct  float64 `json:"io_pressure_pct,omitempty"`
	MemPressurePct float64 `json:"mem_pressure_pct,omitempty"`
	// OwnCPUPressurePct, OwnIOPressurePct and OwnMemPressurePct are the same for fsbench's own
	// cgroup: what the run's own tasks waited for (its own memory limit included). The machine's
	// share less this is the time only other tasks waited, which is what is judged.
	OwnCPUPressurePct float64 `json:"own_cpu_pressure_pct,omitempty"`
	OwnIOPressurePct  float64 `json:"own_io_pressure_pct,omitempty"`
	OwnMemPressurePct float64 `json:"own_mem_pressure_pct,omitempty"`
	// OtherIOBytes is what other block devices moved (read + written, whole disks only), less
	// the run's own I/O on each (OwnIOBytes): its partition's on the whole disk, its loop
	// device's on the disk holding the image, the simulated card's on the disk holding its
	// data file.
	OtherIOBytes uint64 `json:"other_io_bytes,omitempty"`
	OwnIOBytes   uint64 `json:"own_io_bytes,omitempty"`
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

// cpuFloorTicks is the other CPU time, in clock ticks per CPU, below which a span is never
// called busy by CPU: /proc/stat counts in ticks of 10 ms, so a short span (a 50 ms mount) is
// off by a tick or two on each CPU whatever ran.
const cpuFloorTicks = 2

// fileSlack is the I/O a filesystem adds to the data the run puts through a file on it
// (metadata, journal, readahead), as a share of that data, plus slackBytes per span.
const (
	fileSlack  = 0.1
	slackBytes = 1 << 20
)

// Sentinel watches the machine during spans. Its paths are fields so that tests point them at
// fake files. A Sentinel may be used by one goroutine at a time.
type Sentinel struct {
	Proc string // normally /proc
	Sys  string // normally /sys
	// Device is the sysfs name of the device under test ("loop3", "mmcblk0p2"); its own I/O,
	// and its I/O on every device stacked under it, are not other I/O.
	Device string
	// Backing is the file that finally holds the device's data, when the device's stack does
	// not tell (a simulated card's data file, behind FUSE).
	Backing string
	// Cgroup is the cgroup v2 directory that holds fsbench and every process it starts (one
	// it made for the run); "" when there is none. Without it, other CPU is found by scanning
	// /proc for processes that do not descend from fsbench, which misses processes that live
	// shorter than a span, and pressure is judged for the whole machine.
	Cgroup string
	self   int

	mu       sync.Mutex
	resolved bool
	links    []ownLink
	last     map[string]ioCount // every device's counters at the last reading
	ownCum   map[string]uint64  // whole disk → bytes of the run's own there, since the start
	pending  map[string]uint64  // whole disk → bytes the run wrote through a file, not seen there yet
}

// NewSentinel watches for interference with the tests on device (a /sys/block name; "" for
// none, on raw flash).
func NewSentinel(device string) *Sentinel {
	return &Sentinel{Proc: "/proc", Sys: "/sys", Device: device, self: os.Getpid()}
}

// Setup says what the sentinel can see on this machine, for the results: where its own CPU
// and pressure come from, and which devices' I/O it counts as the run's own.
type Setup struct {
	Cgroup string   `json:"cgroup,omitempty"` // fsbench's own cgroup v2, "" without one
	PSI    bool     `json:"psi"`              // the kernel reports pressure (/proc/pressure)
	OwnPSI bool     `json:"own_psi"`          // ... and for fsbench's own cgroup
	OwnIO  []string `json:"own_io,omitempty"` // "mmcblk0p2 on mmcblk0 (request for request)"
	// Notes say what the sentinel does without what is missing.
	Notes []string `json:"notes,omitempty"`
}

// Setup reports what this sentinel can see; the device must exist (it reads its stack).
func (s *Sentinel) Setup() Setup {
	s.mu.Lock()
	s.resolve()
	links := slices.Clone(s.links)
	s.mu.Unlock()
	var st Setup
	for _, l := range links {
		st.OwnIO = append(st.OwnIO, l.String())
	}
	_, st.PSI = readPSI(filepath.Join(s.Proc, "pressure"), "")
	if s.Cgroup != "" {
		if _, ok := cgroupUsage(s.Cgroup); ok {
			st.Cgroup = s.Cgroup
		}
		_, st.OwnPSI = readPSI(s.Cgroup, ".pressure")
	}
	if st.Cgroup == "" {
		st.Notes = append(st.Notes, "fsbench has no cgroup v2 of its own here: other processes' CPU is found by scanning /proc, which misses processes that live shorter than a test")
	}
	switch {
	case !st.PSI:
		st.Notes = append(st.Notes, "the kernel reports no pressure (PSI: CONFIG_PSI, and psi=1 on the kernel command line where it is off by default, as on Debian): CPU and memory pressure are not judged")
	case !st.OwnPSI:
		st.Notes = append(st.Notes, "no pressure for fsbench's own cgroup: the machine's memory pressure is judged whole, fsbench's own included")
	}
	return st
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
	kthreads map[int]uint64 // pid → ticks of kernel threads
	own      uint64         // fsbench's cgroup CPU, µs
	ownOK    bool
	psi      [3]uint64 // cpu, io, memory "some" totals, µs
	psiOK    bool
	ownPSI   [3]uint64 // the same for fsbench's cgroup
	ownPSIOK bool
	disks    map[string]uint64 // whole disks' bytes read + written
	ownIO    map[string]uint64 // whole disk → the run's own bytes there since the sentinel started
	// childIO is the storage I/O of the programs fsbench waited for (getrusage of its
	// children: blocks read and written), devIO the device's own bytes: see compare.
	childIO, devIO uint64
	// procIO is, by pid, the storage I/O of fsbench and of its children still running (the
	// card server among them): /proc/<pid>/io read_bytes + write_bytes - cancelled_write_bytes.
	procIO map[int]uint64
	ok     bool
}

// cpuTimes are /proc/stat's first line in clock ticks: every state, steal, and the time spent
// running tasks (user, nice, system), with the number of CPUs.
type cpuTimes struct {
	total, steal, tasks uint64
	ncpu                int
}

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
	us := float64(wall.Microseconds())
	otherUs := n.cpuShares(a, b, us)
	otherPSI := n.pressures(a, b, us)
	rate := s.diskIO(&n, a, b)
	n.verdict(wall, otherUs, float64(cpuFloorTicks*max(1, b.cpu.ncpu))*1e6/clockTicks, otherPSI, rate)
	return n
}

// cpuShares fills in the steal and the CPU shares of fsbench and of other processes over a
// span of us microseconds, and returns the other processes' CPU time in microseconds.
func (n *Noise) cpuShares(a, b snapshot, us float64) float64 {
	if dt := b.cpu.total - a.cpu.total; dt > 0 {
		n.StealPct = 100 * float64(b.cpu.steal-a.cpu.steal) / float64(dt)
	}
	var otherUs float64
	if a.ownOK && b.ownOK && b.own >= a.own && b.cpu.tasks >= a.cpu.tasks {
		// The machine's task time less fsbench's cgroup and the kernel threads'.
		own := float64(b.own - a.own)
		kthr := float64(tickDelta(a.kthreads, b.kthreads)) * 1e6 / clockTicks
		otherUs = max(0, float64(b.cpu.tasks-a.cpu.tasks)*1e6/clockTicks-own-kthr)
		n.OwnCPUPct = 100 * own / us
	} else {
		otherUs = float64(tickDelta(a.procs, b.procs)) * 1e6 / clockTicks
	}
	n.OtherCPUPct = 100 * otherUs / us
	return otherUs
}

// pressures fills in the machine's and fsbench's pressure stall shares, and returns the share
// of the span during which only other tasks waited, for CPU, I/O and memory.
func (n *Noise) pressures(a, b snapshot, us float64) [3]float64 {
	pct := func(x, y [3]uint64, i int) float64 {
		if y[i] < x[i] {
			return 0
		}
		return 100 * float64(y[i]-x[i]) / us
	}
	var otherPSI [3]float64
	if !a.psiOK || !b.psiOK {
		return otherPSI
	}
	n.CPUPressurePct, n.IOPressurePct, n.MemPressurePct = pct(a.psi, b.psi, 0), pct(a.psi, b.psi, 1), pct(a.psi, b.psi, 2)
	otherPSI = [3]float64{n.CPUPressurePct, n.IOPressurePct, n.MemPressurePct}
	if a.ownPSIOK && b.ownPSIOK {
		n.OwnCPUPressurePct, n.OwnIOPressurePct, n.OwnMemPressurePct = pct(a.ownPSI, b.ownPSI, 0), pct(a.ownPSI, b.ownPSI, 1), pct(a.ownPSI, b.ownPSI, 2)
		// "some" of the machine covers the time any task waited, so the time only tasks
		// outside fsbench waited is the machine's less fsbench's.
		own := [3]float64{n.OwnCPUPressurePct, n.OwnIOPressurePct, n.OwnMemPressurePct}
		for i := range otherPSI {
			otherPSI[i] = max(0, otherPSI[i]-own[i])
		}
	}
	return otherPSI
}

// diskIO fills in the bytes fsbench and others moved on the disks other than the device under
// test, and returns the others' bytes by disk.
func (s *Sentinel) diskIO(n *Noise, a, b snapshot) map[string]uint64 {
	rate := map[string]uint64{}
	for d, v := range b.disks {
		v0, seen := a.disks[d]
		if d == s.Device || !seen || v < v0 {
			continue
		}
		moved := v - v0
		own := min(moved, sub(b.ownIO[d], a.ownIO[d]))
		n.OwnIOBytes += own
		if moved > own {
			n.OtherIOBytes += moved - own
			rate[d] = moved - own
		}
	}
	// The run's programs moved bytes beyond the device's own: mkfs paging its own binary and
	// libraries in from the host's disk after the previous repetition's cache drop (1.3 MB for
	// mke2fs, in a 10 ms mkfs: 70 MB/s), mksquashfs and mkfs.erofs writing their image to the
	// work directory (children waited for: getrusage), and the simulated card's server reading
	// its data file with the page cache's readahead after a cache drop (a running child:
	// /proc/<pid>/io; a read test of 48 MB through the card moved 80 MB on the host's disk).
	// Those bytes are the run's, on whichever disk they landed; what went to the device itself
	// is already counted above.
	if extra := sub(b.childIO, a.childIO) + tickDelta(a.procIO, b.procIO); extra > 0 && n.OtherIOBytes > 0 {
		extra -= min(extra, sub(b.devIO, a.devIO))
		take := min(extra, n.OtherIOBytes)
		n.OtherIOBytes -= take
		n.OwnIOBytes += take
		for _, d := range slices.Sorted(maps.Keys(rate)) {
			t := min(take, rate[d])
			if rate[d] -= t; rate[d] == 0 {
				delete(rate, d)
			}
			take -= t
		}
	}
	return rate
}

// verdict says whether the span was busy, and why: otherUs is the other processes' CPU time
// and cpuFloor the least of it that counts (microseconds), otherPSI the pressure only others
// felt, rate the others' bytes by disk.
func (n *Noise) verdict(wall time.Duration, otherUs, cpuFloor float64, otherPSI [3]float64, rate map[string]uint64) {
	var why []string
	if n.StealPct > BusySteal {
		why = append(why, fmt.Sprintf("steal %.0f %%", n.StealPct))
	}
	if n.OtherCPUPct > BusyOtherCPU && otherUs > cpuFloor {
		why = append(why, fmt.Sprintf("other processes %.0f %% of a CPU", n.OtherCPUPct))
	}
	if otherPSI[0] > BusyCPUPSI && n.OtherCPUPct > BusyOtherCPU/2 && otherUs > cpuFloor {
		// CPU pressure alone may be fsbench's own threads; with another process busy it is not.
		why = append(why, fmt.Sprintf("CPU pressure %.0f %%", otherPSI[0]))
	}
	if otherPSI[2] > BusyMemPSI {
		why = append(why, fmt.Sprintf("memory pressure %.0f %%", otherPSI[2]))
	}
	if r := float64(n.OtherIOBytes) / wall.Seconds(); r > BusyOtherIOPS {
		names := slices.Sorted(maps.Keys(rate))
		slices.SortStableFunc(names, func(x, y string) int { return cmp.Compare(rate[y], rate[x]) })
		why = append(why, fmt.Sprintf("other disks %.1f MB/s (%s)", r/1e6, strings.Join(names, ", ")))
	}
	n.Busy, n.Why = len(why) > 0, strings.Join(why, ", ")
}

// childrenIO is the storage I/O of the children fsbench has waited for, in bytes: the kernel's
// per-task I/O accounting (read_bytes, write_bytes) that getrusage returns in 512-byte blocks.
func childrenIO() uint64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_CHILDREN, &ru) != nil {
		return 0
	}
	return uint64(max(0, ru.Inblock+ru.Oublock)) * 512
}

// tickDelta sums what the processes of b used since a: all of the time of those that started
// meanwhile. Those that ended meanwhile are lost, which is why the cgroup is better.
func tickDelta(a, b map[int]uint64) uint64 {
	var sum uint64
	for pid, t := range b {
		if t0, ok := a[pid]; ok && t >= t0 {
			sum += t - t0
		} else if !ok {
			sum += t
		}
	}
	return sum
}

// sub is b - a for counters that only grow, and b when a counter restarted (a loop device
// detached and attached again).
func sub(b, a uint64) uint64 {
	if b < a {
		return b
	}
	return b - a
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
	if s.Cgroup != "" {
		sn.own, sn.ownOK = cgroupUsage(s.Cgroup)
		sn.ownPSI, sn.ownPSIOK = readPSI(s.Cgroup, ".pressure")
	}
	sn.procs, sn.kthreads, sn.procIO = s.scanProcs()
	sn.psi, sn.psiOK = readPSI(filepath.Join(s.Proc, "pressure"), "")
	devs := s.devices()
	sn.disks = map[string]uint64{}
	for name, c := range devs {
		if s.wholeDisk(name) {
			sn.disks[name] = c.r + c.w
		}
	}
	sn.ownIO = s.attribute(devs, s.dirtyBytes())
	sn.childIO = childrenIO()
	if c, ok := devs[s.Device]; ok {
		sn.devIO = c.r + c.w
	}
	return sn
}

// parseCPULine reads /proc/stat: its first line (user nice system idle iowait irq softirq
// steal guest guest_nice, in clock ticks; guest and guest_nice are already in user and nice)
// and the number of cpuN lines.
func parseCPULine(b []byte) (cpuTimes, bool) {
	line, rest, _ := bytes.Cut(b, []byte("\n"))
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
		switch i {
		case 1, 2, 3:
			t.tasks += v
		case 8:
			t.steal = v
		}
	}
	for l := range bytes.Lines(rest) {
		if bytes.HasPrefix(l, []byte("cpu")) {
			t.ncpu++
		}
	}
	return t, true
}

// scanProcs reads the CPU time of every process that is not fsbench, not a descendant of
// fsbench (mkfs, the card server, QEMU) and not a kernel thread; and that of the kernel
// threads, which do fsbench's writeback and loop I/O as well as other programs'.
func (s *Sentinel) scanProcs() (others, kthreads, ownIO map[int]uint64) {
	type st struct {
		ppid  int
		ticks uint64
		kthr  bool
	}
	all := map[int]st{}
	entries, err := os.ReadDir(s.Proc)
	if err != nil {
		return nil, nil, nil
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
	others, kthreads, ownIO = map[int]uint64{}, map[int]uint64{}, map[int]uint64{}
	for pid, p := range all {
		switch {
		case p.kthr:
			kthreads[pid] = p.ticks
		case !ours(pid):
			others[pid] = p.ticks
		default:
			if b, err := os.ReadFile(filepath.Join(s.Proc, strconv.Itoa(pid), "io")); err == nil {
				ownIO[pid] = parseProcIO(b)
			}
		}
	}
	return others, kthreads, ownIO
}

// parseProcIO reads the storage I/O a task caused from /proc/<pid>/io: read_bytes +
// write_bytes - cancelled_write_bytes (pages dirtied, then truncated before writeback).
func parseProcIO(b []byte) uint64 {
	var r, w, c uint64
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "read_bytes":
			r = n
		case "write_bytes":
			w = n
		case "cancelled_write_bytes":
			c = n
		}
	}
	return r + w - min(c, r+w)
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

// ioCount is a device's bytes read and written so far (/proc/diskstats sectors × 512).
type ioCount struct{ r, w uint64 }

// devices reads /proc/diskstats: bytes read and written by every block device, partitions and
// virtual devices included.
func (s *Sentinel) devices() map[string]ioCount {
	b, err := os.ReadFile(filepath.Join(s.Proc, "diskstats"))
	if err != nil {
		return nil
	}
	out := map[string]ioCount{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 {
			continue
		}
		rd, _ := strconv.ParseUint(f[5], 10, 64)
		wr, _ := strconv.ParseUint(f[9], 10, 64)
		out[f[2]] = ioCount{rd * 512, wr * 512}
	}
	return out
}

// wholeDisk reports whether name is a disk whose I/O is physical: not a partition (its disk
// counts it), nor a virtual device (whose I/O lands on a disk, or nowhere).
func (s *Sentinel) wholeDisk(name string) bool {
	if virtualDisk(name) {
		return false
	}
	_, err := os.Stat(filepath.Join(s.Sys, "block", name))
	return err == nil
}

// dirtyBytes is the machine's data not yet written back (/proc/meminfo Dirty + Writeback):
// no more of what the run wrote through a file can still be on its way to a disk.
func (s *Sentinel) dirtyBytes() uint64 {
	b, err := os.ReadFile(filepath.Join(s.Proc, "meminfo"))
	if err != nil {
		return math.MaxUint64
	}
	m, err := ParseMeminfo(b)
	if err != nil {
		return math.MaxUint64
	}
	return m["Dirty"] + m["Writeback"]
}

// resolve finds the device's stack once, when the device exists; s.mu is held.
func (s *Sentinel) resolve() {
	if s.resolved {
		return
	}
	s.links = resolveStack(s.Sys, s.Device, s.Backing)
	s.ownCum, s.pending, s.resolved = map[string]uint64{}, map[string]uint64{}, true
}

// attribute takes the devices' counters of a new reading and adds, per whole disk under the
// device, the I/O since the last reading that was the run's own. A disk reached request for
// request (the partition's disk) gets exactly the device's bytes. A disk holding a file the run
// writes through (an image, the card's data file) gets what the run moved through it, with a
// tenth and a MiB of slack for its filesystem's metadata; and writes that have not reached it
// yet are carried to the next reading, since the page cache writes them back later (up to
// 30 s later, after the span that wrote them: the card's backing-file writes seen during the
// next mkfs were counted as another disk's before), but never more than the machine's dirty
// data. It returns the run's own bytes per disk since the sentinel started.
func (s *Sentinel) attribute(devs map[string]ioCount, dirty uint64) map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resolve()
	if s.last != nil && devs != nil {
		type share struct {
			direct, fileR, fileW uint64
			viaFile              bool
		}
		per := map[string]*share{}
		for _, l := range s.links {
			sh := per[l.Disk]
			if sh == nil {
				sh = &share{}
				per[l.Disk] = sh
			}
			c, c0 := devs[l.From], s.last[l.From]
			if l.Direct {
				sh.direct += sub(c.r, c0.r) + sub(c.w, c0.w)
			} else {
				sh.fileR += sub(c.r, c0.r)
				sh.fileW += sub(c.w, c0.w)
				sh.viaFile = true
			}
		}
		for disk, sh := range per {
			c, c0 := devs[disk], s.last[disk]
			moved := sub(c.r, c0.r) + sub(c.w, c0.w)
			own := min(moved, sh.direct)
			if sh.viaFile {
				rest := moved - own
				writes := sh.fileW + s.pending[disk]
				slack := uint64(fileSlack*float64(sh.fileR+sh.fileW)) + slackBytes
				got := min(rest, sh.fileR+writes+slack)
				// Reads reach the disk at once (or come from the cache); what the disk moved
				// beyond them was the run's writes, of this span or written back from before.
				written := min(writes, got-min(got, sh.fileR))
				s.pending[disk] = min(writes-written, dirty)
				own += got
			}
			s.ownCum[disk] += own
		}
	}
	s.last = devs
	return maps.Clone(s.ownCum)
}
