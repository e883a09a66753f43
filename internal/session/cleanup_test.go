package session

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/mountinfo"
	"github.com/fsbench/fsbench/internal/procid"
)

// helperEnv selects what TestHelperProcess does when the test binary is re-executed.
const helperEnv = "FSBENCH_TARGET_HELPER"

// helperDirEnv names the directory the "mount" helper works in.
const helperDirEnv = "FSBENCH_TARGET_HELPER_DIR"

// TestHelperProcess is not a test: it is the child process of the tests below (the standard
// re-exec pattern). It does nothing unless helperEnv is set.
func TestHelperProcess(t *testing.T) {
	switch os.Getenv(helperEnv) {
	case "":
		return
	case "sleep":
		time.Sleep(time.Minute)
		os.Exit(0)
	case "mount":
		if err := helperMount(os.Getenv(helperDirEnv)); err != nil {
			fmt.Printf("ERROR %v\n", err)
			os.Exit(1)
		}
		// Wait to be killed. Bounded, so that a parent that died cannot leave us forever.
		time.Sleep(time.Minute)
		os.Exit(2)
	case "cgroup-unmounted":
		// In a mount namespace of its own (unshare -m), where no cgroup2 is mounted.
		ms, _ := mountinfo.Read("")
		for _, m := range ms {
			if m.FSType == "cgroup2" {
				if err := unix.Unmount(m.MountPoint, 0); err != nil {
					fmt.Printf("ERROR umount %s: %v\n", m.MountPoint, err)
					os.Exit(1)
				}
			}
		}
		s, dir := helperJoinCgroup()
		b, _ := os.ReadFile("/proc/self/cgroup")
		fmt.Printf("JOINED %s %q\n", dir, b)
		if err := s.Close(); err != nil {
			fmt.Printf("ERROR close: %v\n", err)
			os.Exit(1)
		}
		ms, _ = mountinfo.Read("")
		for _, m := range ms {
			if m.FSType == "cgroup2" {
				fmt.Printf("ERROR still mounted: %s\n", m.MountPoint)
				os.Exit(1)
			}
		}
		fmt.Println("CLOSED")
		os.Exit(0)
	case "cgroup":
		_, dir := helperJoinCgroup()
		fmt.Printf("READY %s\n", dir)
		time.Sleep(time.Minute)
		os.Exit(2)
	}
}

// helperJoinCgroup opens a session in the helper directory and joins a cgroup of its own, as a
// run does; it exits on failure.
func helperJoinCgroup() (*Session, string) {
	base := os.Getenv(helperDirEnv)
	s, err := OpenSession(SessionOptions{Dir: filepath.Join(base, "res"), LedgerDir: filepath.Join(base, "ledgers")})
	if err != nil {
		fmt.Printf("ERROR %v\n", err)
		os.Exit(1)
	}
	dir, err := s.JoinCgroup()
	if err != nil {
		fmt.Printf("ERROR %v\n", err)
		os.Exit(1)
	}
	return s, dir
}

// helperMount does what a run does before it gets killed: record, create, attach, mount.
func helperMount(base string) error {
	l, err := OpenLedger(filepath.Join(base, "ledgers"))
	if err != nil {
		return err
	}
	img := filepath.Join(base, "run.img")
	mnt := filepath.Join(base, "mnt")
	if err := CreateImage(img, 32<<20); err != nil {
		return err
	}
	if err := l.AddFile(img); err != nil {
		return err
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		return fmt.Errorf("mkfs.ext4: %v: %s", err, out)
	}
	lo, err := AttachLoop(img, LoopOptions{DirectIO: true})
	if err != nil {
		return err
	}
	if err := l.AddLoop(lo.Path, lo.Backing); err != nil {
		return err
	}
	if err := os.Mkdir(mnt, 0o755); err != nil {
		return err
	}
	if err := l.AddFile(mnt); err != nil {
		return err
	}
	if err := l.AddMountpoint(mnt); err != nil {
		return err
	}
	if err := unix.Mount(lo.Path, mnt, "ext4", 0, ""); err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "data"), []byte("written by the killed run"), 0o644); err != nil {
		return err
	}
	fmt.Printf("READY %s\n", lo.Name)
	return nil
}

// TestCleanupStaleAfterKill: a child attaches and mounts, records it, and is killed with
// SIGKILL; CleanupStale must unmount, detach and delete, and leave a live run's ledger alone.
func TestCleanupStaleAfterKill(t *testing.T) {
	requireRoot(t)
	requireMkfsExt4(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ledgers := filepath.Join(base, "ledgers")
	img := filepath.Join(base, "run.img")
	mnt := filepath.Join(base, "mnt")

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"=mount", helperDirEnv+"="+base)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var loopDev string
	// Safety net, whatever happens below: no child, no mount, no loop device survives.
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		forceUnmount(t, mnt)
		if loopDev != "" {
			detachIfBoundTo(t, loopDev, img)
		}
	})

	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case line, ok := <-lines:
		if !ok || !strings.HasPrefix(line, "READY ") {
			t.Fatalf("helper did not get ready: %q", line)
		}
		loopDev = strings.TrimPrefix(line, "READY ")
	case <-time.After(time.Minute):
		t.Fatal("helper did not get ready within a minute")
	}

	// A live run's ledger in the same directory, naming a file.
	live, err := OpenLedger(ledgers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close() })
	keep := filepath.Join(base, "keep")
	if err := os.WriteFile(keep, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := live.AddFile(keep); err != nil {
		t.Fatal(err)
	}

	childLedger := filepath.Join(ledgers, strconv.Itoa(cmd.Process.Pid)+".json")
	rec := readLedgerT(t, childLedger)
	if len(rec.Loops) != 1 || rec.Loops[0].Dev != loopDev || len(rec.Mountpoints) != 1 {
		t.Fatalf("child's ledger = %+v, want its loop %s and mount point", rec, loopDev)
	}

	// Nothing of a live process is touched.
	if acts, err := CleanupStale(ledgers, t.Logf); err != nil || len(acts) != 0 {
		t.Fatalf("CleanupStale while the child lives = %q, %v; want nothing done", acts, err)
	}
	if m, _ := MountedAt(mnt); !m {
		t.Fatal("child's mount vanished before it was killed")
	}

	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	// The kill closed the child's descriptor of the loop device, but the mount holds it.
	if m, err := MountedAt(mnt); err != nil || !m {
		t.Fatalf("after the kill: MountedAt = %v, %v; want still mounted", m, err)
	}
	if !boundTo(t, loopDev, img) {
		t.Fatalf("after the kill: %s is no longer bound to %s", loopDev, img)
	}

	actions, err := CleanupStale(ledgers, t.Logf)
	if err != nil {
		t.Fatalf("CleanupStale: %v", err)
	}
	joined := strings.Join(actions, "\n")
	for _, want := range []string{"unmounted " + mnt, loopDev, "removed " + img, "removed " + mnt, "removed ledger " + childLedger} {
		if !strings.Contains(joined, want) {
			t.Errorf("actions do not mention %q:\n%s", want, joined)
		}
	}
	if m, _ := MountedAt(mnt); m {
		t.Error("still mounted after CleanupStale")
	}
	if bound, err := waitUnbound(loopDev, img, unbindTimeout); err != nil || bound {
		t.Errorf("%s still bound to %s after CleanupStale (%v)", loopDev, img, err)
	}
	for _, p := range []string{img, mnt, childLedger} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s still exists (%v)", p, err)
		}
	}
	for _, p := range []string{keep, live.Path()} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("live run's %s was touched: %v", p, err)
		}
	}
}

// attachNoAutoclear binds a loop device without autoclear and without holding it, the way
// `losetup` without --autoclear or a killed pre-5.8 attach leaves one: it stays bound until
// someone detaches it.
func attachNoAutoclear(t *testing.T, img string) string {
	t.Helper()
	ctl, err := os.OpenFile(loopControl, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	backing, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer backing.Close()
	for range attachAttempts {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			t.Fatal(err)
		}
		name := "loop" + strconv.Itoa(n)
		dev, err := os.OpenFile(filepath.Join(devRoot, name), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		cfg := unix.LoopConfig{Fd: uint32(backing.Fd())}
		err = unix.IoctlLoopConfigure(int(dev.Fd()), &cfg)
		dev.Close()
		if err == unix.EBUSY {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { detachIfBoundTo(t, name, img) })
		return name
	}
	t.Fatal("no free loop device")
	return ""
}

// imageMaker returns a function that makes a 4 MiB image of the given name in one temporary
// directory (symlinks resolved, since the kernel reports a loop's backing file by its real path).
func imageMaker(t *testing.T) func(name string) string {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return func(name string) string {
		p := filepath.Join(base, name)
		if err := CreateImage(p, 4<<20); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// TestCleanupStaleLoops: a dead run's ledger names loop devices. Only one still bound to the
// recorded file (same path, same inode) may be detached.
func TestCleanupStaleLoops(t *testing.T) {
	requireRoot(t)
	mkImg := imageMaker(t)
	ours, theirs, sameName := mkImg("ours.img"), mkImg("theirs.img"), mkImg("same-name.img")
	oursDev := attachNoAutoclear(t, ours)
	theirsDev := attachNoAutoclear(t, theirs)
	sameNameDev := attachNoAutoclear(t, sameName)
	var st unix.Stat_t
	stat := func(p string) loopRecord {
		if err := unix.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		return loopRecord{Backing: p, BackingDev: uint64(st.Dev), BackingIno: uint64(st.Ino)}
	}
	recOurs := stat(ours)
	recOurs.Dev = oursDev
	// A dead run attached theirsDev to a file that is gone; the number now serves theirs.img.
	recReused := loopRecord{Dev: theirsDev, Backing: filepath.Join(filepath.Dir(ours), "gone.img"), BackingDev: recOurs.BackingDev, BackingIno: 1}
	// Same path as recorded, but a different file (the run's image was replaced).
	recReplaced := stat(sameName)
	recReplaced.Dev = sameNameDev
	recReplaced.BackingIno++

	self, err := procid.Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(filepath.Dir(ours), "ledgers")
	// Our pid with another start time: a dead run whose pid this test process now has.
	ledger := writeLedger(t, dir, ledgerRecord{
		PID: os.Getpid(), StartTime: self.StartTime - 1,
		Loops: []loopRecord{recReused, recReplaced, recOurs, {Dev: "../sda", Backing: ours}},
	})

	actions, err := CleanupStale(dir, t.Logf)
	if err != nil {
		t.Fatalf("CleanupStale: %v", err)
	}
	joined := strings.Join(actions, "\n")
	for _, want := range []string{
		"left " + theirsDev + " alone",
		"left " + sameNameDev + " alone",
		"detached " + oursDev + " from " + ours,
		"removed ledger " + ledger,
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("actions do not mention %q:\n%s", want, joined)
		}
	}
	if bound, err := waitUnbound(oursDev, ours, unbindTimeout); err != nil || bound {
		t.Errorf("%s still bound to %s (%v)", oursDev, ours, err)
	}
	if !boundTo(t, theirsDev, theirs) {
		t.Errorf("%s (reused number, someone else's) was detached", theirsDev)
	}
	if !boundTo(t, sameNameDev, sameName) {
		t.Errorf("%s (same path, different inode) was detached", sameNameDev)
	}
}

// TestCleanupStaleSchedulers: a killed run that changed a loop device's I/O scheduler left the
// device with it for its next user (a simulated card's mq-deadline outlived a SIGKILLed run).
// Cleanup puts it back on the run's own device and on a free one, never on a number that now
// serves someone else.
func TestCleanupStaleSchedulers(t *testing.T) {
	requireRoot(t)
	mkImg := imageMaker(t)
	sched := func(dev string) string {
		s, err := CurrentScheduler("/sys", dev)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	set := func(dev, s string) {
		if _, err := SetScheduler("/sys", dev, s); err != nil {
			t.Skipf("cannot set %s on %s: %v", s, dev, err)
		}
	}
	ours, theirs := mkImg("ours.img"), mkImg("theirs.img")
	oursDev, theirsDev := attachNoAutoclear(t, ours), attachNoAutoclear(t, theirs)
	freeImg := mkImg("free.img")
	free, err := AttachLoop(freeImg, LoopOptions{})
	if err != nil {
		t.Fatal(err)
	}
	was := map[string]string{oursDev: sched(oursDev), theirsDev: sched(theirsDev), free.Name: sched(free.Name)}
	other := func(dev string) string {
		if was[dev] == "mq-deadline" {
			return "none"
		}
		return "mq-deadline"
	}
	for dev := range was {
		set(dev, other(dev))
	}
	// Leave every device as it was found, whatever the test did.
	t.Cleanup(func() {
		for dev, s := range was {
			if cur, err := readLoopAttr(dev, "backing_file"); err != nil || cur == ours || cur == theirs {
				SetScheduler("/sys", dev, s)
			}
		}
	})
	if err := free.Detach(); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(ours, &st); err != nil {
		t.Fatal(err)
	}
	self, err := procid.Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(filepath.Dir(ours), "ledgers")
	writeLedger(t, dir, ledgerRecord{
		PID: os.Getpid(), StartTime: self.StartTime - 1,
		Loops: []loopRecord{
			{Dev: oursDev, Backing: ours, BackingDev: uint64(st.Dev), BackingIno: uint64(st.Ino)},
			// theirsDev's number once served the dead run's file, now gone.
			{Dev: theirsDev, Backing: filepath.Join(filepath.Dir(ours), "gone.img"), BackingDev: uint64(st.Dev), BackingIno: 1},
		},
		Schedulers: []schedRecord{
			{Dev: oursDev, Was: was[oursDev]},
			{Dev: theirsDev, Was: was[theirsDev]},
			{Dev: free.Name, Was: was[free.Name]},
			{Dev: "../sda", Was: "none"},
		},
	})
	actions, err := CleanupStale(dir, t.Logf)
	if err != nil {
		t.Fatalf("CleanupStale: %v", err)
	}
	joined := strings.Join(actions, "\n")
	if got := sched(oursDev); got != was[oursDev] {
		t.Errorf("the run's own %s has scheduler %s after cleanup, want %s back:\n%s", oursDev, got, was[oursDev], joined)
	}
	if got := sched(theirsDev); got != other(theirsDev) {
		t.Errorf("%s, which now serves another file, has scheduler %s after cleanup, want it left at %s", theirsDev, got, other(theirsDev))
	}
	if !strings.Contains(joined, "left the I/O scheduler of "+theirsDev+" alone") {
		t.Errorf("actions do not say %s was left alone:\n%s", theirsDev, joined)
	}
	// Another package's test may have taken the free number meanwhile: then it is theirs.
	if _, err := readLoopAttr(free.Name, "backing_file"); errors.Is(err, fs.ErrNotExist) {
		if got := sched(free.Name); got != was[free.Name] {
			t.Errorf("free %s has scheduler %s after cleanup, want %s back", free.Name, got, was[free.Name])
		}
	}
}

// TestCleanupStaleLockedLedger: every run cleans up stale ledgers when it starts, so two
// cleanups can find the same dead run's ledger at once. The one that finds it locked leaves it
// to the other (which holds the lock) instead of undoing half of it beside it.
func TestCleanupStaleLockedLedger(t *testing.T) {
	dead, deadStart := deadPID(t)
	defer func(was time.Duration) { ledgerLockWait = was }(ledgerLockWait)
	ledgerLockWait = 300 * time.Millisecond
	dir := t.TempDir()
	gone := filepath.Join(dir, "made-by-the-dead-run")
	if err := os.Mkdir(gone, 0o700); err != nil {
		t.Fatal(err)
	}
	ledger := writeLedger(t, dir, ledgerRecord{PID: dead, StartTime: deadStart, Dirs: []string{gone}})
	tests := []struct {
		name        string
		locked      bool
		want        string
		ledgerStays bool
	}{
		{"locked by another cleanup that does not finish", true, "left ledger " + ledger + " to the fsbench that is undoing it (still at it after", true},
		{"free", false, "removed ledger " + ledger, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.locked {
				f, err := os.Open(ledger)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
					t.Fatal(err)
				}
			}
			actions, err := CleanupStale(dir, t.Logf)
			if err != nil {
				t.Fatalf("CleanupStale: %v", err)
			}
			if joined := strings.Join(actions, "\n"); !strings.Contains(joined, tt.want) {
				t.Errorf("actions lack %q:\n%s", tt.want, joined)
			}
			_, err = os.Stat(ledger)
			if stays := err == nil; stays != tt.ledgerStays {
				t.Errorf("ledger still there = %v, want %v", stays, tt.ledgerStays)
			}
			_, err = os.Stat(gone)
			if stays := err == nil; stays != tt.ledgerStays {
				t.Errorf("the dead run's directory still there = %v, want %v", stays, tt.ledgerStays)
			}
		})
	}
}
