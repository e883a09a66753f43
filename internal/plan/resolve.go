package plan

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/aging"
	"github.com/fsbench/fsbench/internal/bytesize"
)

// Overrides are what run's command line says about the configuration and the target, as the
// user typed it: the configuration file or preset, the settings given over it, the target.
// Resolve reads them, with plan's grammars and rules, into a Request; the Request's own
// settings (Destroy, Out, Image, the boards' SSH and labgrid settings, ...) are read from the
// flags straight into the Request itself.
type Overrides struct {
	// ConfigFile (-c) or Preset is what the settings start from; neither: the defaults.
	ConfigFile, Preset string
	// Target is --target's value; "" is the default image file.
	Target string

	Size, DatasetSize, VideoSize string
	Repetitions, MaxRepetitions  int
	Warmup                       bool
	Suite, Tests, Variants       string
	// Tuned is a probe result (a probe.json or its directory) whose advised variants are added.
	Tuned string
	// Cuts and Fault are the powercut suite's, Workload the endurance suite's.
	Cuts                                   int
	Fault, Workload                        string
	NANDSizes, Scheduler, Dataset, Timeout string
	ResultsDir, UntilStable, Order         string
	Seed                                   uint64
	KeepTraces, NANDNoDelays               bool
	Card, Age, CardState                   string

	// Given says whether the flag of that name was given on the command line (pflag's
	// Changed): only those replace the file's settings. Nil: none was.
	Given func(flag string) bool
	// Note receives what Resolve did that a person should know (the variants --tuned added);
	// may be nil.
	Note func(format string, args ...any)
}

// Resolvers are what Resolve needs from packages that sit above plan: each may be nil, and
// then what needs it is refused.
type Resolvers struct {
	// Preset returns a built-in preset's name and TOML text (presets.Load).
	Preset func(name string) (string, []byte, error)
	// Tuned returns the variants advised for the probe result at path, and the cautions that
	// come with them (advise.TunedFromProbe).
	Tuned func(path string) ([]Variant, []string, error)
	// CheckTests refuses tests that are not in the suites (suite.Select).
	CheckTests func(s Suites, tests []string) error
}

// Resolve reads o into r.Config and r.Target: the defaults, then the configuration file or
// preset, then the settings given on the command line, each checked. r's own settings are
// checked too (TimeScale). Errors a user fixes are *InputError (exit code 2), each naming its
// flag or its file's line.
func Resolve(r *Request, o Overrides, opt Options, res Resolvers) error {
	if o.Given == nil {
		o.Given = func(string) bool { return false }
	}
	if o.Note == nil {
		o.Note = func(string, ...any) {}
	}
	cfg, err := baseConfig(o, opt, res)
	if err != nil {
		return err
	}
	if err := o.applySizes(&cfg); err != nil {
		return &InputError{err}
	}
	if err := o.applyRun(&cfg); err != nil {
		return &InputError{err}
	}
	if err := o.applyVariants(&cfg, res); err != nil {
		return &InputError{err}
	}
	if err := o.applyRequest(&cfg); err != nil {
		return &InputError{err}
	}
	if err := cfg.Validate(opt); err != nil {
		return &InputError{err}
	}
	// The tests must belong to the chosen suites (Validate knows only all test names).
	if res.CheckTests != nil {
		if err := res.CheckTests(cfg.Suite, cfg.Tests); err != nil {
			return &InputError{err}
		}
	}
	if !(r.TimeScale > 0) || math.IsInf(r.TimeScale, 0) {
		return Refusef("--time-scale must be a positive number (1 = real time, 0.1 ten times faster), not %g", r.TimeScale)
	}
	if r.EnduranceScale < 0 || math.IsNaN(r.EnduranceScale) || math.IsInf(r.EnduranceScale, 0) || r.EnduranceScale > 1 {
		return Refusef("--endurance-scale must be a number above 0 and at most 1 (1 = the card's endurance; 0.01 a card that wears out a hundred times sooner), not %g", r.EnduranceScale)
	}
	spec, err := ParseTarget(o.Target)
	if err != nil {
		return Refusef("--target: %w", err)
	}
	r.Config, r.Target = cfg, spec
	return nil
}

// baseConfig is what the flags start from: the configuration file, a preset, or the defaults.
func baseConfig(o Overrides, opt Options, res Resolvers) (Config, error) {
	cfg := Default()
	switch {
	case o.ConfigFile != "" && o.Preset != "":
		return cfg, Refusef("use -c or --preset, not both (copy the preset to a file to change it: fsbench list --preset NAME)")
	case o.ConfigFile != "":
		c, err := Load(o.ConfigFile, opt)
		if err != nil {
			return cfg, &InputError{err}
		}
		return c, nil
	case o.Preset != "":
		if res.Preset == nil {
			return cfg, errors.New("plan: no preset loader")
		}
		name, data, err := res.Preset(o.Preset)
		if err != nil {
			return cfg, &InputError{err}
		}
		c, err := Parse(name, data, opt)
		if err != nil {
			return cfg, fmt.Errorf("preset %s: %w", o.Preset, err) // a bug in fsbench, not the user's
		}
		return c, nil
	}
	return cfg, nil
}

// applySizes reads the image and dataset sizes that were given, in the one size grammar.
func (o Overrides) applySizes(cfg *Config) error {
	for _, s := range []struct {
		flag, val string
		dst       *uint64
	}{{"size", o.Size, &cfg.Size}, {"dataset-size", o.DatasetSize, &cfg.DatasetSize}, {"video-size", o.VideoSize, &cfg.VideoSize}} {
		if !o.Given(s.flag) {
			continue
		}
		n, err := bytesize.Parse(s.val)
		if err != nil {
			return fmt.Errorf("--%s: %w", s.flag, err)
		}
		*s.dst = n
	}
	return nil
}

// applyRun reads the other settings given over the configuration: repetitions, suite, power
// cuts, NAND sizes, tests, dataset, seed, timeout and results directory.
func (o Overrides) applyRun(cfg *Config) error {
	if o.Given("repetitions") {
		cfg.Repetitions = o.Repetitions
	}
	if o.Given("warmup") {
		cfg.Warmup = o.Warmup
	}
	if o.Given("suite") {
		cfg.Suite = ParseSuites(o.Suite)
	}
	if o.Given("cuts") {
		if o.Cuts < 1 {
			return fmt.Errorf("--cuts must be at least 1, not %d", o.Cuts)
		}
		if err := cfg.Params.Set(PowerCutSuite, "cuts", o.Cuts); err != nil {
			return fmt.Errorf("--cuts: %w", err)
		}
	}
	if err := cfg.SetFault(o.Fault); err != nil {
		return fmt.Errorf("--fault %w", err)
	}
	if o.Given("workload") {
		if err := cfg.Params.Set(EnduranceSuite, "workload", o.Workload); err != nil {
			return fmt.Errorf("--workload: %w", err)
		}
	}
	cfg.ApplySuiteDefaults()
	if o.Given("nand-sizes") {
		sizes, err := ParseSizeList(SplitList(o.NANDSizes))
		if err != nil {
			return fmt.Errorf("--nand-sizes: %w", err)
		}
		if len(sizes) == 0 {
			return errors.New("--nand-sizes is empty: give sizes like 8M,32M, or leave the flag out for the study's 8M,32M,128M,252M")
		}
		cfg.NANDSizes = sizes
	}
	if o.Given("scheduler") {
		cfg.Scheduler = o.Scheduler
	}
	if o.Given("tests") {
		cfg.Tests = SplitList(o.Tests)
	}
	if o.Given("dataset") {
		abs, err := filepath.Abs(o.Dataset)
		if err != nil {
			return fmt.Errorf("--dataset: %w", err)
		}
		cfg.Dataset = abs
	}
	if o.Given("seed") {
		cfg.Seed = o.Seed
	}
	if o.Given("timeout") {
		d, err := time.ParseDuration(o.Timeout)
		if err != nil {
			return fmt.Errorf("--timeout: %w (use a duration like 90s or 10m)", err)
		}
		cfg.Timeout = Duration{Duration: d}
	}
	if o.Given("results") {
		cfg.ResultsDir = o.ResultsDir
	}
	if o.Given("order") {
		cfg.Order = o.Order
	}
	return nil
}

// applyVariants adds the variants advised from --tuned's probe result and keeps those
// --variants names, saying which --tuned variants that leaves out (a person who gave both
// most likely meant to run them).
func (o Overrides) applyVariants(cfg *Config, res Resolvers) error {
	var tuned []string
	if o.Tuned != "" {
		if res.Tuned == nil {
			return errors.New("--tuned: no probe reader")
		}
		vs, cautions, err := res.Tuned(o.Tuned)
		if err != nil {
			return fmt.Errorf("--tuned: %w (make one with fsbench probe DEVICE)", err)
		}
		for _, v := range vs {
			cfg.Variants = append(cfg.Variants, v)
			tuned = append(tuned, v.Name)
		}
		o.Note("--tuned added %s (from %s)", strings.Join(tuned, ", "), o.Tuned)
		// The tuned variants are only as good as the geometry: a run that says "tuned is no
		// better" from a wrong AU would discredit advice that was never measured.
		for _, c := range cautions {
			o.Note("--tuned: %s", c)
		}
	}
	if !o.Given("variants") {
		return nil
	}
	want, err := ParseVariantList(o.Variants, cfg.Variants)
	if err != nil {
		return fmt.Errorf("--variants: %w", err)
	}
	var dropped []string
	for _, n := range tuned {
		if !slices.Contains(want, n) {
			dropped = append(dropped, n)
		}
	}
	if len(dropped) > 0 {
		o.Note("--variants leaves out the --tuned variants %s: name them in --variants to run them", strings.Join(dropped, ", "))
	}
	cfg.SelectVariants(want)
	return nil
}

// applyRequest reads the settings that shape how each variant runs: until-stable, the traces,
// the card to rate wear on, raw NAND timings, aging and the card's state.
func (o Overrides) applyRequest(cfg *Config) error {
	if o.UntilStable != "" {
		x, err := ParseUntilStable(o.UntilStable)
		if err != nil {
			return err
		}
		cfg.UntilStable, cfg.MaxRepetitions = x, o.MaxRepetitions
	}
	cfg.KeepTraces, cfg.Card, cfg.NANDNoDelays = o.KeepTraces, o.Card, o.NANDNoDelays
	if o.Age != "" {
		if _, err := aging.Parse(o.Age); err != nil {
			return err
		}
		cfg.Age = o.Age
	}
	switch o.CardState {
	case "", CardFresh: // fresh is the default: results files leave it out
	case CardUsed:
		cfg.CardState = o.CardState
	default:
		return fmt.Errorf("--card-state %q: use fresh or used", o.CardState)
	}
	return nil
}

// ParseUntilStable reads --until-stable: a percentage ("3%", or "3"), or a fraction below 1
// ("0.03").
func ParseUntilStable(s string) (float64, error) {
	x, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || !(x > 0) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("--until-stable: want a percentage like 3%%, got %q", s)
	}
	if strings.HasSuffix(s, "%") || x >= 1 {
		x /= 100
	}
	return x, nil
}

// ParseVariantList reads --variants: names separated by commas. A name that holds a comma
// (the mount-options preset's "ext4/noatime,dirsync") is written with the comma escaped
// ("ext4/noatime\\,dirsync") or the name in double quotes; a value that is exactly one known
// name selects it as it is.
func ParseVariantList(s string, known []Variant) ([]string, error) {
	names := make([]string, len(known))
	for i, v := range known {
		names[i] = v.Name
	}
	if slices.Contains(names, s) {
		return []string{s}, nil
	}
	var out []string
	var cur strings.Builder
	quoted := false
	flush := func() {
		if n := strings.TrimSpace(cur.String()); n != "" {
			out = append(out, n)
		}
		cur.Reset()
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			flush()
		default:
			cur.WriteByte(c)
		}
	}
	if quoted {
		return nil, errors.New("unterminated double quote")
	}
	flush()
	for _, n := range out {
		if !slices.Contains(names, n) {
			hint := ""
			if slices.ContainsFunc(names, func(x string) bool { return strings.Contains(x, ",") }) {
				hint = "; a name with a comma is written with the comma escaped (\\,) or in double quotes"
			}
			return nil, fmt.Errorf("no variant %q (known: %s)%s", n, strings.Join(names, ", "), hint)
		}
	}
	return out, nil
}

// SplitList splits a comma-separated list, trimming spaces and dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
