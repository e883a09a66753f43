package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/stats"
	"github.com/fsbench/fsbench/internal/testkit/golden"
	"github.com/fsbench/fsbench/internal/trace"
)

// fullRun is a run with every field of the schema set, nested ones included, and maps with
// several keys, so that the golden file shows every name and shape results.json can hold.
// TestFullRunSetsEveryField keeps it so when fields are added.
func fullRun() *Run {
	zone := time.FixedZone("CET", 3600)
	started := time.Date(2026, 11, 23, 22, 30, 0, 123456789, zone)
	lat := func(n uint64) Latency { return Latency{Count: n, P50Ns: 1000 * n, P99Ns: 3000 * n, MaxNs: 5000 * n} }
	align := func(unit uint64) Alignment {
		return Alignment{Unit: unit, Writes: 7, Bytes: 7 * unit, Share: 0.875, ByBytes: 0.5}
	}
	flashIO := func(k uint64) *FlashIO {
		return &FlashIO{HostBytesWritten: k << 20, HostBytesRead: k << 10, HostBytesDiscarded: k << 12, Flushes: k,
			PagesProgrammed: 64 * k, PagesCopied: 3 * k, FlashBytesWritten: k << 20, WriteAmplification: 1.25,
			BlocksErased: k, AUMerges: 2 * k, GCCollections: 5 * k, BusyNs: 1e6 * k}
	}
	return &Run{
		Schema:   Schema,
		Tool:     Tool{Name: "fsbench", Version: "v1.2.3", GoVersion: "go1.26.8", PeakRSSBytes: 42 << 20},
		Status:   RunFailed,
		Error:    "the device vanished",
		Started:  started,
		Finished: started.Add(90*time.Second + 5*time.Millisecond),
		Machine:  Machine{Hostname: "bench", Arch: "arm64", CPUs: 4, MemBytes: 2 << 30, Kernel: "6.1.0-56-arm64", OS: "Debian GNU/Linux 12 (bookworm)"},
		Target: Target{Kind: "simcard", Image: "/var/tmp/card.img", SizeBytes: 320 << 20, Device: "/dev/loop3", LoopMethod: "LOOP_CONFIGURE",
			DirectIO: true, Profile: "sd-typical", TimeScale: 0.25, EnduranceScale: 0.01, CardVia: CardOnLoop, CardProfile: "sd-typical", Scheduler: "mq-deadline",
			PathOffsetNs: 92000, PathCalibration: "median of 200 round trips through a direct-I/O loop device over the FUSE file"},
		Device: &DeviceIdentity{Name: "loop3", Path: "/dev/loop3", SizeBytes: 320 << 20,
			Queue:  map[string]string{"rotational": "0", "logical_block_size": "512", "scheduler": "[mq-deadline] none"},
			Device: map[string]string{"name": "SD32G", "manfid": "0x000003", "preferred_erase_size": "4194304"},
			Loop:   &Loop{BackingFile: "/var/tmp/card.img", DirectIO: true, Autoclear: true}},
		Tools:   map[string]string{"mkfs.ext4": "mke2fs 1.47.0 (5-Feb-2023)", "mksquashfs": "mksquashfs version 4.5.1", "qemu-system-x86_64": "QEMU emulator version 7.2.15"},
		Config:  json.RawMessage(`{"repetitions":3,"suite":"bootlin","variants":[{"name":"ext4","fs":"ext4"}]}`),
		Dataset: Dataset{Kind: "directory", Path: "/srv/rootfs", Seed: 7, Files: 1200, Dirs: 80, Symlinks: 30, Bytes: 40 << 20, LargestFile: 6 << 20, MedianFile: 4096, Compressibility: 0.4375, SampledBytes: 8 << 20, Copies: 5, VideoBytes: 40 << 20, VideoCopies: 5},
		Methods: map[string]string{"mount_mem": "Slab + Buffers + ...", "trace": "block_rq_issue/complete", "lifetime": "blocks × endurance ÷ erases"},
		Variants: []Variant{
			{Name: "ext4", FS: "ext4", MkfsArgs: []string{"-O", "^has_journal"}, MountOptions: "noatime", ReadOnly: true, Status: OK,
				Reason: "none", Kernel: "built-in", Repetitions: 6, Unstable: []string{"write", "read"},
				Base: "ext4", PartitionBytes: 64 << 20, PartitionStart: 63 * 512, Age: "updates:80%:1x", Fresh: "ext4", Source: &Source{Dir: "guest-run", Kernel: "6.1.0-56-amd64", Guest: "qemu tcg", Label: "sandisk-16G",
					Board: "rpi4 (Raspberry Pi 4 Model B)", Card: "SD SC16G manfid 0x000003 06/2019 serial 0x1234"}},
			{Name: "f2fs", FS: "f2fs", Status: Skipped, Reason: "this kernel has no f2fs"},
		},
		Order: []string{"ext4#0", "ext4#1", "f2fs#1"},
		Measurements: []Measurement{
			{Variant: "ext4", Test: "write", Rep: 1, Status: OK, Note: "scaled to the free space", Value: Float(1.5), Unit: "s",
				WallSeconds: 1.5, UserSeconds: 0.125, SysSeconds: 0.75,
				Device:       &DeviceIO{ReadBytes: 4096, WriteBytes: 5 << 20, ReadIOs: 1, WriteIOs: 40, DiscardBytes: 1 << 20, DiscardIOs: 2, FlushIOs: 3, BusyMs: 900},
				LogicalBytes: 5 << 20, MBps: 3.4952533333333333,
				Extra: map[string]float64{"block_amplification": 1.0625, "image_bytes": 1e21, "latency_p99_s": 1e-7},
				Flash: func() *FlashIO {
					f := flashIO(5)
					f.Server = &CardServer{Requests: 1200, P50Ns: 11e3, P99Ns: 108e3, LateRequests: 60, LateNs: 4e6}
					return f
				}(),
				Trace: &TraceInfo{
					Summary: TraceSummary{Requests: 50, Read: TraceDir{Requests: 1, Bytes: 4096}, Write: TraceDir{Requests: 40, Bytes: 5 << 20},
						Discard: TraceDir{Requests: 2, Bytes: 1 << 20}, Other: TraceDir{Requests: 4, Bytes: 8 << 20},
						Flushes: 3, Preflushes: 2, FUA: 1, Sync: 30, Meta: 6, Errors: 1,
						Sizes: []SizeBucket{
							{Bytes: 4096, Reads: 1, Writes: 8, Discards: 1, ReadLatency: lat(1), WriteLatency: lat(8)},
							{Bytes: 131072, Reads: 2, Writes: 32, Discards: 1, ReadLatency: lat(2), WriteLatency: lat(32)},
						},
						Aligned4K: align(4096), AlignedPage: align(16384), AlignedAU: align(4 << 20), FlushLatency: lat(3),
						BusyNs: 8e8, SpanNs: 1.5e9, Incomplete: 1, Lost: 2, UnmatchedCompl: 3},
					File:   "traces/ext4.rep1.write.fsbtrace",
					Replay: map[string]Replay{"sd-typical": {Flash: flashIO(6), LifetimeYears: 12.5, DayLifetimeYears: 4.25}, "emmc": {Flash: flashIO(7), LifetimeYears: 80}},
					Error:  "lost 2 events",
				},
				Noise: &Noise{StealPct: 16.5, OtherCPUPct: 3.25, OwnCPUPct: 95.5, CPUPressurePct: 1.5, IOPressurePct: 0.75, MemPressurePct: 0.125,
					OwnCPUPressurePct: 1.25, OwnIOPressurePct: 0.5, OwnMemPressurePct: 0.0625,
					OtherIOBytes: 1 << 20, OwnIOBytes: 64 << 20, Busy: true, Why: "steal 16.5 %"}},
			{Variant: "ext4", Test: "read", Rep: 0, Warmup: true, Status: Failed, Error: "reading copy-1/etc/x: input/output error"},
			{Variant: "ext4", Test: "powercut", Rep: 1, Status: OK, Value: Float(90), Unit: "%",
				PowerCut: &PowerCut{Profile: "sd-cheap-old", Protected: true, VolatileCache: true, CacheOrder: "any", CacheBytes: 1 << 20, WriteBufferBytes: 8192, TornPage: true, PairedPage: true, MergeLoss: true, Requests: 1800, StreamFull: true, AcksUnrecorded: 3, Acks: 262, Cuts: 10,
					AtomicityCuts: Proportion{Count: 1, Of: 10, Pct: 10, Low: 1.8, High: 40.4}, FSBrokenCuts: Proportion{Of: 10, High: 27.8}, FSAckLossCuts: 1, FSAtomicityCuts: 1,
					CardDamageCuts: Proportion{Count: 2, Of: 10, Pct: 20, Low: 5.7, High: 51}, CardDamageBytes: 81920, CardUnharmed: 1, CardDetected: 1, CardRepaired: 1, CardSilent: 1,
					Safe: Proportion{Count: 9, Of: 10, Pct: 90, Low: 59.6, High: 98.2}, MountWithoutRepair: Proportion{Count: 10, Of: 10, Pct: 100, Low: 72.2, High: 100},
					FsckClean: Proportion{Count: 10, Of: 10, Pct: 100, Low: 72.2, High: 100}, Unrecoverable: Proportion{Of: 10, High: 27.8},
					AckLossCuts: Proportion{Count: 1, Of: 10, Pct: 10, Low: 1.8, High: 40.4}, FsckErrors: 1, FsckToolFailed: 1, NoChecker: 1, Repaired: 1,
					FileCounts: FileCounts{AckedLost: 1, AckedCorrupt: 2, AckedUnreadable: 1, TornRenames: 1, Resurrected: 1, UnackedLost: 5, ZeroTails: 2}, RecoveryP50Seconds: 0.05, RecoveryMaxSeconds: 0.2,
					UnsyncedP50Seconds: 0.003, UnsyncedMaxSeconds: 0.01, CutsPerMinute: 120, LeakedBlocks: 12, LeakedBlocksMax: 8, LeakedCuts: 9, Problems: []string{"d0/f0001: missing"},
					Live: &LivePowerCut{Switch: "labgrid place board-a", Lost: 1, Recycled: 1, InFlight: 6, AcksHeard: 412, BrokenCuts: 2, Remade: 1,
						WorkloadP50Seconds: 7.5, BootP50Seconds: 9.25, CutsPerHour: 96, Resumed: 1}}},
			{Variant: "ext4", Test: "endurance", Rep: 1, Status: OK, Value: Float(21.5), Unit: "rounds",
				Endurance: &Endurance{Workload: "bootlin", Card: "sd-typical", Behaviour: "read-only", Scale: 0.01, Seed: 1000004, Rounds: 22, DayBytes: 4e8,
					FirstError: Milestone{Round: 21.5, Bytes: 8 << 30, DeviceBytes: 9 << 30, What: "the card refused a request: read-only"},
					IOError:    Milestone{Round: 21.5, Bytes: 8 << 30, DeviceBytes: 9 << 30, What: "the card refused a request: read-only"},
					ReadOnly:   Milestone{Round: 21.5, Bytes: 8 << 30, DeviceBytes: 9 << 30, What: "the card turned read-only"},
					WrongData:  Milestone{Round: 22, Bytes: 8 << 30, What: "1 promised files read back wrong without an error"},
					FSReadOnly: Milestone{Round: 22, Bytes: 8 << 30, What: "the filesystem is mounted read-only"},
					End:        Milestone{Round: 22, Bytes: 8 << 30, DeviceBytes: 9 << 30, What: "the card turned read-only"},
					BadBlocks:  []Milestone{{Round: 15, What: "1 bad blocks"}, {Round: 18}, {Round: 20}}, SpareBlocks: 4,
					PredictedRounds: 23.4, PredictedEach: []float64{23.4, 22.9, 24}, PredictedYears: 6.4, PredictedFrom: "day_lifetime_years of round 1",
					IOErrors: 3, Unmountable: true, Unreadable: 1, Missing: 1, Wrong: 1, FSErrors: 2, Corruption: 1, Problems: []string{"round 22: video-1.bin: missing"},
					SpeedFirst: 52.5, SpeedLast: 48.6, Resumed: 1,
					Series: []EndurancePoint{{Round: 1, Bytes: 4e8, CardBytes: 4.2e8, Seconds: 7.5, MBps: 53.3, BadBlocks: 1, SpareLeft: 3, Health: "read-only"}}}},
		},
		Guest: &Guest{Kernel: "/boot/vmlinuz-6.1.0-56-amd64", KernelRelease: "6.1.0-56-amd64", Accel: "tcg", AccelNote: "KVM hangs on this host",
			QEMU: "QEMU emulator version 7.2.15", BootSeconds: 8.25, ConsoleLog: "console.log",
			Stalled: "no CPU and no I/O for 5m0s, and still none after the stack dump", Revived: 1},
		Remote: &Remote{Target: "ssh://root@board/dev/mmcblk0p3", Hostname: "board", Model: "Raspberry Pi 4 Model B",
			Compatible: []string{"raspberrypi,4-model-b", "brcm,bcm2711"}, Arch: "arm64", KernelRelease: "6.1.0-56-arm64",
			OS: "Debian GNU/Linux 12 (bookworm)", RunDir: "/var/tmp/fsbench-run",
			Place: "rpi4", Address: "ssh://root@192.0.2.7:2222/dev/mmcblk0p3"},
		Sentinel: &Sentinel{Cgroup: "/sys/fs/cgroup/user.slice/fsbench-4242", PSI: true, OwnPSI: true,
			OwnIO: []string{"mmcblk0p2 on mmcblk0 (request for request)"}, Notes: []string{"no pressure for fsbench's own cgroup"}},
		Card: &CardState{Reads: 10, Writes: 20, Discards: 3, Flushes: 4, HostBytesRead: 40960, HostBytesWritten: 5 << 20, HostBytesDiscarded: 1 << 20,
			PagesRead: 11, PagesProgrammed: 330, PagesCopied: 10, BlocksErased: 2, AUMerges: 1, GCCollections: 5, BusyNs: 123456789,
			PageSize: 16384, FlashBytesWritten: 330 * 16384, WriteAmplification: 1.03125,
			Wear: []WearBucket{{Erases: 0, Blocks: 70}, {Erases: 1, Blocks: 8}, {Erases: 2, Blocks: 2}}, MaxErases: 2, Endurance: 3000, WornOut: 1, EraseBlocks: 80},
		Aging: []Aging{{Variant: "ext4@aged80", Rep: 1, Warmup: true, Status: Failed, Error: "aging: no space", Spec: "updates:80%:1x", Seconds: 61.5,
			FillBytes: 400 << 20, ChurnBytes: 512 << 20, Files: 9000, TreeBytes: 390 << 20, Fsyncs: 20000, Renames: 19000, Deletes: 500,
			EndedEarly: "the filesystem was full", Trimmed: "3 packages removed", Reclaims: 2, Fullness: 0.83, ListingSHA256: "687d43d5",
			Layout:       &AgingLayout{Files: 9000, Mapped: 8800, Extents: 9100, ExtentsPerFile: 1.03, Fragmented: 0.01, MaxExtents: 17, Score: 0.83},
			MountSeconds: 0.006, FsckSeconds: 0.17, Fsck: "clean", FreeExtents: 700, FreeExtentAvgBytes: 131072, CardHostBytes: 900 << 20, CardFlashBytes: 2 << 30, CardWA: 2.27, CardErases: 512}},
		CardCalibrations: map[string]int{"sd-typical": 1},
		CardCheck:        fullCardCheck(),
	}
}

// saved is the results.json Save writes for r.
func saved(t *testing.T, r *Run) []byte {
	t.Helper()
	dir := t.TempDir()
	if err := Save(dir, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSchemaV1Golden fails on any change of what a run encodes to in results.json v1: a renamed
// field, a changed type or encoding (TestSchemaV1Fields sees the omitempty options). If the
// change is meant, it adds to v1 (readers of older files must still work) or bumps Schema; then
// `go test ./internal/results -args -update` rewrites the golden files, and the diff of
// testdata/ is the change of format.
func TestSchemaV1Golden(t *testing.T) {
	golden.Check(t, "schema_v1.golden.json", saved(t, fullRun()))
}

// TestSchemaV1Fields lists every field results.json can hold, by its path in the file, with
// its kind and JSON options, and compares the list with testdata/schema_v1.fields.golden.
// Where TestSchemaV1Golden sees what a full run encodes to, this sees what a value cannot show:
// an omitempty added or removed on a field that is set, or a kind changed (uint32 to uint64)
// whose text is the same for the values at hand.
func TestSchemaV1Fields(t *testing.T) {
	var b strings.Builder
	var walk func(typ reflect.Type, path string)
	walk = func(typ reflect.Type, path string) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			tag := f.Tag.Get("json")
			if !f.IsExported() || tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				walk(f.Type, path) // its fields are the embedding struct's in the file
				continue
			}
			if name == "" {
				name = f.Name
			}
			p := path + "." + name
			fmt.Fprintf(&b, "%s %s", p, kindOf(f.Type))
			if opts != "" {
				fmt.Fprintf(&b, " %s", opts)
			}
			b.WriteString("\n")
			elem := f.Type
			for elem.Kind() == reflect.Pointer || elem.Kind() == reflect.Slice || elem.Kind() == reflect.Map {
				if elem.Kind() != reflect.Pointer {
					p += "[]"
				}
				elem = elem.Elem()
			}
			if elem.Kind() == reflect.Struct && elem != reflect.TypeFor[time.Time]() {
				walk(elem, p)
			}
		}
	}
	walk(reflect.TypeFor[Run](), "")
	golden.Check(t, "schema_v1.fields.golden", []byte(b.String()))
}

// kindOf describes a field's type by what the file holds, not by its Go name: renaming a type
// does not change the format, changing its kind may.
func kindOf(typ reflect.Type) string {
	switch {
	case typ == reflect.TypeFor[time.Time]():
		return "time"
	case typ == reflect.TypeFor[json.RawMessage]():
		return "raw-json"
	}
	switch typ.Kind() {
	case reflect.Pointer:
		return "*" + kindOf(typ.Elem())
	case reflect.Slice:
		return "[]" + kindOf(typ.Elem())
	case reflect.Map:
		return "map[" + kindOf(typ.Key()) + "]" + kindOf(typ.Elem())
	case reflect.Struct:
		return "object"
	}
	return typ.Kind().String()
}

// TestSchemaV1GoldenDecodes checks that the golden file decodes into Run without a field left
// over, and encodes back to the same bytes: reading and writing agree on every field.
func TestSchemaV1GoldenDecodes(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "schema_v1.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r Run
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("decoding the golden file: %v", err)
	}
	if d := cmp.Diff(string(b), string(saved(t, &r))); d != "" {
		t.Errorf("the golden file, decoded and saved again, differs (-golden +saved):\n%s", d)
	}
}

// TestFullRunSetsEveryField checks that fullRun sets every field of every struct of the schema
// somewhere, so that the golden file holds each one: a field added to the schema without a
// value here fails.
func TestFullRunSetsEveryField(t *testing.T) {
	r := fullRun()
	r.Summary = r.Summarize()
	set := map[reflect.Type][]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Map:
			for it := v.MapRange(); it.Next(); {
				walk(it.Value())
			}
		case reflect.Struct:
			if v.Type() == reflect.TypeFor[time.Time]() {
				return // a value, written as text; its fields are not the schema's
			}
			if set[v.Type()] == nil {
				set[v.Type()] = make([]bool, v.NumField())
			}
			for i := range v.NumField() {
				if !v.Field(i).IsZero() {
					set[v.Type()][i] = true
				}
				walk(v.Field(i))
			}
		}
	}
	walk(reflect.ValueOf(r))
	if len(set) < 10 {
		t.Fatalf("walked only %d struct types", len(set))
	}
	for typ, fields := range set {
		for i, ok := range fields {
			if !ok {
				t.Errorf("fullRun never sets %s.%s: the golden file would not show it", typ, typ.Field(i).Name)
			}
		}
	}
}

// TestSchemaForeignTypes keeps the schema made of results' own types (and the standard
// library's): a struct of another fsbench package in it would let that package change the
// file format.
func TestSchemaForeignTypes(t *testing.T) {
	own := reflect.TypeFor[Run]().PkgPath()
	seen := map[reflect.Type]bool{}
	var check func(typ reflect.Type, path string)
	check = func(typ reflect.Type, path string) {
		if seen[typ] {
			return
		}
		seen[typ] = true
		if p := typ.PkgPath(); p != "" && p != own && strings.HasPrefix(p, "github.com/fsbench/") {
			t.Errorf("%s is %s, a type of %s", path, typ, p)
		}
		switch typ.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			check(typ.Elem(), path+"[]")
		case reflect.Struct:
			for i := range typ.NumField() {
				f := typ.Field(i)
				check(f.Type, path+"."+f.Name)
			}
		}
	}
	check(reflect.TypeFor[Run](), "Run")
}

// TestV1FileStillLoads loads a results.json written by fsbench before results had its own
// types (main at 01a2ad1: ext4 and squashfs-lzo, one repetition, traced) and saves it again:
// the content must be the same, value for value.
func TestV1FileStillLoads(t *testing.T) {
	const path = "testdata/v1_01a2ad1.results.json"
	r, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want, got map[string]any
	if err := json.Unmarshal(orig, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(saved(t, r), &got); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s loaded and saved again differs (-original +saved):\n%s", path, d)
	}
	if r.Device == nil || r.Device.Loop == nil || len(r.Summary) == 0 || r.Measurements[0].Trace == nil || len(r.Measurements[0].Trace.Summary.Sizes) == 0 {
		t.Errorf("the file lacks the parts it was kept for (device, loop, summary, trace sizes): %+v", r.Device)
	}
}

// TestConversions checks that the From functions copy every field of the producers' structs
// to the right place (each input field holds a different value), and that nil and empty stay
// apart ("null" and "[]" differ in the file).
func TestConversions(t *testing.T) {
	id := blockdev.Identity{Name: "mmcblk0", Path: "/dev/mmcblk0", SizeBytes: 1 << 30,
		Queue: map[string]string{"rotational": "0"}, Device: map[string]string{"name": "SD32G"},
		Loop: &blockdev.LoopInfo{BackingFile: "/x.img", DirectIO: true, Autoclear: true}}
	c := flash.Counters{Reads: 1, Writes: 2, Discards: 3, Flushes: 4, HostBytesRead: 5, HostBytesWritten: 6, HostBytesDiscard: 7,
		PagesRead: 8, PagesProgrammed: 9, PagesCopied: 10, BlocksErased: 11, AUMerges: 12, GCCollections: 13, BusyNs: 14,
		PageSize: 15, FlashBytesWrite: 16, WriteAmplification: 17.5, Wear: []flash.WearBucket{{Erases: 1, Blocks: 18}},
		MaxErases: 19, Endurance: 20, WornOut: 21, EraseBlocks: 22}
	tl := func(k uint64) trace.Latency { return trace.Latency{Count: k, P50Ns: k + 1, P99Ns: k + 2, MaxNs: k + 3} }
	ta := func(k uint64) trace.Alignment {
		return trace.Alignment{Unit: k, Writes: k + 1, Bytes: k + 2, Share: float64(k) + 0.5, ByBytes: float64(k) + 0.25}
	}
	s := trace.Summary{Requests: 1, Read: trace.DirStats{Requests: 2, Bytes: 3}, Write: trace.DirStats{Requests: 4, Bytes: 5},
		Discard: trace.DirStats{Requests: 6, Bytes: 7}, Other: trace.DirStats{Requests: 8, Bytes: 9},
		Flushes: 10, Preflushes: 11, FUA: 12, Sync: 13, Meta: 14, Errors: 15,
		Sizes:     []trace.SizeBucket{{Bytes: 4096, Reads: 16, Writes: 17, Discards: 18, ReadLatency: tl(100), WriteLatency: tl(200)}},
		Aligned4K: ta(300), AlignedPage: ta(400), AlignedAU: ta(500), FlushLatency: tl(600), BusyNs: 19, SpanNs: 20, Incomplete: 21, Lost: 22, UnmatchedCompl: 23}
	l := func(k uint64) Latency { return Latency{Count: k, P50Ns: k + 1, P99Ns: k + 2, MaxNs: k + 3} }
	a := func(k uint64) Alignment {
		return Alignment{Unit: k, Writes: k + 1, Bytes: k + 2, Share: float64(k) + 0.5, ByBytes: float64(k) + 0.25}
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"identity", FromIdentity(&id), &DeviceIdentity{Name: "mmcblk0", Path: "/dev/mmcblk0", SizeBytes: 1 << 30,
			Queue: map[string]string{"rotational": "0"}, Device: map[string]string{"name": "SD32G"},
			Loop: &Loop{BackingFile: "/x.img", DirectIO: true, Autoclear: true}}},
		{"identity without device or loop", FromIdentity(&blockdev.Identity{Name: "loop0"}), &DeviceIdentity{Name: "loop0"}},
		{"no identity", FromIdentity(nil), (*DeviceIdentity)(nil)},
		{"counters", FromCounters(c), &CardState{Reads: 1, Writes: 2, Discards: 3, Flushes: 4, HostBytesRead: 5, HostBytesWritten: 6, HostBytesDiscarded: 7,
			PagesRead: 8, PagesProgrammed: 9, PagesCopied: 10, BlocksErased: 11, AUMerges: 12, GCCollections: 13, BusyNs: 14,
			PageSize: 15, FlashBytesWritten: 16, WriteAmplification: 17.5, Wear: []WearBucket{{Erases: 1, Blocks: 18}},
			MaxErases: 19, Endurance: 20, WornOut: 21, EraseBlocks: 22}},
		{"counters without wear", FromCounters(flash.Counters{}), &CardState{}},
		{"counters with empty wear", FromCounters(flash.Counters{Wear: []flash.WearBucket{}}), &CardState{Wear: []WearBucket{}}},
		{"trace summary", FromTraceSummary(s), TraceSummary{Requests: 1, Read: TraceDir{Requests: 2, Bytes: 3}, Write: TraceDir{Requests: 4, Bytes: 5},
			Discard: TraceDir{Requests: 6, Bytes: 7}, Other: TraceDir{Requests: 8, Bytes: 9},
			Flushes: 10, Preflushes: 11, FUA: 12, Sync: 13, Meta: 14, Errors: 15,
			Sizes:     []SizeBucket{{Bytes: 4096, Reads: 16, Writes: 17, Discards: 18, ReadLatency: l(100), WriteLatency: l(200)}},
			Aligned4K: a(300), AlignedPage: a(400), AlignedAU: a(500), FlushLatency: l(600), BusyNs: 19, SpanNs: 20, Incomplete: 21, Lost: 22, UnmatchedCompl: 23}},
		{"trace summary without sizes", FromTraceSummary(trace.Summary{}), TraceSummary{}},
		{"stats", fromStats(stats.Summary{N: 3, Median: 2, Min: 1, Max: 3.5}), Stats{N: 3, Median: 2, Min: 1, Max: 3.5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// cmp tells a nil slice from an empty one, as the file does.
			if d := cmp.Diff(tc.want, tc.got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	// The conversion copies the maps: a producer changing its map later does not change the
	// results.
	d := FromIdentity(&id)
	id.Queue["rotational"] = "1"
	if d.Queue["rotational"] != "0" {
		t.Error("FromIdentity shares the queue map with the producer")
	}
}

// TestTargetKinds: the six kinds fsbench has written, two of them English phrases for the ways
// a guest ran on a simulated card, are read as the typed kind, how the card was reached, and the
// card its figures are rated on; a file written now is read as it was written.
func TestTargetKinds(t *testing.T) {
	tests := []struct {
		file string // results.json's "target"
		want Target
	}{
		{`{"kind": "image"}`, Target{Kind: KindImage}},
		{`{"kind": "device", "device": "/dev/mmcblk0"}`, Target{Kind: KindDevice, Device: "/dev/mmcblk0"}},
		{`{"kind": "nandsim"}`, Target{Kind: KindNandsim}},
		{`{"kind": "simcard", "profile": "sd-cheap-old"}`, Target{Kind: KindSimcard, CardVia: CardOnLoop, Profile: "sd-cheap-old", CardProfile: "sd-cheap-old"}},
		{`{"kind": "simcard (guest /dev/mmcblk0)", "profile": "emmc"}`, Target{Kind: KindSimcard, CardVia: CardBehindGuestSD, Profile: "emmc", CardProfile: "emmc"}},
		{`{"kind": "simcard (served in the guest)", "profile": "sd-a1-modern"}`, Target{Kind: KindSimcard, CardVia: CardOnLoop, Profile: "sd-a1-modern", CardProfile: "sd-a1-modern"}},
		// Written now: the card recorded is the one to use, even where the profile was a file.
		{`{"kind": "simcard", "card_via": "guest-sd", "profile": "/srv/mine.toml", "card_profile": "mine"}`,
			Target{Kind: KindSimcard, CardVia: CardBehindGuestSD, Profile: "/srv/mine.toml", CardProfile: "mine"}},
		{`{"kind": "image", "card_profile": "sd-typical"}`, Target{Kind: KindImage, CardProfile: "sd-typical"}},
	}
	for _, tc := range tests {
		var r Run
		if err := json.Unmarshal([]byte(`{"target": `+tc.file+`}`), &r); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tc.want, r.Target); d != "" {
			t.Errorf("%s read as (-want +got):\n%s", tc.file, d)
		}
		if r.Target.SimulatedCard() != (tc.want.Kind == KindSimcard) {
			t.Errorf("%s: SimulatedCard() = %v", tc.file, r.Target.SimulatedCard())
		}
	}
}
