package plan

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/bytesize"

	"github.com/BurntSushi/toml"
)

// rawFile is what the TOML decoder fills. Every field is `any` so that a value of the wrong
// type is not a decoder error (whose text is "incompatible types: TOML value has type
// int64; destination has type string") but something this package explains with the
// key's line and the accepted forms. Variant is `any` too: a [[variant]] table is checked
// key by key in parseVariants, because MetaData.Undecoded names the key of an array of
// tables without saying in which of the tables it is.
type rawFile struct {
	Size        any `toml:"size"`
	Repetitions any `toml:"repetitions"`
	Warmup      any `toml:"warmup"`
	Suite       any `toml:"suite"`
	Tests       any `toml:"tests"`
	Timeout     any `toml:"timeout"`
	Dataset     any `toml:"dataset"`
	DatasetSize any `toml:"dataset_size"`
	VideoSize   any `toml:"video_size"`
	Seed        any `toml:"seed"`
	Results     any `toml:"results"`
	Scheduler   any `toml:"scheduler"`
	NANDSizes   any `toml:"nand_sizes"`
	Variant     any `toml:"variant"`
}

// topKeys and variantKeys are the keys a configuration file may use.
var (
	topKeys = []string{"dataset", "dataset_size", "nand_sizes", "repetitions", "results", "scheduler", "seed", "size", "suite",
		"tests", "timeout", "variant", "video_size", "warmup"}
	variantKeys = []string{"fs", "mkfs", "mount", "name", "partition_start"}
)

// maxRepetitions bounds repetitions well below what an int holds on 32-bit ARM.
const maxRepetitions = 1_000_000

// Load reads and parses the configuration file at path (see Parse).
func Load(path string, opt Options) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("reading configuration: %w", err)
	}
	return Parse(path, data, opt)
}

// Parse reads a configuration file's contents: the defaults, overridden by the keys the
// file sets, with its [[variant]] tables expanded into variants (replacing the default
// variants when there is at least one), then validated against opt. filename is only used
// in error messages, which have the form "filename:line: what is wrong; what to do". On
// error it returns every problem found (see Error) and a zero Config.
func Parse(filename string, data []byte, opt Options) (Config, error) {
	p := &problems{file: filename}
	var raw rawFile
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		addTOMLError(p, err)
		return Config{}, p.err()
	}
	kl := scanKeyLines(string(data))
	unknownTopKeys(p, md, kl)
	c := Default()
	d := decoder{p: p, kl: kl}
	d.topLevel(raw, &c)
	d.suiteTables(data, &c)
	var origin []int // origin[i]: index of the [[variant]] table that made c.Variants[i]
	if raw.Variant != nil {
		c.Variants, origin = d.variants(raw.Variant)
	}
	// Semantic checks run even after type errors, so that one run reports everything: a
	// value that could not be read kept its valid default, and a table that could not be
	// read made no variant to check.
	validate(c, opt, p, func(key string, vi int) int {
		if vi < 0 {
			return kl.topKey(key)
		}
		if origin == nil || vi >= len(origin) {
			return 0 // a default variant: it is not in the file
		}
		return kl.variantKey(origin[vi], key)
	})
	if err := p.err(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// addTOMLError reports a file that is not TOML, at the line the decoder names.
func addTOMLError(p *problems, err error) {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		msg := pe.Message
		if pe.LastKey != "" {
			msg += fmt.Sprintf(" (last key %q)", pe.LastKey)
		}
		p.addErr(pe.Position.Line, pe, "%s", msg)
	} else {
		p.addErr(0, err, "%v", err)
	}
}

// unknownTopKeys reports the top-level keys fsbench does not know. Undecoded lists the keys
// no field took (and all keys inside [[variant]] tables, checked later). Keys() is scanned as
// well because the decoder matches field names case-insensitively ("Size" fills Size), while
// TOML keys are case-sensitive and fsbench documents only the lower-case ones.
func unknownTopKeys(p *problems, md toml.MetaData, kl *keyLines) {
	reported := map[string]bool{}
	tables := paramTables()
	known := append(slices.Clone(topKeys), tables...)
	slices.Sort(known)
	for _, keys := range [][]toml.Key{md.Undecoded(), md.Keys()} {
		for _, k := range keys {
			name := k[0]
			if slices.Contains(known, name) || reported[name] {
				continue
			}
			reported[name] = true
			hint := didYouMean(name, known)
			if suggest(name, known) == "variant" {
				hint = "; did you mean [[variant]] tables?"
			}
			p.add(kl.topKey(name), "unknown key %q at the top level%s (known keys: %s; tables of the suites' sizes: %s)",
				name, hint, strings.Join(topKeys, ", "), strings.Join(tables, ", "))
		}
	}
}

// topLevel reads the top-level keys of raw into c, each checked where it is read; a value
// that cannot be read keeps c's default.
func (d decoder) topLevel(raw rawFile, c *Config) {
	p, kl := d.p, d.kl
	d.size(raw.Size, "size", &c.Size)
	if n, ok := d.integer(raw.Repetitions, "repetitions"); ok {
		if n < 1 || n > maxRepetitions {
			p.add(kl.topKey("repetitions"), "repetitions must be between 1 and %d, not %d", maxRepetitions, n)
		} else {
			c.Repetitions = int(n)
		}
	}
	if raw.Warmup != nil {
		if b, ok := raw.Warmup.(bool); ok {
			c.Warmup = b
		} else {
			d.typeErr("warmup", raw.Warmup, "true or false")
		}
	}
	if raw.Suite != nil {
		suites := c.Suite.String() // kept when the key has the wrong type
		d.str(raw.Suite, "suite", &suites)
		c.Suite = ParseSuites(suites)
	}
	if raw.Tests != nil {
		if tests, ok := d.strList(raw.Tests, kl.topKey("tests"), "tests",
			"remove the key to run every test of the suite"); ok {
			c.Tests = tests
		}
	}
	d.timeout(raw.Timeout, c)
	d.str(raw.Dataset, "dataset", &c.Dataset)
	d.str(raw.Scheduler, "scheduler", &c.Scheduler)
	d.size(raw.DatasetSize, "dataset_size", &c.DatasetSize)
	d.size(raw.VideoSize, "video_size", &c.VideoSize)
	if n, ok := d.integer(raw.Seed, "seed"); ok {
		if n < 0 {
			p.add(kl.topKey("seed"), "seed must not be negative, not %d", n)
		} else {
			c.Seed = uint64(n)
		}
	}
	d.str(raw.Results, "results", &c.ResultsDir)
	if raw.NANDSizes != nil {
		line := kl.topKey("nand_sizes")
		if list, ok := d.strList(raw.NANDSizes, line, "nand_sizes", `remove the key for the study's sizes ("8M", "32M", "128M", "252M")`); ok {
			if sizes, err := ParseSizeList(list); err != nil {
				p.addErr(line, err, "nand_sizes: %v", err)
			} else {
				c.NANDSizes = sizes
			}
		}
	}
}

// suiteTables reads the suites' tables ([bonnie], [randio], ...: see RegisterParams) over the
// defaults in c.Params, each key checked at its line.
func (d decoder) suiteTables(data []byte, c *Config) {
	var all map[string]any
	if _, err := toml.Decode(string(data), &all); err != nil {
		return // reported by the first decoding
	}
	for _, name := range paramTables() {
		v, ok := all[name]
		if !ok {
			continue
		}
		table, ok := v.(map[string]any)
		if !ok {
			d.p.add(d.kl.topKey(name), "%s must be a table of the %s suite's sizes, written [%s] with a key per line, not %s", name, name, name, tomlType(v))
			continue
		}
		c.Params.decodeTable(name, table, d, func(key string) int { return d.kl.tableKey(name, key) })
	}
}

// timeout reads the timeout key: a string with a unit.
func (d decoder) timeout(v any, c *Config) {
	if v == nil {
		return
	}
	line := d.kl.topKey("timeout")
	switch v := v.(type) {
	case string:
		if t, err := time.ParseDuration(v); err != nil {
			d.p.addErr(line, err, "bad timeout %q: write a number with a unit, e.g. \"90s\", \"10m\", \"1h30m\"", v)
		} else {
			c.Timeout = Duration{t}
		}
	case int64:
		d.p.add(line, "timeout needs a unit: write it as a string, e.g. timeout = \"%ds\" or \"10m\"", v)
	default:
		d.typeErr("timeout", v, `a string such as "10m"`)
	}
}

// decoder reads values of rawFile, reporting problems at the lines of their keys.
type decoder struct {
	p  *problems
	kl *keyLines
}

// typeErr reports a top-level value of the wrong type.
func (d decoder) typeErr(key string, v any, want string) {
	d.p.add(d.kl.topKey(key), "%s must be %s, not %s", key, want, tomlType(v))
}

func (d decoder) str(v any, key string, dst *string) {
	if v == nil {
		return
	}
	s, ok := v.(string)
	if !ok {
		d.typeErr(key, v, "a string")
		return
	}
	*dst = s
}

func (d decoder) integer(v any, key string) (int64, bool) {
	if v == nil {
		return 0, false
	}
	n, ok := v.(int64)
	if !ok {
		d.typeErr(key, v, "an integer")
	}
	return n, ok
}

// size reads a size given as a string with a unit or as an integer number of bytes.
func (d decoder) size(v any, key string, dst *uint64) {
	line := d.kl.topKey(key)
	switch v := v.(type) {
	case nil:
	case string:
		n, err := bytesize.Parse(v)
		if err != nil {
			d.p.addErr(line, err, "%s: %v", key, err)
			return
		}
		*dst = n
	case int64:
		if v < 0 {
			d.p.add(line, "%s must not be negative, not %d", key, v)
			return
		}
		*dst = uint64(v)
	case float64:
		// TOML floats are inexact above 2^53: ask for a form that says exactly what is meant.
		d.p.add(line, "%s must be a string such as \"512M\" or \"1.5GiB\", or an integer number of bytes, not a float", key)
	default:
		d.typeErr(key, v, `a string such as "512M" or an integer number of bytes`)
	}
}

// strList reads a string or a non-empty list of strings at line; emptyHint says what to do
// instead of an empty list.
func (d decoder) strList(v any, line int, key, emptyHint string) ([]string, bool) {
	switch v := v.(type) {
	case string:
		return []string{v}, true
	case []any:
		if len(v) == 0 {
			d.p.add(line, "%s is an empty list; %s", key, emptyHint)
			return nil, false
		}
		out := make([]string, 0, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				d.p.add(line, "%s must be a string or a list of strings, but element %d is %s", key, i+1, tomlType(e))
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	default:
		d.p.add(line, "%s must be a string or a list of strings, not %s", key, tomlType(v))
		return nil, false
	}
}

// variants reads the value of the "variant" key: normally the tables of [[variant]]
// headers, also accepted as an inline array of tables (variant = [{fs = "ext4"}]).
func (d decoder) variants(v any) (vs []Variant, origin []int) {
	line := d.kl.topKey("variant")
	var tables []map[string]any
	switch v := v.(type) {
	case []map[string]any:
		tables = v
	case []any:
		for _, e := range v {
			t, ok := e.(map[string]any)
			if !ok {
				d.p.add(line, "variant must be tables, not a list of %s; write a [[variant]] table per variant", tomlType(e))
				return nil, nil
			}
			tables = append(tables, t)
		}
	case map[string]any:
		d.p.add(line, "[variant] is a single table; write [[variant]] (two brackets) once per variant")
		return nil, nil
	default:
		d.p.add(line, "variant must be [[variant]] tables, not %s", tomlType(v))
		return nil, nil
	}
	if len(tables) == 0 {
		d.p.add(line, "variant is an empty list; add [[variant]] tables, or remove the key for the default variants")
		return nil, nil
	}
	// Every table is read and checked before any is expanded, so that the number of
	// variants is known (and refused when too large) before memory is spent on them.
	matrices := make([]*matrix, len(tables))
	var total uint64
	tooLarge := false
	for i, t := range tables {
		m := d.variantTable(i, t)
		if m == nil {
			continue
		}
		matrices[i] = m
		n := m.size()
		if n > maxVariants {
			d.p.add(m.line, "this [[variant]] table makes %s variants (%s); the limit is %d: "+
				"split the matrix into several runs", formatCount(n), m.factors(), maxVariants)
			tooLarge = true
			continue
		}
		if !tooLarge && total+n > maxVariants {
			d.p.add(m.line, "the [[variant]] tables up to this one make %d variants (this one %d: %s); "+
				"the limit is %d per file: split the matrix into several runs", total+n, n, m.factors(), maxVariants)
			tooLarge = true
		}
		total += n
	}
	if tooLarge {
		return nil, nil
	}
	for i, m := range matrices {
		if m == nil {
			continue
		}
		expanded := m.expand()
		vs = append(vs, expanded...)
		for range expanded {
			origin = append(origin, i)
		}
	}
	return vs, origin
}

// maxVariants bounds the variants one configuration file makes. A variant's repetition
// takes a few minutes (mkfs, writing, reading and removing a tree on a 1 GiB device), so
// 1000 variants at the default 3 repetitions are already days of benchmarking: more could
// not finish within the lifetime of any CI job, and nobody means to ask for it. The bound
// is checked on the product of the list lengths, before expanding: three lists of a hundred
// values, a 2 KB file, would otherwise make a million variants, ten seconds of work and
// 3 GiB of allocations before the first error could be shown.
const maxVariants = 1000

// matrix is one [[variant]] table, read and checked but not yet expanded.
type matrix struct {
	line     int // line of the [[variant]] header
	name     string
	hasName  bool
	hasMkfs  bool // the table has a mkfs key (for factors)
	hasMount bool // the table has a mount key (for factors)
	fss      []string
	mkfsRaw  []string   // the mkfs values as written, for variant names
	mkfsArgs [][]string // mkfsRaw split into arguments
	mounts   []string
	hasStart bool     // the table has a partition_start key (for factors and names)
	startRaw []string // the partition starts as written ("63s", "4MiB"), for variant names
	starts   []uint64 // in bytes; a single 0 without the key: the whole device
}

// size returns how many variants the table makes: the product of its list lengths,
// saturated at math.MaxUint64 (which, with lists read from a file, it cannot reach).
func (m *matrix) size() uint64 {
	n := uint64(1)
	for _, l := range []int{len(m.fss), len(m.mkfsRaw), len(m.mounts), len(m.starts)} {
		hi, lo := bits.Mul64(n, uint64(l))
		if hi != 0 {
			return math.MaxUint64
		}
		n = lo
	}
	return n
}

// factors spells out size for an error message: "fs 3 × mkfs 2 × mount 4".
func (m *matrix) factors() string {
	f := []string{fmt.Sprintf("fs %d", len(m.fss))}
	if m.hasMkfs {
		f = append(f, fmt.Sprintf("mkfs %d", len(m.mkfsRaw)))
	}
	if m.hasMount {
		f = append(f, fmt.Sprintf("mount %d", len(m.mounts)))
	}
	if m.hasStart {
		f = append(f, fmt.Sprintf("partition_start %d", len(m.starts)))
	}
	return strings.Join(f, " × ")
}

// formatCount writes a variant count; the saturated value of size says "more than".
func formatCount(n uint64) string {
	if n == math.MaxUint64 {
		return fmt.Sprintf("more than %d", uint64(math.MaxUint64))
	}
	return fmt.Sprint(n)
}

// variantTable reads and checks the i-th [[variant]] table. It returns nil when a value
// could not be read (the problem is reported); an unknown key does not stop it, so that the
// variants are still checked.
func (d decoder) variantTable(i int, t map[string]any) *matrix {
	at := func(key string) int { return d.kl.variantKey(i, key) }
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	// Report in file order (map order is random).
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(at(a), at(b)), strings.Compare(a, b)) })
	for _, k := range keys {
		if !slices.Contains(variantKeys, k) {
			d.p.add(at(k), "unknown key %q in [[variant]]%s (known keys: %s)",
				k, didYouMean(k, variantKeys), strings.Join(variantKeys, ", "))
		}
	}

	// An unknown key does not stop the expansion (the variants are still checked), a value
	// that cannot be read does.
	before := len(d.p.list)
	name, hasName := "", false
	if v, ok := t["name"]; ok {
		s, isStr := v.(string)
		switch {
		case !isStr:
			d.p.add(at("name"), "name must be a string, not %s", tomlType(v))
		case strings.TrimSpace(s) == "":
			d.p.add(at("name"), "name is empty; remove the key to name the variant after its fs")
		}
		name, hasName = s, true
	}
	var fss []string
	if v, ok := t["fs"]; ok {
		fss, _ = d.strList(v, at("fs"), "fs", `give at least one filesystem, e.g. fs = "ext4"`)
	} else {
		d.p.add(d.kl.variantLine(i), "[[variant]] has no fs; add fs = \"ext4\" (or another filesystem type)")
	}
	mkfsRaw := []string{""}
	if v, ok := t["mkfs"]; ok {
		mkfsRaw, _ = d.strList(v, at("mkfs"), "mkfs", `use mkfs = "" for no extra arguments`)
	}
	mkfsArgs := make([][]string, len(mkfsRaw))
	for j, s := range mkfsRaw {
		args, err := SplitArgs(s)
		if err != nil {
			d.p.addErr(at("mkfs"), err, "mkfs %q: %v", s, err)
		}
		mkfsArgs[j] = args
	}
	mounts := []string{""}
	if v, ok := t["mount"]; ok {
		mounts, _ = d.strList(v, at("mount"), "mount", `use mount = "" for the default options`)
	}
	startRaw, starts := []string{""}, []uint64{0}
	v, hasStart := t["partition_start"]
	if hasStart {
		startRaw, starts = d.partitionStarts(v, at("partition_start"))
	}
	if len(d.p.list) > before {
		return nil
	}
	_, hasMkfs := t["mkfs"]
	_, hasMount := t["mount"]
	return &matrix{
		line: d.kl.variantLine(i), name: name, hasName: hasName, hasMkfs: hasMkfs, hasMount: hasMount,
		fss: fss, mkfsRaw: mkfsRaw, mkfsArgs: mkfsArgs, mounts: mounts,
		hasStart: hasStart, startRaw: startRaw, starts: starts,
	}
}

// partitionStarts reads a partition_start value: a start or a list of them, each a string
// in sectors of 512 bytes ("63s", fdisk's unit and the one the old DOS tables misaligned by)
// or a size ("1MiB", "4M"), or an integer number of bytes.
func (d decoder) partitionStarts(v any, line int) (raw []string, starts []uint64) {
	var list []any
	switch v := v.(type) {
	case []any:
		list = v
	default:
		list = []any{v}
	}
	if len(list) == 0 {
		d.p.add(line, `partition_start is an empty list; give starts such as ["63s", "4MiB"], or remove the key for the whole device`)
		return nil, nil
	}
	for _, e := range list {
		var n uint64
		var s string
		switch e := e.(type) {
		case string:
			s = strings.TrimSpace(e)
			var err error
			if num, ok := strings.CutSuffix(s, "s"); ok && num != "" && strings.Trim(num, "0123456789") == "" {
				var sectors uint64
				sectors, err = strconv.ParseUint(num, 10, 64)
				if err == nil && sectors > math.MaxUint64/512 {
					err = fmt.Errorf("%s sectors do not fit in 64 bits", num)
				}
				n = sectors * 512
			} else {
				n, err = bytesize.Parse(s)
			}
			if err != nil {
				d.p.addErr(line, err, "partition_start %q: %v (sectors of 512 bytes are written \"63s\")", e, err)
				continue
			}
		case int64:
			if e < 0 {
				d.p.add(line, "partition_start must not be negative, not %d", e)
				continue
			}
			n, s = uint64(e), strconv.FormatInt(e, 10)
		default:
			d.p.add(line, `partition_start must be a string such as "63s" or "4MiB", an integer number of bytes, or a list of them, not %s`, tomlType(e))
			continue
		}
		switch {
		case n == 0:
			d.p.add(line, "partition_start %q is the whole device, larger than the other partitions: start the aligned partition at \"1MiB\" or \"4MiB\" instead", s)
			continue
		case n%512 != 0:
			d.p.add(line, "partition_start %q is not a whole number of 512-byte sectors, which no partition table can express: write it in sectors, e.g. \"63s\"", s)
			continue
		case slices.Contains(starts, n):
			d.p.add(line, "partition_start %q is given twice; list each start once", s)
			continue
		}
		raw, starts = append(raw, s), append(starts, n)
	}
	return raw, starts
}

// expand makes the table's variants: fs × mkfs × mount × partition start, in that order.
func (m *matrix) expand() []Variant {
	out := make([]Variant, 0, m.size())
	for _, fs := range m.fss {
		for j, mk := range m.mkfsRaw {
			for _, mount := range m.mounts {
				for k, start := range m.starts {
					n := fs
					if m.hasName {
						n = m.name
						if len(m.fss) > 1 {
							n += "/" + fs
						}
					}
					if len(m.mkfsRaw) > 1 {
						n += "/" + orDefaults(mk)
					}
					if len(m.mounts) > 1 {
						n += "/" + orDefaults(mount)
					}
					// A start is named even when it is the only one: a variant in a partition is
					// not the same as the whole device, and its name should say so.
					if m.hasStart {
						n += "/start=" + m.startRaw[k]
					}
					out = append(out, Variant{
						Name:           n,
						FS:             fs,
						MkfsArgs:       slices.Clone(m.mkfsArgs[j]),
						MountOptions:   mount,
						Line:           m.line,
						PartitionStart: start,
					})
				}
			}
		}
	}
	return out
}

// orDefaults names an empty mkfs or mount value in a variant name.
func orDefaults(s string) string {
	if s == "" {
		return "defaults"
	}
	return s
}

// tomlType names the TOML type of a decoded value, for error messages.
func tomlType(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("the string %q", v)
	case int64:
		return fmt.Sprintf("the integer %d", v)
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return "a float"
		}
		return fmt.Sprintf("the float %g", v)
	case bool:
		return fmt.Sprintf("the boolean %t", v)
	case []any, []map[string]any:
		return "a list"
	case map[string]any:
		return "a table"
	case time.Time:
		return "a date-time"
	case nil:
		return "nothing"
	default:
		return fmt.Sprintf("a %T", v)
	}
}
