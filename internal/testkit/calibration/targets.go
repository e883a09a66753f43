// Package calibration holds the figures published for the real cards each built-in card
// profile stands for, with the tolerance the profile's model must meet, and the measurements
// that check them: in the model alone (a unit test) and with fsbench's own randio suite and
// probe on the simulated card in real time (make bench-calibration). docs/cards.md gives the
// table with the figures of the latest run.
package calibration

import (
	"fmt"
	"math"

	"github.com/fsbench/fsbench/internal/probe"
)

// Measure names how a target's figure is measured.
type Measure string

// The measurements. Those of the randio suite run as the sources did (iozone -e -I -s 100M
// -r 4k, dd): a 100 MiB file, 4 KiB O_DIRECT requests at queue depth 1 for 20 s; see
// IozoneRandio.
const (
	SeqWrite  Measure = "seq_write"  // randio_seq_write: 512 KiB O_DIRECT writes of the file, fsync, MB/s
	RandWrite Measure = "rand_write" // randio_rand_write: random 4 KiB writes in the file, IOPS
	RandRead  Measure = "rand_read"  // randio_rand_read: random 4 KiB reads of the file, IOPS
	// RandWriteDefault is randio_rand_write with the suite's defaults (256 MiB file, 10 s): what
	// a user's `fsbench run --suite randio` gives.
	RandWriteDefault Measure = "rand_write_default"
	// OpenAU2 and OpenAU3 are the probe's open-AU test with 2 and 3 AUs written in turn
	// (flashbench -O), MB/s; OpenAURatio is the first over the second.
	OpenAU2     Measure = "open_au_2"
	OpenAU3     Measure = "open_au_3"
	OpenAURatio Measure = "open_au_ratio"
	// OpenAUs is the number of open AUs the probe finds (a lower bound when it sees no collapse).
	OpenAUs Measure = "open_aus"
	// AppendMax is the longest single write, in ms, of a sequential stream of 4 KiB O_DIRECT
	// appends (randio_seq_write with 4 KiB blocks: its latency_max_s).
	AppendMax Measure = "append_max_write"
	// QueueReadGain and QueueWriteGain are the random 4 KiB read and write rates at queue
	// depth 32 over those at depth 1, on a 256 MiB area written first (the class test's
	// conditions: fsbench probe --class); QueueRead and QueueWrite the rates at depth 32.
	QueueReadGain  Measure = "queue_read_gain"
	QueueWriteGain Measure = "queue_write_gain"
	QueueRead      Measure = "queue_read"
	QueueWrite     Measure = "queue_write"
	// AppendMaxUsed is AppendMax on a used card (--card-state used: every block written once
	// before mkfs, nothing discarded), where a card must collect garbage and fold its cache.
	AppendMaxUsed Measure = "append_max_write_used"
	// SLCFound is the cache fsbench probe --sustained finds on a fresh card ÷ the profile's
	// (flash.SLCCache.FreshBytes); SLCAfter the rate it finds after it, MB/s; SLCAfterRatio that
	// rate ÷ the burst rate it finds before it.
	SLCFound      Measure = "slc_found"
	SLCAfter      Measure = "slc_after"
	SLCAfterRatio Measure = "slc_after_ratio"
)

// Queued says whether the figure is a command queue's, at queue depth 32: make bench-class
// measures it through the served card, beside fio.
func (m Measure) Queued() bool {
	return m == QueueReadGain || m == QueueWriteGain || m == QueueRead || m == QueueWrite
}

// FSOnly says whether the figure comes from the filesystem's own writes beside the test's (a
// journal, metadata): the model alone, fed the test's requests only, cannot give it. The
// benchmark takes the card's own figure from the block requests fsbench traced instead.
func (m Measure) FSOnly() bool { return m == AppendMax || m == AppendMaxUsed }

// Sustained says whether the figure comes from fsbench probe --sustained.
func (m Measure) Sustained() bool { return m == SLCFound || m == SLCAfter || m == SLCAfterRatio }

// Unit of each measurement's figure.
func (m Measure) Unit() string {
	switch m {
	case SeqWrite, OpenAU2, OpenAU3, SLCAfter:
		return "MB/s"
	case RandWrite, RandRead, RandWriteDefault, QueueRead, QueueWrite:
		return "IOPS"
	case OpenAURatio, SLCFound, SLCAfterRatio, QueueReadGain, QueueWriteGain:
		return "×"
	case OpenAUs:
		return "AUs"
	case AppendMax, AppendMaxUsed:
		return "ms"
	}
	return ""
}

// Rate says whether the figure is a rate (or a time) that only means something at time scale 1.
func (m Measure) Rate() bool { return m != OpenAUs }

// Target is one figure a profile must reproduce.
type Target struct {
	Profile string
	Measure Measure
	// What is the target in words, as the source measured it.
	What string
	// Min and Max bound the figure (Max 0: no upper bound).
	Min, Max float64
	// Source names the cards measured and where (the profile files cite them in full).
	Source string
}

// Within reports whether v meets the target.
func (t Target) Within(v float64) bool {
	return !math.IsNaN(v) && v >= t.Min && (t.Max == 0 || v <= t.Max)
}

// Tolerance is the bounds in words: "44-61", ">= 5".
func (t Target) Tolerance() string {
	if t.Max == 0 {
		return fmt.Sprintf(">= %g", t.Min)
	}
	return fmt.Sprintf("%g-%g", t.Min, t.Max)
}

// appendAll is the append-stream target every profile but sd-2010-worst carries.
func appendAll(profile string) Target {
	return Target{Profile: profile, Measure: AppendMax, What: "longest single write of a sequential 4 KiB append stream",
		Min: 15, Max: 500, Source: "fsbench issue 28; SD Physical Layer spec 4.6.2.2: a write may hold the card busy up to 250 ms, hosts should wait more than 500 ms"}
}

// Targets is the calibration table, profile by profile (docs/cards.md prints it).
var Targets = []Target{
	{Profile: "sd-2010-worst", Measure: SeqWrite, What: "sequential write", Min: 3, Max: 6,
		Source: "OLPC SDCard Testing 2011: SanDisk C2 4 GB 3.14-3.51, SanDisk C2 8 GB 4.19, Toshiba C4 4 GB 5.84 MB/s (flashbench, 4 MiB segments)"},
	{Profile: "sd-2010-worst", Measure: RandWrite, What: "4 KiB random write", Min: 2, Max: 5,
		Source: "OLPC SDCard Testing 2011: 4 KiB random-order writes at 8-19 KB/s (unusable card, Toshiba C4, SanDisk C2)"},
	// The unusable card's own source is slower than the 500 ms the other cards keep to: its
	// random 4 KiB writes took 0.5 s on average, so its longest is longer; Linux waits 3 s.
	{Profile: "sd-2010-worst", Measure: AppendMax, What: "longest single write of a sequential 4 KiB append stream", Min: 15, Max: 3000,
		Source: "OLPC SDCard Testing 2011: the unusable card's 4 KiB writes took 0.5 s on average (8 KB/s); Linux's SD write timeout is 3 s (mmc_set_data_timeout: \"300ms is known to be insufficient for some cards\")"},

	{Profile: "sd-cheap-old", Measure: OpenAU2, What: "flashbench -O, 2 AUs written in turn", Min: 6.3, Max: 9.3,
		Source: "flashbench README: 6.27 (256 KiB blocks) to 8.79 MiB/s (4 MiB blocks) = 6.6-9.2 MB/s"},
	{Profile: "sd-cheap-old", Measure: OpenAU3, What: "flashbench -O, 3 AUs written in turn", Min: 0.6, Max: 1.5,
		Source: "flashbench README: 912 KiB/s = 0.93 MB/s (256 KiB blocks)"},
	{Profile: "sd-cheap-old", Measure: OpenAURatio, What: "open-AU cliff: 2 AUs ÷ 3 AUs", Min: 5,
		Source: "flashbench README: 6.27 ÷ 0.91 = 6.9 at 256 KiB"},
	{Profile: "sd-cheap-old", Measure: RandWrite, What: "4 KiB random write (iozone -I, 100 MiB)", Min: 44, Max: 61,
		Source: "pidramble, Raspberry Pi 2: Kingston C10 8/16 GB 0.17-0.21, Toshiba C10 0.21, Sony C10 0.24 MB/s"},
	{Profile: "sd-cheap-old", Measure: RandRead, What: "4 KiB random read (iozone -I, 100 MiB)", Min: 1300, Max: 1500,
		Source: "pidramble, Raspberry Pi 2: Kingston C10 8/16 GB 5.56-5.75, Toshiba C10 5.21 MB/s"},
	{Profile: "sd-cheap-old", Measure: SeqWrite, What: "sequential write", Min: 7, Max: 9.5,
		Source: "pidramble, Raspberry Pi 2, dd: Kingston C10 7.2-9.0, Sony C10 8.9 MB/s; flashbench README 8.79 MiB/s = 9.2 MB/s"},
	appendAll("sd-cheap-old"),

	{Profile: "sd-typical", Measure: RandWrite, What: "4 KiB random write (iozone -I, 100 MiB)", Min: 150, Max: 500,
		Source: "pidramble, Raspberry Pi 2 and 4: SanDisk Ultra 16 GB 1.52, Samsung Evo 16 GB 1.05-1.24 MB/s (269-389/s)"},
	{Profile: "sd-typical", Measure: RandWriteDefault, What: "4 KiB random write, fsbench's randio defaults (256 MiB, 10 s)", Min: 150, Max: 500,
		Source: "as above; issue 28's Done-when"},
	{Profile: "sd-typical", Measure: SeqWrite, What: "sequential write", Min: 11, Max: 16,
		Source: "James Chambers, Pi 3B+, dd: SanDisk Ultra 13.6, Samsung Evo 16.6; pidramble Pi 4: Evo 12.1 MB/s"},
	{Profile: "sd-typical", Measure: RandRead, What: "4 KiB random read (iozone -I, 100 MiB)", Min: 1300, Max: 1900,
		Source: "pidramble, Raspberry Pi 2 and 4: SanDisk Ultra 5.34-6.57, Evo 5.36-7.09 MB/s (1367-1815/s)"},
	{Profile: "sd-typical", Measure: OpenAUs, What: "open AUs the open-AU test (flashbench -O) finds", Min: 5,
		Source: "issue 28; F2FS (FAST '15) writes six logs at once"},
	appendAll("sd-typical"),

	{Profile: "sd-a1-modern", Measure: RandWrite, What: "4 KiB random write without command queueing", Min: 800, Max: 1500,
		Source: "pidramble, Raspberry Pi 4: SanDisk Extreme A2 3.70, Extreme Pro A1 4.70, Samsung Evo+ 3.85 MB/s (947-1203/s)"},
	{Profile: "sd-a1-modern", Measure: RandRead, What: "4 KiB random read without command queueing", Min: 2400, Max: 2800,
		Source: "pidramble, Raspberry Pi 4: SanDisk Extreme Pro A1 9.82, Samsung Evo+ 10.80 MB/s (2514-2765/s)"},
	{Profile: "sd-a1-modern", Measure: SeqWrite, What: "sequential write", Min: 35, Max: 40,
		Source: "pidramble, Raspberry Pi 4, dd: SanDisk Extreme A2 36.3, Extreme Pro A1 38.8 MB/s"},
	appendAll("sd-a1-modern"),
	slcFound("sd-a1-modern"),
	{Profile: "sd-a1-modern", Measure: SLCAfterRatio, What: "sustained write once the SLC cache is full ÷ the burst (probe --sustained)", Min: 0.4, Max: 0.6,
		Source: "AnandTech, SanDisk Extreme and Extreme PRO review (2017): microSDXC cards rated 100 and 275 MB/s sustain about 60 and 110 MB/s"},

	{Profile: "sd-a2", Measure: RandWrite, What: "4 KiB random write at queue depth 1", Min: 500, Max: 1500,
		Source: "ThomasKaiser/Knowledge A1_and_A2_rated_SD_cards, NanoPi NEO4, no queue: SanDisk Extreme Pro A2 2324 KB/s (581/s); pidramble, Pi 4: SanDisk Extreme A2 3.70 MB/s (947/s)"},
	{Profile: "sd-a2", Measure: RandRead, What: "4 KiB random read at queue depth 1", Min: 1300, Max: 2800,
		Source: "ThomasKaiser/Knowledge, NEO4: SanDisk Extreme Pro A2 5373 KB/s (1343/s); pidramble, Pi 4: SanDisk Extreme A2 7.35 MB/s (1882/s)"},
	{Profile: "sd-a2", Measure: SeqWrite, What: "sequential write", Min: 35, Max: 55,
		Source: "pidramble, Pi 4, dd: SanDisk Extreme A2 36.3 MB/s; ThomasKaiser/Knowledge, NEO4, iozone 16 MiB: Extreme Pro A2 50 MB/s"},
	{Profile: "sd-a2", Measure: QueueReadGain, What: "4 KiB random reads, queue depth 32 ÷ 1", Min: 2.2, Max: 2.8,
		Source: "raspberrypi/linux PR 6046 (Pi 5, SanDisk Extreme A2 64 GB): ~2.5x for random 4k read with command queueing"},
	{Profile: "sd-a2", Measure: QueueWriteGain, What: "4 KiB random writes, queue depth 32 ÷ 1", Min: 3.5, Max: 4.5,
		Source: "raspberrypi/linux PR 6046: 4x for random 4k write with command queueing"},
	{Profile: "sd-a2", Measure: QueueRead, What: "4 KiB random read at queue depth 32", Min: 4000, Max: 6000,
		Source: "SD 6.0 A2: >= 4000/s with queue and cache; Raspberry Pi's A2 card on a Pi 5: 5000/s (raspberrypi.com/products/sd-cards)"},
	{Profile: "sd-a2", Measure: QueueWrite, What: "4 KiB random write at queue depth 32", Min: 2000, Max: 6000,
		Source: "SD 6.0 A2: >= 2000/s with queue and cache; Raspberry Pi's A2 card on a Pi 5: 2000/s"},
	appendAll("sd-a2"),

	{Profile: "emmc", Measure: RandWrite, What: "4 KiB random write", Min: 2000, Max: 6000,
		Source: "issue 28 (HS200 modules); Compute Module 3+ eMMC 9.20 MB/s = 2355/s (turing-pi-cluster #11)"},
	{Profile: "emmc", Measure: RandRead, What: "4 KiB random read", Min: 2300, Max: 4400,
		Source: "issue 28 (HS200 modules); Compute Module 3+ eMMC 8.99 MB/s = 2301/s (turing-pi-cluster #11)"},
	{Profile: "emmc", Measure: SeqWrite, What: "sequential write", Min: 90, Max: 145,
		Source: "issue 28 (HS200 modules)"},
	// The SD Physical Layer spec's busy limit, appendAll's source, is not eMMC's; and a fresh
	// eMMC, page-mapped, with an SLC cache far larger than the 32 MiB stream, has nothing to
	// stall on (the model's longest write was 0.56 ms). The stalls eMMC makers and reviewers
	// report come from a device in use: its garbage collection and its cache folding.
	{Profile: "emmc", Measure: AppendMaxUsed, What: "longest single write of a sequential 4 KiB append stream on a used device", Min: 10, Max: 160,
		Source: "Electronic Design, Fast e.MMC Flash Targets High End Mobile Devices (2014): random write latency under 20 ms (SanDisk iNAND Extreme), an average upper limit of 80 ms (its competitors); a factor two either way"},
	slcFound("emmc"),
	{Profile: "emmc", Measure: SLCAfter, What: "sustained write once the SLC cache is full (probe --sustained, 1 MiB writes)", Min: 40, Max: 76,
		Source: "Gateworks wiki MMC: HS400 eMMC 8 GB ~40, 64 GB ~76 MB/s written; PrawnOS issue 133: dd of 2-4 GB to a C201's eMMC at 43-45 MB/s"},
}

// slcFound is the target of every profile with an SLC cache: the sustained test finds it.
func slcFound(profile string) Target {
	return Target{Profile: profile, Measure: SLCFound, What: "SLC cache probe --sustained finds on a fresh card ÷ the profile's", Min: 0.9, Max: 1.1,
		Source: "issue 39: the sustained test recovers each modelled cache within 10 %"}
}

// For returns the targets of one profile, in table order.
func For(profile string) []Target {
	var out []Target
	for _, t := range Targets {
		if t.Profile == profile {
			out = append(out, t)
		}
	}
	return out
}

// Profiles lists the profiles the table covers, in table order.
func Profiles() []string {
	var out []string
	for _, t := range Targets {
		if len(out) == 0 || out[len(out)-1] != t.Profile {
			out = append(out, t.Profile)
		}
	}
	return out
}

// OpenAUFigures reads the open-AU test out of a probe result: the MB/s with 2 and 3 AUs
// written in turn (NaN when the test did not get that far) and the open-AU estimate.
func OpenAUFigures(r *probe.Result) (two, three float64, est probe.Estimate) {
	two, three = math.NaN(), math.NaN()
	for _, p := range r.OpenAU {
		switch p.AUs {
		case 2:
			two = p.MBps
		case 3:
			three = p.MBps
		}
	}
	return two, three, r.Estimates.OpenAUs
}
