package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/report"
	"github.com/fsbench/fsbench/internal/results"
)

// TestReferenceBench (FSBENCH_BENCH=1, root, bonnie++ and fio installed) runs fsbench's bonnie
// and randio tests and then bonnie++ and fio with the same jobs on the same filesystem, and
// prints the ratios fsbench ÷ reference with the exact commands. Goals: bonnie within 15 %,
// randio within 10 %. It reports; it fails only when a tool fails.
func TestReferenceBench(t *testing.T) {
	if os.Getenv("FSBENCH_BENCH") != "1" {
		t.Skip("set FSBENCH_BENCH=1 to run the side-by-side benchmark against bonnie++ and fio")
	}
	for _, tool := range []string{"bonnie++", "fio"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (apt-get install bonnie++ fio)", tool)
		}
	}
	defer func(b BonnieParams, r RandParams) { Bonnie, Randio = b, r }(Bonnie, Randio)
	Bonnie.FileSize = 512 << 20
	Randio.FileSize, Randio.Runtime = 256<<20, 10*time.Second
	const size = 1536 << 20

	env, done := mounted(t, size, "bonnie,randio")
	defer done()
	k, _ := fs.Lookup("ext4")
	ours := map[string]results.Measurement{}
	v := plan.Variant{Name: "ext4", FS: "ext4"}
	if err := RunRepetition(context.Background(), env, v, k, 1, false, func(m results.Measurement) error { ours[m.Test] = m; return nil }); err != nil {
		t.Fatal(err)
	}
	// The references, on the same filesystem made afresh.
	ctx := context.Background()
	if err := fs.Mkfs(ctx, env.Run, k, env.Device, nil); err != nil {
		t.Fatal(err)
	}
	if err := fs.Mount(ctx, k, env.Device, env.Mountpoint, ""); err != nil {
		t.Fatal(err)
	}
	defer fs.Unmount(context.Background(), k, env.Mountpoint)

	ramMiB := mustRAM() >> 20
	bonnieCmd := []string{"bonnie++", "-d", env.Mountpoint, "-s", "512:8192:8192:3", "-r", "256", "-n", "16:0:0:1", "-u", "root", "-f", "-q", "-x", "1", "-m", "ext4"}
	out, err := exec.Command(bonnieCmd[0], bonnieCmd[1:]...).Output()
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(bonnieCmd, " "), err)
	}
	recs, err := report.ParseBonnieCSV(bytes.NewReader(lastLine(out)))
	if err != nil || len(recs) != 1 {
		t.Fatalf("bonnie++ output %q: %v", out, err)
	}
	b := recs[0]
	fmt.Printf("bonnie++: %s   (RAM %d MiB; -r 256 lets bonnie++ use a 512 MiB file)\n", strings.Join(bonnieCmd, " "), ramMiB)
	fmt.Printf("%-20s %14s %14s %14s %8s\n", "test", "fsbench", "fsbench-nosync", "reference", "ratio")
	pairs := []struct{ test, field string }{
		{BonnieWrite, "put_block"}, {BonnieRewrite, "rewrite"}, {BonnieRead, "get_block"}, {BonnieSeeks, "seeks"},
		{BonnieSeqCreate, "seq_create"}, {BonnieSeqStat, "seq_stat"}, {BonnieSeqDelete, "seq_del"},
		{BonnieRandCreate, "ran_create"}, {BonnieRandStat, "ran_stat"}, {BonnieRandDelete, "ran_del"},
	}
	for _, p := range pairs {
		printRatio(ours[p.test], b[p.field])
	}

	fioFile := filepath.Join(env.Mountpoint, "fio.file")
	jobs := []struct{ test, args string }{
		{RandSeqWrite, "--rw=write --bs=512k --size=256M --end_fsync=1"},
		{RandWrite4K, "--rw=randwrite --bs=4k --size=256M --runtime=10 --time_based --end_fsync=1"},
		{RandRead4K, "--rw=randread --bs=4k --size=256M --runtime=10 --time_based"},
	}
	for _, j := range jobs {
		args := append([]string{"--name=" + j.test, "--filename=" + fioFile, "--direct=1", "--iodepth=1", "--ioengine=psync", "--output-format=json"}, strings.Fields(j.args)...)
		out, err := exec.Command("fio", args...).Output()
		if err != nil {
			t.Fatalf("fio %s: %v", strings.Join(args, " "), err)
		}
		var res struct {
			Jobs []struct {
				Read, Write struct {
					BwBytes float64 `json:"bw_bytes"`
					IOPS    float64 `json:"iops"`
				}
			}
		}
		if err := json.Unmarshal(out, &res); err != nil || len(res.Jobs) != 1 {
			t.Fatalf("fio output: %v", err)
		}
		io := res.Jobs[0].Write
		if strings.Contains(j.args, "randread") {
			io = res.Jobs[0].Read
		}
		ref := io.IOPS
		if j.test == RandSeqWrite {
			ref = io.BwBytes / 1e6
		}
		fmt.Printf("fio %s\n", strings.Join(args, " "))
		printRatio(ours[j.test], strconv.FormatFloat(ref, 'f', 1, 64))
	}
}

func lastLine(b []byte) []byte {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return []byte(lines[len(lines)-1] + "\n")
}

func printRatio(m results.Measurement, ref string) {
	our, nosync := "n/a", ""
	if m.Value != nil {
		our = strconv.FormatFloat(*m.Value, 'f', 1, 64)
	} else {
		our = "(" + m.Note + ")"
	}
	if v, ok := m.Extra["rate_before_sync"]; ok {
		nosync = strconv.FormatFloat(v, 'f', 1, 64)
	}
	ratio := ""
	if r, err := strconv.ParseFloat(ref, 64); err == nil && r > 0 && m.Value != nil {
		ratio = fmt.Sprintf("%.2f", *m.Value/r)
		if nosync != "" {
			ns, _ := strconv.ParseFloat(nosync, 64)
			ratio += fmt.Sprintf(" (nosync %.2f)", ns/r)
		}
	}
	fmt.Printf("%-20s %14s %14s %14s %s %s\n", m.Test, our, nosync, ref, m.Unit, ratio)
}
