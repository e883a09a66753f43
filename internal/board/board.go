package board

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/procid"
)

// DefaultCacheDir holds, per architecture, the downloaded packages, the unpacked tree, the
// built kernel and initramfs, the SSH key and the default SD card image.
const DefaultCacheDir = "/var/cache/fsbench/board"

// DefaultStateDir holds one JSON file per running board: /run is a tmpfs, so the records go
// with the boards at a reboot.
const DefaultStateDir = "/run/fsbench/board"

// DefaultCardSize is the SD card image's size: a power of two, as QEMU's sd-card requires. 512 MiB
// holds every default variant (mkfs.xfs wants 300 MB) while keeping mkfs quick: QEMU turns a
// discard into writes, so mkfs.ext4's discard of the whole card costs about 13 s per 256 MiB.
const DefaultCardSize = 512 << 20

// Options say which board to boot and how.
type Options struct {
	Arch Arch
	// Name tells boards apart in one state directory (default: the architecture's name): a
	// farm of emulated boards runs several of one architecture at once, each its own record,
	// QEMU process, card and port.
	Name string
	// CacheDir is the architecture's cache (default DefaultCacheDir/<arch>).
	CacheDir string
	// StateDir is where the running board is recorded (default DefaultStateDir). Tests use a
	// directory of their own so that `fsbench cleanup` elsewhere leaves their board alone.
	StateDir string
	// Card is the SD card image; empty: <cache>/card-<port>.img, made at each boot and
	// removed by Down. An image given here is used as it is (made with CardSize if missing).
	Card string
	// CardSize is the size of a card image Up makes (default DefaultCardSize).
	CardSize uint64
	// CardBus is how the board sees its card: "" or CardSD, QEMU's SD card (/dev/mmcblk0,
	// which has no cache: Linux sends it no flush), or CardVirtio, a virtio disk with a
	// volatile write cache (/dev/vda: the guest's flushes reach the card file as fsync, as an
	// eMMC's cache flushes do; QEMU 7.2 has no eMMC device). NoCardLock: QEMU does not lock
	// the card file (a card served over FUSE by the simulated card).
	CardBus    string
	NoCardLock bool
	// Partitions, when 1 to 4, gives a card image Up makes an MBR with that many equal Linux
	// partitions: the board's kernel scans it and shows /dev/mmcblk0p1..n, as a real board's
	// card split with fdisk.
	Partitions int
	// Port is the host's loopback port forwarded to the board's SSH (0: a free one).
	Port int
	// Mem (MiB) and SMP are the board's memory and CPUs (default: the Arch's, and 2).
	Mem, SMP int
	// BootTimeout bounds the wait for SSH (default 5 min: a busy host's TCG boot took 45 s).
	BootTimeout time.Duration
	// Rebuild downloads the package lists again and rebuilds the initramfs.
	Rebuild bool
	// Log receives progress lines; may be nil.
	Log func(string, ...any)
}

func (o *Options) fill() {
	if o.Name == "" {
		o.Name = o.Arch.Name
	}
	if o.CacheDir == "" {
		o.CacheDir = filepath.Join(DefaultCacheDir, o.Arch.Name)
	}
	if o.StateDir == "" {
		o.StateDir = DefaultStateDir
	}
	if o.CardSize == 0 {
		o.CardSize = DefaultCardSize
	}
	if o.Mem == 0 {
		o.Mem = o.Arch.Mem
	}
	if o.SMP == 0 {
		o.SMP = 2
	}
	if o.BootTimeout == 0 {
		o.BootTimeout = 5 * time.Minute
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
}

// State is a running board, as recorded in the state directory.
type State struct {
	Arch string `json:"arch"`
	// Name is the board's name in its state directory (Options.Name).
	Name string `json:"name,omitempty"`
	// PID and StartTime (field 22 of /proc/<pid>/stat) identify the QEMU process: a pid alone
	// may have been reused by another process since.
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time"`
	// Port is the loopback port of the board's SSH.
	Port int `json:"port"`
	// Key is the private key root's authorized_keys on the board accepts.
	Key string `json:"key"`
	// Card is the SD card image (the board's /dev/mmcblk0); CardMade says Up made it, and
	// Down removes it.
	Card      string `json:"card"`
	CardBytes uint64 `json:"card_bytes"`
	CardMade  bool   `json:"card_made,omitempty"`
	// Console is the file receiving the board's serial console.
	Console       string    `json:"console"`
	KernelRelease string    `json:"kernel_release"`
	Started       time.Time `json:"started"`
	// BootSeconds is the time from starting QEMU to SSH answering.
	BootSeconds float64 `json:"boot_seconds"`
	// Missing are the Debian packages the board goes without.
	Missing []string `json:"missing,omitempty"`

	file string
}

// Device is the board's SD card.
const Device = "/dev/mmcblk0"

// The buses a board's card can be on (Options.CardBus), and the device each gives it.
const (
	CardSD     = "sd"
	CardVirtio = "virtio"
	// VirtioDevice is the card on CardVirtio.
	VirtioDevice = "/dev/vda"
)

// Target is the --target that runs fsbench on the board's SD card.
func (s State) Target() string {
	return fmt.Sprintf("ssh://root@127.0.0.1:%d%s", s.Port, Device)
}

// SSHOptions are the ssh client options (ssh -o) that reach the board: its key, and no
// known_hosts entry, since the board makes new host keys at each boot on a loopback port.
func (s State) SSHOptions() []string {
	return []string{"IdentityFile=" + s.Key, "IdentitiesOnly=yes", "StrictHostKeyChecking=no",
		"UserKnownHostsFile=/dev/null", "LogLevel=ERROR", "ConnectTimeout=30", "BatchMode=yes"}
}

// SSHArgs are the ssh client's arguments before the command: options, port and destination.
func (s State) SSHArgs() []string {
	var a []string
	for _, o := range s.SSHOptions() {
		a = append(a, "-o", o)
	}
	return append(a, "-p", strconv.Itoa(s.Port), "root@127.0.0.1")
}

// RunCommand is the fsbench command line that runs on the board.
func (s State) RunCommand() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fsbench run --target %s --destroy %s", s.Target(), Device)
	for _, o := range s.SSHOptions() {
		fmt.Fprintf(&b, " --ssh-option %s", o)
	}
	return b.String()
}

// Alive reports whether the recorded QEMU process still runs (the same process: pid and
// start time).
func (s State) Alive() bool {
	running, _ := procid.ID{PID: s.PID, StartTime: s.StartTime}.Running()
	return running
}

// File is the state file that records the board (what Down takes).
func (s State) File() string { return s.file }

func stateFile(dir, name string) string { return filepath.Join(dir, name+".json") }

// Up builds (or reuses) the board's image, makes its SD card, boots it under QEMU in the
// background and waits until its SSH answers. A board of the same architecture already
// running in the state directory under the same name is returned as it is.
func Up(ctx context.Context, o Options) (*State, error) {
	o.fill()
	if s, err := load(stateFile(o.StateDir, o.Name)); err == nil && s.Alive() {
		o.Log("the %s board %s already runs (QEMU pid %d)", o.Arch.Name, o.Name, s.PID)
		return s, nil
	}
	qemu, err := exec.LookPath(o.Arch.QEMU)
	if err != nil {
		return nil, fmt.Errorf("%s not found: install the Debian package qemu-system-arm (scripts/setup-board-debian.sh): %w", o.Arch.QEMU, err)
	}
	if o.CardSize&(o.CardSize-1) != 0 {
		return nil, fmt.Errorf("card size %d: QEMU's SD card must be a power of two (256M, 512M, 1G, ...)", o.CardSize)
	}
	if err := os.MkdirAll(o.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("board: %w", err)
	}
	img, key, err := build(ctx, o)
	if err != nil {
		return nil, err
	}
	port := o.Port
	if port == 0 {
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	s := &State{Arch: o.Arch.Name, Name: o.Name, Port: port, Key: key, Card: o.Card, KernelRelease: img.KernelRelease,
		Console: filepath.Join(o.CacheDir, fmt.Sprintf("console-%d.log", port)), Missing: img.Missing,
		file: stateFile(o.StateDir, o.Name)}
	if s.Card == "" {
		s.Card, s.CardMade = filepath.Join(o.CacheDir, fmt.Sprintf("card-%d.img", port)), true
		os.Remove(s.Card) // a card left by a board that was not taken down: start blank
	}
	_, cardErr := os.Stat(s.Card)
	if s.CardBytes, err = ensureCard(s.Card, o.CardSize); err != nil {
		return nil, err
	}
	if o.Partitions > 0 && cardErr != nil { // a card made here, not one given
		if _, _, err := blockdev.WriteMBR(s.Card, o.Partitions); err != nil {
			return nil, err
		}
	}
	pidfile := filepath.Join(o.CacheDir, fmt.Sprintf("qemu-%d.pid", port))
	os.Remove(pidfile)
	os.Remove(s.Console)
	args := qemuArgs(o, img, s, pidfile)
	o.Log("booting the %s board: %s %s", o.Arch.Name, qemu, strings.Join(args, " "))
	start := time.Now()
	// -daemonize: QEMU detaches once it runs, so the board outlives this command; its pid
	// comes from -pidfile, and errors before that from its own output.
	if out, err := exec.CommandContext(ctx, qemu, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("starting %s: %w: %s", o.Arch.QEMU, err, strings.TrimSpace(string(out)))
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		return nil, fmt.Errorf("QEMU started but wrote no pid file: %w", err)
	}
	os.Remove(pidfile)
	if s.PID, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
		return nil, fmt.Errorf("QEMU's pid file: %w", err)
	}
	// A QEMU that exited and was not reaped yet is a zombie: it ended all the same.
	st, err := procid.Read(s.PID)
	if err != nil || st.Exited() {
		return nil, fmt.Errorf("QEMU (pid %d) ended at once; console: %s", s.PID, tail(s.Console, 20))
	}
	s.StartTime = st.StartTime
	s.Started = start
	// Recorded before the wait, so that Down and cleanup end a board that never answers.
	if err := s.save(); err != nil {
		s.stop()
		return nil, err
	}
	if err := waitSSH(ctx, s, o.BootTimeout); err != nil {
		o.Log("the board did not answer: stopping it")
		Down(s.file)
		return nil, err
	}
	s.BootSeconds = time.Since(start).Seconds()
	o.Log("the %s board answers on 127.0.0.1:%d after %.1f s", o.Arch.Name, port, s.BootSeconds)
	return s, s.save()
}

// Build builds (or reuses) the board's kernel and initramfs in its cache, as Up does before it
// boots them: for those who boot the board their own way (LAVA's dispatcher, from its own
// device dictionary).
func Build(ctx context.Context, o Options) (Image, error) {
	o.fill()
	img, _, err := build(ctx, o)
	return img, err
}

// build makes the cache's SSH key and image under the cache's lock, and returns the image and
// the private key.
func build(ctx context.Context, o Options) (Image, string, error) {
	if err := os.MkdirAll(o.CacheDir, 0o755); err != nil {
		return Image{}, "", fmt.Errorf("board: %w", err)
	}
	unlock, err := lockDir(o.CacheDir)
	if err != nil {
		return Image{}, "", err
	}
	defer unlock()
	key, pub, err := ensureKey(ctx, o.CacheDir)
	if err != nil {
		return Image{}, "", err
	}
	img, err := BuildImage(ctx, o.Arch, o.CacheDir, pub, o.Rebuild, o.Log)
	if err != nil {
		return img, "", fmt.Errorf("building the %s board: %w", o.Arch.Name, err)
	}
	return img, key, nil
}

// qemuArgs is QEMU's command line for a board.
func qemuArgs(o Options, img Image, s *State, pidfile string) []string {
	// QEMU splits -drive at commas: a comma in the card's path is written twice.
	drive := "if=none,id=sd,format=raw,file=" + strings.ReplaceAll(s.Card, ",", ",,")
	if o.NoCardLock {
		drive += ",file.locking=off"
	}
	// The SD card: an SDHCI controller on PCI and a card on its bus, /dev/mmcblk0; or a
	// virtio disk, /dev/vda.
	card := []string{"-device", "sdhci-pci", "-device", "sd-card,drive=sd"}
	if o.CardBus == CardVirtio {
		card = []string{"-device", "virtio-blk-pci,drive=sd"}
	}
	args := []string{
		"-M", o.Arch.Machine, "-cpu", o.Arch.CPU, "-smp", strconv.Itoa(o.SMP), "-m", strconv.Itoa(o.Mem),
		"-kernel", img.Kernel, "-initrd", img.Initramfs,
		// panic=-1 with -no-reboot: a kernel panic ends QEMU instead of hanging the board.
		"-append", "console=" + o.Arch.Console + " panic=-1 rdinit=/init",
		"-no-reboot", "-display", "none", "-monitor", "none", "-serial", "file:" + s.Console,
		"-drive", drive}
	args = append(args, card...)
	return append(args,
		// User networking, isolated (restrict=on: the board reaches nothing), with the board's
		// SSH forwarded to a port of the host's loopback address only.
		"-netdev", fmt.Sprintf("user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:%d-:22", s.Port),
		"-device", "virtio-net-pci,netdev=net0",
		"-daemonize", "-pidfile", pidfile,
	)
}

// waitSSH polls the board's SSH until a command runs there.
func waitSSH(ctx context.Context, s *State, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if !s.Alive() {
			return fmt.Errorf("QEMU ended while the board booted; console:\n%s", tail(s.Console, 30))
		}
		if b, _ := os.ReadFile(s.Console); strings.Contains(string(b), sshdFailed) {
			return fmt.Errorf("the board's SSH server did not start; console:\n%s", tail(s.Console, 30))
		}
		c, cancel := context.WithTimeout(ctx, 60*time.Second)
		out, err := exec.CommandContext(c, "ssh", append(s.SSHArgs(), "true")...).CombinedOutput()
		cancel()
		if err == nil {
			return nil
		}
		last = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	return fmt.Errorf("the board's SSH did not answer within %s (last: %v); console:\n%s", timeout, last, tail(s.Console, 30))
}

// Down ends the board recorded in file (a state file) and removes its record, its console
// file and the card Up made. It ends exactly the recorded QEMU process: a pid whose start time differs belongs to
// someone else now and is left alone.
func Down(file string) (*State, error) {
	s, err := load(file)
	if err != nil {
		return nil, err
	}
	if s.Alive() {
		s.stop()
	}
	if s.CardMade {
		os.Remove(s.Card)
	}
	// Each boot has its own console file (named after its port): it goes with the board.
	if s.Console != "" {
		os.Remove(s.Console)
	}
	if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return s, err
	}
	return s, nil
}

// DownArch ends the board named name (by default its architecture's name) recorded in stateDir.
func DownArch(stateDir, name string) (*State, error) { return Down(stateFile(stateDir, name)) }

// DownAll ends every board recorded in stateDir (fsbench cleanup).
func DownAll(stateDir string) ([]*State, error) {
	files, _ := filepath.Glob(filepath.Join(stateDir, "*.json"))
	var out []*State
	var errs []error
	for _, f := range files {
		s, err := Down(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// Status lists the boards recorded in stateDir.
func Status(stateDir string) ([]*State, error) {
	files, _ := filepath.Glob(filepath.Join(stateDir, "*.json"))
	var out []*State
	for _, f := range files {
		s, err := load(f)
		if err != nil {
			return out, err
		}
		out = append(out, s)
	}
	return out, nil
}

// stop ends QEMU: SIGTERM (it exits at once, the board has nothing to save), SIGKILL after 10 s.
func (s *State) stop() {
	if !s.Alive() {
		return
	}
	syscall.Kill(s.PID, syscall.SIGTERM)
	for i := 0; i < 100; i++ {
		if !s.Alive() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	if s.Alive() {
		syscall.Kill(s.PID, syscall.SIGKILL)
	}
	for i := 0; i < 50 && s.Alive(); i++ {
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *State) save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.file + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("recording the board: %w", err)
	}
	return os.Rename(tmp, s.file)
}

func load(file string) (*State, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no board recorded in %s: %w", file, err)
		}
		return nil, err
	}
	s := &State{file: file}
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return s, nil
}

// freePort asks the kernel for a free port on the loopback address.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ensureKey makes the board's SSH key pair once (OpenSSH's ssh-keygen, ed25519, which
// dropbear accepts) and returns the private key's path and the public key.
func ensureKey(ctx context.Context, dir string) (string, []byte, error) {
	key := filepath.Join(dir, "id_ed25519")
	if _, err := os.Stat(key); err != nil {
		out, err := exec.CommandContext(ctx, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "fsbench-board", "-f", key).CombinedOutput()
		if err != nil {
			return "", nil, fmt.Errorf("ssh-keygen (Debian package openssh-client): %w: %s", err, strings.TrimSpace(string(out)))
		}
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		return "", nil, fmt.Errorf("the board's public key: %w", err)
	}
	return key, pub, nil
}

// ensureCard makes a sparse card image of size bytes unless one exists, and returns its size.
func ensureCard(path string, size uint64) (uint64, error) {
	if fi, err := os.Stat(path); err == nil {
		n := uint64(fi.Size())
		if n == 0 || n&(n-1) != 0 {
			return 0, fmt.Errorf("%s is %d bytes: QEMU's SD card must be a power of two", path, n)
		}
		return n, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, fmt.Errorf("the SD card image: %w", err)
	}
	err = f.Truncate(int64(size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return 0, fmt.Errorf("the SD card image: %w", err)
	}
	return size, nil
}

// lockDir takes an exclusive lock on dir/.lock: two boots building one cache wait for each
// other instead of unpacking into the same tree.
func lockDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("board cache lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("board cache lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// tail is the last n lines of a file, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no console output: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
