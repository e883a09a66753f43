package export

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/testkit/golden"
	"github.com/fsbench/fsbench/internal/testkit/slow"
)

func f64(x float64) *float64 { return &x }

// farmRun is a board's run with what the formats must carry: measured cells with secondary
// figures, a live power-cut campaign's figures, a cell whose every repetition failed, one not
// applicable, a warm-up to leave out, and a variant the board could not make.
func farmRun() *results.Run {
	started := time.Date(2026, 11, 28, 17, 4, 5, 0, time.UTC)
	r := &results.Run{Schema: results.Schema, Tool: results.Tool{Name: "fsbench", Version: "v0.9.0"}, Status: results.RunComplete,
		Started: started, Machine: results.Machine{Hostname: "rpi4", Arch: "arm64", Kernel: "6.1.0-56-arm64"},
		Target: results.Target{Kind: results.KindDevice, Device: "/dev/mmcblk0p2"},
		Remote: &results.Remote{Target: "labgrid:rpi4/dev/mmcblk0p2", Hostname: "rpi4", Model: "Raspberry Pi 4 Model B Rev 1.4", Compatible: []string{"raspberrypi,4-model-b", "brcm,bcm2711"}},
		Variants: []results.Variant{{Name: "ext4", FS: "ext4", Status: results.OK}, {Name: "ext4/noatime,dirsync", FS: "ext4", MountOptions: "noatime,dirsync", Status: results.OK},
			{Name: "f2fs", FS: "f2fs", Status: results.Skipped, Reason: "the board's kernel has no f2fs"}}}
	add := func(m results.Measurement) { r.Measurements = append(r.Measurements, m) }
	add(results.Measurement{Variant: "ext4", Test: "mount", Rep: 0, Warmup: true, Status: results.OK, Value: f64(99), Unit: "s"})
	for i, v := range []float64{0.021, 0.019, 0.025} {
		add(results.Measurement{Variant: "ext4", Test: "mount", Rep: i + 1, Status: results.OK, Value: f64(v), Unit: "s", WallSeconds: v})
		add(results.Measurement{Variant: "ext4/noatime,dirsync", Test: "write", Rep: i + 1, Status: results.OK, Value: f64(10 + v), Unit: "MB/s", WallSeconds: 2})
	}
	pc := &results.PowerCut{Cuts: 20, Safe: results.Proportion{Count: 17, Of: 20, Pct: 85}, Live: &results.LivePowerCut{Switch: "labgrid place rpi4", CutsPerHour: 41.5}}
	add(results.Measurement{Variant: "ext4", Test: "powercut", Rep: 1, Status: results.OK, Value: f64(85), Unit: "%", PowerCut: pc,
		Extra: map[string]float64{"cuts": 20, "recovery_p50_s": 0.31, "cuts_per_hour": 41.5, "ack_loss_pct": 15}})
	add(results.Measurement{Variant: "ext4/noatime,dirsync", Test: "read", Rep: 1, Status: results.Failed, Error: "reading copy-1/etc/x: input/output error"})
	add(results.Measurement{Variant: "ext4/noatime,dirsync", Test: "powercut", Rep: 1, Status: results.NA, Note: "not on this target"})
	return r
}

// findVenv is a venv's python under /opt (or where env names it), with module importable.
func findVenv(t *testing.T, env, dflt, module, setup string) string {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		dir = dflt
	}
	py := filepath.Join(dir, "bin", "python3")
	if out, err := exec.Command(py, "-c", "import "+module).CombinedOutput(); err != nil {
		t.Skipf("%s is not installed in %s (%v: %s): %s installs it", module, dir, err, strings.TrimSpace(string(out)), setup)
	}
	return dir
}

// kcidbValidate runs kcidb-io's own schema validation on a report file.
func kcidbValidate(py, file string) error {
	const script = `import json, sys, kcidb_io
data = json.load(open(sys.argv[1]))
kcidb_io.schema.V5_0.validate_exactly(data)
kcidb_io.schema.LATEST.validate(data)
print("valid: kcidb-io schema v5.0 exactly, and the latest v%d.%d" % (kcidb_io.schema.LATEST.major, kcidb_io.schema.LATEST.minor))`
	out, err := exec.Command(py, "-c", script, file).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, lastLines(string(out), 5))
	}
	return nil
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// TestKCIDBPassesKCIDBIOValidation writes the KCIDB report of a board's run (golden file) and
// has kcidb-io, KernelCI's own library, validate it against its schema; a report broken on
// purpose must fail that validation, so that a pass means something.
func TestKCIDBPassesKCIDBIOValidation(t *testing.T) {
	var b bytes.Buffer
	n, err := KCIDB(&b, farmRun())
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "kcidb.golden.json", b.Bytes())
	var rep kcidbReport
	if err := json.Unmarshal(b.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, tt := range rep.Tests {
		status[tt.Path] = tt.Status
	}
	for path, want := range map[string]string{"fsbench.ext4.mount": kcidbDone, "fsbench.ext4.powercut.cuts_per_hour": kcidbDone,
		"fsbench.ext4_noatime_dirsync.read": kcidbError, "fsbench.ext4_noatime_dirsync.powercut": kcidbSkip, "fsbench.f2fs": kcidbSkip} {
		if status[path] != want {
			t.Errorf("%s: status %q, want %q", path, status[path], want)
		}
	}
	if n != len(rep.Tests) {
		t.Errorf("KCIDB said %d tests, wrote %d", n, len(rep.Tests))
	}
	dir := findVenv(t, "FSBENCH_KCIDB_VENV", "/opt/fsbench-kcidb", "kcidb_io", "scripts/setup-ci-formats.sh")
	py := filepath.Join(dir, "bin", "python3")
	file := filepath.Join(t.TempDir(), "kcidb.json")
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := kcidbValidate(py, file); err != nil {
		t.Fatalf("kcidb-io refuses the report: %v", err)
	}
	// The control: a test without its build, and a status KCIDB does not know.
	bad := strings.Replace(strings.Replace(b.String(), `"status": "DONE"`, `"status": "MEASURED"`, 1), `"build_id"`, `"built_id"`, 1)
	if err := os.WriteFile(file, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := kcidbValidate(py, file); err == nil {
		t.Error("kcidb-io accepted a report with an unknown status and a test without its build: the validation proves nothing")
	}
}

// TestSQUADServerAcceptsMetrics starts a SQUAD server (the squad package, Django on SQLite) on
// 127.0.0.1, submits a board's run's metrics as SQUAD's submission API takes them, and reads
// them back through its API: every metric, its measurements and its unit.
func TestSQUADServerAcceptsMetrics(t *testing.T) {
	slow.Need(t, "starts a SQUAD server (Django migrations on SQLite take about a minute)")
	dir := findVenv(t, "FSBENCH_SQUAD_VENV", "/opt/fsbench-squad", "squad", "scripts/setup-ci-formats.sh")
	var metrics, meta bytes.Buffer
	r := farmRun()
	n, err := SQUADMetrics(&metrics, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := SQUADMetadata(&meta, r); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "squad-metrics.golden.json", metrics.Bytes())
	work := t.TempDir()
	env := append(os.Environ(), "DATABASE=ENGINE=django.db.backends.sqlite3:NAME="+filepath.Join(work, "db.sqlite3"),
		"SECRET_KEY=fsbench-test-only", "SQUAD_STORAGE_DIR="+filepath.Join(work, "storage"), "SQUAD_STATIC_DIR="+filepath.Join(work, "static"),
		"XDG_DATA_HOME="+work, "SQUAD_LOG_LEVEL=WARNING")
	admin := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(dir, "bin", "squad-admin"), args...)
		cmd.Env, cmd.Dir = env, work
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("squad-admin %s: %v\n%s", strings.Join(args, " "), err, lastLines(string(out), 20))
		}
		return string(out)
	}
	t0 := time.Now()
	admin("migrate", "--noinput")
	t.Logf("SQUAD's database made in %s", time.Since(t0).Round(time.Second))
	admin("users", "add", "fsbench", "--superuser", "--passwd", "fsbench-test-only")
	const token = "0123456789abcdef0123456789abcdef01234567"
	admin("users", "set-token", "fsbench", token)
	admin("shell", "-c", "from squad.core.models import Group; g = Group.objects.create(slug='farm'); g.projects.create(slug='cards')")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	srv := exec.Command(filepath.Join(dir, "bin", "squad-admin"), "runserver", "--noreload", addr)
	srv.Env, srv.Dir = env, work
	var srvLog bytes.Buffer
	srv.Stdout, srv.Stderr = &srvLog, &srvLog
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	base := "http://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		if resp, err := http.Get(base + "/api/version/"); err == nil {
			resp.Body.Close()
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the SQUAD server did not answer on %s: %s", addr, lastLines(srvLog.String(), 20))
		}
		time.Sleep(300 * time.Millisecond)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for field, data := range map[string][]byte{"metrics": metrics.Bytes(), "metadata": meta.Bytes()} {
		fw, err := mw.CreateFormFile(field, field+".json")
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(data)
	}
	mw.Close()
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/api/submit/farm/cards/"+RunID(r)+"/rpi4", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Auth-Token", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("SQUAD refused the metrics: %s: %s\n%s", resp.Status, answer, lastLines(srvLog.String(), 20))
	}
	testrun := strings.TrimSpace(string(answer))
	type metric struct {
		Measurements []float64
		Unit         string
	}
	got := map[string]metric{}
	next := base + "/api/testruns/" + testrun + "/metrics/"
	for next != "" {
		resp, err := http.Get(next)
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Next    *string `json:"next"`
			Results []struct {
				Name         string    `json:"name"`
				Measurements []float64 `json:"measurement_list"`
				Unit         string    `json:"unit"`
			} `json:"results"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("SQUAD's metrics of test run %s: %v", testrun, err)
		}
		for _, m := range page.Results {
			got[m.Name] = metric{m.Measurements, m.Unit}
		}
		next = ""
		if page.Next != nil {
			next = *page.Next
		}
	}
	if len(got) != n {
		t.Errorf("SQUAD holds %d metrics of test run %s, fsbench sent %d: %v", len(got), testrun, n, got)
	}
	want := map[string]metric{"fsbench-ext4/mount": {[]float64{0.021, 0.019, 0.025}, "s"}, "fsbench-ext4/powercut-cuts_per_hour": {[]float64{41.5}, "1/h"},
		"fsbench-ext4_noatime_dirsync/write": {[]float64{10.021, 10.019, 10.025}, "MB/s"}}
	for name, w := range want {
		if g, ok := got[name]; !ok || !slices.Equal(g.Measurements, w.Measurements) || g.Unit != w.Unit {
			t.Errorf("SQUAD's %s: %+v (present %v), want %+v", name, g, ok, w)
		}
	}
	t.Logf("SQUAD accepted %d metrics as test run %s in %s", len(got), testrun, time.Since(t0).Round(time.Second))
}
