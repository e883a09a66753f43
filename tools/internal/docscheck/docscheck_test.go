package docscheck

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestExtract(t *testing.T) {
	md := "Run `fsbench list` or `fsbench-results/` (not a command), then:\n" +
		"```sh\n" +
		"make build   # once\n" +
		"./fsbench run --target simcard:x \\\n" +
		"  --size 512M\n" +
		"```\n" +
		"```text\n" +
		"fsbench run printed this\n" +
		"```\n" +
		"```\n" +
		"fsbench probe /dev/sdb\n" +
		"```\n"
	cmds, problems := Extract("x.md", []byte(md))
	var got []string
	for _, c := range cmds {
		got = append(got, c.Where()+" "+c.Text)
	}
	want := []string{"x.md:1 fsbench list", "x.md:3 make build", "x.md:4 ./fsbench run --target simcard:x --size 512M"}
	if !slices.Equal(got, want) {
		t.Errorf("commands:\n got %q\nwant %q", got, want)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], "x.md:11") {
		t.Errorf("problems %q, want the unlabelled block with a command at line 11", problems)
	}
}

func TestWords(t *testing.T) {
	for in, want := range map[string][]string{
		`go test -run 'TestA/b$' ./x/`: {"go", "test", "-run", "TestA/b$", "./x/"},
		`a "b c"  d`:                   {"a", "b c", "d"},
		`x ''`:                         {"x", ""},
	} {
		if got := Words(in); !slices.Equal(got, want) {
			t.Errorf("Words(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPlan(t *testing.T) {
	tests := []struct {
		text   string
		inline bool
		kind   []Kind
		argv   string // the last step's
	}{
		{"./scripts/setup-debian.sh && make build && ./fsbench run", false, []Kind{Script, MakeDry, Reduced},
			"fsbench run -n 1 --variants ext4 --size 512M --force --tests mkfs,mount"},
		{"fsbench run 2>&1 | head", false, []Kind{Reduced}, "fsbench run -n 1 --variants ext4 --size 512M --force --tests mkfs,mount"},
		{"fsbench run --suite powercut --target simcard:sd-typical", false, []Kind{Reduced},
			"fsbench run --suite powercut --target simcard:sd-typical -n 1 --variants ext4 --size 512M --force --cuts 2"},
		{"fsbench run --suite endurance --target simcard:sd-typical --endurance-scale 0.01", false, []Kind{Reduced},
			"fsbench run --suite endurance --target simcard:sd-typical --endurance-scale 0.01 -n 1 --variants ext4 --size 512M --force --endurance-scale 0.0005 --time-scale 0.01"},
		{"fsbench run --preset ext4-tuning", false, []Kind{Reduced}, "fsbench run --preset ext4-tuning -n 1 --size 512M --force --tests mkfs,mount"},
		{"fsbench run --suite endurance", true, []Kind{Reduced},
			"fsbench run --suite endurance -n 1 --variants ext4 --size 512M --force --target simcard:sd-typical --endurance-scale 0.0005 --time-scale 0.01"},
		{"fsbench probe /dev/mmcblk0", false, []Kind{Reduced}, "fsbench probe card.img"},
		{"fsbench probe --class --destroy /dev/mmcblk0 /dev/mmcblk0", false, []Kind{Reduced},
			"fsbench probe --class --destroy card.img card.img --class-area 32M --class-runtime 1s"},
		{"fsbench merge -o all host guest && fsbench report all --summary", false, []Kind{Reduced, Run}, "fsbench report all --summary"},
		{"fsbench compare A B", true, []Kind{Run}, "fsbench compare r1 r2"},
		{"fsbench list --preset NAME", true, []Kind{Run}, "fsbench list --preset ext4-tuning"},
		{"fsbench merge -o DIR RUN RUN...", true, []Kind{Flags}, "fsbench merge -o DIR RUN RUN..."},
		{"fsbench merge -o", true, []Kind{Flags}, "fsbench merge -o"},
		{"sudo ./fsbench run --target device:/dev/sdb1 --destroy /dev/sdb1", false, []Kind{Reduced},
			"fsbench run --target device:LOOPDEV --destroy LOOPDEV -n 1 --variants ext4 --size 512M --force --tests mkfs,mount"},
		{"fsbench run --target vm --suite free-electrons", false, []Kind{Flags}, "fsbench run --target vm --suite free-electrons"},
		{"fsbench simcard serve --profile sd-typical --size 2G DIR", true, []Kind{Reduced}, "fsbench simcard serve --profile sd-typical --size 2G sim"},
		{"sudo ./fsbench board up", false, []Kind{Flags}, "fsbench board up"},
		{"make bench-farm FARM_BOARDS=emulated", true, []Kind{MakeDry}, "make bench-farm FARM_BOARDS=emulated"},
		{"go test ./cmd/fsbench -run Labgrid", true, []Kind{TestExists}, "go test ./cmd/fsbench -run Labgrid"},
		{"FSBENCH_HEAPPROFILE=/tmp/heap.pprof /usr/bin/time -v fsbench run -o /tmp/res", false, []Kind{Reduced},
			"fsbench run -o tmp/res -n 1 --variants ext4 --size 512M --force --tests mkfs,mount"},
	}
	for _, tt := range tests {
		steps, err := Plan(Command{File: "x.md", Line: 1, Text: tt.text, Inline: tt.inline}, map[string]string{})
		if err != nil {
			t.Errorf("Plan(%q): %v", tt.text, err)
			continue
		}
		var kinds []Kind
		for _, s := range steps {
			kinds = append(kinds, s.Kind)
		}
		if !slices.Equal(kinds, tt.kind) {
			t.Errorf("Plan(%q) kinds %v, want %v", tt.text, kinds, tt.kind)
			continue
		}
		if got := strings.Join(steps[len(steps)-1].Argv, " "); got != tt.argv {
			t.Errorf("Plan(%q) argv\n got %q\nwant %q", tt.text, got, tt.argv)
		}
	}
	if _, err := Plan(Command{Text: "rm -rf /"}, map[string]string{}); err == nil {
		t.Error("a command no rule knows was planned")
	}
	vars := map[string]string{}
	steps, err := Plan(Command{Text: "V=ext4,vfat"}, vars)
	if err != nil || steps[0].Kind != Assign || vars["V"] != "ext4,vfat" {
		t.Errorf("assignment: %v %v %v", steps, err, vars)
	}
}

// TestDocuments is make docs-check's quick form, in make test: every command of README.md,
// ARCHITECTURE.md and docs/*.md is known to a rule, the fsbench commands' subcommands and flags
// exist in the binary, the make targets and the scripts are there. make docs-check runs the
// commands for real.
func TestDocuments(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	steps, problems, err := Steps(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if len(steps) < 50 {
		t.Fatalf("only %d commands found in the documents: is the extraction broken?", len(steps))
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skipf("make is not installed (Debian package make): %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "fsbench")
	build := exec.Command("go", "build", "-o", bin, "./cmd/fsbench")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building fsbench: %v\n%s", err, out)
	}
	c := &Checker{Root: root, Scratch: dir, Bin: bin}
	for _, s := range steps {
		if r := c.Check(context.Background(), s); r.Err != nil {
			t.Errorf("%s: %s: %v\n%s", s.Cmd.Where(), s.Cmd.Text, r.Err, r.Output)
		}
	}
}

// TestCodeMapNamesEveryPackage: ARCHITECTURE.md names every package under an internal/ folder,
// so that the map cannot go stale.
func TestCodeMapNamesEveryPackage(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	arch, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	missing, err := Unmapped(root, arch)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("ARCHITECTURE.md does not name these packages (add a line \"- `PATH`: what it is for\"): %s", strings.Join(missing, ", "))
	}
}

// TestCodeMapMissingPackageFails: the map with one package's line removed fails the check,
// naming that package (and only it).
func TestCodeMapMissingPackageFails(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	arch, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	removed := false
	for _, l := range strings.Split(string(arch), "\n") {
		if strings.HasPrefix(l, "- `internal/cli`") {
			removed = true
			continue
		}
		kept = append(kept, l)
	}
	if !removed {
		t.Fatal("ARCHITECTURE.md has no line starting with - `internal/cli`: the test needs one to remove")
	}
	before, err := Unmapped(root, arch)
	if err != nil {
		t.Fatal(err)
	}
	after, err := Unmapped(root, []byte(strings.Join(kept, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	added := slices.DeleteFunc(slices.Clone(after), func(p string) bool { return slices.Contains(before, p) })
	if !slices.Equal(added, []string{"internal/cli"}) {
		t.Errorf("with internal/cli's line removed, Unmapped adds %q, want [internal/cli]", added)
	}
}
