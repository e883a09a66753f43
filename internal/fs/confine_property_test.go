package fs

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/confine"
	"github.com/fsbench/fsbench/internal/testkit/testdev"
)

// TestConfinedWords is the property test of the jail: whatever words a tool is given, it
// writes no device but the one under test and no file outside its private directory. For each
// mkfs and image builder it generates words from the tool's own option table (grammars):
// every option in every spelling getopt accepts (alone, clustered, value attached or separate,
// long, abbreviated, sub-options), with values that name a decoy device (by absolute path,
// through a symlink in the working directory, by a relative name, through /proc/1/root), a file
// outside the run, or nothing in particular, and positional words. Each word list runs through
// the real tool in the jail (confine.CombinedOutput, so the word check saves nothing) against a
// scratch loop device, beside a decoy loop device: after every run the decoy's write and discard
// counters (/sys/block/loopN/stat) must not have moved and the outside directory must be empty;
// after every tool the decoy's sha256 must be what it was. The log shows, per tool, how many
// word lists the word check would have refused and how many of those the tool ran to success,
// and a control: some of the same words run without the jail against a control device, which
// they do write.
//
// FSBENCH_CONFINE_WORDS sets the number of word lists per tool (default 200; make test-faults
// runs the default, make test with -short skips the test).
func TestConfinedWords(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every mkfs a few hundred times (-short)")
	}
	sys := needConfinement(t)
	perTool := 200
	if v, err := strconv.Atoi(os.Getenv("FSBENCH_CONFINE_WORDS")); err == nil && v > 0 {
		perTool = v
	}
	dut := attachLoop(t, imageSize)
	decoy := testdev.Loop(t, imageSize, "the decoy's data, which no tool may touch ")
	control := attachLoop(t, imageSize)
	outside := t.TempDir()
	before := testdev.Sum(t, decoy)
	t.Logf("device under test %s, decoy %s (sha256 %s), control %s, outside directory %s", dut, decoy, before[:16], control, outside)

	type tally struct {
		tool                               string
		words, refused, ran, refusedRanOK  int
		namesDecoy, namesDecoyOK, controls int
		controlWrites                      []string
	}
	var rows []tally
	for _, name := range []string{"ext4", "xfs", "btrfs", "f2fs", "nilfs2", "vfat", "squashfs", "erofs"} {
		k, _ := Lookup(name)
		tool, err := sys.LookPath(k.Tool)
		if err != nil {
			t.Logf("%s: %s not installed (Debian package %s): skipped", name, k.Tool, k.Package)
			continue
		}
		dir := t.TempDir() // the tool's working directory: the symlinks to the decoy live here
		g := newWordGen(k, decoy, dir, outside)
		words := g.words(perTool, rand.New(rand.NewPCG(1, uint64(len(name)))))
		row := tally{tool: k.Tool, words: len(words)}
		src, _ := sourceTree(t)
		img := filepath.Join(t.TempDir(), "image")
		for i, w := range words {
			if err := os.WriteFile(img, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			argv := g.argv(dut, src, img, w)
			refused := CheckMkfsArgs(k, w) != nil
			if refused {
				row.refused++
			}
			w0 := writes(t, decoy)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_, admin := sysAdmin(tool, argv)
			spec := confine.Spec{Devices: []string{dut}, Dir: dir, Env: toolEnv(), WaitDelay: time.Second, SysAdmin: admin}
			if k.ReadOnly {
				spec.Devices, spec.Read, spec.Write = nil, []string{src}, []string{img}
			}
			out, err := confine.CombinedOutput(ctx, spec, tool, argv...)
			cancel()
			if _, setup := err.(*confine.SetupError); setup {
				t.Fatalf("%s %q: %v", k.Tool, w, err)
			}
			row.ran++
			if err == nil && refused {
				row.refusedRanOK++
			}
			if g.namesDecoy(w) {
				row.namesDecoy++
				if err == nil {
					row.namesDecoyOK++
				}
			}
			if w1 := writes(t, decoy); w1 != w0 {
				t.Errorf("%s %s: the decoy was written (stat %s -> %s); the tool said:\n%s", k.Tool, quoteWords(w), w0, w1, out)
			}
			if left, _ := os.ReadDir(outside); len(left) > 0 {
				t.Errorf("%s %s: wrote %s outside its directory", k.Tool, quoteWords(w), left[0].Name())
				os.RemoveAll(filepath.Join(outside, left[0].Name()))
			}
			g.clean()
			if testing.Verbose() && i < 3 {
				t.Logf("%s %s -> %v", k.Tool, quoteWords(w), err)
			}
		}
		if got := testdev.Sum(t, decoy); got != before {
			t.Fatalf("after %s the decoy's sha256 is %s, was %s", k.Tool, got, before)
		}
		// The control: the same kind of words, without the jail, on the control device.
		for _, w := range g.controls(control) {
			c0 := writes(t, control)
			argv := g.argv(dut, src, img, w)
			cmd := exec.Command(tool, argv...)
			cmd.Dir, cmd.Env = dir, toolEnv()
			out, err := cmd.CombinedOutput()
			row.controls++
			wrote := writes(t, control) != c0
			files, _ := os.ReadDir(outside)
			switch {
			case wrote:
				row.controlWrites = append(row.controlWrites, quoteWords(w)+" wrote "+control)
			case len(files) > 0:
				row.controlWrites = append(row.controlWrites, quoteWords(w)+" wrote "+filepath.Join(outside, files[0].Name()))
			default:
				t.Logf("control %s %s wrote nothing (%v): %s", k.Tool, quoteWords(w), err, lastLine(string(out)))
			}
			os.RemoveAll(outside)
			os.Mkdir(outside, 0o755)
			g.clean()
		}
		rows = append(rows, row)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-11s %6s %8s %9s %14s %12s %14s  %s\n", "tool", "words", "ran", "check", "check-refused", "name the", "of those the", "without the jail (control)")
	fmt.Fprintf(&b, "%-11s %6s %8s %9s %14s %12s %14s\n", "", "", "jailed", "refuses", "tool ran OK", "decoy", "tool ran OK")
	for _, r := range rows {
		ctl := "-"
		if len(r.controlWrites) > 0 {
			ctl = strings.Join(r.controlWrites, "; ")
		}
		fmt.Fprintf(&b, "%-11s %6d %8d %9d %14d %12d %14d  %d of %d word lists wrote: %s\n", r.tool, r.words, r.ran, r.refused, r.refusedRanOK,
			r.namesDecoy, r.namesDecoyOK, len(r.controlWrites), r.controls, ctl)
	}
	var words, refused, refusedOK int
	for _, r := range rows {
		words, refused, refusedOK = words+r.ran, refused+r.refused, refusedOK+r.refusedRanOK
	}
	fmt.Fprintf(&b, "%d word lists ran in the jail; the word check would have refused %d of them, and the tools ran %d of those to success.\n", words, refused, refusedOK)
	fmt.Fprintf(&b, "decoy %s: sha256 %s before and after, write and discard counters unchanged after every run: the jail, not the word check, kept it intact\n", decoy, before)
	t.Log(b.String())
	for _, r := range rows {
		if r.words < perTool {
			t.Errorf("%s: only %d word lists generated, want %d", r.tool, r.words, perTool)
		}
	}
}

// needConfinement skips without root, fails when root cannot confine, and returns the machine.
func needConfinement(t *testing.T) System {
	t.Helper()
	needRoot(t)
	if err := Confinement(); err != nil {
		t.Fatalf("confinement unavailable as root: %v", err)
	}
	sys, err := HostSystem()
	if err != nil {
		t.Fatal(err)
	}
	return sys
}

// wordGen generates word lists for one tool from its grammar.
type wordGen struct {
	k       Kind
	g       grammar
	dir     string
	outside string
	bad     []string // values that name the decoy or a place outside the run
	benign  []string
	decoy   string
}

// The symlinks in the tool's working directory: a relative name has no "/".
const (
	linkAbs = "card"     // -> the decoy's absolute path
	linkRel = "card-rel" // -> the decoy through ../../.., relative
	linkOut = "out"      // -> the outside directory
)

func newWordGen(k Kind, decoy, dir, outside string) *wordGen {
	base := filepath.Base(decoy)
	wg := &wordGen{k: k, g: grammars[k.Name], dir: dir, outside: outside, decoy: decoy,
		bad: []string{decoy, linkAbs, "./" + linkAbs, linkRel, base, "../../../../../../dev/" + base, "/proc/1/root" + decoy,
			"/proc/self/root" + decoy, "/proc/self/cwd/" + linkAbs, filepath.Join(outside, "f"), linkOut + "/f", "/dev/" + base + "/"},
		benign: []string{"1", "4096", "single", "0", "16m", "zstd"},
	}
	wg.clean()
	return wg
}

// clean empties the working directory but for the symlinks (and a pseudo file for mksquashfs).
func (wg *wordGen) clean() {
	entries, _ := os.ReadDir(wg.dir)
	for _, e := range entries {
		os.RemoveAll(filepath.Join(wg.dir, e.Name()))
	}
	rel, _ := filepath.Rel(wg.dir, wg.decoy)
	for name, to := range map[string]string{linkAbs: wg.decoy, linkRel: rel, linkOut: wg.outside} {
		if err := os.Symlink(to, filepath.Join(wg.dir, name)); err != nil {
			panic(err)
		}
	}
	// A pseudo file whose command writes the decoy (mksquashfs -pf).
	os.WriteFile(filepath.Join(wg.dir, "pseudo"), []byte("x f 644 0 0 dd if=/dev/zero of="+wg.decoy+" bs=4096 count=1 conv=notrunc\n"), 0o644)
}

// namesDecoy reports whether a word list names the decoy in some way.
func (wg *wordGen) namesDecoy(w []string) bool {
	s := strings.Join(w, " ")
	return strings.Contains(s, filepath.Base(wg.decoy)) || strings.Contains(s, linkAbs) || strings.Contains(s, "pseudo")
}

// argv is the command line fsbench would give the tool, with w as the variant's words.
func (wg *wordGen) argv(dut, src, img string, w []string) []string {
	if wg.k.ReadOnly {
		a, err := buildImageArgs(wg.k, src, img, w)
		if err != nil {
			panic(err)
		}
		return a
	}
	a, err := mkfsArgs(wg.k, dut, w)
	if err != nil {
		panic(err)
	}
	return a
}

// words returns n word lists (at least), the dangerous ones first, the rest sampled.
func (wg *wordGen) words(n int, r *rand.Rand) [][]string {
	var all [][]string
	add := func(w ...string) { all = append(all, w) }
	vals := append(slices.Clone(wg.bad), wg.benign...)
	if wg.k.Name == "squashfs" {
		// A pseudo definition's command runs in the jail: it must not reach the decoy either.
		for _, v := range []string{wg.decoy, linkAbs, "/proc/1/root" + wg.decoy} {
			vals = append(vals, "x f 644 0 0 dd if=/dev/zero of="+v+" bs=4096 count=1 conv=notrunc")
		}
		vals = append(vals, "pseudo")
	}
	// Positional words.
	for _, v := range wg.bad {
		add(v)
	}
	flags := wg.flagLetters()
	// Short options from the optstring.
	for i := 0; i < len(wg.g.short); i++ {
		c := wg.g.short[i]
		if c == ':' {
			continue
		}
		opt := "-" + string(c)
		arg, _ := wg.g.shortArg(c)
		if arg == noArg {
			add(opt)
			if len(flags) > 0 {
				add("-" + flags[r.IntN(len(flags))] + string(c))
			}
			continue
		}
		for _, v := range wg.values(opt, vals) {
			add(opt + v)
			add(opt, v)
			if len(flags) > 0 {
				add("-" + flags[r.IntN(len(flags))] + string(c) + v)
			}
		}
	}
	// Long options, written out and abbreviated.
	for _, o := range wg.g.long {
		long := "--" + o.name
		short := long[:min(len(long), 5)]
		if o.arg == noArg {
			add(long)
			continue
		}
		canon := long
		if o.short != 0 {
			canon = "-" + string(o.short)
		}
		for _, v := range wg.values(canon, vals) {
			add(long + "=" + v)
			if o.arg == reqArg {
				add(long, v)
				add(short + "=" + v)
			}
		}
	}
	// mksquashfs's single-dash options.
	for _, o := range wg.g.single {
		if o.arg == noArg {
			add(o.name)
			continue
		}
		for _, v := range wg.values(o.name, vals) {
			add(o.name, v)
		}
	}
	// Every word list that names the decoy or the outside first, then a sample of the rest.
	var danger, rest [][]string
	for _, w := range all {
		if strings.Contains(strings.Join(w, " "), "card") || strings.Contains(strings.Join(w, " "), filepath.Base(wg.decoy)) ||
			strings.Contains(strings.Join(w, " "), wg.outside) || strings.Contains(strings.Join(w, " "), linkOut) {
			danger = append(danger, w)
		} else {
			rest = append(rest, w)
		}
	}
	r.Shuffle(len(danger), func(i, j int) { danger[i], danger[j] = danger[j], danger[i] })
	r.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	out := append(danger, rest...)
	if len(out) > n {
		out = out[:n]
	}
	// Too few: repeat with two lists joined, as a configuration may.
	for i := 0; len(out) < n && len(all) > 1; i++ {
		out = append(out, append(slices.Clone(all[r.IntN(len(all))]), all[r.IntN(len(all))]...))
	}
	return out
}

// values are the values to try for an option: for a sub-option list, each key with each value,
// and a list that hides a bad key after a good one.
func (wg *wordGen) values(canon string, vals []string) []string {
	sub, ok := wg.g.subs[canon]
	if !ok {
		return vals
	}
	var out []string
	for _, key := range sub.keys {
		for _, v := range wg.bad[:6] {
			out = append(out, key+"="+v)
		}
		out = append(out, key, sub.keys[0]+"=1,"+key+"="+linkAbs)
	}
	return out
}

// flagLetters are the tool's short options without a value, to cluster others after.
func (wg *wordGen) flagLetters() []string {
	var out []string
	for i := 0; i < len(wg.g.short); i++ {
		c := wg.g.short[i]
		if arg, ok := wg.g.shortArg(c); ok && arg == noArg && wg.g.refused["-"+string(c)] == "" {
			out = append(out, string(c))
		}
	}
	return out
}

// controls are word lists that, without the jail, write the control device or the outside
// directory (each tool's ways, as far as it has any).
func (wg *wordGen) controls(control string) [][]string {
	out := filepath.Join(wg.outside, "f")
	switch wg.k.Name {
	case "ext4":
		// An external journal on the control device (made a journal device first).
		if b, err := exec.Command("mke2fs", "-F", "-q", "-O", "journal_dev", control).CombinedOutput(); err != nil {
			panic(fmt.Sprintf("mke2fs -O journal_dev: %v: %s", err, b))
		}
		return [][]string{{"-FJdevice=" + control}, {"-Fz" + out}}
	case "xfs":
		os.Remove(filepath.Join(wg.dir, "ctl"))
		os.Symlink(control, filepath.Join(wg.dir, "ctl"))
		return [][]string{{"-fllogdev=ctl"}, {"-r", "rtdev=" + control}}
	case "btrfs":
		return [][]string{{"-m", "single", control}}
	case "f2fs":
		return [][]string{{"-fc" + control}}
	case "nilfs2":
		return [][]string{{control}}
	case "squashfs":
		return [][]string{{"-p", "x f 644 0 0 dd if=/dev/zero of=" + control + " bs=4096 count=1 conv=notrunc"}}
	case "erofs":
		return [][]string{{"--chunksize=4096", "--blobdev=" + control}}
	}
	return nil
}

// writes is the decoy's writes, sectors written, discards and sectors discarded from
// /sys/block/<dev>/stat: any write or discard that reached it moves them.
func writes(t *testing.T, dev string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "stat"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) < 15 {
		return strings.Join(f[4:7], " ")
	}
	return strings.Join([]string{f[4], f[6], f[11], f[13]}, " ")
}

func quoteWords(w []string) string {
	q := make([]string, len(w))
	for i, s := range w {
		q[i] = shellQuote(s)
	}
	return strings.Join(q, " ")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestConfinedIssueWords runs the words that once got past the word check through the real tools
// in the jail, without the check, beside a decoy: each must leave the decoy and the outside
// untouched, whatever the tool makes of it.
func TestConfinedIssueWords(t *testing.T) {
	sys := needConfinement(t)
	dut := attachLoop(t, imageSize)
	decoy := testdev.Loop(t, imageSize, "the decoy's data, which no tool may touch ")
	outside := t.TempDir()
	dir := t.TempDir()
	if err := os.Symlink(decoy, filepath.Join(dir, "card")); err != nil {
		t.Fatal(err)
	}
	before := testdev.Sum(t, decoy)
	for _, tc := range []struct{ fs, words string }{
		{"btrfs", "-m single " + decoy},
		{"f2fs", "-fc" + decoy},
		{"xfs", "-fllogdev=card"},
		{"ext4", "-FJdevice=" + decoy},
		{"ext4", "-Fz" + filepath.Join(outside, "undo")},
		{"ext4", decoy},
		{"ext4", "-qd" + outside},
	} {
		k, _ := Lookup(tc.fs)
		tool, err := sys.LookPath(k.Tool)
		if err != nil {
			t.Logf("%s not installed", k.Tool)
			continue
		}
		w := strings.Fields(tc.words)
		argv, _ := mkfsArgs(k, dut, w)
		w0 := writes(t, decoy)
		_, admin := sysAdmin(tool, argv)
		out, err := confine.CombinedOutput(context.Background(), confine.Spec{Devices: []string{dut}, Dir: dir, Env: toolEnv(),
			WaitDelay: time.Second, SysAdmin: admin}, tool, argv...)
		t.Logf("%s %s in the jail: %v: %s", k.Tool, tc.words, err, lastLine(trimUsage(strings.TrimSpace(string(out)))))
		if writes(t, decoy) != w0 {
			t.Errorf("%s %s wrote the decoy", k.Tool, tc.words)
		}
		if left, _ := os.ReadDir(outside); len(left) > 0 {
			t.Errorf("%s %s wrote %s outside", k.Tool, tc.words, left[0].Name())
		}
	}
	if testdev.Sum(t, decoy) != before {
		t.Fatal("the decoy's sha256 changed")
	}
	t.Logf("decoy %s: sha256 %s before and after", decoy, before)
}

// TestConfinedFlashMakers calls the raw-flash image builders, mkfs.jffs2 and mkfs.ubifs, through
// the jail as the free-electrons suite does (BuildFlashImage), with words naming a decoy device as
// their output: a configuration never gets them there (jffs2 and ubifs take no mkfs words), so
// this is what the jail alone holds. The decoy must be byte-identical; the same words outside the
// jail write a control device (the refusals are the jail's).
func TestConfinedFlashMakers(t *testing.T) {
	sys := needConfinement(t)
	decoy := testdev.Loop(t, 32<<20, "the decoy's data, which no tool may touch ")
	control := testdev.Loop(t, 32<<20, "a control device, written on purpose ")
	before, ctlBefore := testdev.Sum(t, decoy), testdev.Sum(t, control)
	src, _ := sourceTree(t)
	ctx := WithWorkDir(context.Background(), t.TempDir())
	for _, tc := range []struct {
		fs   string
		args func(img, out string) []string // the builder's arguments, writing out
	}{
		// mkfs.jffs2 takes one output: the device in its place.
		{"jffs2", func(img, out string) []string {
			return []string{"-r", src, "-o", out, "-e", "131072", "-n"}
		}},
		{"jffs2", func(img, out string) []string {
			return []string{"-r", src, "--output=" + out, "-e", "131072", "-n"}
		}},
		{"jffs2", func(img, out string) []string {
			return []string{"-r", src, "--output=/proc/self/root" + out, "-e", "131072", "-n"}
		}},
		// mkfs.ubifs takes the last.
		{"ubifs", func(img, out string) []string {
			return []string{"-r", src, "-o", img, "-m", "2048", "-e", "126976", "-c", "100", "-x", "zlib", "-o", out}
		}},
	} {
		k, _ := Lookup(tc.fs)
		if _, err := sys.LookPath(k.Tool); err != nil {
			t.Logf("%s not installed (mtd-utils): skipped", k.Tool)
			continue
		}
		img := filepath.Join(t.TempDir(), tc.fs+".img")
		args := tc.args(img, decoy)
		err := BuildFlashImage(ctx, nil, k, src, img, args, true)
		t.Logf("%s in the jail: %v", k.Tool, err)
		if got := testdev.Sum(t, decoy); got != before {
			t.Fatalf("%s %v wrote the decoy", k.Tool, args)
		}
		// The control: outside the jail the same words write the device they name.
		path, _ := sys.LookPath(k.Tool)
		out, err := runPlain(context.Background(), path, tc.args(img, control))
		if got := testdev.Sum(t, control); got == ctlBefore {
			t.Errorf("%s outside the jail left the control device as it was (%v: %s): the jail's refusal proves nothing", k.Tool, err, lastLine(string(out)))
		}
		refill(t, control, "a control device, written on purpose ")
	}
}

// refill writes pattern over the whole device again.
func refill(t *testing.T, dev, pattern string) {
	t.Helper()
	f, err := os.OpenFile(dev, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := []byte(strings.Repeat(pattern, (1<<20)/len(pattern)+1))[:1<<20]
	for {
		if _, err := f.Write(chunk); err != nil {
			break // the end of the device
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}
