package results

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"unicode"
)

// statusRank orders run statuses from best to worst, for the status of a merged run: a merge
// is only as complete as its least complete part.
var statusRank = map[string]int{RunComplete: 0, RunRunning: 1, RunInterrupted: 2, RunFailed: 3}

// Merge combines runs into one, so that variants measured in different runs (typically a host
// run that skipped the filesystems its kernel lacks, and a guest run that filled them in) are
// reported side by side. It is MergeLabeled without labels.
func Merge(runs []*Run, dirs []string) (*Run, error) {
	return MergeLabeled(runs, dirs, nil)
}

// MergeLabeled combines any number of runs into one. dirs[i] is the results directory runs[i]
// was loaded from and labels[i] the name the user gave it ("" for none; labels may be nil),
// usually the card it ran on; every variant of the result records them, with the kernel that
// ran it, in Variant.Source.
//
// The run-wide parts (schema, tool, configuration, dataset, target, device, methods,
// machine) are the first run's; Status is complete only when every run is, else the worst of
// them (failed, interrupted, running); Started is the earliest, Finished the latest. Tools
// are merged, the first run's version line winning; Card is the first run's that has one.
// Guest is nil: each variant's Source says where it ran.
//
// A variant name present in several runs appears once: a variant that ran (status OK) wins
// over a skipped one, the first skipped entry stands when it was skipped everywhere, and
// when it ran in several runs the first keeps its name and each later one is renamed
// "<name>@<label>", or "<name>@<kernel release>" when its run has no label (three cards
// measured on one kernel would all be "@<release>"), with "#2", "#3" ... added when that
// name is taken too, so that no set of runs fails to merge over a name. Measurements travel
// with their variant; those of a variant that is dropped, or that name no variant of their
// run, are left out.
func MergeLabeled(runs []*Run, dirs, labels []string) (*Run, error) {
	if err := checkMergeInput(runs, dirs, labels); err != nil {
		return nil, err
	}
	out := mergeRunWide(runs, dirs)
	m := variantMerger{out: out, kept: map[string]int{}}
	for i, r := range runs {
		src := sourceOf(r, dirs[i])
		if labels != nil {
			src.Label = labels[i]
		}
		m.add(r, i, src)
	}
	out.Summary = out.Summarize()
	return out, nil
}

// checkMergeInput refuses what cannot be merged: no runs, directories or labels that do not
// pair with the runs, labels with control characters, a missing run, or runs of different
// schemas.
func checkMergeInput(runs []*Run, dirs, labels []string) error {
	if len(runs) == 0 {
		return errors.New("merge: no runs given: name at least two results directories")
	}
	if len(dirs) != len(runs) {
		return fmt.Errorf("merge: %d runs but %d directories: pass one directory per run", len(runs), len(dirs))
	}
	if labels != nil && len(labels) != len(runs) {
		return fmt.Errorf("merge: %d runs but %d labels: pass one label per run (\"\" for none)", len(runs), len(labels))
	}
	for i, l := range labels {
		// A label becomes part of variant names, which a results file never holds with
		// control characters (the configuration refuses them too).
		if strings.ContainsFunc(l, unicode.IsControl) {
			return fmt.Errorf("merge: the label %q of %s contains a control character: use letters, digits and punctuation", l, dirs[i])
		}
	}
	for i, r := range runs {
		if r == nil {
			return fmt.Errorf("merge: run %d (%s) is missing: load it first", i+1, dirs[i])
		}
		if r.Schema != runs[0].Schema {
			return fmt.Errorf("merge: %s has schema %q but %s has %q: rerun one of them with the same fsbench version",
				dirs[i], r.Schema, dirs[0], runs[0].Schema)
		}
	}
	return nil
}

// mergeRunWide makes the merged run's run-wide parts (see MergeLabeled), with no variants
// yet.
func mergeRunWide(runs []*Run, dirs []string) *Run {
	first := runs[0]
	out := &Run{
		Schema:  first.Schema,
		Tool:    first.Tool,
		Status:  first.Status,
		Started: first.Started,
		Machine: first.Machine,
		Target:  first.Target,
		Device:  first.Device,
		Config:  first.Config,
		Dataset: first.Dataset,
		Methods: maps.Clone(first.Methods),
		// Never null in results.json, like the lists of a fresh run.
		Variants:     []Variant{},
		Measurements: []Measurement{},
	}
	var errs []string
	for i, r := range runs {
		if statusRank[r.Status] > statusRank[out.Status] {
			out.Status = r.Status
		}
		if r.Error != "" {
			errs = append(errs, dirs[i]+": "+r.Error)
		}
		if !r.Started.IsZero() && (out.Started.IsZero() || r.Started.Before(out.Started)) {
			out.Started = r.Started
		}
		if r.Finished.After(out.Finished) {
			out.Finished = r.Finished
		}
		addMissing(&out.Tools, r.Tools)
		if out.Card == nil && r.Card != nil {
			out.Card = r.Card
		}
		// The first run's calibration of a profile stands, as its tools' versions do; the
		// merge command warns when the runs differ (CalibrationMismatches).
		addMissing(&out.CardCalibrations, r.CardCalibrations)
	}
	out.Error = strings.Join(errs, "; ")
	return out
}

// addMissing adds to *dst the keys of src it does not have yet (the first value of a key
// wins), making *dst only when there is something to add.
func addMissing[V any](dst *map[string]V, src map[string]V) {
	for k, v := range src {
		if *dst == nil {
			*dst = map[string]V{}
		}
		if _, ok := (*dst)[k]; !ok {
			(*dst)[k] = v
		}
	}
}

// variantMerger adds the variants of one run after another to out, and their measurements.
type variantMerger struct {
	out *Run
	// kept maps a merged variant name to its index in out.Variants.
	kept map[string]int
}

// add merges the variants of r, the i-th run, whose variants ran at src (see MergeLabeled
// for which entry wins and how a name is told apart).
func (m *variantMerger) add(r *Run, i int, src Source) {
	out := m.out
	names := map[string]bool{}
	for _, v := range r.Variants {
		names[v.Name] = true
	}
	// rename maps a variant name of this run to its merged name; absent: dropped.
	rename := map[string]string{}
	for _, v := range r.Variants {
		v.Source = mergedSource(v.Source, src)
		j, seen := m.kept[v.Name]
		switch {
		case !seen:
			m.kept[v.Name] = len(out.Variants)
			out.Variants = append(out.Variants, v)
			rename[v.Name] = v.Name
		case out.Variants[j].Status == Skipped && v.Status != Skipped:
			// The run that could run it replaces the one that could not, in the place the
			// first run gave it, so the configured order stays.
			out.Measurements = dropVariant(out.Measurements, v.Name)
			out.Variants[j] = v
			rename[v.Name] = v.Name
		case v.Status == Skipped:
			// Ran before, or skipped before too: the earlier entry stands.
		default:
			// Ran in an earlier run too: both sets of figures are worth keeping (two cards,
			// two kernels, or two accelerators); the later is told apart by its run's label,
			// else the kernel that ran it, and by a count when that name is taken too.
			name := freeName(v.Name, suffixOf(v.Source, i), func(n string) bool {
				_, taken := m.kept[n]
				return taken || names[n]
			})
			rename[v.Name] = name
			v.Name = name
			m.kept[name] = len(out.Variants)
			out.Variants = append(out.Variants, v)
		}
	}
	for _, ms := range r.Measurements {
		name, ok := rename[ms.Variant]
		if !ok {
			continue
		}
		ms.Variant = name
		out.Measurements = append(out.Measurements, ms)
	}
}

// mergedSource is where a variant ran: its own source when it comes from an already merged
// file (that file's machine is only its first run's), with the label given to the file when
// its own merge gave none; else src.
func mergedSource(own *Source, src Source) *Source {
	switch {
	case own == nil:
		s := src
		return &s
	case own.Label == "" && src.Label != "":
		s := *own
		s.Label = src.Label
		return &s
	}
	return own
}

// sourceOf is where the variants of r ran: dir, r's kernel, and the QEMU accelerator when r
// happened in a guest.
func sourceOf(r *Run, dir string) Source {
	s := Source{Dir: dir, Kernel: r.Machine.Kernel, Card: CardOf(r.Device)}
	if r.Remote != nil {
		s.Board = r.Remote.Hostname
		if r.Remote.Model != "" {
			s.Board += " (" + r.Remote.Model + ")"
		}
		if s.Kernel == "" {
			s.Kernel = r.Remote.KernelRelease
		}
	}
	if r.Guest != nil {
		s.Guest = "qemu " + r.Guest.Accel
		if s.Kernel == "" {
			s.Kernel = r.Guest.KernelRelease
		}
	}
	return s
}

// suffixOf is what tells apart a variant that ran in several runs: the label of its run, or
// the release of the kernel that ran it when the run has none, or "run<N>" when the run did
// not record its kernel either.
func suffixOf(s *Source, i int) string {
	switch {
	case s != nil && s.Label != "":
		return s.Label
	case s != nil && s.Kernel != "":
		return s.Kernel
	}
	return "run" + strconv.Itoa(i+1)
}

// freeName is "<name>@<suffix>", or "<name>@<suffix>#2", "#3" ... the first that is not
// taken: the same card or kernel can well appear in several runs (three runs of one card to
// see its spread), and merging them must not fail over a name. "#" and not "-": kernel
// releases and card names are full of dashes ("6.1.0-56-amd64"), so "-2" would read as part
// of them.
func freeName(name, suffix string, taken func(string) bool) string {
	base := name + "@" + suffix
	n := base
	for k := 2; taken(n); k++ {
		n = base + "#" + strconv.Itoa(k)
	}
	return n
}

// dropVariant returns ms without the measurements of variant (in place).
func dropVariant(ms []Measurement, variant string) []Measurement {
	out := ms[:0]
	for _, m := range ms {
		if m.Variant != variant {
			out = append(out, m)
		}
	}
	return out
}

// CardOf names the device a run measured, for the rows of a merge: an SD or eMMC card by its
// CID fields (name, manufacturer and OEM ids, date, serial), another disk by its vendor and
// model, a loop device by its backing file; "" when the run recorded no device.
func CardOf(d *DeviceIdentity) string {
	if d == nil {
		return ""
	}
	var parts []string
	add := func(key, prefix string) {
		if v := strings.TrimSpace(d.Device[key]); v != "" {
			parts = append(parts, prefix+v)
		}
	}
	switch {
	case d.Device["name"] != "" || d.Device["manfid"] != "":
		add("type", "")
		add("name", "")
		add("manfid", "manfid ")
		add("oemid", "oemid ")
		add("date", "")
		add("serial", "serial ")
	case d.Device["model"] != "":
		add("vendor", "")
		add("model", "")
	case d.Loop != nil:
		parts = append(parts, "image file on "+d.Name)
	default:
		parts = append(parts, d.Name)
	}
	return strings.Join(parts, " ")
}
