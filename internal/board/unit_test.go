package board

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/cpio"
	"github.com/fsbench/fsbench/internal/procid"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, writing testdata/name.got on a mismatch.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		os.WriteFile(p+".got", got, 0o644)
		t.Errorf("%s differs from its golden file: see %s.got", p, p)
	}
}

func TestParseDepends(t *testing.T) {
	out := []byte(`dropbear-bin
  Depends: libc6
  Depends: libcrypt1
  Depends: zlib1g
xfsprogs
  Depends: libblkid1
  Depends: <python3:any>
    python3
  Depends: libicu72
 |Depends: libfoo1
  Depends: libbar1:any
e2fsprogs
  PreDepends: libext2fs2
  Depends: logsave
  Recommends: e2fsprogs-l10n
`)
	want := map[string][]string{
		"dropbear-bin": {"libc6", "libcrypt1", "zlib1g"},
		"xfsprogs":     {"libblkid1", "libicu72", "libfoo1", "libbar1"},
		"e2fsprogs":    {"libext2fs2", "logsave"},
	}
	if got := parseDepends(out); !reflect.DeepEqual(got, want) {
		t.Errorf("parseDepends = %v, want %v", got, want)
	}
}

func TestPaths(t *testing.T) {
	for _, c := range []struct {
		rel, merged string
		skip        bool
	}{
		{"sbin/mke2fs", "usr/sbin/mke2fs", false},
		{"bin/busybox", "usr/bin/busybox", false},
		{"lib/aarch64-linux-gnu/libc.so.6", "usr/lib/aarch64-linux-gnu/libc.so.6", false},
		{"lib", "usr/lib", false},
		{"usr/share/doc/e2fsprogs/copyright", "usr/share/doc/e2fsprogs/copyright", true},
		{"usr/share/man", "usr/share/man", true},
		{"libexec/x", "libexec/x", false},
		{"etc/mke2fs.conf", "etc/mke2fs.conf", false},
	} {
		if got := mergedUsr(c.rel); got != c.merged {
			t.Errorf("mergedUsr(%s) = %s, want %s", c.rel, got, c.merged)
		}
		if got := skipped(c.rel); got != c.skip {
			t.Errorf("skipped(%s) = %v, want %v", c.rel, got, c.skip)
		}
	}
}

func TestLookupArch(t *testing.T) {
	for in, want := range map[string]string{"arm64": "arm64", "aarch64": "arm64", "armv7": "armv7", "armhf": "armv7"} {
		a, err := LookupArch(in)
		if err != nil || a.Name != want {
			t.Errorf("LookupArch(%s) = %s, %v", in, a.Name, err)
		}
	}
	if _, err := LookupArch("riscv64"); err == nil || !strings.Contains(err.Error(), "arm64, armv7") {
		t.Errorf("LookupArch(riscv64): %v", err)
	}
}

func TestCpioGolden(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "f")
	os.WriteFile(src, []byte("hello\n"), 0o644)
	tr := cpio.New()
	tr.File("/usr/bin/hello", src, 0o755)
	tr.Data("/etc/hostname", []byte("fsbench-arm64\n"), 0o644)
	tr.Symlink("/bin", "usr/bin")
	tr.Dir("/tmp", 0o1777)
	tr.Data("/etc/hostname", []byte("ignored: the first entry wins\n"), 0o644)
	var b bytes.Buffer
	if err := tr.Write(&b); err != nil {
		t.Fatal(err)
	}
	golden(t, "initramfs.cpio", b.Bytes())
}

func TestInitScriptGolden(t *testing.T) {
	for _, name := range ArchNames() {
		a, _ := LookupArch(name)
		golden(t, "init-"+name+".sh", []byte(initScript(a)))
	}
}

func TestQEMUArgsGolden(t *testing.T) {
	var all strings.Builder
	for _, name := range ArchNames() {
		a, _ := LookupArch(name)
		o := Options{Arch: a, CacheDir: "/var/cache/fsbench/board/" + name}
		o.fill()
		s := &State{Port: 2222, Card: "/cache/card.img", Console: "/cache/console.log"}
		args := qemuArgs(o, Image{Kernel: "/cache/vmlinuz", Initramfs: "/cache/initramfs.cpio"}, s, "/cache/qemu.pid")
		all.WriteString(a.QEMU + " " + strings.Join(args, " ") + "\n")
	}
	golden(t, "qemu-args.txt", []byte(all.String()))
}

func TestRunCommand(t *testing.T) {
	s := State{Port: 40222, Key: "/var/cache/fsbench/board/arm64/id_ed25519"}
	got := s.RunCommand()
	for _, want := range []string{
		"fsbench run --target ssh://root@127.0.0.1:40222/dev/mmcblk0 --destroy /dev/mmcblk0",
		"--ssh-option IdentityFile=/var/cache/fsbench/board/arm64/id_ed25519",
		"--ssh-option StrictHostKeyChecking=no", "--ssh-option UserKnownHostsFile=/dev/null",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	args := s.SSHArgs()
	if n := len(args); n < 3 || args[n-1] != "root@127.0.0.1" || args[n-2] != "40222" {
		t.Errorf("SSHArgs = %q", args)
	}
}

func TestStateFiles(t *testing.T) {
	dir := t.TempDir()
	// A record of a process that is gone: Down removes it without signalling anyone, and the
	// card Up made goes with it.
	card := filepath.Join(dir, "card.img")
	os.WriteFile(card, nil, 0o644)
	s := &State{Arch: "arm64", PID: os.Getpid(), StartTime: 1, Port: 1, Card: card, CardMade: true, file: stateFile(dir, "arm64")}
	if s.Alive() {
		t.Fatal("a state with another start time counts as alive")
	}
	if err := s.save(); err != nil {
		t.Fatal(err)
	}
	list, err := Status(dir)
	if err != nil || len(list) != 1 || list[0].PID != s.PID {
		t.Fatalf("Status = %v, %v", list, err)
	}
	if _, err := DownArch(dir, "arm64"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{card, s.file} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left after Down: %v", p, err)
		}
	}
	if _, err := DownArch(dir, "arm64"); err == nil {
		t.Errorf("Down of no board: no error")
	}
	// This very process, recorded with its true start time, is alive.
	st, err := procid.Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !(State{PID: os.Getpid(), StartTime: st.StartTime}).Alive() {
		t.Errorf("this process does not count as alive")
	}
}

func TestEnsureCard(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "card.img")
	if n, err := ensureCard(p, 256<<20); err != nil || n != 256<<20 {
		t.Fatalf("ensureCard = %d, %v", n, err)
	}
	if n, err := ensureCard(p, 1<<30); err != nil || n != 256<<20 {
		t.Errorf("an existing card is used as it is: %d, %v", n, err)
	}
	odd := filepath.Join(dir, "odd.img")
	os.WriteFile(odd, make([]byte, 3000), 0o644)
	if _, err := ensureCard(odd, 0); err == nil {
		t.Errorf("a card of 3000 bytes was accepted")
	}
}

// TestQEMUArgsCardWithComma: QEMU splits -drive at commas, so a card whose path holds one (a
// test's temporary directory named after a subtest) has it doubled, and the virtio bus and the
// unlocked card of a simulated card say so on the command line.
func TestQEMUArgsCardWithComma(t *testing.T) {
	a, _ := LookupArch("arm64")
	o := Options{Arch: a, CacheDir: "/cache", CardBus: CardVirtio, NoCardLock: true}
	o.fill()
	s := &State{Port: 2222, Card: "/tmp/a,b/card", Console: "/cache/console.log"}
	got := strings.Join(qemuArgs(o, Image{Kernel: "/k", Initramfs: "/i"}, s, "/p"), " ")
	for _, want := range []string{"file=/tmp/a,,b/card,file.locking=off", "-device virtio-blk-pci,drive=sd"} {
		if !strings.Contains(got, want) {
			t.Errorf("QEMU's arguments %q lack %q", got, want)
		}
	}
	if strings.Contains(got, "sd-card") {
		t.Errorf("a virtio card still has an SD card: %q", got)
	}
}
