package plan

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// The forms of this test binary: plan links in no kind, so the test registers its own, as a
// kind's package does in its init.
func init() {
	RegisterTargetForm(DefaultTarget, TargetForm{Usage: "image (the default)", Parse: NoArg(DefaultTarget)})
	RegisterTargetForm("plain-test", TargetForm{Usage: "plain-test[:ARG]"})
	RegisterTargetForm("checked-test", TargetForm{Usage: "checked-test:N",
		Parse: func(arg string) (TargetSpec, error) {
			if arg == "" {
				return TargetSpec{}, errors.New("no N after checked-test")
			}
			return TargetSpec{Kind: "checked-test", Device: arg}, nil
		},
		Format: func(t TargetSpec) string { return "checked-test:" + t.Device },
		Short:  func(t TargetSpec) string { return "#" + t.Device },
	})
}

// A kind registers its --target form: ParseTarget then reads it, String (and a request's JSON)
// gives it back, Short names it among others.
func TestRegisterTargetForm(t *testing.T) {
	tests := []struct {
		in, str, short string
		want           TargetSpec
	}{
		{"", "image", "image", TargetSpec{Kind: DefaultTarget}},
		{"image", "image", "image", TargetSpec{Kind: DefaultTarget}},
		{"plain-test", "plain-test", "plain-test", TargetSpec{Kind: "plain-test"}},
		{"plain-test:x:y/z", "plain-test:x:y/z", "plain-test:x:y/z", TargetSpec{Kind: "plain-test", Arg: "x:y/z"}},
		{"checked-test:7", "checked-test:7", "#7", TargetSpec{Kind: "checked-test", Device: "7"}},
	}
	for _, tc := range tests {
		got, err := ParseTarget(tc.in)
		if err != nil {
			t.Errorf("ParseTarget(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseTarget(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if got.String() != tc.str || got.Short() != tc.short {
			t.Errorf("ParseTarget(%q): String %q, Short %q; want %q, %q", tc.in, got.String(), got.Short(), tc.str, tc.short)
		}
		b, err := json.Marshal(struct{ T TargetSpec }{got})
		if err != nil {
			t.Fatal(err)
		}
		var back struct{ T TargetSpec }
		if err := json.Unmarshal(b, &back); err != nil || back.T != got {
			t.Errorf("JSON round trip of %s: %+v, %v", b, back.T, err)
		}
	}
}

// A bad --target says what is wrong, names every form (the default first), and the kind the
// user most likely meant.
func TestParseTargetRefusals(t *testing.T) {
	const forms = "; use image (the default), checked-test:N, plain-test[:ARG]"
	tests := []struct{ in, want string }{
		{"checked-test", `target "checked-test": no N after checked-test` + forms},
		{"checked-test:", `target "checked-test:": nothing after checked-test:` + forms},
		{"image:x", `target "image:x": image takes nothing after image:` + forms},
		{"nosuch", `target "nosuch": unknown kind` + forms},
		{"imagee", `target "imagee": unknown kind (did you mean "image"?)` + forms},
		{"Image", `target "Image": unknown kind (did you mean "image"?)` + forms},
		{"checked", `target "checked": unknown kind (did you mean "checked-test"?)` + forms},
		{"checked:3", `target "checked:3": unknown kind (did you mean "checked-test"?)` + forms},
		{"img", `target "img": unknown kind` + forms}, // three letters: too short to guess
	}
	for _, tc := range tests {
		_, err := ParseTarget(tc.in)
		if err == nil || err.Error() != tc.want {
			t.Errorf("ParseTarget(%q) = %v\nwant %s", tc.in, err, tc.want)
		}
	}
}

// One kind, one form: a second registration is a programming error, as is a kind that the
// grammar could not read back.
func TestRegisterTargetFormTwice(t *testing.T) {
	for _, kind := range []TargetKind{"plain-test", DefaultTarget, "has:colon", "has/slash", ""} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("registering the form %q did not panic", kind)
				}
			}()
			RegisterTargetForm(kind, TargetForm{Usage: "again"})
		}()
	}
	if _, err := ParseTarget("nosuch"); err == nil || strings.Contains(err.Error(), "again") {
		t.Errorf("a refused registration is among the forms: %v", err)
	}
}
