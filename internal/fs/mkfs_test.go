package fs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCommandLines runs Mkfs and BuildImage for every kind through a fake Runner and compares
// the programs and argument lists with testdata/commands.golden.
func TestCommandLines(t *testing.T) {
	src := t.TempDir()
	extra := map[string][]string{
		"ext4":     {"-O", "^has_journal", "-E", "lazy_itable_init=0"},
		"ext2":     {"-b", "4096"},
		"ext3":     {"-J", "size=16"},
		"xfs":      {"-m", "reflink=0"},
		"btrfs":    {"-m", "single", "-d", "single"},
		"f2fs":     {"-O", "extra_attr,compression"},
		"nilfs2":   {"-B", "2048"},
		"vfat":     {"-F", "32", "-n", "FSBENCH"},
		"squashfs": {"-comp", "lzo"},
		"erofs":    {"-zlz4hc"},
	}
	var b strings.Builder
	ctx := context.Background()
	for _, k := range Kinds() {
		if k.Flash {
			continue // images for raw flash are built by internal/nand, which knows the geometry
		}
		for _, args := range [][]string{nil, extra[k.Name]} {
			f := &fakeRunner{}
			var err error
			if k.ReadOnly {
				err = BuildImage(ctx, f.run, k, src, "/tmp/out.img", args)
			} else {
				err = Mkfs(ctx, f.run, k, "/dev/loop7", args)
			}
			if err != nil {
				t.Fatalf("%s %q: %v", k.Name, args, err)
			}
			if len(f.calls) != 1 {
				t.Fatalf("%s: %d calls, want 1: %v", k.Name, len(f.calls), f.calls)
			}
			if f.calls[0].name != k.Tool {
				t.Errorf("%s ran %s, want %s", k.Name, f.calls[0].name, k.Tool)
			}
			fmt.Fprintf(&b, "%-8s %s\n", k.Name, strings.ReplaceAll(f.calls[0].String(), src, "SRC"))
		}
	}
	checkGolden(t, "commands.golden", b.String())
}

// TestCommandLinesLiteral pins the brief's examples independently of the golden file.
func TestCommandLinesLiteral(t *testing.T) {
	src := t.TempDir()
	tests := []struct {
		kind string
		args []string
		want []string
	}{
		{"ext4", []string{"-O", "^has_journal"}, []string{"-F", "-q", "-O", "^has_journal", "/dev/sdz"}},
		{"xfs", nil, []string{"-f", "-q", "/dev/sdz"}},
		{"btrfs", nil, []string{"-f", "-q", "/dev/sdz"}},
		{"f2fs", nil, []string{"-f", "-q", "/dev/sdz"}},
		{"nilfs2", nil, []string{"-f", "-q", "/dev/sdz"}},
		{"vfat", []string{"-F", "32"}, []string{"-I", "-F", "32", "/dev/sdz"}},
		{"squashfs", []string{"-comp", "lzo"}, []string{src, "/i.img", "-noappend", "-no-progress", "-comp", "lzo"}},
		{"erofs", []string{"-zlz4hc"}, []string{"-zlz4hc", "/i.img", src}},
	}
	for _, tt := range tests {
		k := mustLookup(t, tt.kind)
		f := &fakeRunner{}
		var err error
		if k.ReadOnly {
			err = BuildImage(context.Background(), f.run, k, src, "/i.img", tt.args)
		} else {
			err = Mkfs(context.Background(), f.run, k, "/dev/sdz", tt.args)
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.kind, err)
		}
		if diff := cmp.Diff(tt.want, f.calls[0].args); diff != "" {
			t.Errorf("%s args (-want +got):\n%s", tt.kind, diff)
		}
	}
}

func TestMkfsErrors(t *testing.T) {
	ctx := context.Background()
	ext4 := mustLookup(t, "ext4")
	f := &fakeRunner{
		out: []byte("mke2fs 1.47.0 (5-Feb-2023)\nThe file /dev/nope does not exist and no size was specified.\n"),
		err: errors.New("exit status 1"),
	}
	err := Mkfs(ctx, f.run, ext4, "/dev/nope", []string{"-L", "my label"})
	if err == nil {
		t.Fatal("Mkfs succeeded although the tool failed")
	}
	if !containsAll(err.Error(), "mkfs.ext4 -F -q -L 'my label' /dev/nope", "exit status 1", "does not exist") {
		t.Errorf("error lacks the command line or the tool's output: %v", err)
	}

	// Read-only kinds have no mkfs, and writable ones no image build: the call is refused
	// before anything runs.
	f = &fakeRunner{}
	if err := Mkfs(ctx, f.run, mustLookup(t, "squashfs"), "/dev/x", nil); err == nil || !strings.Contains(err.Error(), "BuildImage") {
		t.Errorf("Mkfs(squashfs) = %v, want a refusal pointing to BuildImage", err)
	}
	if err := BuildImage(ctx, f.run, ext4, t.TempDir(), "/i", nil); err == nil || !strings.Contains(err.Error(), "Mkfs") {
		t.Errorf("BuildImage(ext4) = %v, want a refusal pointing to Mkfs", err)
	}
	if err := Mkfs(ctx, f.run, Kind{Name: "ntfs", Tool: "mkfs.ntfs"}, "/dev/x", nil); err == nil || !strings.Contains(err.Error(), "unknown filesystem") {
		t.Errorf("Mkfs(ntfs) = %v, want unknown filesystem", err)
	}
	if err := BuildImage(ctx, f.run, mustLookup(t, "erofs"), filepath.Join(t.TempDir(), "missing"), "/i", nil); err == nil || !strings.Contains(err.Error(), "source") {
		t.Errorf("BuildImage of a missing source = %v, want an error about the source", err)
	}
	if len(f.calls) != 0 {
		t.Errorf("refused calls still ran programs: %v", f.calls)
	}
}

// TestMkfsDeadline checks that a tool killed at the context's deadline says so.
func TestMkfsDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	<-ctx.Done()
	f := &fakeRunner{err: errors.New("signal: killed")}
	err := Mkfs(ctx, f.run, mustLookup(t, "xfs"), "/dev/loop1", nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "signal: killed") {
		t.Errorf("err = %v, want deadline exceeded and the kill", err)
	}
}

// versions are the lines the tools installed on Debian 12 print; the outputs in
// testdata/version were captured from them with `TOOL ARGS > kind.txt 2>&1`.
var versions = []struct {
	kind string
	args []string
	want string
	fail bool // the tool exits non-zero even though it printed its version
}{
	{"ext4", []string{"-V"}, "mke2fs 1.47.0 (5-Feb-2023)", false},
	{"ext2", []string{"-V"}, "mke2fs 1.47.0 (5-Feb-2023)", false},
	{"ext3", []string{"-V"}, "mke2fs 1.47.0 (5-Feb-2023)", false},
	{"xfs", []string{"-V"}, "mkfs.xfs version 6.1.0", false},
	{"btrfs", []string{"--version"}, "mkfs.btrfs, part of btrfs-progs v6.2", false},
	{"f2fs", []string{"-V"}, "mkfs.f2fs 1.15.0 (2022-05-13)", false},
	{"nilfs2", []string{"-V"}, "mkfs.nilfs2 (nilfs-utils 2.2.9)", false},
	{"vfat", []string{"--help"}, "mkfs.fat 4.2 (2021-01-31)", false},
	{"squashfs", []string{"-version"}, "mksquashfs version 4.5.1 (2022/03/17)", false},
	{"erofs", []string{"--version"}, "mkfs.erofs 1.5", true},
}

func TestToolVersionCaptured(t *testing.T) {
	for _, tt := range versions {
		t.Run(tt.kind, func(t *testing.T) {
			k := mustLookup(t, tt.kind)
			out, err := os.ReadFile(filepath.Join("testdata", "version", tt.kind+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			f := &fakeRunner{out: out}
			if tt.fail {
				f.err = errors.New("exit status 1")
			}
			got, err := ToolVersion(context.Background(), f.run, k)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("version = %q, want %q", got, tt.want)
			}
			if diff := cmp.Diff([]call{{k.Tool, tt.args}}, f.calls, cmp.AllowUnexported(call{})); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestToolVersionNoLine(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		err     error
		wantErr []string
	}{
		{"failed", "mkfs.erofs: unrecognized option '--version'\nusage: [options] FILE DIRECTORY\n",
			errors.New("exit status 1"), []string{"mkfs.erofs --version", "exit status 1", "unrecognized option"}},
		{"succeeded without a version", "something else\n", nil,
			[]string{"mkfs.erofs --version", "no version line", "something else"}},
		{"not found", "", &exec.Error{Name: "mkfs.erofs", Err: exec.ErrNotFound},
			[]string{"mkfs.erofs --version", "executable file not found", "no output"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeRunner{out: []byte(tt.out), err: tt.err}
			v, err := ToolVersion(context.Background(), f.run, mustLookup(t, "erofs"))
			if err == nil {
				t.Fatalf("got version %q, want an error", v)
			}
			if !containsAll(err.Error(), tt.wantErr...) {
				t.Errorf("error %q lacks one of %q", err, tt.wantErr)
			}
		})
	}
}

// TestToolVersionReal runs the installed tools: the version options must still work, whatever
// the versions are.
func TestToolVersionReal(t *testing.T) {
	sys, err := HostSystem()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			if k.Tool == "" {
				t.Skipf("%s has no mkfs tool: %s", k.Name, k.NotMainline)
			}
			if _, err := sys.LookPath(k.Tool); err != nil {
				t.Skipf("%s not installed (Debian package %s)", k.Tool, k.Package)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			v, err := ToolVersion(ctx, nil, k)
			if err != nil {
				t.Fatal(err)
			}
			if strings.ContainsAny(v, "\n\r\t") || v != strings.TrimSpace(v) {
				t.Errorf("version %q is not one clean line", v)
			}
			t.Logf("%s: %s", k.Tool, v)
		})
	}
}

func TestTrimUsage(t *testing.T) {
	xfs := "Filesystem must be larger than 300MB.\nUsage: mkfs.xfs\n/* blocksize */\t\t[-b size=num]\n/* config file */\t[-c options=xxx]"
	if got := trimUsage(xfs); got != "Filesystem must be larger than 300MB. (usage text left out)" {
		t.Errorf("trimUsage = %q", got)
	}
	if got := trimUsage("usage: mkfs.f2fs [options] device\n  -a heap"); got != "usage: mkfs.f2fs [options] device (rest of the usage text left out)" {
		t.Errorf("trimUsage(usage only) = %q", got)
	}
	if got := trimUsage("mke2fs: invalid block size - 3"); got != "mke2fs: invalid block size - 3" {
		t.Errorf("trimUsage(no usage) = %q", got)
	}
}
