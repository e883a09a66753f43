package vm

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A guest that stops doing anything (no CPU, no I/O) for minutes is stalled: every step of
// fsbench under TCG keeps QEMU's CPU busy, since even the SD card is emulated in QEMU's own
// threads, or its I/O, where the card behind it is slow (a simulated card's modelled waits). Without a watch such a guest sits idle until Options.Timeout, which is
// hours for a long run, and leaves nothing that says where it waits. The watch reads QEMU's
// CPU time and I/O from /proc; when neither has grown for Options.Stall, it asks the guest kernel for its
// tasks' stacks through the emulated keyboard (magic SysRq: w for the blocked tasks, t for all,
// after 7 to let their KERN_INFO lines reach the console) by QEMU's monitor, waits for the
// console to go quiet, and looks again. A guest that takes up its work again goes on
// (Result.Revived counts it: a vCPU halted until an interrupt that never came, as TCG guests have
// been seen to be, would wake on the keyboard's); one whose tasks wait for good is killed, and
// the run's error says so (ErrStalled).

// DefaultStall is Options.Stall's default.
const DefaultStall = 5 * time.Minute

// stallPoll is how often the watch reads QEMU's CPU time (a variable for the guest test).
var stallPoll = 15 * time.Second

const (
	// idleShare is the share of one CPU under which the guest counts as doing nothing: an idle
	// Linux guest's timer ticks under TCG.
	idleShare = 0.02
	// ioBusy is the QEMU I/O (read and written: card image, results share, console) within a
	// poll that counts as work: an idle QEMU's own event notifications are a few KiB.
	ioBusy = 256 << 10
	// resumedShare is the share over which a guest that was idle has taken up work again.
	resumedShare = 0.2
	// quietFor is how long the console must stay silent for the stack dump to be over, and
	// dumpMax how long the dump may take at most (thousands of lines through the emulated
	// serial port).
	quietFor = 20 * time.Second
	dumpMax  = 3 * time.Minute
)

// sysrqKeys are sent to a stalled guest: console log level 7 (the task dumps print at
// KERN_INFO, which loglevel=4 hides), the blocked tasks, every task, and the level back to 4.
var sysrqKeys = []string{"alt-sysrq-7", "alt-sysrq-w", "alt-sysrq-t", "alt-sysrq-4"}

// ErrStalled is wrapped by the error of a guest that stopped doing anything and was killed.
var ErrStalled = fmt.Errorf("guest stalled")

// idleMeter tells how long a process has used (almost) no CPU and done (almost) no I/O.
type idleMeter struct {
	share float64 // CPU share under which a sample is idle
	io    int64   // I/O bytes under which a sample is idle
	last  time.Time
	cpu   time.Duration
	ioN   int64
	since time.Time // start of the idle stretch; zero when busy
}

// sample records the process's CPU time and I/O bytes at now and returns how long it has been
// idle (0 when this sample saw work).
func (m *idleMeter) sample(now time.Time, cpu time.Duration, io int64) time.Duration {
	first := m.last.IsZero()
	busy := first || io-m.ioN >= m.io || float64(cpu-m.cpu) >= m.share*float64(now.Sub(m.last))
	if busy {
		m.since = time.Time{}
	} else if m.since.IsZero() {
		m.since = m.last
	}
	m.last, m.cpu, m.ioN = now, cpu, io
	if m.since.IsZero() {
		return 0
	}
	return now.Sub(m.since)
}

// cpuShare is the CPU share used between two samples.
func cpuShare(cpu0, cpu1 time.Duration, wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return float64(cpu1-cpu0) / float64(wall)
}

// clockTick is the unit of /proc/PID/stat's CPU times: USER_HZ, 100 on every Linux
// architecture fsbench runs on.
const clockTick = 10 * time.Millisecond

// parseCPU returns utime+stime from the contents of /proc/PID/stat. The command name, in
// parentheses, may hold spaces and parentheses: the fields are counted after the last ')'.
func parseCPU(stat []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in %q", stat)
	}
	f := strings.Fields(string(stat[i+1:]))
	// After the name: state(3) ... utime(14) stime(15), i.e. f[11] and f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("short stat line %q", stat)
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("stat line %q: utime %q, stime %q", stat, f[11], f[12])
	}
	return time.Duration(u+s) * clockTick, nil
}

// parseIO returns rchar+wchar from the contents of /proc/PID/io: every byte the process read or
// wrote, its disk image through the page cache and its pipes included.
func parseIO(b []byte) (int64, error) {
	var n int64
	seen := 0
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok || k != "rchar" && k != "wchar" {
			continue
		}
		x, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", l, err)
		}
		n += x
		seen++
	}
	if seen != 2 {
		return 0, fmt.Errorf("no rchar and wchar in %q", b)
	}
	return n, nil
}

// processIO is a process's I/O bytes (parseIO).
func processIO(pid int) (int64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "io"))
	if err != nil {
		return 0, err
	}
	return parseIO(b)
}

func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	return parseCPU(b)
}

// monitorPath is QEMU's human monitor socket for a guest whose scratch directory is dir.
func monitorPath(dir string) string { return filepath.Join(dir, "monitor.sock") }

// monitor sends commands to QEMU's human monitor on the unix socket path and returns what it
// answered.
func monitor(path string, cmds ...string) (string, error) {
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return "", fmt.Errorf("QEMU monitor: %w", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	var out strings.Builder
	prompt := func() error {
		// Every answer ends with the prompt "(qemu) " (the banner too).
		var b []byte
		for !bytes.HasSuffix(b, []byte("(qemu) ")) {
			x, err := r.ReadByte()
			if err != nil {
				return fmt.Errorf("QEMU monitor: %w", err)
			}
			b = append(b, x)
		}
		out.Write(b)
		return nil
	}
	if err := prompt(); err != nil {
		return out.String(), err
	}
	for _, cmd := range cmds {
		if _, err := c.Write([]byte(cmd + "\n")); err != nil {
			return out.String(), fmt.Errorf("QEMU monitor: %w", err)
		}
		if err := prompt(); err != nil {
			return out.String(), err
		}
	}
	return out.String(), nil
}

// note writes a line of the host's own to the console log, marked as such.
func (g *Guest) note(format string, args ...any) {
	line := "# fsbench (host): " + fmt.Sprintf(format, args...) + "\n"
	g.console.WriteString(line)
	if g.opts.Console != nil {
		g.opts.Console.Write([]byte(line))
	}
}

func (g *Guest) consoleBytes() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.consoleN
}

// watchStall watches QEMU's CPU time; it returns when QEMU has exited, or when the guest stalled
// for good (g.stalled is then set and the caller kills QEMU).
func (g *Guest) watchStall() {
	m := &idleMeter{share: idleShare, io: ioBusy}
	tick := time.NewTicker(stallPoll)
	defer tick.Stop()
	for {
		select {
		case <-g.done:
			return
		case <-tick.C:
		}
		cpu, err := processCPU(g.res.PID)
		io, err2 := processIO(g.res.PID)
		if err != nil || err2 != nil {
			return // QEMU is gone
		}
		idle := m.sample(time.Now(), cpu, io)
		if idle < g.opts.Stall {
			continue
		}
		if g.stallCheck(idle) {
			close(g.stallKill)
			return
		}
		m = &idleMeter{share: idleShare, io: ioBusy}
	}
}

// stallCheck asks a guest idle for idle for its stacks and tells whether it stalled for good
// (true: g.stalled says why) or took up its work again.
func (g *Guest) stallCheck(idle time.Duration) bool {
	g.note("the guest has done nothing for %v (QEMU used under %.0f %% of a CPU and did no I/O): asking its kernel for the tasks' stacks (magic SysRq w and t, through QEMU's keyboard)",
		idle.Round(time.Second), 100*idleShare)
	// The vCPU's state first, as the emulator sees it: a vCPU halted (HLT=1) with its local
	// APIC's timer not counting waits for an interrupt nothing will raise.
	if out, err := monitor(monitorPath(g.scratch), "info registers", "info lapic"); err != nil {
		g.note("could not read the vCPU's state: %v", err)
	} else {
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			g.note("monitor: %s", strings.TrimRight(l, "\r"))
		}
	}
	var keys []string
	for _, k := range sysrqKeys {
		keys = append(keys, "sendkey "+k)
	}
	if _, err := monitor(monitorPath(g.scratch), keys...); err != nil {
		g.note("could not send the keys: %v", err)
	}
	// The dump is over when the console has been quiet for quietFor.
	deadline := time.Now().Add(dumpMax)
	for n := g.consoleBytes(); time.Now().Before(deadline); {
		select {
		case <-g.done:
			return false
		case <-time.After(quietFor):
		}
		m := g.consoleBytes()
		if m == n {
			break
		}
		n = m
	}
	// Then: has it taken up its work again?
	t0 := time.Now()
	c0, err := processCPU(g.res.PID)
	io0, err2 := processIO(g.res.PID)
	select {
	case <-g.done:
		return false
	case <-time.After(2 * stallPoll):
	}
	c1, err3 := processCPU(g.res.PID)
	io1, err4 := processIO(g.res.PID)
	if err != nil || err2 != nil || err3 != nil || err4 != nil {
		return false // QEMU is gone
	}
	share := cpuShare(c0, c1, time.Since(t0))
	g.mu.Lock()
	defer g.mu.Unlock()
	if share >= resumedShare || io1-io0 >= 2*ioBusy {
		g.revived++
		g.note("the guest took up its work again after the keystrokes (%.0f %% of a CPU, %d KiB of I/O in %v); the stacks above show where it had waited",
			100*share, (io1-io0)>>10, time.Since(t0).Round(time.Second))
		return false
	}
	g.stalled = fmt.Sprintf("no CPU and no I/O for %v, and still none after the stack dump", idle.Round(time.Second))
	g.note("the guest stalled: %s; QEMU is killed", g.stalled)
	return true
}
