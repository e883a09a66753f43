package vm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Accelerators Options.Accel and Result.Accel name.
const (
	AccelAuto = "auto" // KVM if /dev/kvm opens and a probe boot works, else TCG
	AccelTCG  = "tcg"
	AccelKVM  = "kvm"
)

// Options says what to boot and what to run in it.
type Options struct {
	// QEMU is the emulator; empty means qemu-system-x86_64 from PATH.
	QEMU string
	// Kernel is the guest's bzImage; empty means DefaultKernel(). Its modules must be in
	// ModulesDir.
	Kernel string
	// ModulesDir is the host's module directory for Kernel; empty means
	// /lib/modules/<release of Kernel>.
	ModulesDir string
	// Image is the host file backing the guest's SD card, /dev/mmcblk0 in the guest. QEMU's
	// sd-card wants its size to be a power of 2 (CreateImage makes one).
	Image string
	// Args are the arguments of fsbench in the guest ("run", "--target",
	// "device:/dev/mmcblk0", ...). Paths under OutDir mean the same inside.
	Args []string
	// Shell, when not empty, is run by the guest's sh -c instead of fsbench: for smoke tests and
	// for preparing flash simulators (nandsim) before fsbench. Its exit status is reported the
	// same way.
	Shell string
	// OutDir is shared with the guest (9p) at the same path, and is the working directory of
	// fsbench there: its default ./fsbench-results/<timestamp> lands in it. Created if needed.
	OutDir string
	// Timeout bounds the whole guest, boot included; then QEMU is killed. 0 means 30 minutes.
	Timeout time.Duration
	// Stall is how long the guest may do nothing (QEMU uses no CPU and does no I/O)
	// before the host asks it for its tasks' stacks and, if it still does nothing, kills it
	// (stall.go); 0 means DefaultStall, a negative value no watch.
	Stall time.Duration
	// ConsoleLog is where the guest's serial console is kept; empty means OutDir/console.log.
	ConsoleLog string
	// Accel is AccelAuto (also for ""), AccelTCG or AccelKVM (no probe: use it only where KVM
	// is known to work).
	Accel string
	// MemoryMiB is the guest's RAM; 0 means 1024. fsbench stages its dataset in RAM
	// (size/12 plus the size/8 video file) and the initramfs takes about 100 MB.
	MemoryMiB uint64
	// CPUs is the guest's processor count; 0 means 1 under TCG and min(2, host CPUs) under
	// KVM. Under TCG, 2 vCPUs on this 2-core host locked up one run in three (RCU stall on
	// CPU 0 whose timer never fired, soft lockup of fsbench on CPU 1, waiting for it): one
	// vCPU has no cross-CPU waits to starve.
	CPUs int
	// Binary is the fsbench executable copied into the guest; empty means /proc/self/exe (the
	// running fsbench: the guest runs the same build).
	Binary string
	// ExtraTools are more host programs to copy in (looked up in PATH and the sbin
	// directories), with their shared libraries.
	ExtraTools []string
	// ExtraModules are more kernel modules to include, with their dependencies.
	ExtraModules []string
	// Console, if not nil, also receives the guest's console as it comes (progress).
	Console io.Writer
	// Scratch is an empty directory for the initramfs, which Wait removes; empty: a new one
	// under the temporary directory. A caller that records what it creates (the cleanup ledger)
	// makes it itself.
	Scratch string
	// OnStart, when set, is called with QEMU's pid as soon as it runs, so that the caller can
	// record it for the cleanup of a killed run.
	OnStart func(pid int) error

	// shareModel is the -virtfs security model for OutDir (shareModel).
	shareModel string
}

// Result says how the guest ran. It is also written to OutDir/vm.json.
type Result struct {
	QEMU           string   `json:"qemu"`
	QEMUVersion    string   `json:"qemu_version,omitempty"`
	Kernel         string   `json:"kernel"`
	KernelRelease  string   `json:"kernel_release"`
	Accel          string   `json:"accel"`                // "tcg" or "kvm": what was used
	AccelNote      string   `json:"accel_note,omitempty"` // why (the KVM probe's outcome)
	CPUs           int      `json:"cpus"`
	InitramfsBytes uint64   `json:"initramfs_bytes"`
	MissingTools   []string `json:"missing_tools,omitempty"` // host programs not found, left out
	Command        []string `json:"command"`                 // what ran in the guest
	PID            int      `json:"qemu_pid"`
	// BootSeconds is from starting QEMU to the guest's start of the command (card and share
	// ready); RunSeconds from there to the command's exit; TotalSeconds until QEMU exited.
	BootSeconds  float64 `json:"boot_seconds"`
	RunSeconds   float64 `json:"run_seconds"`
	TotalSeconds float64 `json:"total_seconds"`
	// ExitStatus is the command's exit status in the guest, -1 when the guest did not report
	// one (killed, crashed, timed out).
	ExitStatus int    `json:"exit_status"`
	TimedOut   bool   `json:"timed_out,omitempty"`
	ConsoleLog string `json:"console_log"`
	// Stalled says why the guest was killed for doing nothing (stall.go); its tasks' stacks
	// are in the console log. Revived counts the times it did nothing for Options.Stall and
	// took up its work again on the keystrokes that asked for its stacks.
	Stalled string `json:"stalled,omitempty"`
	Revived int    `json:"revived,omitempty"`
	// ShareModel is how the results directory was shared: QEMU's mapped-xattr or mapped-file
	// security model, under which root in the guest makes neither device nodes nor set-uid
	// files on the host (share.go).
	ShareModel string `json:"share_model"`
}

// ExitError is returned when the command in the guest ran and exited with a non-zero status.
type ExitError struct {
	Status     int
	ConsoleLog string
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("fsbench in the guest exited with status %d (its output is in %s)", e.Status, e.ConsoleLog)
}

// Guest is a running QEMU guest. Stop kills it; Wait waits for it and cleans up.
type Guest struct {
	cmd      *exec.Cmd
	opts     Options
	res      Result
	scratch  string
	console  *os.File
	start    time.Time
	stopOnce sync.Once
	stopped  chan struct{} // closed by Stop
	done     chan struct{} // closed when QEMU has exited
	timedOut bool
	// interrupted: the caller's context ended (Ctrl-C) and QEMU was killed for it.
	interrupted bool
	mu          sync.Mutex
	started     time.Time // guest's start marker
	exited      time.Time // guest's exit marker
	status      int
	stderr      bytes.Buffer
	readDone    chan struct{}
	consoleN    int64         // console bytes read
	stalled     string        // why the stall watch had QEMU killed
	revived     int           // stalls the guest came out of
	stallKill   chan struct{} // closed by the stall watch to have QEMU killed
	waitErr     error
}

// Run boots the guest, runs opts.Args (or opts.Shell) in it and waits for it to power off. QEMU
// is killed when ctx ends, at opts.Timeout, and if Run panics; no QEMU process outlives Run.
// It returns an *ExitError when the command failed inside, and an error saying what to look at
// when the guest did not get that far.
func Run(ctx context.Context, opts Options) (Result, error) {
	g, err := Start(ctx, opts)
	if err != nil {
		return Result{}, err
	}
	defer g.Stop() // on panic too
	return g.Wait()
}

// Start prepares the initramfs, chooses the accelerator and starts QEMU. The caller must call
// Wait (and should defer Stop, which kills QEMU if anything goes wrong before Wait returns).
func Start(ctx context.Context, opts Options) (*Guest, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	rel, err := KernelRelease(opts.Kernel)
	if err != nil {
		return nil, err
	}
	if opts.ModulesDir == "" {
		opts.ModulesDir = filepath.Join("/lib/modules", rel)
	}
	g := &Guest{opts: opts, stopped: make(chan struct{}), done: make(chan struct{}), readDone: make(chan struct{}),
		stallKill: make(chan struct{}), status: -1}
	g.res = Result{QEMU: opts.QEMU, Kernel: opts.Kernel, KernelRelease: rel, ConsoleLog: opts.ConsoleLog, ExitStatus: -1,
		ShareModel: opts.shareModel}
	if v, err := exec.Command(opts.QEMU, "--version").Output(); err == nil {
		g.res.QEMUVersion, _, _ = strings.Cut(string(v), "\n")
	}
	command := append([]string{guestFsbench}, opts.Args...)
	if opts.Shell != "" {
		command = []string{"/bin/sh", "-c", opts.Shell}
	}
	g.res.Command = command

	if g.scratch = opts.Scratch; g.scratch == "" {
		g.scratch, err = os.MkdirTemp("", "fsbench-vm-")
		if err != nil {
			return nil, fmt.Errorf("make a scratch directory for the initramfs: %w", err)
		}
	}
	ok := false
	defer func() {
		if !ok {
			g.kill()
			os.RemoveAll(g.scratch)
			if g.console != nil {
				g.console.Close()
			}
		}
	}()
	initrd, err := g.buildInitramfs(opts, rel, command)
	if err != nil {
		return nil, err
	}
	g.res.Accel, g.res.AccelNote = chooseAccel(ctx, opts.QEMU, opts.Kernel, opts.Accel)
	if opts.CPUs <= 0 {
		opts.CPUs = 1
		if g.res.Accel == AccelKVM {
			opts.CPUs = min(2, runtime.NumCPU())
		}
	}
	g.res.CPUs = opts.CPUs

	if err := g.launch(ctx, opts, initrd); err != nil {
		return nil, err // the deferred kill stops QEMU
	}
	ok = true
	return g, nil
}

// buildInitramfs builds the guest's initramfs in g.scratch for kernel release rel, its /init
// running command, and returns its path.
func (g *Guest) buildInitramfs(opts Options, rel string, command []string) (string, error) {
	busybox, err := lookSbin("busybox")
	if err != nil {
		return "", fmt.Errorf("busybox not found: install the Debian package busybox-static (scripts/setup-vm-debian.sh does): %w", err)
	}
	spec := initramfsSpec{
		release: rel, modulesDir: opts.ModulesDir, binary: opts.Binary, busybox: busybox,
		tools:   uniq(append(defaultTools(), opts.ExtraTools...)),
		modules: uniq(append(defaultModules(), opts.ExtraModules...)),
	}
	built, err := buildInitramfs(g.scratch, spec, func(libDirs []string, modprobe string) string {
		return initScript(opts.OutDir, libDirs, modprobe, command)
	})
	if err != nil {
		return "", fmt.Errorf("build the guest's initramfs: %w", err)
	}
	g.res.InitramfsBytes = built.size
	g.res.MissingTools = built.missingTools
	return built.path, nil
}

// launch starts QEMU on initrd with its console logged, and the goroutines that read the
// console, reap QEMU and watch ctx.
func (g *Guest) launch(ctx context.Context, opts Options, initrd string) error {
	var err error
	g.console, err = os.OpenFile(opts.ConsoleLog, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create the console log: %w", err)
	}
	args := qemuArgs(opts, g.res.Accel, initrd, monitorPath(g.scratch))
	fmt.Fprintf(g.console, "# %s %s\n", opts.QEMU, strings.Join(args, " "))
	g.cmd = exec.Command(opts.QEMU, args...)
	// Pdeathsig: if this process dies without running its defers (SIGKILL, a crash in a
	// goroutine), the kernel kills QEMU. Setpgid keeps a terminal's Ctrl-C from reaching QEMU
	// before fsbench has decided what to do.
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	g.cmd.Stderr = &lockedWriter{mu: &g.mu, w: &g.stderr}
	stdout, err := g.cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("qemu: %w", err)
	}
	g.start = time.Now()
	if err := g.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w (install qemu-system-x86)", opts.QEMU, err)
	}
	g.res.PID = g.cmd.Process.Pid
	if opts.OnStart != nil {
		if err := opts.OnStart(g.res.PID); err != nil {
			return err
		}
	}
	go g.readConsole(stdout)
	go func() {
		// The reader must drain the pipe before Wait closes it.
		<-g.readDone
		g.waitErr = g.cmd.Wait()
		close(g.done)
	}()
	go g.watch(ctx)
	if opts.Stall > 0 {
		go g.watchStall()
	}
	return nil
}

// fill applies the defaults and checks what cannot be defaulted.
func (o *Options) fill() error {
	if o.Image == "" {
		return errors.New("vm: no image for the guest's SD card (Options.Image; CreateImage makes one)")
	}
	fi, err := os.Stat(o.Image)
	if err != nil {
		return fmt.Errorf("the guest's SD card image: %w", err)
	}
	if err := CheckCardSize(uint64(fi.Size())); err != nil {
		return fmt.Errorf("%s: %w", o.Image, err)
	}
	if o.OutDir == "" {
		return errors.New("vm: no results directory (Options.OutDir)")
	}
	if o.OutDir, err = filepath.Abs(o.OutDir); err != nil {
		return fmt.Errorf("results directory: %w", err)
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return fmt.Errorf("results directory: %w", err)
	}
	if strings.ContainsAny(o.OutDir, ",\n") {
		// QEMU's -virtfs takes comma-separated options: a comma in the path would split it.
		return fmt.Errorf("results directory %q: QEMU cannot share a path with a comma or newline", o.OutDir)
	}
	o.shareModel = shareModel(o.OutDir)
	if o.QEMU == "" {
		o.QEMU = "qemu-system-x86_64"
	}
	if !strings.Contains(o.QEMU, "/") {
		p, err := exec.LookPath(o.QEMU)
		if err != nil {
			return fmt.Errorf("%s not found: install the Debian package qemu-system-x86 (scripts/setup-vm-debian.sh does)", o.QEMU)
		}
		o.QEMU = p
	}
	if o.Kernel == "" {
		if o.Kernel, err = DefaultKernel(); err != nil {
			return err
		}
	}
	if o.Binary == "" {
		o.Binary = "/proc/self/exe"
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Minute
	}
	if o.Stall == 0 {
		o.Stall = DefaultStall
	}
	if o.ConsoleLog == "" {
		o.ConsoleLog = filepath.Join(o.OutDir, "console.log")
	}
	if o.MemoryMiB == 0 {
		o.MemoryMiB = 1024
	}
	switch o.Accel {
	case "":
		o.Accel = AccelAuto
	case AccelAuto, AccelTCG, AccelKVM:
	default:
		return fmt.Errorf("vm: accelerator %q: want auto, tcg or kvm", o.Accel)
	}
	for _, a := range append(append([]string(nil), o.Args...), o.Shell) {
		if strings.ContainsAny(a, "\x00") {
			return fmt.Errorf("vm: argument %q holds a NUL byte", a)
		}
	}
	return nil
}

// CheckCardSize enforces what QEMU's sd-card device demands: it refuses ("Invalid SD card
// size") an image whose size is not a power of 2, since a real card's CSD register can only
// describe such capacities.
func CheckCardSize(size uint64) error {
	if size == 0 || size&(size-1) != 0 {
		return fmt.Errorf("SD card image of %d bytes: QEMU's sd-card needs a power of 2 (e.g. 128 MiB, 256 MiB, 1 GiB; make one with truncate -s 256M)", size)
	}
	return nil
}

// CreateImage makes a sparse image file of size bytes (a power of 2) for the guest's card.
func CreateImage(path string, size uint64) error {
	if err := CheckCardSize(size); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create the SD card image: %w", err)
	}
	if err := f.Truncate(int64(size)); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("size the SD card image: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("create the SD card image: %w", err)
	}
	return nil
}

// kernelCmdline: the serial console (QEMU's stdout), no reboot on panic but exit (panic=-1 with
// -no-reboot), init from the initramfs, kernel messages only from warnings up.
const kernelCmdline = "console=ttyS0 panic=-1 rdinit=/init loglevel=4"

// qemuArgs: monitor is the unix socket of QEMU's human monitor, by which the stall watch sends
// the keys that ask a stalled guest for its stacks.
func qemuArgs(o Options, accel, initrd, monitor string) []string {
	args := []string{
		"-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
		"-serial", "stdio",
		"-m", strconv.FormatUint(o.MemoryMiB, 10), "-smp", strconv.Itoa(o.CPUs),
		"-kernel", o.Kernel, "-initrd", initrd, "-append", kernelCmdline,
		"-device", "sdhci-pci", "-device", "sd-card,drive=sd",
		"-drive", "if=none,id=sd,format=raw,file=" + strings.ReplaceAll(o.Image, ",", ",,"),
		"-virtfs", "local,path=" + o.OutDir + ",mount_tag=" + shareTag + ",security_model=" + o.shareModel,
		"-monitor", "unix:" + strings.ReplaceAll(monitor, ",", ",,") + ",server=on,wait=off",
	}
	if accel == AccelKVM {
		return append(args, "-accel", "kvm", "-cpu", "host")
	}
	// TCG runs with one thread per guest CPU (MTTCG) by default on x86 hosts for x86 guests.
	return append(args, "-accel", "tcg")
}

// kvmVerdict caches the KVM probe per QEMU and kernel for the life of the process.
var kvmVerdict = struct {
	sync.Mutex
	m map[string][2]string
}{m: map[string][2]string{}}

// kvmProbeTimeout bounds the probe boot. A working KVM prints the kernel's first line within a
// second or two; on machines where KVM hangs (nested virtualization that opens /dev/kvm but never
// runs the guest), QEMU stays at "Booting from ROM" for ever.
var kvmProbeTimeout = 15 * time.Second

// chooseAccel decides between KVM and TCG. KVM is used only if /dev/kvm opens and a probe boot
// of the kernel (no initramfs: it panics at once, which is enough) prints "Linux version" in
// time: /dev/kvm opening proves nothing on these machines, and a guest that hangs must never
// block a run.
func chooseAccel(ctx context.Context, qemu, kernel, want string) (accel, note string) {
	switch want {
	case AccelTCG:
		return AccelTCG, "tcg requested"
	case AccelKVM:
		return AccelKVM, "kvm requested (not probed)"
	}
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return AccelTCG, fmt.Sprintf("no KVM (%v): tcg", err)
	}
	f.Close()
	key := qemu + "\x00" + kernel
	kvmVerdict.Lock()
	defer kvmVerdict.Unlock()
	if v, ok := kvmVerdict.m[key]; ok {
		return v[0], v[1] + " (cached)"
	}
	accel, note = probeKVM(ctx, qemu, kernel)
	kvmVerdict.m[key] = [2]string{accel, note}
	return accel, note
}

func probeKVM(ctx context.Context, qemu, kernel string) (string, string) {
	ctx, cancel := context.WithTimeout(ctx, kvmProbeTimeout)
	defer cancel()
	cmd := exec.Command(qemu, "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
		"-serial", "stdio", "-m", "256", "-accel", "kvm", "-cpu", "host",
		"-kernel", kernel, "-append", "console=ttyS0 panic=-1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return AccelTCG, fmt.Sprintf("kvm probe: %v: tcg", err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &lockedWriter{mu: new(sync.Mutex), w: &stderr}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return AccelTCG, fmt.Sprintf("kvm probe: %v: tcg", err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	seen := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Linux version") {
				seen <- true
				return
			}
		}
		seen <- false
	}()
	select {
	case ok := <-seen:
		if ok {
			return AccelKVM, fmt.Sprintf("kvm probe booted the kernel in %.1f s", time.Since(start).Seconds())
		}
		cmd.Wait()
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		return AccelTCG, fmt.Sprintf("kvm probe: QEMU exited before the kernel printed anything (%s): tcg", msg)
	case <-ctx.Done():
		return AccelTCG, fmt.Sprintf("kvm probe: /dev/kvm opens but the kernel printed nothing within %v (KVM hangs on this machine): tcg", kvmProbeTimeout)
	}
}

// readConsole copies the serial console to the log (and opts.Console), noting the markers.
func (g *Guest) readConsole(r io.Reader) {
	defer close(g.readDone)
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			g.console.WriteString(line)
			if g.opts.Console != nil {
				g.opts.Console.Write([]byte(line))
			}
			t := strings.TrimRight(line, "\r\n")
			g.mu.Lock()
			g.consoleN += int64(len(line))
			switch {
			case strings.HasSuffix(t, markerStart) && g.started.IsZero():
				g.started = time.Now()
			case strings.Contains(t, markerExit):
				_, s, _ := strings.Cut(t, markerExit)
				if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
					g.status = n
					g.exited = time.Now()
				}
			}
			g.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// watch kills QEMU when ctx ends, at the timeout or on Stop.
func (g *Guest) watch(ctx context.Context) {
	t := time.NewTimer(g.opts.Timeout)
	defer t.Stop()
	select {
	case <-g.done:
		return
	case <-ctx.Done():
		g.mu.Lock()
		g.interrupted = true
		g.mu.Unlock()
	case <-g.stopped:
	case <-t.C:
		g.mu.Lock()
		g.timedOut = true
		g.mu.Unlock()
	case <-g.stallKill:
	}
	g.kill()
}

// kill kills QEMU by its pid (never by name: other guests may be running).
func (g *Guest) kill() {
	if g.cmd != nil && g.cmd.Process != nil {
		g.cmd.Process.Kill()
	}
}

// Stop kills the guest if it still runs and waits until QEMU has exited. Safe to call more
// than once and after Wait.
func (g *Guest) Stop() {
	g.stopOnce.Do(func() { close(g.stopped) })
	if g.cmd != nil && g.cmd.Process != nil {
		<-g.done
	}
}

// PID is QEMU's process id.
func (g *Guest) PID() int { return g.res.PID }

// Wait waits for QEMU to exit, removes the initramfs, writes OutDir/vm.json and returns the
// result. The error says what went wrong: an *ExitError when the command failed in the guest.
func (g *Guest) Wait() (Result, error) {
	<-g.done
	end := time.Now()
	g.console.Close()
	os.RemoveAll(g.scratch)
	g.mu.Lock()
	res := g.res
	res.TotalSeconds = end.Sub(g.start).Seconds()
	if !g.started.IsZero() {
		res.BootSeconds = g.started.Sub(g.start).Seconds()
		if !g.exited.IsZero() {
			res.RunSeconds = g.exited.Sub(g.started).Seconds()
		}
	}
	res.ExitStatus = g.status
	res.TimedOut = g.timedOut
	res.Stalled, res.Revived = g.stalled, g.revived
	interrupted := g.interrupted
	stderr := strings.TrimSpace(g.stderr.String())
	g.mu.Unlock()

	var err error
	switch {
	case res.Stalled != "" && res.ExitStatus < 0:
		err = fmt.Errorf("the guest stalled (%s) and was killed (QEMU pid %d); the kernel stacks of its tasks are in %s: %w", res.Stalled, res.PID, res.ConsoleLog, ErrStalled)
	case res.TimedOut:
		err = fmt.Errorf("the guest did not finish within %v and was killed (QEMU pid %d); see %s", g.opts.Timeout, res.PID, res.ConsoleLog)
	case res.ExitStatus < 0 && interrupted:
		// Wrapping context.Canceled lets the caller tell an interruption (exit 130) from a
		// failure of the guest (exit 1).
		err = fmt.Errorf("interrupted: the guest (QEMU pid %d) was stopped before fsbench in it finished; what it completed is kept; see %s: %w", res.PID, res.ConsoleLog, context.Canceled)
	case res.ExitStatus < 0:
		select {
		case <-g.stopped:
			err = fmt.Errorf("the guest was stopped before fsbench finished (QEMU pid %d); see %s", res.PID, res.ConsoleLog)
		default:
			err = fmt.Errorf("the guest ended without reporting fsbench's exit status (QEMU: %v%s); the end of %s says why:\n%s",
				g.waitErr, prefixed(" ", stderr), res.ConsoleLog, tail(res.ConsoleLog, 20))
		}
	case res.ExitStatus != 0:
		err = &ExitError{Status: res.ExitStatus, ConsoleLog: res.ConsoleLog}
	}
	if nerr := normalizeShare(g.opts.OutDir); nerr != nil && err == nil {
		err = fmt.Errorf("making the guest's files in %s plain files of the host's: %w", g.opts.OutDir, nerr)
	}
	if b, jerr := json.MarshalIndent(res, "", "  "); jerr == nil {
		if werr := os.WriteFile(filepath.Join(g.opts.OutDir, "vm.json"), append(b, '\n'), 0o644); werr != nil && err == nil {
			err = fmt.Errorf("write vm.json: %w", werr)
		}
	}
	return res, err
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// tail returns the last n lines of a file, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
