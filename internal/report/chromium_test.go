package report

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/results"
)

// chromiumPackage is the Debian package the browser test needs; CI installs it.
const chromiumPackage = "chromium"

// chromium runs headless Chromium with args on a fresh profile and returns its stdout. The
// browser starts helper processes (zygote, renderer, GPU); they all live in the process
// group of the one started here, and only that group is killed, on timeout and after exit.
func chromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + filepath.Join(dir, "profile")}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	// HOME and XDG dirs in the temp dir: Chromium writes caches there, not in root's home.
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_CACHE_HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		// Helpers that outlive the browser process: same group, started by this test.
		if kerr := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); kerr != nil && !errors.Is(kerr, syscall.ESRCH) {
			t.Logf("killing chromium's process group: %v", kerr)
		}
	}
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return out.Bytes()
}

// TestHTMLInChromium opens the report of the frozen run in a real browser: the page must
// render (a screenshot that is not blank and shows the rating colours) and its DOM must hold
// the sections in order.
func TestHTMLInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser; skipped with -short")
	}
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skipf("chromium is not installed: apt-get install -y %s", chromiumPackage)
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var buf bytes.Buffer
	if err := HTML(&buf, loadRun(t), HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + page

	for _, size := range []struct {
		name string
		w, h int
	}{{"desktop", 1200, 2000}, {"phone", 390, 1600}} {
		t.Run(size.name, func(t *testing.T) {
			shot := filepath.Join(dir, size.name+".png")
			chromium(t, bin, "--screenshot="+shot, "--window-size="+itoa(size.w)+","+itoa(size.h), url)
			f, err := os.Open(shot)
			if err != nil {
				t.Fatalf("no screenshot: %v", err)
			}
			defer f.Close()
			img, err := png.Decode(f)
			if err != nil {
				t.Fatalf("screenshot: %v", err)
			}
			if b := img.Bounds(); b.Dx() != size.w || b.Dy() != size.h {
				t.Errorf("screenshot is %v, want %dx%d", b, size.w, size.h)
			}
			colours, nonWhite, green := pixelStats(img)
			total := size.w * size.h
			t.Logf("%s: %d colours, %.1f %% not white, %d pixels of the 'excellent' green", size.name, colours, 100*float64(nonWhite)/float64(total), green)
			if colours < 16 || nonWhite < total/50 {
				t.Errorf("screenshot looks blank: %d colours, %d of %d pixels not white", colours, nonWhite, total)
			}
			// The verdict and matrix are at the top: their rating colours must be on screen,
			// which also proves the inline CSS was applied.
			if green < 500 {
				t.Errorf("only %d pixels of the rating colour #1a9850: styles not applied?", green)
			}
			if os.Getenv("FSBENCH_KEEP_SCREENSHOT") != "" {
				os.WriteFile(filepath.Join(os.TempDir(), "fsbench-report-"+size.name+".png"), mustRead(t, shot), 0o644)
			}
		})
	}

	dom := string(chromium(t, bin, "--dump-dom", url))
	last := -1
	for _, h := range sections {
		i := strings.Index(dom, h)
		if i < 0 || i < last {
			t.Errorf("rendered DOM: section %q missing or out of order", h)
		}
		last = i
	}
	for _, want := range []string{"erofs-lz4hc", "n/a (ro)", "not measured in this run", "<svg"} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered DOM lacks %q", want)
		}
	}

	// A run with traces: the flash section and its charts render.
	buf.Reset()
	if err := HTML(&buf, loadWearRun(t), HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	wear := filepath.Join(dir, "wear.html")
	if err := os.WriteFile(wear, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom = string(chromium(t, bin, "--dump-dom", "file://"+wear))
	for _, want := range []string{"What the flash sees", `id="chart-write-sizes"`, `id="chart-block_amplification"`, "sd-typical would last", "card WA"} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered DOM of the traced run lacks %q", want)
		}
	}
}

func pixelStats(img image.Image) (colours, nonWhite, green int) {
	seen := map[uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			seen[r<<16|g<<8|bl] = true
			if r < 250 || g < 250 || bl < 250 {
				nonWhite++
			}
			if near(r, 0x1a) && near(g, 0x98) && near(bl, 0x50) {
				green++
			}
		}
	}
	return len(seen), nonWhite, green
}

func near(a, b uint32) bool { return a+3 >= b && a <= b+3 }

func itoa(n int) string { return strconv.Itoa(n) }

func mustRead(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// overflowProbe is added to a copy of the page (the report itself runs no script): it writes
// into the document what overflows the window horizontally, so that --dump-dom shows it.
const overflowProbe = `<script>
(function () {
  var out = [];
  var w = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > w + 1) out.push("page " + document.documentElement.scrollWidth + ">" + w);
  document.querySelectorAll(".scroll, table, svg, pre").forEach(function (e, i) {
    var r = e.getBoundingClientRect();
    if (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== "visible") out.push((e.id || e.className || e.tagName) + "#" + i + " scrolls " + e.scrollWidth + ">" + e.clientWidth);
    var framed = false;
    for (var a = e.parentElement; a; a = a.parentElement) {
      if (getComputedStyle(a).overflowX === "auto" || getComputedStyle(a).overflowX === "scroll") framed = true;
    }
    if (r.right > w + 1 && !framed) out.push((e.id || e.className || e.tagName) + "#" + i + " ends at " + Math.round(r.right) + ">" + w);
  });
  var p = document.createElement("p");
  p.id = "fsbench-overflow";
  p.textContent = "OVER" + "FLOW[" + out.join("; ") + "]";
  document.body.appendChild(p);
})();
</script>`

// loadDefaultRun is a real default run (1 GiB, 5 repetitions, 8 variants; 2026-11-24),
// trimmed to what the report reads: its matrix is the widest a default run makes (every
// column, flash wear and card time, cells marked busy, variants with their options), and at
// 1280 px its card-time column was cut off behind the frame's scrollbar.
func loadDefaultRun(t *testing.T) *results.Run {
	t.Helper()
	r, err := results.Load(filepath.Join("testdata", "default.json"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestHTMLFits checks, in a real browser, that the report of a traced run (its widest: the
// matrix with the wear column, the lifetime table) needs no horizontal scrolling in a 1280 px
// window, and that on a phone only the wide tables scroll inside their frames, never the page.
func TestHTMLFits(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser; skipped with -short")
	}
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skipf("chromium is not installed: apt-get install -y %s", chromiumPackage)
	}
	dir := t.TempDir()
	for _, run := range []struct {
		name string
		load func(*testing.T) *results.Run
	}{{"run", loadRun}, {"wear", loadWearRun}, {"default", loadDefaultRun}} {
		var buf bytes.Buffer
		if err := HTML(&buf, run.load(t), HTMLOptions{}); err != nil {
			t.Fatal(err)
		}
		page := strings.Replace(buf.String(), "</body>", overflowProbe+"</body>", 1)
		file := filepath.Join(dir, run.name+".html")
		if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, size := range []struct {
			name      string
			w         int
			scrollsOK bool // a table may scroll inside its frame
		}{{"1280px", 1280, false}, {"phone", 390, true}} {
			dom := string(chromium(t, bin, "--dump-dom", "--window-size="+itoa(size.w)+",2000", "file://"+file))
			const mark = `<p id="fsbench-overflow">OVERFLOW[`
			i := strings.Index(dom, mark)
			if i < 0 {
				t.Fatalf("%s %s: the probe did not run", run.name, size.name)
			}
			found := dom[i+len(mark) : i+strings.Index(dom[i:], "]")]
			var bad []string
			for _, f := range strings.Split(found, "; ") {
				if f == "" || size.scrollsOK && strings.Contains(f, " scrolls ") {
					continue
				}
				bad = append(bad, f)
			}
			if len(bad) > 0 {
				t.Errorf("%s report at %s: %s", run.name, size.name, strings.Join(bad, "; "))
			}
		}
	}
}
