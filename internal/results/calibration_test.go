package results

import (
	"strings"
	"testing"
)

func TestCalibrationMismatches(t *testing.T) {
	replayed := func(names ...string) []Measurement {
		rp := map[string]Replay{}
		for _, n := range names {
			rp[n] = Replay{}
		}
		return []Measurement{{Test: "write", Trace: &TraceInfo{Replay: rp}}}
	}
	tests := []struct {
		name string
		a, b *Run
		want []string // substrings, one per mismatch, in order
	}{
		{"same calibrations", &Run{CardCalibrations: map[string]int{"sd-typical": 1}}, &Run{CardCalibrations: map[string]int{"sd-typical": 1}}, nil},
		{"different calibrations", &Run{CardCalibrations: map[string]int{"sd-typical": 1, "emmc": 1}}, &Run{CardCalibrations: map[string]int{"sd-typical": 2, "emmc": 1}},
			[]string{"card sd-typical: calibration 1 in A, 2 in B"}},
		{"a run from before calibrations were recorded, with replays", &Run{Measurements: replayed("sd-typical", "sd-cheap-old")},
			&Run{CardCalibrations: map[string]int{"sd-typical": 1, "sd-cheap-old": 1, "sd-2010-worst": 1}},
			[]string{"card sd-cheap-old: calibration none recorded in A, 1 in B", "card sd-typical: calibration none recorded in A, 1 in B"}},
		{"an old simulated-card run", &Run{Target: Target{Kind: "simcard", Profile: "emmc"}}, &Run{Target: Target{Kind: "simcard", Profile: "emmc"}, CardCalibrations: map[string]int{"emmc": 1}},
			[]string{"card emmc: calibration none recorded in A, 1 in B"}},
		{"a card only one run used is no mismatch", &Run{CardCalibrations: map[string]int{"my-card": 3}}, &Run{CardCalibrations: map[string]int{"sd-typical": 1}}, nil},
		{"two old runs", &Run{Measurements: replayed("sd-typical")}, &Run{Measurements: replayed("sd-typical")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CalibrationMismatches(tt.a, tt.b, "A", "B")
			if len(got) != len(tt.want) {
				t.Fatalf("got %q, want %d mismatches like %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("mismatch %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

func TestMergeKeepsFirstCalibration(t *testing.T) {
	a := &Run{Schema: Schema, CardCalibrations: map[string]int{"sd-typical": 1}}
	b := &Run{Schema: Schema, CardCalibrations: map[string]int{"sd-typical": 2, "emmc": 1}}
	m, err := MergeLabeled([]*Run{a, b}, []string{"a", "b"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.CardCalibrations; got["sd-typical"] != 1 || got["emmc"] != 1 || len(got) != 2 {
		t.Errorf("merged calibrations %v, want sd-typical 1 (the first run's) and emmc 1", got)
	}
}
