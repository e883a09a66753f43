package confine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/testkit/testdev"
)

// The tests in this file run real programs (sh, dd, mknod, mount) in the jail against a loop
// device over a file in t.TempDir(), with a second loop device beside it, the decoy, whose
// sha256 must never change. They need root.

func needRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("makes loop devices (-short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes loop devices and namespaces")
	}
	if err := Available(); err != nil {
		t.Fatalf("confinement unavailable as root: %v", err)
	}
}

// loopDev is a loop device over a file of size bytes filled with pattern.
func loopDev(t *testing.T, size int, pattern string) string {
	return testdev.Loop(t, int64(size), pattern)
}

func sum(t *testing.T, dev string) string { return testdev.Sum(t, dev) }

// sh runs a shell script in the jail with dut as its device and dir as its directory.
func sh(t *testing.T, dut, dir, script string) (string, error) {
	t.Helper()
	out, err := CombinedOutput(context.Background(), Spec{Devices: []string{dut}, Dir: dir, Env: []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}},
		"/bin/sh", "-c", script)
	var se *SetupError
	if errors.As(err, &se) {
		t.Fatalf("jail not built: %v", err)
	}
	return strings.TrimSpace(string(out)), err
}

// TestEscapes tries every way out of the jail we know of onto the decoy device; each must fail,
// and the decoy must be byte-identical after all of them, while the device under test stays
// writable.
func TestEscapes(t *testing.T) {
	needRoot(t)
	dut := loopDev(t, 4<<20, "device under test ")
	decoy := loopDev(t, 4<<20, "the user's data! ")
	before := sum(t, decoy)
	dir := t.TempDir()
	// A device node of the decoy outside /dev, made before the jail: nodev must make it useless.
	var st unix.Stat_t
	if err := unix.Stat(decoy, &st); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "decoy-node")
	if err := unix.Mknod(outside, unix.S_IFBLK|0o600, int(st.Rdev)); err != nil {
		t.Fatal(err)
	}
	// A symlink in the working directory naming the decoy: a relative name has no "/".
	if err := os.Symlink(decoy, filepath.Join(dir, "card")); err != nil {
		t.Fatal(err)
	}
	maj, min := unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev))
	write := func(to string) string {
		return "dd if=/dev/zero of=" + to + " bs=4096 count=1 conv=notrunc,fsync 2>&1"
	}
	escapes := []struct{ name, script string }{
		{"absolute /dev path", write(decoy)},
		{"symlink in the working directory", write("card")},
		{"device node outside /dev", write(outside)},
		{"/proc/1/root", write("/proc/1/root" + decoy)},
		{"/proc/self/root", write("/proc/self/root" + decoy)},
		{"mknod in the working directory", fmt.Sprintf("mknod ./node b %d %d && %s", maj, min, write("./node"))},
		{"mknod in /dev", fmt.Sprintf("mknod /dev/x b %d %d && %s", maj, min, write("/dev/x"))},
		{"mount devtmpfs", "mkdir -p d && mount -t devtmpfs none d && " + write("d/"+filepath.Base(decoy))},
		{"remount /dev writable", "mount -o remount,rw /dev && mknod /dev/x b " + fmt.Sprint(maj, " ", min) + " && " + write("/dev/x")},
		{"loop-control", "test -e /dev/loop-control && losetup -f"},
		{"sysfs", "echo 1 > /sys/block/" + filepath.Base(decoy) + "/ro"},
	}
	for _, e := range escapes {
		out, err := sh(t, dut, dir, e.script)
		if err == nil {
			t.Errorf("%s: the script succeeded:\n%s", e.name, out)
		} else {
			t.Logf("%s: refused: %s", e.name, lastLine(out))
		}
	}
	if got := sum(t, decoy); got != before {
		t.Fatalf("the decoy %s changed: sha256 %s, was %s", decoy, got, before)
	}
	if out, err := sh(t, dut, dir, write(dut)); err != nil {
		t.Fatalf("writing the device under test failed: %v: %s", err, out)
	}
	if out, err := sh(t, dut, dir, "echo x > undo-file && echo y > $TMPDIR/tmp-file"); err != nil {
		t.Fatalf("writing in the working directory failed: %v: %s", err, out)
	}
	for _, p := range []string{"/tmp/fsbench-confine-escape", filepath.Join(filepath.Dir(dir), "beside"), "/root/fsbench-confine-escape", "/var/tmp/x"} {
		if out, err := sh(t, dut, dir, "echo x > "+p); err == nil {
			os.Remove(p)
			t.Errorf("wrote %s outside the working directory: %s", p, out)
		}
	}
}

// lastLine is the last line of a program's message that says something (mount(8) ends with a
// hint to read dmesg).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i > 0; i-- {
		if !strings.Contains(lines[i], "dmesg(1)") {
			return strings.TrimSpace(lines[i])
		}
	}
	return lines[0]
}

// TestPrivileges reads what the jailed program is: pid 1 of its own namespace, without the
// dropped capabilities in any set, no_new_privs set, and a /dev of the expected nodes only.
func TestPrivileges(t *testing.T) {
	needRoot(t)
	dut := loopDev(t, 1<<20, "x")
	out, err := sh(t, dut, t.TempDir(), "echo pid $$; grep -E '^(Cap|NoNewPrivs)' /proc/self/status; ls /dev; ls /proc | grep -c '^[0-9]'")
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("in the jail:\n%s", out)
	fields := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	if !strings.HasPrefix(out, "pid 1\n") {
		t.Errorf("not pid 1 of its own namespace: %q", strings.SplitN(out, "\n", 2)[0])
	}
	if fields["NoNewPrivs"] != "1" {
		t.Errorf("NoNewPrivs %q", fields["NoNewPrivs"])
	}
	for _, set := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		var v uint64
		fmt.Sscanf(fields[set], "%x", &v)
		for _, c := range []int{unix.CAP_MKNOD, unix.CAP_SYS_ADMIN, unix.CAP_SYS_PTRACE, unix.CAP_DAC_READ_SEARCH, unix.CAP_SYS_RAWIO, unix.CAP_SYS_MODULE, unix.CAP_SETPCAP} {
			if v&(1<<c) != 0 {
				t.Errorf("%s %s has capability %d", set, fields[set], c)
			}
		}
	}
	want := []string{"fd", "full", filepath.Base(dut), "null", "random", "shm", "stderr", "stdin", "stdout", "urandom", "zero"}
	lines := strings.Split(out, "\n")
	var dev []string
	for _, l := range lines {
		if !strings.Contains(l, ":") && !strings.HasPrefix(l, "pid ") {
			dev = append(dev, l)
		}
	}
	if got := strings.Join(dev[:len(dev)-1], " "); got != strings.Join(sortStrings(want), " ") {
		t.Errorf("/dev holds %s, want %s", got, strings.Join(sortStrings(want), " "))
	}
	if n := dev[len(dev)-1]; len(n) != 1 || n > "4" {
		t.Errorf("/proc shows %s processes, want only the jail's own", n)
	}
}

func sortStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestNoOtherMounts checks that the jail holds no copy of a mount it does not need: a copy
// would keep that filesystem (and its device) busy after its owner unmounted it.
func TestNoOtherMounts(t *testing.T) {
	needRoot(t)
	dut := loopDev(t, 1<<20, "x")
	other := t.TempDir()
	if err := unix.Mount("tmpfs", other, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(other, unix.MNT_DETACH)
	dir := t.TempDir()
	out, err := sh(t, dut, dir, "cat /proc/self/mountinfo")
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("the jail's mounts:\n%s", out)
	if strings.Contains(out, " "+other+" ") {
		t.Errorf("the jail holds a copy of %s", other)
	}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 6 {
			continue
		}
		mp, opts := f[4], f[5]
		switch {
		case mp == "/dev":
			if !strings.Contains(opts, "ro") || strings.Contains(opts, "nodev") {
				t.Errorf("/dev: %s", l)
			}
		case mp == dir, mp == "/dev/shm":
			// The working directory and the jail's own tmpfs for POSIX semaphores.
			if !strings.HasPrefix(opts, "rw") || !strings.Contains(opts, "nodev") {
				t.Errorf("%s: %s", mp, l)
			}
		default:
			if !strings.HasPrefix(opts, "ro") || !strings.Contains(opts, "nodev") {
				t.Errorf("not read-only and nodev: %s", l)
			}
		}
	}
}

// TestRemountFallback builds the jail the way kernels before mount_setattr(2) (5.12) do.
func TestRemountFallback(t *testing.T) {
	needRoot(t)
	forceRemount = true
	defer func() { forceRemount = false }()
	_ = loopDev(t, 1<<20, "x")
	decoy := loopDev(t, 1<<20, "y")
	before := sum(t, decoy)
	var st unix.Stat_t
	unix.Stat(decoy, &st)
	outside := filepath.Join(t.TempDir(), "decoy-node")
	if err := unix.Mknod(outside, unix.S_IFBLK|0o600, int(st.Rdev)); err != nil {
		t.Fatal(err)
	}
	// The fallback runs in this process's thread jail (forceRemount is this process's).
	err := inThreadJail(jail{keep: []string{t.TempDir()}}, func() error {
		f, err := os.OpenFile(outside, os.O_WRONLY, 0)
		if err == nil {
			f.Close()
			return errors.New("opened a device node outside /dev for writing")
		}
		if _, err := os.Stat(decoy); err == nil {
			return errors.New("the decoy is in the jail's /dev")
		}
		if err := os.WriteFile("/fsbench-confine-escape", nil, 0o600); err == nil {
			return errors.New("/ is writable")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum(t, decoy) != before {
		t.Fatal("the decoy changed")
	}
}

// TestMount mounts ext4 through the jail: plainly (then it is mounted at the target in this
// namespace), and with an external journal on the decoy named by journal_path=, which the kernel
// resolves in the jail: absolute, through a symlink, through /proc/1/root. The same mount
// outside the jail succeeds (and writes the decoy): the refusals are the jail's.
func TestMount(t *testing.T) {
	needRoot(t)
	dut := loopDev(t, 32<<20, "\x00")
	decoy := loopDev(t, 8<<20, "\x00")
	// The decoy holds the DUT's external journal: a mount that reaches it succeeds.
	for _, c := range [][]string{{"mkfs.ext4", "-F", "-q", "-O", "journal_dev", "-b", "4096", decoy}, {"mkfs.ext4", "-F", "-q", "-b", "4096", "-J", "device=" + decoy, dut}} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Skipf("%s: %v: %s", strings.Join(c, " "), err, out)
		}
	}
	before := sum(t, decoy)
	mnt := t.TempDir()
	link := filepath.Join(t.TempDir(), "card")
	os.Symlink(decoy, link)
	// A node of the decoy on the root filesystem, outside /dev: ext4 takes the device number of
	// what journal_path= names and opens that device without the nodev check of an open(2), so
	// only a jail whose root holds no such node stops it.
	var st unix.Stat_t
	if err := unix.Stat(decoy, &st); err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(t.TempDir(), "journal-node")
	if err := unix.Mknod(node, unix.S_IFBLK|0o600, int(st.Rdev)); err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{"journal_path=" + decoy, "journal_path=" + link, "journal_path=/proc/1/root" + decoy, "journal_path=/proc/self/root" + decoy,
		"journal_path=" + node, "journal_path=../../../.." + node} {
		err := Mount(dut, mnt, "ext4", 0, data)
		var me *MountError
		if !errors.As(err, &me) {
			unix.Unmount(mnt, 0)
			t.Errorf("%s: %v, want the mount refused", data, err)
			continue
		}
		t.Logf("%s: refused in the jail: %v", data, err)
	}
	if sum(t, decoy) != before {
		t.Fatal("the decoy changed")
	}
	if m, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(m), " "+mnt+" ") {
		t.Fatalf("%s is mounted after refused mounts", mnt)
	}
	// The controls: outside the jail the same options reach the decoy.
	for _, p := range []string{decoy, node} {
		if err := unix.Mount(dut, mnt, "ext4", 0, "journal_path="+p); err != nil {
			t.Fatalf("the same mount outside the jail: %v: the refusals above prove nothing", err)
		}
		unix.Unmount(mnt, 0)
		t.Logf("outside the jail, journal_path=%s mounts", p)
	}

	// A plain mount through the jail is a mount in this namespace, usable and unmountable.
	plain := loopDev(t, 32<<20, "\x00")
	if out, err := exec.Command("mkfs.ext4", "-F", "-q", plain).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	if err := Mount(plain, mnt, "ext4", unix.MS_NOATIME, ""); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "f"), []byte("x"), 0o644); err != nil {
		t.Error(err)
	}
	m, _ := os.ReadFile("/proc/self/mountinfo")
	if !strings.Contains(string(m), " "+mnt+" rw,noatime ") {
		t.Errorf("%s not mounted rw,noatime in this namespace:\n%s", mnt, m)
	}
	if err := unix.Unmount(mnt, 0); err != nil {
		t.Fatal(err)
	}
}

// probeEnv makes the test binary, started in the jail by TestFilter, try the calls the filter
// denies and print what each returned; probeAbove names a call above the highest the filter
// knows that the kernel has, and probeDev the device under test (its fd gets the passthrough
// ioctls).
const (
	probeEnv   = "FSBENCH_CONFINE_TEST_PROBE"
	probeAbove = "FSBENCH_CONFINE_TEST_ABOVE"
	probeDev   = "FSBENCH_CONFINE_TEST_DEV"
)

// mqEnv makes the test binary, started in a jail by TestStartDaemon, make a POSIX message queue
// and wait ("serve"), or open that queue and exit 0 if it could ("open").
const mqEnv = "FSBENCH_CONFINE_TEST_MQ"

func TestMain(m *testing.M) {
	if os.Getenv(probeEnv) != "" {
		probeCalls()
		os.Exit(0)
	}
	switch os.Getenv(mqEnv) {
	case "serve":
		// The queue lives in the jail's IPC namespace; the daemon's own fork into the
		// background is left out (the init's reaping is what the daemon mode adds).
		if _, err := mqOpen("/fsbench-test", unix.O_RDWR|unix.O_CREAT); err != nil {
			fmt.Println("mq_open:", err)
			os.Exit(1)
		}
		fmt.Println("serving")
		time.Sleep(time.Hour)
	case "open":
		if _, err := mqOpen("/fsbench-test", unix.O_RDWR); err != nil {
			fmt.Println("mq_open:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// mqOpen is mq_open(3): the system call takes the name without its leading slash.
func mqOpen(name string, flags int) (int, error) {
	p, err := unix.BytePtrFromString(strings.TrimPrefix(name, "/"))
	if err != nil {
		return -1, err
	}
	fd, _, e := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(p)), uintptr(flags), 0o600, 0, 0, 0)
	return int(fd), errnoErr(e)
}

// TestStartDaemon starts programs in the background with Start: a shell that leaves a sleep
// behind and exits (a daemon's fork) keeps its sleep running until Stop; a program in a jail
// sharing another's IPC namespace reaches that jail's message queue, and one in a jail of its
// own does not.
func TestStartDaemon(t *testing.T) {
	needRoot(t)
	dut := loopDev(t, 1<<20, "x")
	spec := Spec{Devices: []string{dut}, Dir: t.TempDir(), Env: []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}}
	p, err := Start(spec, "/bin/sh", "-c", "sleep 600 & exit 0")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if !p.Running() {
		t.Fatalf("the jail ended when its program forked into the background and exited: %s", p.Output())
	}
	start := time.Now()
	if err := p.Stop(10 * time.Second); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if p.Running() || time.Since(start) > 5*time.Second {
		t.Errorf("the background sleep outlived SIGTERM for %v", time.Since(start))
	}

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := spec
	srv.Env = []string{mqEnv + "=serve"}
	server, err := Start(srv, self)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Stop(time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(server.Output(), "serving") && server.Running() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(server.Output(), "serving") {
		t.Fatalf("the queue's server: %s", server.Output())
	}
	cl := spec
	cl.Env = []string{mqEnv + "=open"}
	cl.ShareIPC = server
	if out, err := CombinedOutput(context.Background(), cl, self); err != nil {
		t.Errorf("in a jail sharing the server's IPC namespace, the queue: %v: %s", err, out)
	}
	cl.ShareIPC = nil
	if out, err := CombinedOutput(context.Background(), cl, self); err == nil {
		t.Errorf("in a jail of its own, the other jail's queue opened: %s", out)
	} else {
		t.Logf("in a jail of its own: %v: %s", err, strings.TrimSpace(string(out)))
	}
}

// Passthrough and partition ioctls a confined program must not make on the device under test
// (include/uapi/linux/nvme_ioctl.h, scsi/sg.h, mmc/ioctl.h, fs.h).
const (
	ioctlNVMeAdmin = 0xc0484e41 // NVME_IOCTL_ADMIN_CMD
	ioctlNVMeIO    = 0xc0484e43 // NVME_IOCTL_IO_CMD
	ioctlSGIO      = 0x2285     // SG_IO
	ioctlMMCCmd    = 0xc048b300 // MMC_IOC_CMD
	ioctlBLKPG     = 0x1269     // BLKPG
	ioctlBLKRRPART = 0x125f     // BLKRRPART
	ioctlFIFREEZE  = 0xc0045877
)

// openTreeAttr calls open_tree_attr(2) (Linux 6.15) on / with a clone: the copy of a mount it
// returns could be given read-only and nodev cleared.
func openTreeAttr() (int, error) {
	dirfd := unix.AT_FDCWD
	fd, _, e := unix.Syscall6(unix.SYS_OPEN_TREE_ATTR, uintptr(dirfd), uintptr(unsafe.Pointer(&[]byte("/\x00")[0])),
		uintptr(unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC), 0, 0, 0)
	return int(fd), errnoErr(e)
}

// probeCalls prints "name: errno" for each call a jailed program must not make.
func probeCalls() {
	try := func(name string, err error) { fmt.Printf("%s: %v\n", name, err) }
	_, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	try("socket", err)
	try("mount", unix.Mount("none", "/tmp", "tmpfs", 0, ""))
	try("mount devtmpfs", unix.Mount("none", ".", "devtmpfs", 0, ""))
	try("umount", unix.Unmount("/dev", unix.MNT_DETACH))
	try("unshare", unix.Unshare(unix.CLONE_NEWNS))
	try("mknod", unix.Mknodat(unix.AT_FDCWD, "node", unix.S_IFBLK|0o600, int(unix.Mkdev(7, 0))))
	_, _, e := unix.Syscall(unix.SYS_OPEN_BY_HANDLE_AT, 0, 0, 0)
	try("open_by_handle_at", errnoErr(e))
	_, _, e = unix.Syscall(unix.SYS_IO_URING_SETUP, 1, 0, 0)
	try("io_uring_setup", errnoErr(e))
	_, _, e = unix.Syscall(unix.SYS_KEYCTL, 0, 0, 0)
	try("keyctl", errnoErr(e))
	try("sethostname", unix.Sethostname([]byte("jail")))
	fd, _ := unix.Open("/", unix.O_RDONLY, 0)
	try("ioctl FIFREEZE", unix.IoctlSetInt(fd, ioctlFIFREEZE, 0))
	_, err = openTreeAttr()
	try("open_tree_attr", err)
	if n, err := strconv.Atoi(os.Getenv(probeAbove)); err == nil && n > 0 {
		_, _, e = unix.Syscall6(uintptr(n), 0, 0, 0, 0, 0, 0)
		try(fmt.Sprintf("system call %d", n), errnoErr(e))
	}
	_, _, e = unix.Syscall(1023, 0, 0, 0)
	try("system call 1023", errnoErr(e))
	if dev, err := unix.Open(os.Getenv(probeDev), unix.O_RDWR, 0); err == nil {
		var buf [128]byte
		for _, r := range []struct {
			name string
			req  uintptr
		}{{"NVME_IOCTL_ADMIN_CMD", ioctlNVMeAdmin}, {"NVME_IOCTL_IO_CMD", ioctlNVMeIO}, {"SG_IO", ioctlSGIO}, {"MMC_IOC_CMD", ioctlMMCCmd},
			{"BLKPG", ioctlBLKPG}, {"BLKRRPART", ioctlBLKRRPART}} {
			_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(dev), r.req, uintptr(unsafe.Pointer(&buf[0])))
			try("ioctl "+r.name+" on the device", errnoErr(e))
		}
	} else {
		try("open the device under test", err)
	}
	_, _, e = unix.Syscall(unix.SYS_CLONE3, 0, 0, 0)
	try("clone3", errnoErr(e))
}

func errnoErr(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// aboveFilter finds a system call above the highest the filter names that this kernel has:
// called with zero arguments outside the jail it answers something else than ENOSYS (EFAULT,
// EBADF: the kernel ran it). 0 when the kernel has none above.
func aboveFilter() (int, error) {
	for n := HighestKnown() + 1; n < HighestKnown()+64; n++ {
		_, _, e := unix.Syscall6(uintptr(n), 0, 0, 0, 0, 0, 0)
		if e != unix.ENOSYS {
			return int(n), errnoErr(e)
		}
	}
	return 0, nil
}

// TestFilter runs this test binary in the jail, with and without CAP_SYS_ADMIN (mkfs.xfs keeps
// it), and checks that each call the filter denies is refused: the mount API, namespaces, nodes,
// sockets, io_uring, open_tree_attr (which a denylist written before Linux 6.15 let through), a
// call above the highest the filter names, passthrough and partition ioctls on the device under
// test. Outside the jail open_tree_attr and the call above the filter's highest work: the
// refusals are the filter's.
func TestFilter(t *testing.T) {
	needRoot(t)
	dut := loopDev(t, 1<<20, "x")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The controls, outside the jail.
	fd, err := openTreeAttr()
	switch {
	case errors.Is(err, unix.ENOSYS):
		t.Logf("this kernel has no open_tree_attr (Linux 6.15): the jail's refusal of it proves less here")
	case err != nil:
		t.Errorf("open_tree_attr outside the jail: %v, want a detached copy of /", err)
	default:
		unix.Close(fd)
		t.Logf("outside the jail, open_tree_attr cloned / (fd %d)", fd)
	}
	above, aboveErr := aboveFilter()
	if above == 0 {
		t.Logf("this kernel has no system call above %d, the filter's highest: only number 1023 (unknown to the kernel too) probes the default", HighestKnown())
	} else {
		t.Logf("outside the jail, system call %d (above the filter's highest, %d) runs: %v", above, HighestKnown(), aboveErr)
	}
	for _, sysAdmin := range []bool{false, true} {
		out, err := CombinedOutput(context.Background(), Spec{Devices: []string{dut}, Dir: t.TempDir(), SysAdmin: sysAdmin,
			Env: []string{probeEnv + "=1", probeAbove + "=" + strconv.Itoa(above), probeDev + "=" + dut}}, self)
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		t.Logf("CAP_SYS_ADMIN kept: %v\n%s", sysAdmin, out)
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if want := 21; above == 0 && len(lines) != want-1 || above != 0 && len(lines) != want {
			t.Errorf("the probe printed %d lines, want %d", len(lines), want)
		}
		for _, l := range lines {
			name, res, _ := strings.Cut(l, ": ")
			want := "operation not permitted"
			if name == "clone3" {
				want = "function not implemented"
			}
			if res != want {
				t.Errorf("CAP_SYS_ADMIN %v: %s: %s, want %s", sysAdmin, name, res, want)
			}
		}
	}
}
