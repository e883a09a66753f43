package plan

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestParseSuites(t *testing.T) {
	tests := []struct {
		in   string
		want Suites
		str  string
	}{
		{"", nil, ""},
		{"  ", nil, ""},
		{"bootlin", Suites{"bootlin"}, "bootlin"},
		{"bonnie,smallfiles", Suites{"bonnie", "smallfiles"}, "bonnie,smallfiles"},
		{" bonnie , smallfiles ", Suites{"bonnie", "smallfiles"}, "bonnie,smallfiles"},
		{"bonnie,,randio", Suites{"bonnie", "", "randio"}, "bonnie,,randio"}, // validation names the empty one
	}
	for _, tt := range tests {
		got := ParseSuites(tt.in)
		if !slices.Equal(got, tt.want) {
			t.Errorf("ParseSuites(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if s := got.String(); s != tt.str {
			t.Errorf("ParseSuites(%q).String() = %q, want %q", tt.in, s, tt.str)
		}
	}
}

func TestSuitesHasOnly(t *testing.T) {
	s := ParseSuites("bonnie,free-electrons")
	if !s.Has(FlashSuite) || s.Has("bootlin") {
		t.Errorf("Has: %v", s)
	}
	if s.Only(FlashSuite) || !ParseSuites(FlashSuite).Only(FlashSuite) {
		t.Errorf("Only: %v", s)
	}
}

// TestSuitesJSON checks that results files keep the one string they always had, and that the
// files written before Suites was a list still load.
func TestSuitesJSON(t *testing.T) {
	b, err := json.Marshal(struct {
		Suite Suites `json:"suite"`
	}{Suites{"bonnie", "smallfiles"}})
	if err != nil || string(b) != `{"suite":"bonnie,smallfiles"}` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	for in, want := range map[string]Suites{
		`"bootlin"`:               {"bootlin"},
		`"bonnie, smallfiles"`:    {"bonnie", "smallfiles"},
		`["bonnie","smallfiles"]`: {"bonnie", "smallfiles"},
	} {
		var s Suites
		if err := json.Unmarshal([]byte(in), &s); err != nil || !slices.Equal(s, want) {
			t.Errorf("Unmarshal(%s) = %q, %v; want %q", in, s, err, want)
		}
	}
	var s Suites
	if err := json.Unmarshal([]byte(`3`), &s); err == nil {
		t.Error("Unmarshal(3) succeeded")
	}
}
