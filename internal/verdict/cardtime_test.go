package verdict

import (
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/results"
)

// busyCardRun builds a run of two variants whose write tests kept the card busy busyA and busyB
// ms per repetition (replayed through sd-typical, or live on the simulated card when live),
// with every repetition measured on a busy machine when busy.
func busyCardRun(busyA, busyB []float64, live, busy bool) *results.Run {
	r := &results.Run{Target: results.Target{Kind: results.KindImage}}
	if live {
		r.Target = results.Target{Kind: results.KindSimcard, Profile: "sd-typical", CardProfile: "sd-typical"}
	}
	for _, v := range []struct {
		name string
		ms   []float64
	}{{"a", busyA}, {"b", busyB}} {
		r.Variants = append(r.Variants, results.Variant{Name: v.name, FS: "ext4", Status: results.OK})
		for rep, ms := range v.ms {
			for _, test := range WriteTests {
				ns := uint64(ms * 1e6 / 3)
				m := results.Measurement{Variant: v.name, Test: test, Rep: rep + 1, Status: results.OK,
					Value: results.Float(1), Unit: "s", WallSeconds: 1, LogicalBytes: 1 << 20}
				if live {
					m.Flash = &results.FlashIO{BusyNs: ns, Server: &results.CardServer{Requests: 100}}
				} else {
					m.Trace = &results.TraceInfo{Replay: map[string]results.Replay{"sd-typical": {Flash: &results.FlashIO{BusyNs: ns, FlashBytesWritten: 1 << 20}}}}
				}
				if busy {
					m.Noise = &results.Noise{Busy: true, OtherCPUPct: 90, Why: "other processes 90 % of a CPU"}
				}
				r.Measurements = append(r.Measurements, m)
			}
		}
	}
	return r
}

func TestCardTimeVerdict(t *testing.T) {
	fast := []float64{300, 301, 299, 302, 300}
	slow := []float64{600, 598, 603, 601, 600}
	tests := []struct {
		name              string
		run               *results.Run
		winner, noteHas   string
		significant       bool
		wantColumn        bool
		wantVerdictAbsent bool
	}{
		{name: "replayed traces", run: busyCardRun(slow, fast, false, false), winner: "b", significant: true, wantColumn: true,
			noteHas: "a busy host does not change it"},
		{name: "live simulated card without traces", run: busyCardRun(fast, slow, true, false), winner: "a", significant: true, wantColumn: true},
		// Card time is counted from the requests: a busy machine leaves it standing, while the
		// wall-clock verdicts cannot conclude.
		{name: "busy machine", run: busyCardRun(slow, fast, false, true), winner: "b", significant: true, wantColumn: true},
		{name: "too few repetitions", run: busyCardRun(slow[:2], fast[:2], false, false), winner: "b", wantColumn: true, noteHas: ""},
		{name: "no card time at all", run: func() *results.Run {
			r := busyCardRun(slow, fast, false, false)
			for i := range r.Measurements {
				r.Measurements[i].Trace = nil
			}
			return r
		}(), wantVerdictAbsent: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got *Verdict
			for _, v := range Verdicts(tc.run, 0) {
				if v.Priority == "writes on the card" {
					got = &v
				}
			}
			if tc.wantVerdictAbsent {
				if got != nil {
					t.Errorf("verdict %+v, want none without card time", *got)
				}
			} else if got == nil {
				t.Fatal("no card-time verdict")
			} else {
				if got.Winner != tc.winner || got.Significant != tc.significant || !strings.Contains(got.Note, tc.noteHas) {
					t.Errorf("verdict %+v, want winner %s, significant %v, note with %q", *got, tc.winner, tc.significant, tc.noteHas)
				}
				// Nothing is left out of a figure a busy host cannot change, and the note must
				// not say so (a default run on a busy machine said "6 repetition(s) ... left
				// out" beside "a busy host does not change it").
				if strings.Contains(got.Note, "left out") {
					t.Errorf("note %q: card time leaves no busy repetition out", got.Note)
				}
				if got.Unit != "s" || got.WinnerMedian <= 0 || got.WinnerMedian >= got.RunnerMedian {
					t.Errorf("medians %v vs %v %s", got.WinnerMedian, got.RunnerMedian, got.Unit)
				}
			}
			hasCol := false
			for _, m := range MatrixFor(tc.run, CardFor(tc.run, ""), nil) {
				hasCol = hasCol || m.Key == "card_time"
			}
			if hasCol != tc.wantColumn {
				t.Errorf("card time column %v, want %v", hasCol, tc.wantColumn)
			}
		})
	}
}

func TestServerNote(t *testing.T) {
	tests := []struct {
		name string
		late uint64 // late ns per write test, against 100 ms of card time each
		want string
	}{
		{name: "kept up", late: 0, want: ""},
		{name: "late by less than 1 % of the card's time", late: 500_000, want: ""},
		{name: "late by more", late: 30e6, want: "the simulated card's server replied late to 30 of 300 requests (0.0900 s in all; late by more than 1 % of the card's time in write, read_remove_write, video_write)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := busyCardRun([]float64{300}, nil, true, false)
			for i := range r.Measurements {
				s := r.Measurements[i].Flash.Server
				if tc.late > 0 {
					s.LateRequests, s.LateNs = 10, tc.late
				}
			}
			got := ServerNote(r)
			if (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
				t.Errorf("ServerNote = %q, want %q", got, tc.want)
			}
		})
	}
}
