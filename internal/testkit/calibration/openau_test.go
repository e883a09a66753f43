package calibration

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/probe"
	"github.com/fsbench/fsbench/internal/trace"
)

// cardOpenAU replays the block requests the probe sent to the card (tr), in order, through a
// fresh model of the served card, and returns the probe's open-AU rounds timed by the model:
// the card's own figures. The host's stalls (a few ms at a high load average) slow a round
// whose writes take 28 ms far more than one whose writes each close an AU (200 ms), so they
// shrink the cliff the wall clock shows; the card's own figures do not move with the load.
// A round is found as the probe writes it (open-AU test, sweep.go): chunk k of AU 0 to n-1,
// then chunk k+1, from the AU at the middle of the card, the rounds one after another.
func cardOpenAU(tr *trace.Trace, profile string, res *probe.Result) ([]probe.OpenAUPoint, error) {
	switch {
	case tr == nil:
		return nil, errors.New("the probe's block requests were not traced")
	case tr.Lost > 0:
		return nil, fmt.Errorf("the kernel dropped %d trace events of the probe's requests", tr.Lost)
	case len(res.OpenAU) == 0 || res.Estimates.AU.Value == 0:
		return nil, errors.New("the probe found no AU or ran no open-AU round")
	}
	p, err := flash.Lookup(profile)
	if err != nil {
		return nil, err
	}
	m, err := flash.NewModel(p, probeCard)
	if err != nil {
		return nil, err
	}
	type write struct {
		off, n uint64
		d      time.Duration
	}
	var writes []write
	for _, q := range trace.Requests(tr) {
		d, err := m.Do(q)
		if err != nil {
			return nil, fmt.Errorf("replaying the probe's requests: %w", err)
		}
		if q.Op == flash.OpWrite {
			writes = append(writes, write{q.Off, q.Len, d})
		}
	}
	au, chunk := res.Estimates.AU.Value, res.OpenAU[0].Chunk
	base := res.SizeBytes / 2 / au * au
	// round matches round r of the test at writes[at:] and returns its timed writes' time.
	round := func(at int, r probe.OpenAUPoint) (time.Duration, bool) {
		per := r.Count/r.AUs + 1 // chunks per AU, the first pass untimed
		if r.AUs == 0 || at+per*r.AUs > len(writes) {
			return 0, false
		}
		var busy time.Duration
		for k := 0; k < per; k++ {
			for i := 0; i < r.AUs; i++ {
				w := writes[at+k*r.AUs+i]
				if w.off != base+uint64(i)*au+uint64(k)*chunk || w.n != chunk {
					return 0, false
				}
				if k > 0 {
					busy += w.d
				}
			}
		}
		return busy, true
	}
	// The sweeps before the test write from the same place: the rounds are the first run of
	// writes where every round follows the one before.
	for start := range writes {
		var out []probe.OpenAUPoint
		at := start
		for _, r := range res.OpenAU {
			busy, ok := round(at, r)
			if !ok || busy <= 0 {
				break
			}
			out = append(out, probe.OpenAUPoint{AUs: r.AUs, Chunk: chunk, Count: r.Count,
				MBps: float64(chunk) * float64(r.Count) / busy.Seconds() / 1e6})
			at += (r.Count/r.AUs + 1) * r.AUs
		}
		if len(out) == len(res.OpenAU) {
			return out, nil
		}
	}
	return nil, fmt.Errorf("the open-AU rounds are not in the traced requests (%d writes; AU %d, chunk %d, from %d)", len(writes), au, chunk, base)
}

// tracingDevice is a modelDevice that records the requests it sends, as the kernel's block
// trace of the probe's loop device records them (split at 1 MiB, as modelDevice splits them).
type tracingDevice struct {
	modelDevice
	tr *trace.Trace
}

func (d tracingDevice) record(op trace.Op, off, n uint64) {
	for done := uint64(0); done < n; done += 1 << 20 {
		d.tr.Requests = append(d.tr.Requests, trace.Request{Op: op, Sector: (off + done) / trace.SectorSize,
			Sectors: min(n-done, 1<<20) / trace.SectorSize, Done: true})
	}
}
func (d tracingDevice) ReadAt(p []byte, off uint64) (time.Duration, error) {
	d.record(trace.OpRead, off, uint64(len(p)))
	return d.modelDevice.ReadAt(p, off)
}
func (d tracingDevice) WriteAt(p []byte, off uint64) (time.Duration, error) {
	d.record(trace.OpWrite, off, uint64(len(p)))
	return d.modelDevice.WriteAt(p, off)
}
func (d tracingDevice) Discard(off, n uint64) error {
	d.record(trace.OpDiscard, off, n)
	return d.modelDevice.Discard(off, n)
}

// TestCardOpenAU: the open-AU rounds found in a probe's traced requests and timed by a fresh
// model are the rounds the probe timed on that model (the same requests, the same card), the
// sweeps before them writing from the same place notwithstanding; a trace without them is
// an error, not a figure.
func TestCardOpenAU(t *testing.T) {
	for _, profile := range []string{"sd-cheap-old", "sd-typical"} {
		t.Run(profile, func(t *testing.T) {
			dev := tracingDevice{modelDevice{newModel(t, profile, probeCard)}, &trace.Trace{}}
			res, err := probe.Run(context.Background(), dev, probe.Options{Write: true, MaxReadBlock: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			got, err := cardOpenAU(dev.tr, profile, res)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(res.OpenAU) || len(got) < 2 {
				t.Fatalf("%d rounds, the probe ran %d", len(got), len(res.OpenAU))
			}
			for i, p := range got {
				if want := res.OpenAU[i]; p.AUs != want.AUs || math.Abs(p.MBps-want.MBps) > 1e-9*want.MBps {
					t.Errorf("round %d: %d AUs at %.6g MB/s, the probe measured %d AUs at %.6g", i, p.AUs, p.MBps, want.AUs, want.MBps)
				}
			}
			dev.tr.Requests = slices.DeleteFunc(dev.tr.Requests, func(r trace.Request) bool { return r.Op == trace.OpWrite && r.Sectors == got[0].Chunk/trace.SectorSize })
			if _, err := cardOpenAU(dev.tr, profile, res); err == nil {
				t.Error("a trace without the open-AU rounds' writes gave figures")
			}
			dev.tr.Lost = 1
			if _, err := cardOpenAU(dev.tr, profile, res); err == nil {
				t.Error("a trace that lost events gave figures")
			}
		})
	}
}
