package flash

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/bytesize"

	"github.com/BurntSushi/toml"
)

// FTL kinds (Profile.FTL).
const (
	// FTLAU is the cheap SD card design: logical allocation units (AUs) map to physical AUs,
	// a few AUs are open for writing at a time, and closing one copies its remaining valid
	// pages. An optional page-mapped area at the start (Profile.PageMappedArea) holds the FAT.
	FTLAU = "au"
	// FTLPage maps every page (eMMC, A1/A2 cards): writes go anywhere, and greedy garbage
	// collection copies the valid pages of the emptiest erase block when free blocks run out.
	FTLPage = "page"
)

// Write orders inside an open AU (Profile.WriteOrder).
const (
	OrderSequential = "sequential" // pages of an open AU must be written in ascending order
	OrderAny        = "any"        // any order, but each page at most once per open AU
)

// Size is a byte count; in TOML an integer or a string with a binary suffix ("16KiB", "4MiB").
type Size uint64

// UnmarshalTOML accepts 4096, "4096", "4KiB", "4K", "2MiB", "1GiB".
func (s *Size) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return fmt.Errorf("size %d is negative", x)
		}
		*s = Size(x)
		return nil
	case string:
		n, err := bytesize.Parse(x)
		if err != nil {
			return err
		}
		*s = Size(n)
		return nil
	}
	return fmt.Errorf("size must be an integer or a string like \"16KiB\", not %T", v)
}

// MarshalText writes the size compactly, the way bytesize.Parse reads it back: "16K", "4M".
func (s Size) MarshalText() ([]byte, error) { return []byte(bytesize.Label(uint64(s))), nil }

// Duration is a modelled time; in TOML a string time.ParseDuration reads ("700us", "1.8ms").
type Duration time.Duration

// UnmarshalText parses "700us", "1.8ms", "0".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("bad duration %q: want e.g. \"700us\" or \"1.8ms\"", b)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration as time.Duration prints it.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// Profile is one card's parameters. See profiles/*.toml for what each means and where the
// shipped figures come from.
type Profile struct {
	Name        string `toml:"name" json:"name"`
	Description string `toml:"description" json:"description"`
	// Calibration is the version of the profile's calibration against published measurements
	// of the real cards it stands for (docs/cards.md; 0: never calibrated, the profiles before
	// fsbench checked them). Results record it with the profile's name, so that runs made with
	// different calibrations are not compared as if the card were the same.
	Calibration int `toml:"calibration" json:"calibration,omitempty"`
	// Base names the built-in profile this one derives from: its keys, with this file's laid
	// over them (see fake.go).
	Base string `toml:"base" json:"base,omitempty"`

	FTL            string  `toml:"ftl" json:"ftl"`
	PageSize       Size    `toml:"page_size" json:"page_size"`
	EraseBlock     Size    `toml:"erase_block" json:"erase_block"`
	AUSize         Size    `toml:"au_size" json:"au_size"`
	PlaneGroup     Size    `toml:"plane_group" json:"plane_group"`
	OpenAUs        int     `toml:"open_aus" json:"open_aus"`
	WriteOrder     string  `toml:"write_order" json:"write_order"`
	PageMappedArea Size    `toml:"page_mapped_area" json:"page_mapped_area"`
	Overprovision  float64 `toml:"overprovision" json:"overprovision"`
	CacheSize      Size    `toml:"cache_size" json:"cache_size"`
	// RWLogSize is the random-write log of an AU-mapped card ("au" FTL only; 0: none): a
	// page-mapped area where the card puts small writes that do not continue an open AU,
	// instead of merging an AU for each of them. When the log holds RWLogSize minus its
	// slack, the card merges the AU with the most pages in it (see Model.logWrite).
	RWLogSize Size `toml:"rw_log_size" json:"rw_log_size,omitempty"`
	// RWLogMaxWrite is the largest write the log takes (default: page_size); larger writes
	// open their AU as a sequential stream does.
	RWLogMaxWrite Size `toml:"rw_log_max_write" json:"rw_log_max_write,omitempty"`
	// QueueDepth is the tasks of the card's command queue, in use by the host (0 or 1: none,
	// the card takes one command at a time); QueueLanes how many requests' flash work it
	// overlaps (default 1). See Queue.
	QueueDepth int `toml:"queue_depth" json:"queue_depth,omitempty"`
	QueueLanes int `toml:"queue_lanes" json:"queue_lanes,omitempty"`

	CommandTime     Duration `toml:"command_time" json:"command_time"`
	ReadPageTime    Duration `toml:"read_page_time" json:"read_page_time"`
	CrossPageTime   Duration `toml:"read_cross_page_time" json:"read_cross_page_time"`
	CrossPlaneTime  Duration `toml:"read_cross_plane_time" json:"read_cross_plane_time"`
	CrossAUTime     Duration `toml:"read_cross_au_time" json:"read_cross_au_time"`
	ProgramPageTime Duration `toml:"program_page_time" json:"program_page_time"`
	EraseTime       Duration `toml:"erase_time" json:"erase_time"`
	AUCloseTime     Duration `toml:"au_close_time" json:"au_close_time"`
	CopyPageTime    Duration `toml:"copy_page_time" json:"copy_page_time"`
	CachePageTime   Duration `toml:"cache_page_time" json:"cache_page_time"`
	DiscardTime     Duration `toml:"discard_time" json:"discard_time"`

	// Endurance is the mean number of erases a block lasts; EndOfLife says how much blocks
	// differ, what spares the card has and what it does once they are gone (wearout.go).
	Endurance uint64    `toml:"endurance" json:"endurance"`
	EndOfLife EndOfLife `toml:"end_of_life" json:"end_of_life"`

	// PowerLoss says what the card loses when its power is cut (the powercut suite).
	PowerLoss PowerLoss `toml:"power_loss" json:"power_loss"`

	// SLC is the card's SLC cache (slc.go); nil for a card without one.
	SLC *SLCCache `toml:"slc_cache" json:"slc_cache,omitempty"`

	// Fake makes the card a counterfeit that announces more than it holds (fake.go); nil
	// for a genuine card.
	Fake *Fake `toml:"fake" json:"fake,omitempty"`
}

//go:embed profiles/*.toml
var builtin embed.FS

// Builtins lists the names of the shipped profiles, sorted.
func Builtins() []string { return profileNames(builtin, "profiles") }

// profileNames lists the profiles (*.toml) of an embedded directory, sorted.
func profileNames(fsys embed.FS, dir string) []string {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		panic(err) // embedded at build time: cannot fail
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			out = append(out, strings.TrimSuffix(e.Name(), ".toml"))
		}
	}
	sort.Strings(out)
	return out
}

// BuiltinSource returns the TOML text of a shipped profile, for users to copy and edit.
func BuiltinSource(name string) ([]byte, error) {
	b, err := builtin.ReadFile(path.Join("profiles", name+".toml"))
	if c, ok := counterfeitSource(name); err != nil && ok {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("no built-in profile %q (have %s); or give a path to a profile file", name, strings.Join(Builtins(), ", "))
	}
	return b, nil
}

// Lookup returns a shipped profile by name, or, when nameOrPath contains a slash or ends in
// .toml, loads that file.
func Lookup(nameOrPath string) (Profile, error) {
	if strings.ContainsRune(nameOrPath, '/') || strings.HasSuffix(nameOrPath, ".toml") {
		return Load(nameOrPath)
	}
	b, err := BuiltinSource(nameOrPath)
	if err != nil {
		return Profile{}, err
	}
	return Parse(nameOrPath+".toml", b)
}

// Load reads and validates a profile file.
func Load(file string) (Profile, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return Profile{}, fmt.Errorf("read profile: %w", err)
	}
	return Parse(file, b)
}

// Parse decodes and validates profile TOML; errors name the file and line.
func Parse(filename string, data []byte) (Profile, error) {
	var p Profile
	base, err := baseOf(filename, data)
	if err != nil {
		return Profile{}, err
	}
	if base != nil {
		p = *base
	} else {
		// An [end_of_life] table sets what it names; the rest is the default's.
		p.EndOfLife = DefaultEndOfLife
	}
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&p)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return Profile{}, fmt.Errorf("%s:%d: %s", filename, pe.Position.Line, pe.Message)
		}
		return Profile{}, fmt.Errorf("%s: %w", filename, err)
	}
	lines := keyLines(data)
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0].String()
		return Profile{}, fmt.Errorf("%s:%d: unknown key %q (see the shipped profiles for the known keys)", filename, lines[k], k)
	}
	if key, err := p.validate(); err != nil {
		return Profile{}, fmt.Errorf("%s:%d: %s: %w", filename, lines[key], key, err)
	}
	// A profile built on a base keeps the base's power-loss model unless it sets its own.
	if !md.IsDefined("power_loss") && base == nil {
		p.PowerLoss = DefaultPowerLoss(p)
	}

	if key, err := p.CheckPowerLoss(); err != nil {
		return Profile{}, fmt.Errorf("%s:%d: %s: %w", filename, lines[key], key, err)
	}
	return p, nil
}

// keyLines maps each top-level key to the line that sets it, for validation messages (the
// TOML decoder reports positions only for syntax errors). Profiles are flat, so a key is the
// text before '=' on a line.
func keyLines(data []byte) map[string]int {
	out := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '='); i > 0 && !strings.HasPrefix(line, "#") {
			k := strings.Trim(strings.TrimSpace(line[:i]), `"`)
			if _, seen := out[k]; !seen {
				out[k] = n
			}
		}
	}
	return out
}

func isPow2(n uint64) bool { return n != 0 && n&(n-1) == 0 }

// validate returns the offending key with the error. The checks run in the order of the
// profile's keys, each group after the ones it depends on (the geometry first: the FTL's
// sizes are multiples of it); it fills in the defaults that depend on other keys.
func (p *Profile) validate() (string, error) {
	for _, check := range []func() (string, error){p.validateGeometry, p.validateFTL, p.validateTimes} {
		if key, err := check(); err != nil {
			return key, err
		}
	}
	if p.Fake != nil {
		if key, err := p.Fake.validate(); err != nil {
			return key, err
		}
	}
	if p.SLC != nil {
		if key, err := p.SLC.validate(p); err != nil {
			return key, err
		}
	}
	return p.EndOfLife.validate()
}

// validateGeometry checks the FTL kind and the flash's sizes: page, erase block, AU and plane
// group, each a multiple of the one before.
func (p *Profile) validateGeometry() (string, error) {
	switch p.FTL {
	case FTLAU, FTLPage:
	default:
		return "ftl", fmt.Errorf("must be %q or %q, not %q", FTLAU, FTLPage, p.FTL)
	}
	if !isPow2(uint64(p.PageSize)) || p.PageSize < 512 {
		return "page_size", fmt.Errorf("must be a power of two of at least 512 bytes, not %d", p.PageSize)
	}
	if p.EraseBlock == 0 || p.EraseBlock%p.PageSize != 0 {
		return "erase_block", fmt.Errorf("must be a multiple of page_size (%s), not %d", bytesize.Format(uint64(p.PageSize)), p.EraseBlock)
	}
	if p.EraseBlock/p.PageSize > 1<<20 {
		return "erase_block", errors.New("more than 2^20 pages per erase block")
	}
	if p.AUSize == 0 || p.AUSize%p.EraseBlock != 0 {
		return "au_size", fmt.Errorf("must be a multiple of erase_block (%s), not %d", bytesize.Format(uint64(p.EraseBlock)), p.AUSize)
	}
	if p.PlaneGroup == 0 {
		p.PlaneGroup = p.PageSize
	}
	if p.PlaneGroup%p.PageSize != 0 || p.AUSize%p.PlaneGroup != 0 {
		return "plane_group", fmt.Errorf("must be a multiple of page_size that divides au_size, not %d", p.PlaneGroup)
	}
	return "", nil
}

// validateFTL checks how the FTL uses the flash: open AUs, write order, the page-mapped area
// and its spare, the cache and the random-write log.
func (p *Profile) validateFTL() (string, error) {
	if p.OpenAUs < 1 || p.OpenAUs > 1024 {
		return "open_aus", fmt.Errorf("must be between 1 and 1024, not %d", p.OpenAUs)
	}
	switch p.WriteOrder {
	case OrderSequential, OrderAny:
	case "":
		p.WriteOrder = OrderSequential
	default:
		return "write_order", fmt.Errorf("must be %q or %q, not %q", OrderSequential, OrderAny, p.WriteOrder)
	}
	if p.PageMappedArea%p.AUSize != 0 {
		return "page_mapped_area", fmt.Errorf("must be a multiple of au_size (%s), not %d", bytesize.Format(uint64(p.AUSize)), p.PageMappedArea)
	}
	if p.Overprovision <= 0 || p.Overprovision > 1 {
		return "overprovision", fmt.Errorf("must be in (0, 1] (spare fraction of the page-mapped pool), not %g", p.Overprovision)
	}
	if p.CacheSize%p.PageSize != 0 {
		return "cache_size", fmt.Errorf("must be a multiple of page_size, not %d", p.CacheSize)
	}
	if p.RWLogSize > 0 {
		if p.FTL != FTLAU {
			return "rw_log_size", fmt.Errorf("only an %q FTL has a random-write log (a %q FTL maps every page already): set it to 0", FTLAU, p.FTL)
		}
		if p.RWLogSize%p.EraseBlock != 0 || p.RWLogSize/p.EraseBlock < minLogBlocks {
			return "rw_log_size", fmt.Errorf("must be a multiple of erase_block (%s) and at least %d of them, not %d", bytesize.Format(uint64(p.EraseBlock)), minLogBlocks, p.RWLogSize)
		}
	}
	if p.RWLogMaxWrite == 0 {
		p.RWLogMaxWrite = p.PageSize
	}
	if p.QueueDepth < 0 || p.QueueDepth > 256 {
		return "queue_depth", fmt.Errorf("must be between 0 (no command queue) and 256 tasks (SD and eMMC queues hold 32), not %d", p.QueueDepth)
	}
	if p.QueueLanes < 0 || p.QueueLanes > 64 {
		return "queue_lanes", fmt.Errorf("must be between 1 and 64 (0: 1), not %d", p.QueueLanes)
	}
	if p.QueueLanes > 1 && p.QueueDepth <= 1 {
		return "queue_lanes", fmt.Errorf("is %d but the card has no command queue (queue_depth %d): a card without one takes a command at a time", p.QueueLanes, p.QueueDepth)
	}
	if p.Calibration < 0 {
		return "calibration", fmt.Errorf("must be 0 (never calibrated) or a positive version, not %d", p.Calibration)
	}
	return "", nil
}

// validateTimes checks the timing model: no negative time, the page times and the endurance
// set.
func (p *Profile) validateTimes() (string, error) {
	for _, d := range []struct {
		key string
		v   Duration
	}{{"command_time", p.CommandTime}, {"read_page_time", p.ReadPageTime},
		{"read_cross_page_time", p.CrossPageTime}, {"read_cross_plane_time", p.CrossPlaneTime},
		{"read_cross_au_time", p.CrossAUTime}, {"program_page_time", p.ProgramPageTime},
		{"erase_time", p.EraseTime}, {"au_close_time", p.AUCloseTime},
		{"copy_page_time", p.CopyPageTime}, {"cache_page_time", p.CachePageTime},
		{"discard_time", p.DiscardTime}} {
		if d.v < 0 {
			return d.key, errors.New("must not be negative")
		}
	}
	if p.ProgramPageTime == 0 || p.ReadPageTime == 0 {
		return "program_page_time", errors.New("program_page_time and read_page_time must be set (> 0)")
	}
	if p.Endurance == 0 {
		return "endurance", errors.New("must be set: rated program/erase cycles per block")
	}
	return "", nil
}
