package plan

import (
	"errors"
	"strings"
	"testing"
)

// A kind that lives in a package of its own registers its --target form: ParseTarget then reads
// it, String gives it back, and an unknown kind's error lists it.
func TestRegisterTargetForm(t *testing.T) {
	RegisterTargetForm("plain-test", "plain-test[:ARG]", nil)
	RegisterTargetForm("checked-test", "checked-test:N", func(arg string) (TargetSpec, error) {
		if arg == "" {
			return TargetSpec{}, errors.New("no N after checked-test:")
		}
		return TargetSpec{Kind: "checked-test", Arg: arg}, nil
	})
	for _, s := range []string{"plain-test", "plain-test:x", "checked-test:7"} {
		got, err := ParseTarget(s)
		if err != nil {
			t.Errorf("ParseTarget(%q): %v", s, err)
			continue
		}
		if got.String() != s {
			t.Errorf("ParseTarget(%q).String() = %q", s, got.String())
		}
	}
	if _, err := ParseTarget("checked-test"); err == nil || !strings.Contains(err.Error(), "no N after") {
		t.Errorf("ParseTarget(checked-test) = %v, want the kind's own refusal", err)
	}
	if _, err := ParseTarget("nosuch"); err == nil || !strings.Contains(err.Error(), "checked-test:N, plain-test[:ARG]") {
		t.Errorf("an unknown kind's error does not list the registered forms: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a built-in kind's form again did not panic")
		}
	}()
	RegisterTargetForm(TargetImage, "image", nil)
}
